package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

func (w *world) setSpec(src string) {
	w.t.Helper()
	spec, err := schema.Parse("peering.cue", []byte(src))
	if err != nil {
		w.t.Fatalf("spec: %v", err)
	}
	w.spec = spec
}

// converge runs alternating passes (providers first) until a full round
// changes nothing, and returns the number of passes that committed.
func (w *world) converge(order ...string) int {
	w.t.Helper()
	commits := 0
	for round := 0; round < 10; round++ {
		changed := false
		for _, id := range order {
			if _, plan := w.pass(id); !plan.Empty() {
				commits++
				changed = true
			}
		}
		if !changed {
			return commits
		}
	}
	w.t.Fatal("no convergence in 10 rounds")
	return commits
}

func (w *world) slice(cluster, consumer, provider, name string) *layout.SliceStatus {
	w.t.Helper()
	st, err := layout.ReadStatus(w.tree, cluster)
	if err != nil {
		w.t.Fatal(err)
	}
	ps := st.Find(consumer, provider)
	if ps == nil {
		w.t.Fatalf("%s has no status for %s → %s", cluster, consumer, provider)
	}
	for i := range ps.Slices {
		if ps.Slices[i].Name == name {
			return &ps.Slices[i]
		}
	}
	w.t.Fatalf("%s has no status for slice %s: %+v", cluster, name, ps.Slices)
	return nil
}

func (w *world) status(cluster, consumer, provider string) *layout.PeeringStatus {
	st, err := layout.ReadStatus(w.tree, cluster)
	if err != nil {
		w.t.Fatal(err)
	}
	return st.Find(consumer, provider)
}

const slicesSpec = `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [
	{name: "pool", resources: {cpu: "2", memory: "4Gi"}},
	{name: "huge", resources: {cpu: "16"}},
	{name: "novn", resources: {pods: "30"}, createVirtualNode: false},
]}]
`

