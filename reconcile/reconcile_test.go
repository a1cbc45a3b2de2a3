package reconcile_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// countingBackend records how often a backend is asked to sign a CSR, to
// prove that a refused Tenant gets nothing signed.
type countingBackend struct {
	backend.Backend
	signed int
	// refuse, when set, is asked first: a signer that refuses a CSR.
	refuse func(csrPEM []byte) error
	// cap, when set, is the longest lifetime the signer issues, as
	// kube-controller-manager's --cluster-signing-duration caps
	// certificates.k8s.io requests.
	cap time.Duration
}

func (c *countingBackend) SignCSR(ctx context.Context, csr []byte, d time.Duration) ([]byte, error) {
	if c.refuse != nil {
		if err := c.refuse(csr); err != nil {
			return nil, err
		}
	}
	c.signed++
	if c.cap > 0 && d > c.cap {
		d = c.cap
	}
	return c.Backend.SignCSR(ctx, csr, d)
}

// world is a peering repo in memory plus one file backend per cluster.
type world struct {
	t        *testing.T
	now      time.Time
	spec     *schema.Spec
	tree     fstest.MapFS
	backends map[string]*countingBackend
	files    map[string]*file.Backend
	// pins are each cluster's pin store, saved after every pass as the
	// runner does.
	pins map[string]*pins.Store
}

func newWorld(t *testing.T, specSrc string) *world {
	t.Helper()
	spec, err := schema.Parse("peering.cue", []byte(specSrc))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	w := &world{t: t, now: now, spec: spec, tree: fstest.MapFS{}, backends: map[string]*countingBackend{}, files: map[string]*file.Backend{}, pins: map[string]*pins.Store{}}
	for _, c := range spec.Clusters {
		b, _, err := file.Init(t.TempDir()+"/state", file.InitOptions{ClusterID: c.ID, APIServer: "https://" + c.ID + ".example:6443", Now: now})
		if err != nil {
			t.Fatalf("init %s: %v", c.ID, err)
		}
		b.Now = func() time.Time { return w.now }
		w.files[c.ID] = b
		w.backends[c.ID] = &countingBackend{Backend: b}
		w.publish(c.ID)
	}
	return w
}

func (w *world) publish(id string) {
	info, err := w.files[id].ClusterInfo()
	if err != nil {
		w.t.Fatal(err)
	}
	files, err := layout.PublishFiles(w.tree, info)
	if err != nil {
		w.t.Fatal(err)
	}
	// As gitpeer init does, the cluster's directory is signed: a peer pins
	// only a cluster.yaml its key signed.
	m, err := dirmanifest.Reseal(w.tree, w.files[id].Signer(), id, layout.ClusterPath(id), files, w.now)
	if err != nil {
		w.t.Fatal(err)
	}
	if m != nil {
		files[layout.ClusterPath(id, dirmanifest.FileName)] = m
	}
	for p, data := range files {
		w.tree[p] = &fstest.MapFile{Data: data}
	}
}

// pass runs one pass of id and applies its plan to the tree.
func (w *world) pass(id string) (*reconcile.Output, *reconcile.Plan) {
	w.t.Helper()
	out, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends[id], Now: w.now, Pins: w.pins[id]})
	if err != nil {
		w.t.Fatalf("pass %s: %v", id, err)
	}
	w.pins[id] = out.Pins
	plan, err := reconcile.Diff(w.tree, id, out)
	if err != nil {
		w.t.Fatalf("diff %s: %v", id, err)
	}
	for p, data := range plan.Writes {
		if !layout.Writable(id, p) {
			w.t.Fatalf("%s wrote %s, outside what it owns", id, p)
		}
		w.tree[p] = &fstest.MapFile{Data: data}
	}
	for _, p := range plan.Deletes {
		delete(w.tree, p)
	}
	return out, plan
}

func (w *world) has(p string) bool { _, ok := w.tree[p]; return ok }

