package attack

import (
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// grantsSpec: beta grants alpha two slices of its default class (Liqo's
// caps: cpu 4, memory 8Gi, pods 110, ephemeral-storage 20Gi), and serves
// gamma too.
const grantsSpec = `clusters: [{id: "alpha"}, {id: "gamma"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "2"}}, {name: "web", resources: {cpu: "1"}}]},
	{consumer: "gamma", provider: "beta", slices: [{name: "api", resources: {cpu: "1"}}]},
]
`

// sliceRequest is a request for slice name that whoever holds consumer's
// key signs: Liqo's slice CSR for that key, of class with resources.
func sliceRequest(t *testing.T, w *world, consumer, provider, name, class string, resources corev1.ResourceList) *authv1beta1.ResourceSlice {
	t.Helper()
	csr, err := handshake.ResourceSliceCSR(w.clusters[consumer].b.Signer(), name, consumer)
	if err != nil {
		t.Fatal(err)
	}
	return liqo.ResourceSlice(name, consumer, provider, class, resources, true, csr)
}

func cpus(n string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}
}

// answerOf decodes the answer at file on main.
func answerOf(t *testing.T, w *world, file string) *authv1beta1.ResourceSlice {
	t.Helper()
	rs, err := artifact.DecodeSlice(file, w.mustShow(file))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestAConsumerGetsNoSliceBeyondTheSpec: alpha, holding its own key,
// signs into beta's inbox requests the spec does not approve: a slice it
// does not list (extra), pool with twice the cpu the spec gives it (still
// within beta's caps), and web in a class beta does not offer. beta
// denies each with Liqo's ResourceSliceResourcesDenied and gitpeer's
// reason, signs nothing, and alpha's reconciler renders none of them: its
// applied branch never holds a slice Identity for extra.
func TestAConsumerGetsNoSliceBeyondTheSpec(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	w.forbid("alpha", "clusters/alpha/liqo/beta/identity-resourceslice-extra.yaml", "")
	w.forbid("alpha", "clusters/alpha/liqo/beta/resourceslice-extra.yaml", "")
	before := w.signedAll()
	alpha := w.clusters["alpha"].b.Signer()
	w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: request slices from beta\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
		a.write("clusters/beta/inbox/alpha/resourceslice-extra.yaml", encode(t, sliceRequest(t, w, "alpha", "beta", "extra", "", cpus("1"))))
		a.write(poolRequest, encode(t, sliceRequest(t, w, "alpha", "beta", "pool", "", cpus("4"))))
		a.write("clusters/beta/inbox/alpha/resourceslice-web.yaml", encode(t, sliceRequest(t, w, "alpha", "beta", "web", "gpu", cpus("1"))))
		a.resign(alpha, "alpha", "clusters/beta/inbox/alpha")
	})
	w.pass("beta")
	w.nothingSigned(before)
	ps := w.peering("beta", "alpha", "beta")
	for name, why := range map[string]string{"extra": reasons.SliceNotInSpec, "pool": reasons.SliceDiffersFromSpec, "web": reasons.SliceDiffersFromSpec} {
		if s := sliceOf(ps, name); s.Resources != "Denied" || s.Reason != why {
			t.Errorf("beta's status of %s: %+v, want Denied %s\n%s", name, s, why, describe(ps))
		}
		ans := answerOf(t, w, layout.InboxPath("alpha", "beta", artifact.SliceAnswerFile(name)))
		c := artifact.SliceCondition(ans, authv1beta1.ResourceSliceConditionTypeResources)
		if c == nil || c.Status != authv1beta1.ResourceSliceConditionDenied || c.Reason != liqo.ReasonSliceResourcesDenied || !strings.HasPrefix(c.Message, why+": ") {
			t.Errorf("beta's answer to %s: Resources %+v, want Denied (%s) saying %s", name, c, liqo.ReasonSliceResourcesDenied, why)
		}
		if ans.Status.AuthParams != nil || ans.Status.Resources != nil {
			t.Errorf("beta's denial of %s carries a certificate or resources", name)
		}
	}
	assertContains(t, "pool's denial", sliceOf(ps, "pool").Message, "resources {cpu=4}, the spec's are {cpu=2}")
	assertContains(t, "web's denial", sliceOf(ps, "web").Message, "class gpu, the spec's is default")
	w.mustBeReady("gamma", "beta")

	// alpha's honest reconciler renders none of it and puts its own
	// requests back, which beta grants again.
	w.converge()
	for _, f := range w.listTree("main", "clusters/alpha/liqo/beta") {
		if strings.Contains(f, "extra") {
			t.Errorf("alpha renders %s", f)
		}
	}
	if s := sliceOf(w.peering("alpha", "alpha", "beta"), "pool"); s.Resources != "Accepted" {
		t.Errorf("pool once alpha requests it as the spec says: %+v", s)
	}
	noTreeFindings(t, w.verify())
}

