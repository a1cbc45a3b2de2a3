package reconcile_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// request signs into provider's inbox, as consumer (holding its own key),
// a slice request for name of class with resources, and returns its file.
func (w *world) request(consumer, provider, name, class string, resources corev1.ResourceList) string {
	w.t.Helper()
	csr, err := handshake.ResourceSliceCSR(w.files[consumer].Signer(), name, consumer)
	if err != nil {
		w.t.Fatal(err)
	}
	data, err := liqo.Encode(liqo.ResourceSlice(name, consumer, provider, class, resources, true, csr))
	if err != nil {
		w.t.Fatal(err)
	}
	file := layout.InboxPath(provider, consumer, artifact.SliceFile(name))
	w.tree[file] = &fstest.MapFile{Data: data}
	w.resign(consumer, file)
	return file
}

// answer is provider's answer to consumer's request for slice name.
func (w *world) answer(consumer, provider, name string) *artifact.SliceAnswer {
	w.t.Helper()
	file := layout.InboxPath(consumer, provider, artifact.SliceAnswerFile(name))
	f, ok := w.tree[file]
	if !ok {
		w.t.Fatalf("%s is not written", file)
	}
	rs, err := artifact.DecodeSlice(file, f.Data)
	if err != nil {
		w.t.Fatal(err)
	}
	ans := &artifact.SliceAnswer{Slice: rs, Accepted: true}
	for _, c := range rs.Status.Conditions {
		if c.Status != "Accepted" {
			ans.Accepted = false
		}
	}
	return ans
}

func cpu(n string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}
}

const grantSpec = `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "2"}}]}]
`

func TestASliceRequestBeyondTheSpecIsDeniedAndNotSigned(t *testing.T) {
	w := newWorld(t, grantSpec)
	w.converge("beta", "alpha")
	signed := w.backends["beta"].signed
	// alpha signs requests the spec does not list, or lists otherwise.
	w.request("alpha", "beta", "extra", "", cpu("1"))
	w.request("alpha", "beta", "pool", "", cpu("4"))
	w.now = w.now.Add(time.Minute)
	w.pass("beta")
	if got := w.backends["beta"].signed; got != signed {
		t.Fatalf("beta signed %d CSRs for requests beyond the spec", got-signed)
	}
	for name, why := range map[string]string{"extra": reasons.SliceNotInSpec, "pool": reasons.SliceDiffersFromSpec} {
		s := w.slice("beta", "alpha", "beta", name)
		if s.Resources != "Denied" || s.Reason != why {
			t.Errorf("beta's status of %s: %+v, want Denied %s", name, s, why)
		}
		ans := w.answer("alpha", "beta", name)
		c := artifact.SliceCondition(ans.Slice, "Resources")
		if ans.Accepted || ans.Slice.Status.AuthParams != nil || ans.Slice.Status.Resources != nil ||
			c.Reason != liqo.ReasonSliceResourcesDenied || !strings.HasPrefix(c.Message, why+": ") {
			t.Errorf("beta's answer to %s: %+v, want a Liqo Resources denial saying %s", name, ans.Slice.Status, why)
		}
	}
	if !strings.Contains(w.slice("beta", "alpha", "beta", "pool").Message, "resources {cpu=4}, the spec's are {cpu=2}") {
		t.Errorf("the denial does not say what differs: %+v", w.slice("beta", "alpha", "beta", "pool"))
	}
	// alpha's reconciler, run again, renders nothing of extra and puts its
	// request for pool back as the spec says, which beta grants again.
	w.converge("alpha", "beta")
	if w.has("clusters/alpha/liqo/beta/resourceslice-extra.yaml") || w.has("clusters/beta/inbox/alpha/resourceslice-extra.yaml") {
		t.Fatalf("extra is still requested or rendered: %v", keys(w.tree, "clusters/alpha/"))
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Accepted" {
		t.Fatalf("pool once requested as the spec says: %+v", s)
	}
}

func TestTheClassTotalDeniesTheExcessInTheSpecsOrder(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta", provider: {classes: [{name: "default", caps: {cpu: "4", memory: "8Gi"}}]}}]
peerings: [{consumer: "alpha", provider: "beta", slices: [
	{name: "zeta", resources: {cpu: "3"}},
	{name: "alpha", resources: {cpu: "2"}},
	{name: "small", resources: {cpu: "1", memory: "8Gi"}},
]}]
`)
	w.converge("beta", "alpha")
	for name, want := range map[string]string{"zeta": "Accepted", "alpha": "Denied", "small": "Accepted"} {
		for _, side := range []string{"beta", "alpha"} {
			s := w.slice(side, "alpha", "beta", name)
			if s.Resources != want {
				t.Errorf("%s's status of %s: %+v, want %s", side, name, s, want)
			}
			if want == "Denied" && (s.Reason != reasons.SliceOverClassTotal ||
				!strings.Contains(s.Message, "cpu: 2 requested and 3 already granted in class default make 5, over its cap 4")) {
				t.Errorf("%s's status of %s: %+v, want SliceOverClassTotal naming cpu", side, name, s)
			}
		}
	}
	if w.has("clusters/alpha/liqo/beta/resourceslice-alpha.yaml") || !w.has("clusters/alpha/liqo/beta/identity-resourceslice-small.yaml") {
		t.Fatalf("rendered: %v", keys(w.tree, "clusters/alpha/liqo/beta/"))
	}
	if got := w.backends["beta"].signed; got != 3 {
		t.Errorf("beta signed %d CSRs, want 3 (control plane, zeta, small)", got)
	}
}

func TestAHiddenRequestKeepsOnlyWhatTheSpecStillGrants(t *testing.T) {
	spec := `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "2"}}, {name: "web", resources: {cpu: "1"}}]}]