// resign re-signs the manifest of the directory holding file with writer's
// key, as a hostile (or compromised) writer would after editing it: the
// reader's checks below the signature are what is tested then.
func (w *world) resign(writer, file string) {
	w.t.Helper()
	_, dir, _ := dirmanifest.Scope(file)
	files := map[string][]byte{}
	for p, f := range w.tree {
		if rel, ok := strings.CutPrefix(p, dir+"/"); ok && rel != dirmanifest.FileName && !strings.HasPrefix(rel, layout.InboxDir+"/") {
			files[rel] = f.Data
		}
	}
	old, err := dirmanifest.Parse(dir, w.tree[dir+"/"+dirmanifest.FileName].Data)
	if err != nil {
		w.t.Fatal(err)
	}
	_, data, err := dirmanifest.Build(w.files[writer].Signer(), writer, dir, files, old.Sequence+1)
	if err != nil {
		w.t.Fatal(err)
	}
	w.tree[dir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: data}
}

func peering(t *testing.T, out *reconcile.Output, consumer, provider string) *layout.PeeringStatus {
	t.Helper()
	ps := out.Status.Find(consumer, provider)
	if ps == nil {
		t.Fatalf("no status for %s → %s", consumer, provider)
	}
	return ps
}

func condition(ps *layout.PeeringStatus, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(ps.Conditions, typ)
}

const twoClusters = `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`

func TestHandshakeTakesFourPassesThenNothing(t *testing.T) {
	w := newWorld(t, twoClusters)
	want := []struct {
		cluster string
		steps   string
		step    layout.Step
		file    string
	}{
		{"beta", "send nonce to alpha", layout.StepNonceSent, "clusters/alpha/inbox/beta/nonce.yaml"},
		{"alpha", "send tenant to beta", layout.StepTenantSent, "clusters/beta/inbox/alpha/tenant.yaml"},
		{"beta", "issue identity to alpha; accept tenant of alpha", layout.StepIdentityIssued, "clusters/alpha/inbox/beta/identity.yaml"},
		{"alpha", "accept identity of beta", layout.StepReady, "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"},
	}
	for i, s := range want {
		out, plan := w.pass(s.cluster)
		if got := strings.Join(reconcile.StepTexts(plan.Steps), "; "); got != s.steps {
			t.Errorf("pass %d (%s): steps %q, want %q", i+1, s.cluster, got, s.steps)
		}
		if !strings.HasPrefix(plan.Message, s.cluster+": "+s.steps+"\n\nGitpeer-Cluster: "+s.cluster+"\n") {
			t.Errorf("pass %d: message %q", i+1, plan.Message)
		}
		if got := peering(t, out, "alpha", "beta").Step; got != s.step {
			t.Errorf("pass %d: step %s, want %s", i+1, got, s.step)
		}
		if !w.has(s.file) {
			t.Errorf("pass %d: %s not written", i+1, s.file)
		}
	}
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if _, plan := w.pass(id); !plan.Empty() {
			t.Fatalf("extra pass of %s changed %v %v", id, plan.Writes, plan.Deletes)
		}
	}
	out, _ := w.pass("alpha")
	if c := condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("alpha not Ready: %+v", c)
	}
	if len(out.Identities) != 1 || out.Identities[0].Name != "controlplane-beta" {
		t.Fatalf("identities for kubeconfigs: %+v", out.Identities)
	}
	if got := w.backends["beta"].signed; got != 1 {
		t.Errorf("beta signed %d CSRs, want exactly 1", got)
	}
}