// TestSlicesAreDecidedAndRendered: the slice requests go out with the
// Tenant and are answered with the Identity, so a peering with slices takes
// the handshake's four passes, a denial's reason included.
func TestSlicesAreDecidedAndRendered(t *testing.T) {
	w := newWorld(t, slicesSpec)
	want := []struct {
		cluster, steps string
		step           layout.Step
	}{
		{"beta", "send nonce to alpha", layout.StepNonceSent},
		{"alpha", "send tenant to beta; request slice huge from beta; request slice novn from beta; request slice pool from beta", layout.StepTenantSent},
		{"beta", "issue identity to alpha; answer slice huge of alpha; answer slice novn of alpha; answer slice pool of alpha; accept tenant of alpha", layout.StepIdentityIssued},
		{"alpha", "accept identity of beta; accept slice novn of beta; accept slice pool of beta", layout.StepReady},
	}
	for i, s := range want {
		out, plan := w.pass(s.cluster)
		if got := strings.Join(reconcile.StepTexts(plan.Steps), "; "); got != s.steps {
			t.Errorf("pass %d (%s): steps %q, want %q", i+1, s.cluster, got, s.steps)
		}
		if got := peering(t, out, "alpha", "beta").Step; got != s.step {
			t.Errorf("pass %d (%s): step %s, want %s", i+1, s.cluster, got, s.step)
		}
		if i == 1 {
			// Sent with the Tenant, not yet decided.
			if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Pending" || !strings.Contains(s.Message, "waiting for beta to decide") {
				t.Errorf("pass 2: pool %+v", s)
			}
		}
	}
	if c := condition(w.status("alpha", "alpha", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("alpha not Ready after 4 passes: %+v", c)
	}
	pool := w.slice("alpha", "alpha", "beta", "pool")
	if pool.Authentication != "Accepted" || pool.Resources != "Accepted" {
		t.Errorf("pool: %+v", pool)
	}
	huge := w.slice("alpha", "alpha", "beta", "huge")
	if huge.Resources != "Denied" || huge.Reason != liqo.ReasonSliceResourcesDenied || !strings.Contains(huge.Message, "cpu: requested 16 exceeds the cap 4 of class default") {
		t.Errorf("huge: %+v", huge)
	}
	if got := w.slice("beta", "alpha", "beta", "huge"); got.Resources != "Denied" {
		t.Errorf("provider's view of huge: %+v", got)
	}
	// Only the control plane and the two granted slices were signed.
	if got := w.backends["beta"].signed; got != 3 {
		t.Errorf("beta signed %d CSRs, want 3", got)
	}
	answer, err := liqo.DecodeResourceSlice(w.tree["clusters/alpha/inbox/beta/resourceslice-huge.status.yaml"].Data)
	if err != nil {
		t.Fatal(err)
	}
	if answer.Status.AuthParams != nil {
		t.Error("a denied slice carries a certificate")
	}
	rsFile := "clusters/alpha/liqo/beta/resourceslice-pool.yaml"
	idFile := "clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml"
	if !w.has(rsFile) || !w.has(idFile) || w.has("clusters/alpha/liqo/beta/resourceslice-huge.yaml") {
		t.Fatalf("rendered slices wrong: %v", keys(w.tree, "clusters/alpha/liqo/"))
	}
	rs, _ := liqo.DecodeResourceSlice(w.tree[rsFile].Data)
	if rs.Annotations[liqo.AnnotationCreateVirtualNode] != "true" || rs.Labels[liqo.LabelReplication] != "true" || rs.Labels[liqo.LabelRemoteID] != "beta" ||
		string(*rs.Spec.ConsumerClusterID) != "alpha" || string(*rs.Spec.ProviderClusterID) != "beta" || rs.Namespace != "liqo-tenant-beta" {
		t.Errorf("rendered ResourceSlice %+v", rs)
	}
	novn, _ := liqo.DecodeResourceSlice(w.tree["clusters/alpha/liqo/beta/resourceslice-novn.yaml"].Data)
	if _, ok := novn.Annotations[liqo.AnnotationCreateVirtualNode]; ok {
		t.Error("createVirtualNode: false still annotates the slice")
	}
	id, _ := liqo.DecodeIdentity(w.tree[idFile].Data)
	if id.Spec.Type != authv1beta1.ResourceSliceIdentityType || id.Labels[liqo.LabelResourceSliceName] != "pool" || id.Name != "resourceslice-pool" {
		t.Errorf("slice Identity %+v", id)
	}
	key, _ := handshake.MarshalPublicKey(w.files["alpha"].Signer().Public())
	_, der, _ := handshake.ParsePublicKey(key)
	if err := handshake.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, w.files["beta"].CABundle(), der,
		handshake.ResourceSliceCommonName("pool", "alpha"), "alpha", w.now); err != nil {
		t.Errorf("slice certificate: %v", err)
	}
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Errorf("%d further commits after convergence", n)
	}
}