// TestSlicesOverTheClassTotalAreDenied: the spec gives alpha three slices
// of beta's default class, each within Liqo's cap of 4 cpu, 6 cpu in all.
// beta grants them in the spec's order while the class total holds and
// denies the one that would pass it (SliceOverClassTotal, on both sides);
// it is never signed nor rendered.
func TestSlicesOverTheClassTotalAreDenied(t *testing.T) {
	t.Parallel()
	w := fresh(t, `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [
	{name: "first", resources: {cpu: "3"}},
	{name: "second", resources: {cpu: "2"}},
	{name: "third", resources: {cpu: "1", memory: "8Gi"}},
]}]
`)
	w.forbid("alpha", "clusters/alpha/liqo/beta/identity-resourceslice-second.yaml", "")
	w.forbid("alpha", "clusters/alpha/liqo/beta/resourceslice-second.yaml", "")
	w.converge()
	for _, side := range []string{"beta", "alpha"} {
		ps := w.peering(side, "alpha", "beta")
		for name, want := range map[string]string{"first": "Accepted", "second": "Denied", "third": "Accepted"} {
			if s := sliceOf(ps, name); s.Resources != want {
				t.Errorf("%s's status of %s: %+v, want %s", side, name, s, want)
			}
		}
		s := sliceOf(ps, "second")
		if s.Reason != reasons.SliceOverClassTotal {
			t.Errorf("%s's status of second: %+v, want SliceOverClassTotal", side, s)
		}
		assertContains(t, side+"'s status of second", s.Message, "cpu: 2 requested and 3 already granted in class default make 5, over its cap 4")
	}
	if n := w.signed("beta"); n != 3 {
		t.Errorf("beta signed %d certificates, want 3 (its Identity, first, third)", n)
	}
	noTreeFindings(t, w.verify())
}

// TestAHostileSliceNameDoesNotStallTheProvider: alpha signs into beta's
// inbox a request named "system:masters", with Liqo's slice CSR for it (a
// certificate for "system:masters-…", which the signer refuses). beta
// refuses the name before anything else (SliceNameRefused, no answer, no
// signature) and its pass goes on: the slice the spec then adds for gamma
// is granted in the same pass.
func TestAHostileSliceNameDoesNotStallTheProvider(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	alpha := w.clusters["alpha"].b.Signer()
	w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: request slices from beta\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
		a.write("clusters/beta/inbox/alpha/resourceslice-system:masters.yaml", encode(t, sliceRequest(t, w, "alpha", "beta", "system:masters", "", cpus("1"))))
		a.resign(alpha, "alpha", "clusters/beta/inbox/alpha")
	})
	w.attack("admin <admin@example.com>", "spec: gamma asks beta for a second slice\n", func(a *writer) {
		a.edit("peering.cue", `{name: "api", resources: {cpu: "1"}}`, `{name: "api", resources: {cpu: "1"}}, {name: "jobs", resources: {cpu: "1"}}`)
	})
	signedAlpha := w.signed("beta")
	w.pass("gamma")
	w.pass("beta")
	if n := w.signed("beta") - signedAlpha; n != 1 {
		t.Errorf("beta signed %d certificates, want 1 (gamma's jobs)", n)
	}
	s := sliceOf(w.peering("beta", "alpha", "beta"), "system:masters")
	if s.Reason != reasons.SliceNameRefused || s.Resources != "Denied" {
		t.Errorf("beta's status of the hostile name: %+v, want SliceNameRefused\n%s", s, describe(w.peering("beta", "alpha", "beta")))
	}
	if _, ok := w.show("clusters/alpha/inbox/beta/resourceslice-system:masters.status.yaml"); ok {
		t.Error("beta answered the hostile name")
	}
	if s := sliceOf(w.peering("beta", "gamma", "beta"), "jobs"); s.Resources != "Accepted" {
		t.Errorf("gamma's new slice beside alpha's hostile request: %+v", s)
	}
	w.pass("gamma")
	w.mustBeReady("gamma", "beta")
	w.mustBeReady("alpha", "beta")
}

