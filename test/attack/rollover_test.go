package attack

import (
	"crypto"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// betaGrant are the files of beta's applied tree that give alpha access to
// beta's control plane: the Tenant and both bindings.
var betaGrant = []string{
	acceptedTenant,
	"clusters/beta/liqo/alpha/rolebinding-" + liqo.ControlPlaneRBName + ".yaml",
	"clusters/beta/liqo/alpha/clusterrolebinding-" + liqo.ClusterWideBindingName("alpha") + ".yaml",
}

// grantApplied fails unless beta's applied branch and main hold alpha's
// Tenant, bindings and Identity.
func (w *world) grantApplied(when string) {
	w.t.Helper()
	for _, f := range betaGrant {
		if _, ok := w.showAt(layout.AppliedBranch("beta"), f); !ok {
			w.t.Fatalf("%s: %s is not on beta's applied branch", when, f)
		}
	}
	w.mustShow(identityFile)
}

// TestAConsumersRotationNeverLeavesAGap: alpha rotates its key with a
// statement signed by the old one. Every pass of beta from then on applies
// alpha's Tenant and bindings: first those it accepted for the old key, with
// the old Identity and the granted slice unchanged and its status Ready
// KeyRotationInProgress, then, as soon as alpha's Tenant for the new key
// verifies, those for the new key. The Identity and the slice certificates
// end up for the new key only.
func TestAConsumersRotationNeverLeavesAGap(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	oldKey := w.clusters["alpha"].key()
	identity, pool := w.mustShow(identityFile), w.mustShow(poolAnswer)
	w.clock.Advance(time.Minute)
	info := w.rotateKey("alpha", func(old crypto.Signer) crypto.Signer { return old })

	w.pass("beta")
	w.grantApplied("beta's first pass after the rotation")
	ps := w.peering("beta", "alpha", "beta")
	if r := condition(ps, "Ready"); !ready(ps) || r.Reason != reasons.KeyRotationInProgress {
		t.Fatalf("beta's status: %s\nwant Ready %s", describe(ps), reasons.KeyRotationInProgress)
	}
	assertContains(t, "beta's status", describe(ps), info.Fingerprint)
	if string(w.mustShow(identityFile)) != string(identity) || string(w.mustShow(poolAnswer)) != string(pool) {
		t.Fatal("beta changed alpha's Identity or slice answer before alpha's new Tenant verified")
	}
	for round := 0; round < 4; round++ {
		w.pass("alpha")
		w.pass("beta")
		w.grantApplied("a pass of beta during the rotation")
	}
	w.converge()
	w.mustBeReady("alpha", "beta")
	if r := condition(w.peering("beta", "alpha", "beta"), "Ready"); r.Reason != reasons.IdentityIssued {
		t.Fatalf("beta's Ready reason %s after alpha answered, want %s", r.Reason, reasons.IdentityIssued)
	}
	w.certifiesOnly(w.clusters["alpha"].key(), oldKey)
}

// TestALostKeyRepinnedGetsNoGrace: alpha lost its state and publishes a new
// key without a rotation statement. Until beta's admin re-pins, beta keeps
// what it accepted and signs nothing (KeyChanged, as for any key swap). Once
// re-pinned, the old key's Tenant and bindings are withdrawn at once: the
// grace of a rotation is for a key its predecessor vouched for, never for a
// key that changed some other way, and never reported as
// KeyRotationInProgress.
func TestALostKeyRepinnedGetsNoGrace(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	w.clock.Advance(time.Hour)
	info := w.loseState(t, "alpha")
	before := w.signedAll()
	w.pass("beta")
	w.nothingSigned(before)
	if ps := w.peering("beta", "alpha", "beta"); stalled(ps) != reasons.KeyChanged {
		t.Fatalf("beta's status: %s\nwant Stalled KeyChanged", describe(ps))
	}
	w.grantApplied("a key change without a statement, not re-pinned")

	keeper := w.clusters["beta"].b
	store, err := keeper.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := store.Peer("alpha")
	p.Repin, p.Fingerprint = true, info.Fingerprint
	if err := keeper.SavePins(ctx, store); err != nil {
		t.Fatal(err)
	}
	w.pass("beta")
	ps := w.peering("beta", "alpha", "beta")
	if r := condition(ps, "Ready"); r != nil && r.Reason == reasons.KeyRotationInProgress {
		t.Fatalf("a re-pinned key is reported as a rotation: %s", describe(ps))
	}
	if _, ok := w.showAt(layout.AppliedBranch("beta"), acceptedTenant); ok {
		t.Fatal("beta kept applying the Tenant of alpha's lost key after the re-pin")
	}
	w.converge()
	w.mustBeReady("alpha", "beta")
}

// TestATamperDuringARotationIsNoRotationInProgress: alpha rotates its key
// with a statement signed by the old one, and before beta answers, a
// writer edits the Tenant beta keeps for alpha's old key (another name in
// its spec) and the Identity beta issued for it. verify reports what beta
// keeps for the old key, untouched, as a rotation in progress, but never
// a file changed since the rotation: the edits fail the check, in the tree
// and in history.
func TestATamperDuringARotationIsNoRotationInProgress(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	w.clock.Advance(time.Minute)
	w.rotateKey("alpha", func(old crypto.Signer) crypto.Signer { return old })
	w.pass("alpha")
	mustFindResolved(t, w.verify(), acceptedTenant, reasons.RenderedMismatch, "")
	attack := w.attack("mallory <mallory@example.com>", "beta: tidy", func(a *writer) {
		a.edit(acceptedTenant, "name: alpha", "name: alpha-admin")
		a.write(identityFile, append(a.read(identityFile), "# reviewed\n"...))
	})
	findings := w.verify()
	mustFind(t, findings, acceptedTenant, reasons.RenderedMismatch, "")
	mustFind(t, findings, acceptedTenant, reasons.UnsignedChange, attack)
	mustFind(t, findings, identityFile, reasons.UnsignedChange, "")
}