func TestRenderedObjectsAreLiqos(t *testing.T) {
	w := newWorld(t, twoClusters)
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		w.pass(id)
	}
	kust := string(w.tree["clusters/beta/kustomization.yaml"].Data)
	for _, r := range []string{
		"liqo/alpha/namespace-liqo-tenant-alpha.yaml",
		"liqo/alpha/secret-liqo-nonce.yaml",
		"liqo/alpha/tenant-alpha.yaml",
		"liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml",
		"liqo/alpha/clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml",
	} {
		if !strings.Contains(kust, "- "+r+"\n") {
			t.Errorf("beta's kustomization lacks %s:\n%s", r, kust)
		}
	}
	if strings.Contains(kust, "inbox") {
		t.Errorf("beta's kustomization applies an inbox file:\n%s", kust)
	}
	tenant, err := liqo.DecodeTenant(w.tree["clusters/beta/liqo/alpha/tenant-alpha.yaml"].Data)
	if err != nil {
		t.Fatal(err)
	}
	if tenant.Name != "alpha" || tenant.Namespace != "liqo-tenant-alpha" || tenant.Labels[liqo.LabelRemoteClusterID] != "alpha" {
		t.Errorf("tenant metadata %+v", tenant.ObjectMeta)
	}
	if !strings.HasPrefix(string(tenant.Spec.PublicKey), "-----BEGIN PUBLIC KEY-----\n") {
		t.Errorf("tenant publicKey is not PEM PKIX: %q", tenant.Spec.PublicKey)
	}
	id, err := liqo.DecodeIdentity(w.tree["clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"].Data)
	if err != nil {
		t.Fatal(err)
	}
	if id.Namespace != "liqo-tenant-beta" || *id.Spec.Namespace != "liqo-tenant-alpha" || id.Spec.Type != authv1beta1.ControlPlaneIdentityType ||
		id.Spec.AuthParams.APIServer != "https://beta.example:6443" {
		t.Errorf("identity %+v", id)
	}
	for p, f := range w.tree {
		if strings.Contains(string(f.Data), "creationTimestamp") || strings.Contains(string(f.Data), "PRIVATE KEY") {
			t.Errorf("%s carries creationTimestamp or a private key", p)
		}
	}
}

// tamper rewrites a Tenant in beta's inbox with f and re-encodes it.
func tamperTenant(t *testing.T, w *world, f func(*authv1beta1.Tenant)) {
	p := "clusters/beta/inbox/alpha/tenant.yaml"
	tn, err := liqo.DecodeTenant(w.tree[p].Data)
	if err != nil {
		t.Fatal(err)
	}
	f(tn)
	data, err := liqo.Encode(tn)
	if err != nil {
		t.Fatal(err)
	}
	w.tree[p] = &fstest.MapFile{Data: data}
	w.resign("alpha", p)
}