func keys(tree fstest.MapFS, prefix string) []string {
	var out []string
	for k := range tree {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

func TestChangingASliceReDecidesAndRemovingItWithdrawsIt(t *testing.T) {
	w := newWorld(t, slicesSpec)
	w.converge("beta", "alpha")
	w.setSpec(strings.Replace(slicesSpec, `cpu: "2", memory: "4Gi"`, `cpu: "8"`, 1))
	// A change is answered after two passes, the consumer's request and the
	// provider's decision; the consumer's next pass reads the decision.
	granted := w.tree["clusters/alpha/liqo/beta/resourceslice-pool.yaml"].Data
	if _, plan := w.pass("alpha"); !strings.HasPrefix(plan.Message, "alpha: request slice pool from beta\n") {
		t.Errorf("the change's first pass: %q", plan.Message)
	}
	// Until beta answers the change, the slice it granted stays applied:
	// dropping it would have the GitOps engine prune the slice and its
	// virtual node, then create them again.
	if got := w.tree["clusters/alpha/liqo/beta/resourceslice-pool.yaml"].Data; len(granted) == 0 || string(got) != string(granted) {
		t.Errorf("the granted slice while its change waits for beta:\n%s\nwant\n%s", got, granted)
	}
	if !w.has("clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml") {
		t.Error("the granted slice's Identity was dropped while its change waits for beta")
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Pending" || !strings.Contains(s.Message, "stays applied") {
		t.Errorf("pool while its change waits for beta: %+v", s)
	}
	if _, plan := w.pass("beta"); !strings.HasPrefix(plan.Message, "beta: answer slice pool of alpha\n") {
		t.Errorf("the change's second pass: %q", plan.Message)
	}
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Resources != "Denied" || !strings.Contains(s.Message, "cpu: requested 8 exceeds the cap 4 of class default") {
		t.Errorf("beta's decision on pool grown past the cap: %+v", s)
	}
	if n := w.converge("alpha", "beta"); n != 1 {
		t.Errorf("%d commits to read the decision, want 1 (alpha's status)", n)
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Denied" || !strings.Contains(s.Message, "cpu: requested 8 exceeds the cap 4") {
		t.Fatalf("pool after growing past the cap: %+v", s)
	}
	if w.has("clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml") {
		t.Fatal("a denied slice keeps its Identity")
	}
	w.setSpec(strings.Replace(slicesSpec, `{name: "pool", resources: {cpu: "2", memory: "4Gi"}},`, "", 1))
	w.converge("beta", "alpha")
	for k := range w.tree {
		if strings.Contains(k, "resourceslice-pool") {
			t.Errorf("%s survives the slice's removal", k)
		}
	}
}

func TestOpenPolicyPinsTheFirstKey(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", policy: "open"}]
`)
	out, _ := w.pass("beta")
	w.pass("alpha")
	out, _ = w.pass("beta")
	r := condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "open policy: first key sha256:") {
		t.Fatalf("Ready %+v", r)
	}
	if n := w.converge("beta", "alpha"); n != 1 {
		t.Fatalf("%d commits to settle the open peering, want 1 (alpha accepts the identity)", n)
	}
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Fatalf("%d commits after the open peering settled", n)
	}
	// alpha itself (compromised) sends a Tenant with another key: refused,
	// and the accepted peering is kept, nothing signed for the new key.
	signed := w.backends["beta"].signed
	tamperTenant(t, w, func(tn *authv1beta1.Tenant) {
		k, _ := handshake.GenerateKey()
		n, _ := artifact.ParseNonce("nonce.yaml", w.tree["clusters/alpha/inbox/beta/nonce.yaml"].Data, "alpha")
		tn.Spec.Signature, _ = handshake.SignNonce(k, n.Value)
		tn.Spec.CSR, _ = handshake.ControlPlaneCSR(k, "alpha")
		tn.Spec.PublicKey, _ = handshake.MarshalPublicKey(k.Public())
	})
	out, _ = w.pass("beta")
	r = condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition)
	if r == nil || !strings.Contains(r.Message, "kept the accepted Tenant") || !strings.Contains(r.Message, reasons.KeyNotPinned) {
		t.Fatalf("impostor key under open policy: %+v", r)
	}
	if w.backends["beta"].signed != signed {
		t.Fatal("a certificate was signed for the impostor's key")
	}
}

func TestTokenPolicy(t *testing.T) {
	spec := `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", policy: "token"}]
`
	cases := []struct {
		name          string
		providerToken string
		consumerToken string
		reason        string
	}{
		{"accepts the shared token", "s3cret", "s3cret", ""},
		{"refuses a wrong token as Refused", "s3cret", "guess", artifact.ReasonTokenRefused},
		{"refuses a missing token as EmptyRefused", "s3cret", "", artifact.ReasonTokenEmptyRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, spec)
			if err := w.files["beta"].SetToken(context.Background(), "alpha", []byte(tc.providerToken)); err != nil {
				t.Fatal(err)
			}
			if tc.consumerToken != "" {
				if err := w.files["alpha"].SetToken(context.Background(), "beta", []byte(tc.consumerToken)); err != nil {
					t.Fatal(err)
				}
			}
			w.pass("beta")
			w.pass("alpha")
			out, _ := w.pass("beta")
			ps := peering(t, out, "alpha", "beta")
			if tc.reason == "" {
				if r := condition(ps, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "token accepted") {
					t.Fatalf("Ready %+v", r)
				}
				if strings.Contains(string(w.tree["clusters/beta/inbox/alpha/tenant.yaml"].Data), tc.providerToken) {
					t.Fatal("the token itself is in Git")
				}
				return
			}
			if st := condition(ps, meta.StalledCondition); st == nil || st.Reason != tc.reason {
				t.Fatalf("Stalled %+v, want %s", st, tc.reason)
			}
			if w.has("clusters/alpha/inbox/beta/identity.yaml") || w.backends["beta"].signed != 0 {
				t.Fatal("signed for a refused token")
			}
		})
	}
}

func TestCordonKeepsSlicesAndDrainUnbinds(t *testing.T) {
	w := newWorld(t, slicesSpec)
	w.converge("beta", "alpha")
	cordoned := strings.Replace(slicesSpec, `provider: "beta",`, `provider: "beta", tenantCondition: "Cordoned",`, 1)
	w.setSpec(strings.Replace(cordoned, `{name: "novn"`, `{name: "late", resources: {cpu: "1"}}, {name: "novn"`, 1))
	w.converge("beta", "alpha")
	tn, _ := liqo.DecodeTenant(w.tree["clusters/beta/liqo/alpha/tenant-alpha.yaml"].Data)
	if tn.Spec.TenantCondition != authv1beta1.TenantConditionCordoned {
		t.Fatalf("tenant condition %q", tn.Spec.TenantCondition)
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Accepted" {
		t.Errorf("cordon dropped an existing slice: %+v", s)
	}
	if s := w.slice("alpha", "alpha", "beta", "late"); s.Resources != "Denied" || !strings.Contains(s.Message, "cordoned") {
		t.Errorf("cordon accepted a new slice: %+v", s)
	}
	w.setSpec(strings.Replace(slicesSpec, `provider: "beta",`, `provider: "beta", tenantCondition: "Drained",`, 1))
	w.converge("beta", "alpha")
	if w.has("clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml") ||
		w.has("clusters/beta/liqo/alpha/clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml") {
		t.Error("a drained tenant keeps its bindings")
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Denied" || !strings.Contains(s.Message, "drained") {
		t.Errorf("drain kept a slice: %+v", s)
	}
	if w.has("clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml") {
		t.Error("a drained slice keeps its Identity")
	}
}

func TestRevocationDrainsThenWithdrawsEverything(t *testing.T) {
	w := newWorld(t, slicesSpec)
	w.converge("beta", "alpha")
	outboxes := []string{"clusters/beta/inbox/alpha/manifest.yaml", "clusters/alpha/inbox/beta/manifest.yaml"}
	before := map[string]uint64{}
	for _, f := range outboxes {
		m, err := dirmanifest.Parse(f, w.tree[f].Data)
		if err != nil {
			t.Fatal(err)
		}
		before[f] = m.Sequence
	}
	w.setSpec(`clusters: [{id: "alpha"}, {id: "beta"}]`)

	_, plan := w.pass("beta")
	tn, err := liqo.DecodeTenant(w.tree["clusters/beta/liqo/alpha/tenant-alpha.yaml"].Data)
	if err != nil || tn.Spec.TenantCondition != authv1beta1.TenantConditionDrained {
		t.Fatalf("first revocation pass: tenant %v %v", tn, err)
	}
	for k := range w.tree {
		if strings.Contains(k, "rolebinding") {
			t.Errorf("first revocation pass leaves %s", k)
		}
	}
	// While draining, the provider's API server admits no slice of alpha.
	if vap := w.tree["clusters/beta/liqo/alpha/validatingadmissionpolicy-gitpeer-resourceslices-alpha.yaml"]; vap == nil {
		t.Errorf("first revocation pass: the admission policy is gone")
	} else if !strings.Contains(strings.Join(strings.Fields(string(vap.Data)), " "), "object.metadata.name in []") {
		t.Errorf("first revocation pass: the admission policy admits slices:\n%s", vap.Data)
	}
	if ps := w.status("beta", "alpha", "beta"); ps == nil || ps.Step != layout.StepRevoking {
		t.Errorf("provider status while revoking: %+v", ps)
	}
	if !strings.Contains(plan.Message, "beta: ") {
		t.Errorf("message %q", plan.Message)
	}

	out, _ := w.pass("alpha")
	if len(out.Revoked) != 1 || out.Revoked[0] != "beta" {
		t.Errorf("alpha does not drop its kubeconfig for beta: %v", out.Revoked)
	}
	// Within the drain period the drained Tenant stays for the GitOps
	// engine to apply; withdrawing it now would race Liqo's teardown.
	w.now = w.now.Add(reconcile.DefaultDrainPeriod - time.Second)
	w.pass("beta")
	if tn, err := liqo.DecodeTenant(w.tree["clusters/beta/liqo/alpha/tenant-alpha.yaml"].Data); err != nil || tn.Spec.TenantCondition != authv1beta1.TenantConditionDrained {
		t.Fatalf("within the drain period: tenant %v %v", tn, err)
	}
	if ps := w.status("beta", "alpha", "beta"); ps == nil || ps.Step != layout.StepRevoking || ps.RevokingSince == nil {
		t.Errorf("provider status within the drain period: %+v", ps)
	}
	w.now = w.now.Add(time.Second)
	w.pass("beta")
	// Each outbox is withdrawn by a signed tombstone: its manifest alone,
	// listing no files, above every sequence signed there before.
	for k := range w.tree {
		if _, tombstone := before[k]; (strings.Contains(k, "/inbox/") && !tombstone) || strings.Contains(k, "/liqo/") {
			t.Errorf("%s survives the revocation", k)
		}
	}
	for _, f := range outboxes {
		m, err := dirmanifest.Parse(f, w.tree[f].Data)
		if err != nil || !m.Tombstone() || m.Sequence <= before[f] {
			t.Errorf("%s after the revocation: %+v, %v; want a tombstone above sequence %d", f, m, err, before[f])
		}
	}
	if ps := w.status("beta", "alpha", "beta"); ps != nil {
		t.Errorf("provider still reports the revoked peering: %+v", ps)
	}
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Errorf("%d commits after revocation settled", n)
	}
}

func TestAnExpiredNonceIsReplacedAndItsTenantRefused(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta", provider: {nonceLifetime: "1h"}}]
peerings: [{consumer: "alpha", provider: "beta"}]
`)
	w.pass("beta")
	first, _ := artifact.ParseNonce("nonce.yaml", w.tree["clusters/alpha/inbox/beta/nonce.yaml"].Data, "alpha")
	w.now = w.now.Add(2 * time.Hour)
	w.pass("alpha") // answers the first epoch, which expired
	out, _ := w.pass("beta")
	if st := condition(peering(t, out, "alpha", "beta"), meta.StalledCondition); st == nil || st.Reason != reasons.NonceExpired {
		t.Fatalf("Stalled %+v", st)
	}
	n, err := artifact.ParseNonce("nonce.yaml", w.tree["clusters/alpha/inbox/beta/nonce.yaml"].Data, "alpha")
	if err != nil || n.Epoch <= first.Epoch || n.Value == first.Value {
		t.Fatalf("fresh nonce: %+v after %+v, %v", n, first, err)
	}
	if w.backends["beta"].signed != 0 {
		t.Fatal("signed a Tenant over an expired nonce")
	}
	w.converge("beta", "alpha")
	if ps := w.status("alpha", "alpha", "beta"); ps.Step != layout.StepReady {
		t.Fatalf("after a fresh nonce: %+v", ps)
	}
	// Once settled, the nonce expiring changes nothing.
	w.now = w.now.Add(48 * time.Hour)
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Errorf("%d commits once the settled nonce expired", n)
	}
}

func TestReHandshakeAfterKeyLossNeedsNoCleanup(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta", provider: {nonceLifetime: "1h"}}]
peerings: [{consumer: "alpha", provider: "beta"}]
`)
	w.converge("beta", "alpha")
	// alpha loses its state dir: a new key, republished through review.
	b, _, err := file.Init(t.TempDir()+"/state", file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: w.now})
	if err != nil {
		t.Fatal(err)
	}
	b.Now = func() time.Time { return w.now }
	w.files["alpha"], w.backends["alpha"] = b, &countingBackend{Backend: b}
	w.publish("alpha")
	w.now = w.now.Add(2 * time.Hour)
	w.converge("beta", "alpha")
	// beta pinned alpha's old key: a new key is refused until beta's admin
	// re-pins (gitpeer trust --peer alpha --fingerprint …).
	if ps := w.status("beta", "alpha", "beta"); ps == nil || !strings.Contains(fmt.Sprint(ps.Conditions), reasons.KeyChanged) {
		t.Fatalf("a new key was accepted without re-pinning: %+v", ps)
	}
	info, _ := b.ClusterInfo()
	pin := w.pins["beta"].Peer("alpha")
	pin.Repin, pin.Fingerprint = true, info.Fingerprint
	w.converge("beta", "alpha")
	ps := w.status("alpha", "alpha", "beta")
	if ps == nil || ps.Step != layout.StepReady {
		t.Fatalf("after key loss: %+v", ps)
	}
	id, _ := liqo.DecodeIdentity(w.tree["clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"].Data)
	key, _ := handshake.MarshalPublicKey(b.Signer().Public())
	_, der, _ := handshake.ParsePublicKey(key)
	if err := handshake.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, w.files["beta"].CABundle(), der, "alpha", "liqo.io", w.now); err != nil {
		t.Fatalf("identity is not for the new key: %v", err)
	}
}

func TestCertificatesAreRenewedWithAThirdOfTheirLifetimeLeft(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta", provider: {certificateLifetime: "300h"}}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]}]
`)
	w.converge("beta", "alpha")
	first := string(w.tree["clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"].Data)
	_, notAfter, _ := handshake.CertificateValidity(mustIdentityCert(t, first))
	if life := notAfter.Sub(w.now); life < 299*time.Hour || life > 301*time.Hour {
		t.Fatalf("certificate lifetime %s, want the provider's 300h", life)
	}
	// Halfway: nothing to do.
	w.now = w.now.Add(150 * time.Hour)
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Fatalf("%d commits at half the lifetime", n)
	}
	// Past two thirds (and any jitter): both certificates are re-signed, from
	// the same CSRs, and the consumer takes them up.
	w.now = w.now.Add(60 * time.Hour)
	csr := string(w.tree["clusters/beta/inbox/alpha/tenant.yaml"].Data)
	_, plan := w.pass("beta")
	if !strings.Contains(plan.Message, "renew identity of alpha") {
		t.Fatalf("renewal pass: %q", plan.Message)
	}
	w.converge("beta", "alpha")
	second := string(w.tree["clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"].Data)
	if second == first {
		t.Fatal("consumer kept the old certificate")
	}
	if string(w.tree["clusters/beta/inbox/alpha/tenant.yaml"].Data) != csr {
		t.Fatal("renewal changed the Tenant (Liqo requires a stable CSR)")
	}
	if w.backends["beta"].signed != 4 {
		t.Errorf("signed %d, want 4 (two certificates, twice)", w.backends["beta"].signed)
	}
}