`
	w := newWorld(t, spec)
	w.converge("beta", "alpha")
	webAnswer := string(w.tree["clusters/alpha/inbox/beta/resourceslice-web.status.yaml"].Data)
	// A repo writer deletes both requests (unsigned), and the spec drops
	// pool before alpha's reconciler withdraws it.
	delete(w.tree, "clusters/beta/inbox/alpha/resourceslice-pool.yaml")
	delete(w.tree, "clusters/beta/inbox/alpha/resourceslice-web.yaml")
	w.setSpec(strings.Replace(spec, `{name: "pool", resources: {cpu: "2"}}, `, "", 1))
	w.now = w.now.Add(time.Minute)
	w.pass("beta")
	if got := string(w.tree["clusters/alpha/inbox/beta/resourceslice-web.status.yaml"].Data); got != webAnswer {
		t.Errorf("the in-spec slice web lost its answer while its request was hidden:\n%s", got)
	}
	if s := w.slice("beta", "alpha", "beta", "web"); s.Resources != "Accepted" || !strings.Contains(s.Message, "decision kept") {
		t.Errorf("web: %+v", s)
	}
	pool := w.answer("alpha", "beta", "pool")
	if pool.Accepted || pool.Slice.Status.AuthParams != nil {
		t.Fatalf("pool, removed from the spec, is still granted: %+v", pool.Slice.Status)
	}
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Reason != reasons.SliceNotInSpec {
		t.Errorf("pool: %+v, want SliceNotInSpec", s)
	}
}

// failingSigner is a backend whose signer refuses the CSRs refuse picks.
type failingSigner struct {
	backend.Backend
	refuse func(csr []byte) bool
}

func (f *failingSigner) SignCSR(ctx context.Context, csr []byte, d time.Duration) ([]byte, error) {
	if f.refuse(csr) {
		return nil, errors.New("signer unavailable")
	}
	return f.Backend.SignCSR(ctx, csr, d)
}

// csrSubject is the common name of a PEM CSR, "" when it does not parse.
func csrSubject(csrPEM []byte) string {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return ""
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return ""
	}
	return csr.Subject.CommonName
}

func TestASliceTheSignerDoesNotSignFailsNoPass(t *testing.T) {
	spec := `
clusters: [{id: "alpha"}, {id: "gamma"}, {id: "beta", provider: {certificateLifetime: "1h"}}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}, {name: "web", resources: {cpu: "1"}}]},
           {consumer: "gamma", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]}]
`
	w := newWorld(t, spec)
	down := false
	beta := w.backends["beta"]
	beta.Backend = &failingSigner{Backend: beta.Backend, refuse: func(csr []byte) bool {
		cn := csrSubject(csr)
		return cn == handshake.ResourceSliceCommonName("pool", "alpha") || down && cn == handshake.ResourceSliceCommonName("web", "alpha")
	}}
	w.converge("beta", "alpha", "gamma")
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Reason != reasons.SliceNotSigned || s.Resources != "Pending" {
		t.Errorf("alpha's pool: %+v, want SliceNotSigned", s)
	}
	if w.has("clusters/alpha/inbox/beta/resourceslice-pool.status.yaml") {
		t.Error("an answer is written for a slice whose CSR was not signed")
	}
	for _, s := range []*layout.SliceStatus{w.slice("alpha", "alpha", "beta", "web"), w.slice("gamma", "gamma", "beta", "pool")} {
		if s.Resources != "Accepted" {
			t.Errorf("a slice beside the unsigned one: %+v", s)
		}
	}
	if c := condition(w.status("gamma", "gamma", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("gamma's peering: %+v", c)
	}
	// A signer down for web's renewal withdraws nothing: the answer stays.
	web := string(w.tree["clusters/alpha/inbox/beta/resourceslice-web.status.yaml"].Data)
	down = true
	w.now = w.now.Add(50 * time.Minute)
	w.pass("beta")
	if got := string(w.tree["clusters/alpha/inbox/beta/resourceslice-web.status.yaml"].Data); got != web {
		t.Error("web's answer changed while the signer was down")
	}
	if s := w.slice("beta", "alpha", "beta", "web"); s.Reason != reasons.SliceNotSigned || !strings.Contains(s.Message, "the answer given before is kept") {
		t.Errorf("web while the signer is down: %+v", s)
	}
}

func TestASliceNameLiqoCannotServeIsRefusedBeforeAnything(t *testing.T) {
	w := newWorld(t, grantSpec)
	w.converge("beta", "alpha")
	signed := w.backends["beta"].signed
	file := w.request("alpha", "beta", "system:masters", "", cpu("1"))
	w.now = w.now.Add(time.Minute)
	w.pass("beta")
	if got := w.backends["beta"].signed; got != signed {
		t.Fatalf("beta signed %d CSRs", got-signed)
	}
	s := w.slice("beta", "alpha", "beta", "system:masters")
	if s.Reason != reasons.SliceNameRefused || s.Resources != "Denied" {
		t.Errorf("status: %+v, want SliceNameRefused", s)
	}
	if w.has(layout.InboxPath("alpha", "beta", artifact.SliceAnswerFile("system:masters"))) {
		t.Error("an answer is written for a refused name")
	}
	if !w.has(file) {
		t.Fatal("the test lost its request")
	}
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Resources != "Accepted" {
		t.Errorf("pool beside the refused name: %+v", s)
	}
}