func csrWithSubject(t *testing.T, key crypto.Signer, subject pkix.Name) []byte {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestRefusedTenantGetsNothingSigned(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, w *world, tn *authv1beta1.Tenant)
		reason string
		field  string
	}{
		{"bad signature", func(_ *testing.T, _ *world, tn *authv1beta1.Tenant) { tn.Spec.Signature[0] ^= 0xff }, reasons.SignatureVerificationFailed, "spec.signature"},
		{"signature over another nonce", func(t *testing.T, w *world, tn *authv1beta1.Tenant) {
			other, _ := handshake.NewNonce()
			sig, err := handshake.SignNonce(w.files["alpha"].Signer(), other)
			if err != nil {
				t.Fatal(err)
			}
			tn.Spec.Signature = sig
		}, reasons.SignatureVerificationFailed, "spec.signature"},
		{"wrong CN", func(t *testing.T, w *world, tn *authv1beta1.Tenant) {
			tn.Spec.CSR = csrWithSubject(t, w.files["alpha"].Signer(), pkix.Name{CommonName: "mallory", Organization: []string{"liqo.io"}})
		}, reasons.InvalidCSR, "spec.csr"},
		{"CSR without O", func(t *testing.T, w *world, tn *authv1beta1.Tenant) {
			tn.Spec.CSR = csrWithSubject(t, w.files["alpha"].Signer(), pkix.Name{CommonName: "alpha"})
		}, reasons.InvalidCSR, "spec.csr"},
		{"CSR for another key", func(t *testing.T, _ *world, tn *authv1beta1.Tenant) {
			k, _ := handshake.GenerateKey()
			tn.Spec.CSR, _ = handshake.ControlPlaneCSR(k, "alpha")
		}, reasons.InvalidCSR, "spec.csr"},
		{"key not the pinned one", func(t *testing.T, w *world, tn *authv1beta1.Tenant) {
			// A consistent Tenant from an impostor: its own key signs the nonce and the CSR.
			k, _ := handshake.GenerateKey()
			n, _ := artifact.ParseNonce("nonce.yaml", w.tree["clusters/alpha/inbox/beta/nonce.yaml"].Data, "alpha")
			tn.Spec.Signature, _ = handshake.SignNonce(k, n.Value)
			tn.Spec.CSR, _ = handshake.ControlPlaneCSR(k, "alpha")
			tn.Spec.PublicKey, _ = handshake.MarshalPublicKey(k.Public())
		}, reasons.KeyNotPinned, "spec.publicKey"},
		{"TolerateNoHandshake policy", func(_ *testing.T, _ *world, tn *authv1beta1.Tenant) {
			p := authv1beta1.TolerateNoHandshake
			tn.Spec.AuthzPolicy = &p
		}, reasons.MalformedArtifact, "spec.authzPolicy"},
		{"another consumer's name", func(_ *testing.T, _ *world, tn *authv1beta1.Tenant) { tn.Name = "gamma" }, reasons.MalformedArtifact, "metadata.name"},
	}
	for _, tc := range cases {
		t.Run("refuses a tenant with "+tc.name, func(t *testing.T) {
			w := newWorld(t, twoClusters)
			w.pass("beta")
			w.pass("alpha")
			tamperTenant(t, w, func(tn *authv1beta1.Tenant) { tc.tamper(t, w, tn) })
			out, _ := w.pass("beta")
			if w.backends["beta"].signed != 0 {
				t.Fatalf("beta signed a CSR")
			}
			if w.has("clusters/alpha/inbox/beta/identity.yaml") || w.has("clusters/beta/liqo/alpha/tenant-alpha.yaml") {
				t.Fatalf("identity or tenant written for a refused tenant")
			}
			ps := peering(t, out, "alpha", "beta")
			st := condition(ps, meta.StalledCondition)
			if st == nil || st.Status != metav1.ConditionTrue || st.Reason != tc.reason {
				t.Fatalf("Stalled condition %+v, want reason %s", st, tc.reason)
			}
			if !strings.Contains(st.Message, "clusters/beta/inbox/alpha/tenant.yaml: "+tc.field+": ") {
				t.Errorf("message %q does not name the file and field %s", st.Message, tc.field)
			}
			if r := condition(ps, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionFalse {
				t.Errorf("Ready %+v", r)
			}
		})
	}
}

func TestRefusedIdentityIsNotApplied(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, w *world, id *authv1beta1.Identity)
		reason string
		field  string
	}{
		{"CA not the provider's", func(t *testing.T, w *world, id *authv1beta1.Identity) {
			ca, _, err := handshake.NewCA("mallory", now, time.Hour*24)
			if err != nil {
				t.Fatal(err)
			}
			csr, _ := handshake.ControlPlaneCSR(w.files["alpha"].Signer(), "alpha")
			id.Spec.AuthParams.CA = ca.CertPEM
			id.Spec.AuthParams.SignedCRT, _ = ca.SignCSR(csr, now, time.Hour)
		}, reasons.UntrustedCA, "spec.authParams.ca"},
		{"certificate for another key", func(t *testing.T, w *world, id *authv1beta1.Identity) {
			k, _ := handshake.GenerateKey()
			csr, _ := handshake.ControlPlaneCSR(k, "alpha")
			crt, err := w.files["beta"].SignCSR(context.Background(), csr, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			id.Spec.AuthParams.SignedCRT = crt
		}, reasons.InvalidCertificate, "spec.authParams.signedCRT"},
		{"API server not the provider's", func(_ *testing.T, _ *world, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://evil.example:6443"
		}, reasons.UntrustedAPIServer, "spec.authParams.apiServer"},
	}
	for _, tc := range cases {
		t.Run("refuses an identity with "+tc.name, func(t *testing.T) {
			w := newWorld(t, twoClusters)
			w.pass("beta")
			w.pass("alpha")
			w.pass("beta")
			p := "clusters/alpha/inbox/beta/identity.yaml"
			id, err := liqo.DecodeIdentity(w.tree[p].Data)
			if err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, w, id)
			data, _ := liqo.Encode(id)
			w.tree[p] = &fstest.MapFile{Data: data}
			w.resign("beta", p)
			out, _ := w.pass("alpha")
			if w.has("clusters/alpha/liqo/beta/identity-controlplane-beta.yaml") || len(out.Identities) != 0 {
				t.Fatal("a refused identity was rendered or handed out for a kubeconfig")
			}
			st := condition(peering(t, out, "alpha", "beta"), meta.StalledCondition)
			if st == nil || st.Reason != tc.reason || !strings.Contains(st.Message, p+": "+tc.field+": ") {
				t.Fatalf("Stalled %+v, want reason %s naming %s", st, tc.reason, tc.field)
			}
		})
	}
}