// TestCertificatesAreReSignedOnceAtTheirRenewalPoint steps the clock through
// a certificate's life, a pass of each side at every step, for lifetimes from
// the shortest the spec accepts to a year. The renewal point is a third of
// the lifetime asked for before notAfter, brought forward by the jitter (up
// to a tenth): the five minutes NotBefore is backdated for clock skew are not
// lifetime. Before that point no pass commits; at the first pass after it the
// provider re-signs and the consumer takes the certificate up, once; after
// it, nothing again until the new certificate's own point. (With the
// backdating counted, a 90s certificate was due the moment it was signed and
// every pass committed.)
func TestCertificatesAreReSignedOnceAtTheirRenewalPoint(t *testing.T) {
	const identity = "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"
	for _, life := range []time.Duration{schema.MinCertificateLifetime, 45 * time.Minute, 6 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour} {
		t.Run(life.String(), func(t *testing.T) {
			w := newWorld(t, fmt.Sprintf(`
clusters: [{id: "alpha"}, {id: "beta", provider: {certificateLifetime: %q}}]
peerings: [{consumer: "alpha", provider: "beta"}]
`, life))
			w.converge("beta", "alpha")
			step := (life / 40).Truncate(time.Second) // certificates count whole seconds
			for round := 0; round < 2; round++ {
				issued := w.now
				crt := mustIdentityCert(t, string(w.tree[identity].Data))
				notBefore, notAfter, err := handshake.CertificateValidity(crt)
				if err != nil {
					t.Fatal(err)
				}
				if got := notAfter.Sub(issued); got != life {
					t.Fatalf("round %d: certificate valid for %s after signing, want %s", round, got, life)
				}
				// Liqo's own rule (ShouldRenewCertificate: due once
				// now >= NotAfter - (NotAfter-NotBefore)/3) must not find a
				// fresh certificate due either.
				if liqoDue := notAfter.Add(-notAfter.Sub(notBefore) / 3); !issued.Before(liqoDue) {
					t.Fatalf("Liqo's rule finds a fresh %s certificate due at once", life)
				}
				earliest, latest := issued.Add(life*2/3-life/10), issued.Add(life*2/3)
				signed := w.backends["beta"].signed
				for w.backends["beta"].signed == signed {
					w.now = w.now.Add(step)
					if w.now.After(latest.Add(step)) {
						t.Fatalf("round %d: not renewed by %s after signing (a third of %s left)", round, w.now.Sub(issued), life)
					}
					n := w.converge("beta", "alpha")
					switch renewed := w.backends["beta"].signed != signed; {
					case !renewed && n != 0:
						t.Fatalf("round %d: %d commits %s after signing, before the renewal point", round, n, w.now.Sub(issued))
					case renewed && w.now.Before(earliest):
						t.Fatalf("round %d: renewed %s after signing, before %s (two thirds less a tenth of %s)", round, w.now.Sub(issued), earliest.Sub(issued), life)
					case renewed && (n != 2 || w.backends["beta"].signed != signed+1):
						t.Fatalf("round %d: renewal took %d commits and %d signatures, want 2 (renew, accept) and 1", round, n, w.backends["beta"].signed-signed)
					}
				}
				if string(mustIdentityCert(t, string(w.tree[identity].Data))) == string(crt) {
					t.Fatalf("round %d: the consumer kept the old certificate", round)
				}
			}
		})
	}
}

