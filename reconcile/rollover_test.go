package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// grantFiles are the files of beta's tree and outbox that make alpha's
// access: the Tenant, both bindings, the Identity and the granted slice.
var grantFiles = []string{
	"clusters/beta/liqo/alpha/tenant-alpha.yaml",
	"clusters/beta/liqo/alpha/rolebinding-" + liqo.ControlPlaneRBName + ".yaml",
	"clusters/beta/liqo/alpha/clusterrolebinding-" + liqo.ClusterWideBindingName("alpha") + ".yaml",
	identityFile,
	"clusters/alpha/inbox/beta/resourceslice-pool.status.yaml",
}

// rotateAlpha rotates alpha's key as a rollover's switch does: the staged
// key promoted, and cluster.yaml with a rotation statement signed by the
// old key, in a directory signed by the new one.
func rotateAlpha(t *testing.T, w *world) *layout.ClusterInfo {
	t.Helper()
	if _, err := w.files["alpha"].StageKey(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	old, err := w.files["alpha"].PromoteNextKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	info, _ := w.files["alpha"].ClusterInfo()
	if err := layout.SignRotation(info, old); err != nil {
		t.Fatal(err)
	}
	data, _ := info.Encode()
	w.tree["clusters/alpha/cluster.yaml"] = &fstest.MapFile{Data: data}
	w.resign("alpha", "clusters/alpha/cluster.yaml")
	return info
}

// TestAConsumersRotationKeepsItsGrantUntilTheNewTenantVerifies: alpha
// rotates its key. beta follows the statement at once, but keeps the Tenant
// it accepted for the old key, its bindings, the Identity and the granted
// slice byte for byte (Ready, KeyRotationInProgress), until alpha's Tenant
// for the new key verifies; then it re-issues for the new key in the same
// pass. No pass of beta leaves alpha without a Tenant and its bindings.
func TestAConsumersRotationKeepsItsGrantUntilTheNewTenantVerifies(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "2"}}]}]
`)
	w.converge("beta", "alpha")
	before := map[string][]byte{}
	for _, f := range grantFiles {
		if !w.has(f) {
			t.Fatalf("%s missing before the rotation", f)
		}
		before[f] = w.tree[f].Data
	}
	w.now = w.now.Add(time.Minute)
	info := rotateAlpha(t, w)
	signed := w.backends["beta"].signed

	// beta passes before alpha answered with its new key.
	w.pass("beta")
	for _, f := range grantFiles {
		if !w.has(f) || string(w.tree[f].Data) != string(before[f]) {
			t.Errorf("%s changed or withdrawn while alpha's rotation is in progress", f)
		}
	}
	if w.backends["beta"].signed != signed {
		t.Error("beta signed a certificate before alpha's new Tenant verified")
	}
	r := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionTrue || r.Reason != reasons.KeyRotationInProgress || !strings.Contains(r.Message, info.Fingerprint) {
		t.Fatalf("Ready %+v, want True %s naming %s", r, reasons.KeyRotationInProgress, info.Fingerprint)
	}
	if pin := w.pins["beta"].Lookup("alpha"); pin.Fingerprint != info.Fingerprint {
		t.Fatalf("beta pins %s, want the rotated %s", pin.Fingerprint, info.Fingerprint)
	}
	// Again: nothing moves while alpha has not answered.
	if _, plan := w.pass("beta"); !plan.Empty() {
		t.Errorf("a second pass during the rotation committed: %v", plan.Steps)
	}

	// alpha answers with its new key; beta re-issues, never leaving a gap.
	for round := 0; round < 4; round++ {
		w.pass("alpha")
		w.pass("beta")
		for _, f := range grantFiles[:3] {
			if !w.has(f) {
				t.Fatalf("round %d: %s withdrawn during the rotation", round, f)
			}
		}
	}
	if r := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue || r.Reason != reasons.IdentityIssued {
		t.Fatalf("Ready %+v after alpha's new Tenant, want %s", r, reasons.IdentityIssued)
	}
	_, der, _ := handshake.ParsePublicKey([]byte(info.PublicKey))
	id, _ := liqo.DecodeIdentity(w.tree[identityFile].Data)
	if err := handshake.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, w.files["beta"].CABundle(), der, "alpha", handshake.ControlPlaneOrganization, w.now); err != nil {
		t.Fatalf("the Identity is not for alpha's new key: %v", err)
	}
	tenant, _ := liqo.DecodeTenant(w.tree[grantFiles[0]].Data)
	if _, tder, _ := handshake.ParsePublicKey(tenant.Spec.PublicKey); string(tder) != string(der) {
		t.Fatal("the rendered Tenant is not for alpha's new key")
	}
	if s := w.slice("alpha", "alpha", "beta", "pool"); s.Resources != "Accepted" {
		t.Fatalf("pool after the rotation: %+v", s)
	}
}

// TestARefusedTenantForTheNewKeyKeepsTheOldGrant: during alpha's rotation,
// a Tenant for the new key that beta refuses (here: answering a nonce epoch
// beta never issued) signs nothing and withdraws nothing: the old grant
// stays, the status stays KeyRotationInProgress and names the refusal.
func TestARefusedTenantForTheNewKeyKeepsTheOldGrant(t *testing.T) {
	w := settled(t)
	w.now = w.now.Add(time.Minute)
	rotateAlpha(t, w)
	w.pass("alpha") // alpha's Tenant for its new key
	tamperTenant(t, w, func(tn *authv1beta1.Tenant) { tn.Annotations["gitpeer.io/nonce-epoch"] = "12345" })
	identity := w.tree[identityFile].Data
	signed := w.backends["beta"].signed
	w.pass("beta")
	if w.backends["beta"].signed != signed || string(w.tree[identityFile].Data) != string(identity) {
		t.Fatal("beta signed for, or withdrew the Identity over, a refused Tenant")
	}
	for _, f := range grantFiles[:3] {
		if !w.has(f) {
			t.Fatalf("%s withdrawn over a refused Tenant for the new key", f)
		}
	}
	r := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionTrue || r.Reason != reasons.KeyRotationInProgress || !strings.Contains(r.Message, reasons.NonceReplayed) {
		t.Fatalf("Ready %+v, want True %s naming %s", r, reasons.KeyRotationInProgress, reasons.NonceReplayed)
	}
}