func TestPinnedFingerprintMismatchStopsTheProvider(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha", fingerprint: "sha256:`+strings.Repeat("0", 64)+`"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`)
	out, _ := w.pass("beta")
	if w.has("clusters/alpha/inbox/beta/nonce.yaml") {
		t.Fatal("nonce sent to a cluster whose key is not the pinned one")
	}
	st := condition(peering(t, out, "alpha", "beta"), meta.StalledCondition)
	if st == nil || st.Reason != reasons.KeyNotPinned {
		t.Fatalf("Stalled %+v", st)
	}
}

func TestPinnedFingerprintMatchProceeds(t *testing.T) {
	w := newWorld(t, twoClusters)
	fp, _ := handshake.Fingerprint(w.files["alpha"].Signer().Public())
	spec, err := schema.Parse("peering.cue", []byte(`
clusters: [{id: "alpha", fingerprint: "`+fp+`"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	w.spec = spec
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		w.pass(id)
	}
	if !w.has("clusters/alpha/liqo/beta/identity-controlplane-beta.yaml") {
		t.Fatal("pinned peering did not complete")
	}
}

func TestPassIsDeterministic(t *testing.T) {
	w := newWorld(t, twoClusters)
	for _, id := range []string{"beta", "alpha", "beta"} {
		w.pass(id)
	}
	a, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["alpha"], Now: now})
	if err != nil {
		t.Fatal(err)
	}
	b, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["alpha"], Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range a.Files {
		if string(b.Files[p]) != string(data) {
			t.Errorf("%s differs between two passes over the same inputs", p)
		}
	}
}

func TestPassRefusesAClusterWhoseStateIsNotPublished(t *testing.T) {
	w := newWorld(t, twoClusters)
	other, _, err := file.Init(t.TempDir()+"/s", file.InitOptions{ClusterID: "alpha", APIServer: "https://a.example", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: other, Now: now})
	if err == nil || !strings.Contains(err.Error(), "clusters/alpha/cluster.yaml: publicKey") {
		t.Fatalf("err = %v, want one naming cluster.yaml's publicKey", err)
	}
	delete(w.tree, "clusters/alpha/cluster.yaml")
	if _, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["alpha"], Now: now}); err == nil {
		t.Fatal("pass ran without the cluster's own cluster.yaml")
	}
}

// TestEveryKustomizationBuilds builds each cluster's tree with kustomize's
// API after every pass, the empty one of a fresh cluster included: what Flux
// or Argo CD applies must always build.
func TestEveryKustomizationBuilds(t *testing.T) {
	w := newWorld(t, twoClusters)
	build := func(stage string) {
		t.Helper()
		fsys := filesys.MakeFsInMemory()
		for p, f := range w.tree {
			if err := fsys.WriteFile("/"+p, f.Data); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"alpha", "beta"} {
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/clusters/"+id)
			if err != nil {
				t.Fatalf("%s: kustomize build clusters/%s: %v", stage, id, err)
			}
			for _, r := range rm.Resources() {
				if r.GetKind() == "Secret" && r.GetName() != "liqo-nonce" {
					t.Errorf("%s: clusters/%s applies Secret %s", stage, id, r.GetName())
				}
			}
		}
	}
	build("after init")
	for i, id := range []string{"beta", "alpha", "beta", "alpha"} {
		w.pass(id)
		build(fmt.Sprintf("after pass %d", i+1))
	}
}