// TestALifetimeTooShortToRenewIsRefused: the reconciler's own lifetime
// (--certificate-lifetime) has the spec's floor; nothing is signed under it.
func TestALifetimeTooShortToRenewIsRefused(t *testing.T) {
	w := newWorld(t, twoClusters)
	_, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["beta"], Now: w.now, CertificateLifetime: 90 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "certificate lifetime 1m30s is shorter than the shortest a provider signs, 10m0s") {
		t.Fatalf("pass with a 90s lifetime: %v", err)
	}
}

// TestReadyPeeringsReportTheirCertificates: each side of a Ready peering
// reports the client certificate's expiry (for the daemon's metrics), and
// nothing is reported before the Identity is accepted.
func TestReadyPeeringsReportTheirCertificates(t *testing.T) {
	w := newWorld(t, twoClusters)
	if out, _ := w.pass("beta"); len(out.Certificates) != 0 {
		t.Fatalf("certificates before any identity: %+v", out.Certificates)
	}
	w.converge("beta", "alpha")
	_, notAfter, err := handshake.CertificateValidity(mustIdentityCert(t, string(w.tree["clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"].Data)))
	if err != nil {
		t.Fatal(err)
	}
	for id, role := range map[string]layout.Role{"alpha": layout.RoleConsumer, "beta": layout.RoleProvider} {
		out, _ := w.pass(id)
		want := []reconcile.Certificate{{Consumer: "alpha", Provider: "beta", Role: role, NotAfter: notAfter}}
		if len(out.Certificates) != 1 || out.Certificates[0] != want[0] {
			t.Errorf("%s: certificates %+v, want %+v", id, out.Certificates, want)
		}
	}
}