// TestVerifyNamesAGrantOutsideTheSpec: an accepted answer for a slice the
// spec does not list, made as a provider's old or compromised reconciler
// would (a real certificate of beta's CA for alpha's key, answering a
// request alpha signed, both directories re-signed by their writers' keys):
// every signature holds, and verify still names the grant and what alpha
// renders of it.
func TestVerifyNamesAGrantOutsideTheSpec(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	req := sliceRequest(t, w, "alpha", "beta", "extra", "", cpus("1"))
	beta := w.clusters["beta"].b
	crt, err := beta.SignCSR(ctx, req.Spec.CSR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ans := req.DeepCopy()
	ans.Status = authv1beta1.ResourceSliceStatus{
		Conditions: []authv1beta1.ResourceSliceCondition{
			{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: liqo.ReasonSliceAuthAccepted},
			{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: liqo.ReasonSliceResourcesAccepted},
		},
		Resources:  policy.Decide(nil, authv1beta1.TenantConditionActive, policy.Request{Resources: req.Spec.Resources}).Granted,
		AuthParams: &authv1beta1.AuthParams{APIServer: "https://beta.gitpeer.test:6443", CA: beta.CABundle(), SignedCRT: crt},
	}
	const (
		answer   = "clusters/alpha/inbox/beta/resourceslice-extra.status.yaml"
		rendered = "clusters/alpha/liqo/beta/resourceslice-extra.yaml"
		identity = "clusters/alpha/liqo/beta/identity-resourceslice-extra.yaml"
	)
	w.attack("gitpeer (beta) <beta@gitpeer.invalid>", "beta: answer slice extra of alpha\n\nGitpeer-Cluster: beta\n", func(a *writer) {
		a.write("clusters/beta/inbox/alpha/resourceslice-extra.yaml", encode(t, req))
		a.resign(w.clusters["alpha"].b.Signer(), "alpha", "clusters/beta/inbox/alpha")
		a.write(answer, encode(t, ans))
		a.resign(beta.Signer(), "beta", "clusters/alpha/inbox/beta")
		a.write(rendered, encode(t, req))
		a.write(identity, encode(t, liqo.ResourceSliceIdentity("extra", "beta", *ans.Status.AuthParams)))
	})
	vf := w.verify()
	mustFind(t, vf, answer, reasons.SliceNotInSpec, "")
	mustFind(t, vf, rendered, reasons.SliceNotInSpec, "")
	mustFind(t, vf, identity, reasons.SliceNotInSpec, "")
	for _, f := range vf {
		if f.File == answer && f.Commit == "" && f.Reason != reasons.SliceNotInSpec {
			t.Errorf("the grant has a finding other than its spec's: %s", f)
		}
	}
	// beta's next pass withdraws it: the request is not in the spec.
	w.pass("beta")
	if a := answerOf(t, w, answer); a.Status.AuthParams != nil {
		t.Error("beta's next pass keeps the grant outside the spec")
	}
}

// TestAHiddenRequestDoesNotKeepASliceTheSpecRemoved: in one commit a
// writer removes pool from the spec and deletes alpha's request for it
// (unsigned), so that beta, which keeps a decision while its request
// cannot be read, would keep granting pool. beta decides the kept answer
// again: pool is denied (SliceNotInSpec) and its certificate not put
// forward, while web, whose request is intact, stays granted byte for
// byte. alpha's next pass withdraws pool's request and beta its answer.
func TestAHiddenRequestDoesNotKeepASliceTheSpecRemoved(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	web := w.mustShow("clusters/alpha/inbox/beta/resourceslice-web.status.yaml")
	before := w.signedAll()
	w.attack("mallory <mallory@example.com>", "spec: drop slice pool\n", func(a *writer) {
		a.edit("peering.cue", `{name: "pool", resources: {cpu: "2"}}, `, "")
		a.remove(poolRequest)
	})
	w.pass("beta")
	w.nothingSigned(before)
	if ans := answerOf(t, w, poolAnswer); ans.Status.AuthParams != nil || ans.Status.Resources != nil {
		t.Fatalf("beta still grants pool, removed from the spec: %+v", ans.Status)
	}
	ps := w.peering("beta", "alpha", "beta")
	if s := sliceOf(ps, "pool"); s.Resources != "Denied" || s.Reason != reasons.SliceNotInSpec {
		t.Errorf("beta's status of pool: %+v, want Denied SliceNotInSpec\n%s", s, describe(ps))
	}
	if got := w.mustShow("clusters/alpha/inbox/beta/resourceslice-web.status.yaml"); string(got) != string(web) {
		t.Error("web's answer changed")
	}
	w.converge()
	if _, ok := w.show(poolAnswer); ok {
		t.Error("pool's answer outlives alpha's withdrawal of its request")
	}
	if _, ok := w.show(poolIdentity); ok {
		t.Error("alpha still renders pool's Identity")
	}
	if s := sliceOf(w.peering("alpha", "alpha", "beta"), "web"); s.Resources != "Accepted" {
		t.Errorf("web: %+v", s)
	}
}
