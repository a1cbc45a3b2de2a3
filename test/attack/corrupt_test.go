package attack

import (
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
)

// garbage is what a broken tool or a writer leaves in a file: not YAML, not
// UTF-8, with a NUL.
var garbage = []byte("kind: Tenant\n\x00\xff\xfe{{{ garbage: [\n")

// TestACorruptArtifactKeepsThePeering: a writer overwrites artifacts with
// garbage. The Tenant alpha sent (and beta's own status.yaml): beta stays
// Ready, signs nothing, keeps the Identity and names the file. The Identity
// beta sent (and its nonce): alpha keeps its rendered Identity and its
// kubeconfig, stays at step Ready and names the file (its Ready condition
// turns False, Stalled, until beta restores the Identity: the one it keeps
// is no longer refreshed). Then the writers
// restore what they signed, and the peering is Ready on both sides.
func TestACorruptArtifactKeepsThePeering(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	identity := w.mustShow(identityFile)
	rendered := w.mustShow(renderedIdentiy)
	kubeconfig := w.kubeconfig("alpha", "beta")
	before := w.signedAll()

	// The Tenant in beta's inbox, and beta's status.
	attack := w.attack("mallory <mallory@example.com>", "oops", func(a *writer) {
		a.write(tenantFile, garbage)
		a.write("clusters/beta/status.yaml", garbage)
	})
	findings := w.verify()
	mustFind(t, findings, tenantFile, reasons.UnsignedChange, attack)
	mustFind(t, findings, "clusters/beta/status.yaml", reasons.UnsignedChange, attack)
	w.pass("beta")
	w.nothingSigned(before)
	ps := w.peering("beta", "alpha", "beta")
	if !ready(ps) {
		t.Fatalf("beta's peering is not Ready: %s", describe(ps))
	}
	assertContains(t, "beta's status", describe(ps), tenantFile+" ("+reasons.UnsignedChange+")")
	if got := w.mustShow(identityFile); string(got) != string(identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	w.converge()
	w.nothingSigned(before)
	w.mustBeReady("alpha", "beta")

	// The Identity and the nonce in alpha's inbox.
	w.attack("mallory <mallory@example.com>", "oops", func(a *writer) {
		a.write(identityFile, garbage)
		a.write(nonceFile, garbage)
	})
	w.pass("alpha")
	w.nothingSigned(before)
	ps = w.peering("alpha", "alpha", "beta")
	if ps.Step != "Ready" {
		t.Fatalf("alpha's peering left step Ready: %s", describe(ps))
	}
	assertContains(t, "alpha's status", describe(ps), "kept the Identity accepted from beta", nonceFile, reasons.UnsignedChange)
	if got := w.mustShow(renderedIdentiy); string(got) != string(rendered) {
		t.Fatal("alpha changed or withdrew its rendered Identity")
	}
	if string(w.kubeconfig("alpha", "beta")) != string(kubeconfig) {
		t.Fatal("alpha's kubeconfig changed")
	}

	// beta restores its nonce and Identity (the signed bytes are gone: it
	// signs one certificate anew, for alpha's key), and all is Ready.
	w.converge()
	w.mustBeReady("alpha", "beta")
	if n := w.signed("beta") - before["beta"]; n > 1 {
		t.Fatalf("beta signed %d certificates to restore one Identity", n)
	}
	w.certifiesOnly(w.clusters["alpha"].key(), nil)
}