func mustIdentityCert(t *testing.T, data string) []byte {
	id, err := liqo.DecodeIdentity([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return id.Spec.AuthParams.SignedCRT
}

func TestLiqoClusterRolesAreRenderedOnlyWhenAsked(t *testing.T) {
	w := newWorld(t, twoClusters)
	out, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["beta"], Now: w.now, LiqoClusterRoles: true})
	if err != nil {
		t.Fatal(err)
	}
	cr := out.Files["clusters/beta/liqo/_shared/clusterrole-liqo-remote-controlplane.yaml"]
	if !strings.Contains(string(cr), "app.kubernetes.io/name: remote-controlplane") || !strings.Contains(string(cr), "resourceslices/status") {
		t.Fatalf("ClusterRole:\n%s", cr)
	}
	if !strings.Contains(string(out.Files["clusters/beta/kustomization.yaml"]), "liqo/_shared/clusterrole-liqo-remote-controlplane.yaml") {
		t.Error("ClusterRole not in the kustomization")
	}
	plain, _ := w.pass("beta")
	for f := range plain.Files {
		if strings.Contains(f, "clusterrole-") {
			t.Errorf("%s rendered without asking", f)
		}
	}
}

// TestEverySettledPeeringMakesNoFurtherCommit is invariant 3 (docs/design.md) across the
// spec's knobs: once converged, passes change nothing.
func TestEverySettledPeeringMakesNoFurtherCommit(t *testing.T) {
	peerings := map[string]string{
		"pinned":            `{consumer: "alpha", provider: "beta"}`,
		"open":              `{consumer: "alpha", provider: "beta", policy: "open"}`,
		"token":             `{consumer: "alpha", provider: "beta", policy: "token"}`,
		"cordoned":          `{consumer: "alpha", provider: "beta", tenantCondition: "Cordoned", slices: [{name: "a", resources: {cpu: "1"}}]}`,
		"drained":           `{consumer: "alpha", provider: "beta", tenantCondition: "Drained", slices: [{name: "a", resources: {cpu: "1"}}]}`,
		"slices and denial": `{consumer: "alpha", provider: "beta", slices: [{name: "a", resources: {cpu: "1"}}, {name: "b", resources: {cpu: "99"}}]}`,
		"both directions":   `{consumer: "alpha", provider: "beta", slices: [{name: "a", resources: {cpu: "1"}}]}, {consumer: "beta", provider: "alpha", slices: [{name: "a", resources: {cpu: "1"}}]}`,
	}
	for name, pr := range peerings {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, "clusters: [{id: \"alpha\"}, {id: \"beta\"}]\npeerings: ["+pr+"]\n")
			for _, id := range []string{"alpha", "beta"} {
				if err := w.files[id].SetToken(context.Background(), map[string]string{"alpha": "beta", "beta": "alpha"}[id], []byte("shared")); err != nil {
					t.Fatal(err)
				}
			}
			if n := w.converge("beta", "alpha"); n == 0 {
				t.Fatal("nothing happened")
			}
			for _, p := range w.spec.Peerings {
				if ps := w.status(p.Consumer, p.Consumer, p.Provider); ps == nil || ps.Step != layout.StepReady {
					t.Errorf("%s → %s did not get Ready: %+v", p.Consumer, p.Provider, ps)
				}
			}
			if n := w.converge("beta", "alpha"); n != 0 {
				t.Fatalf("%d commits after convergence", n)
			}
			w.now = w.now.Add(time.Hour)
			if n := w.converge("beta", "alpha"); n != 0 {
				t.Fatalf("%d commits an hour later", n)
			}
		})
	}
}

func TestADrainPeriodOfZeroWithdrawsInTheNextPass(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta", provider: {drainPeriod: "0s"}}]
peerings: [{consumer: "alpha", provider: "beta"}]
`)
	w.converge("beta", "alpha")
	w.setSpec(`clusters: [{id: "alpha"}, {id: "beta", provider: {drainPeriod: "0s"}}]`)
	w.pass("beta")
	if !w.has("clusters/beta/liqo/alpha/tenant-alpha.yaml") {
		t.Fatal("the Tenant was withdrawn before it was drained")
	}
	w.pass("beta")
	if w.has("clusters/beta/liqo/alpha/tenant-alpha.yaml") {
		t.Error("drainPeriod 0s kept the drained Tenant")
	}
}

func TestConditionsAreDatedByThePassClock(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`)
	start := w.now
	w.pass("beta")
	ready := func() *metav1.Condition {
		ps := w.status("beta", "alpha", "beta")
		if ps == nil {
			t.Fatal("no status for alpha→beta on beta")
		}
		c := condition(ps, meta.ReadyCondition)
		if c == nil {
			t.Fatalf("no Ready condition: %+v", ps)
		}
		return c
	}
	if got := ready().LastTransitionTime.Time; !got.Equal(start) {
		t.Errorf("Ready dated %v, want the pass's clock %v", got, start)
	}
	w.now = w.now.Add(time.Hour)
	w.converge("alpha", "beta")
	readyAt := ready()
	if readyAt.Status != metav1.ConditionTrue || !readyAt.LastTransitionTime.Time.Equal(w.now) {
		t.Fatalf("Ready %+v, want True dated %v", readyAt, w.now)
	}
	w.now = w.now.Add(time.Hour)
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Errorf("%d commits an hour after settling", n)
	}
	if got := ready().LastTransitionTime.Time; !got.Equal(readyAt.LastTransitionTime.Time) {
		t.Errorf("a Ready condition that held was re-dated %v (was %v)", got, readyAt.LastTransitionTime.Time)
	}
}
