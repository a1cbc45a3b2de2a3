package attack

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// tokenSpec is twoSpec with the token acceptance policy.
var tokenSpec = strings.Replace(twoSpec, `{consumer: "alpha", provider: "beta",`, `{consumer: "alpha", provider: "beta", policy: "token",`, 1)

// shareToken gives alpha and beta the same token, as their admins would out
// of band.
func shareToken(w *world) error {
	if err := w.clusters["beta"].b.SetToken(ctx, "alpha", []byte("s3cret")); err != nil {
		return err
	}
	return w.clusters["alpha"].b.SetToken(ctx, "beta", []byte("s3cret"))
}

// editSpec is an admin's reviewed change of peering.cue.
func (w *world) editSpec(old, new, message string) {
	w.t.Helper()
	w.attack("admin <admin@example.com>", message, func(a *writer) { a.edit("peering.cue", old, new) })
}

// restore is a writer putting dirs back as they were in commit rev.
func restore(rev string, dirs ...string) func(a *writer) {
	return func(a *writer) {
		for _, d := range dirs {
			a.remove(d)
		}
		a.git(append([]string{"checkout", rev, "--"}, dirs...)...)
	}
}

// TestAnOldTenantIsNotReplayedAfterTheNonceMovedOn: the peering is revoked
// and approved again, and beta's nonce epochs move on (alpha stays away
// long enough for four nonces to expire). A writer then restores alpha's
// old Tenant, nonce and their manifests from history: ManifestRolledBack.
// Whoever holds alpha's key re-signs the old Tenant as current: it answers
// an epoch beta no longer remembers, NonceReplayed. Either way beta signs
// nothing and keeps the Identity of the current Tenant. With the token
// policy too, whose proof in the old Tenant was valid for the old nonce.
func TestAnOldTenantIsNotReplayedAfterTheNonceMovedOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec string
		setup      []func(*world) error
	}{
		{"open policy", twoSpec, nil},
		{"token policy", tokenSpec, []func(*world) error{shareToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, tc.spec, tc.setup...)
			old := w.ref("main")
			oldTenant, err := artifact.DecodeTenant(tenantFile, w.mustShow(tenantFile))
			if err != nil {
				t.Fatal(err)
			}
			oldEpoch, _ := artifact.TenantEpoch(tenantFile, oldTenant)

			// Revoked, approved again, and four nonces expire unanswered.
			peering := tc.spec[strings.Index(tc.spec, "peerings: ["):]
			w.editSpec(peering, "peerings: []\n", "revoke alpha → beta")
			w.converge()
			w.clock.Advance(time.Hour)
			w.editSpec("peerings: []\n", peering, "approve alpha → beta again")
			for i := 0; i < 4; i++ {
				w.clock.Advance(time.Hour + time.Minute)
				w.pass("beta")
			}
			w.converge()
			w.mustBeReady("alpha", "beta")
			tenant := w.mustShow(acceptedTenant)
			key := w.clusters["alpha"].key()
			current := w.ref("main")
			before := w.signedAll()

			// The old signed state, put back as it was: alpha's Tenant and
			// beta's nonce and Identity with their manifests. (beta reads its
			// own old directory as its own: it may take back an older
			// certificate it signed, still valid for alpha's key.)
			attack := w.attack("mallory <mallory@example.com>", "restore", restore(old, "clusters/beta/inbox/alpha", "clusters/alpha/inbox/beta"))
			mustFind(t, w.verify(), "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestRolledBack, attack)
			w.pass("beta")
			w.nothingSigned(before)
			ps := w.peering("beta", "alpha", "beta")
			assertContains(t, "beta's status", describe(ps), tenantFile, reasons.ManifestRolledBack)
			if !ready(ps) || string(w.mustShow(acceptedTenant)) != string(tenant) {
				t.Fatalf("beta dropped or changed the current peering: %s", describe(ps))
			}
			w.certifiesOnly(key, nil)

			// The old Tenant, re-signed with alpha's key as alpha's current
			// state.
			w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: send tenant to beta\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
				restore(current, "clusters/beta/inbox/alpha")(a) // what alpha signed last…
				a.git("checkout", old, "--", tenantFile)         // …but the old Tenant
				a.resign(w.clusters["alpha"].b.Signer(), "alpha", "clusters/beta/inbox/alpha")
			})
			// verify checks the Tenant against the nonce on main: its
			// signature is over another nonce.
			mustFind(t, w.verify(), tenantFile, reasons.SignatureVerificationFailed, "")
			w.pass("beta")
			w.nothingSigned(before)
			ps = w.peering("beta", "alpha", "beta")
			assertContains(t, "beta's status", describe(ps), tenantFile, reasons.NonceReplayed)
			if !ready(ps) || string(w.mustShow(acceptedTenant)) != string(tenant) {
				t.Fatalf("beta dropped or changed the current peering: %s", describe(ps))
			}
			w.certifiesOnly(key, nil)
			store, _ := w.clusters["beta"].b.LoadPins(ctx)
			if store.Lookup("alpha").WasIssued(oldEpoch) {
				t.Fatalf("beta still remembers epoch %d: the replay was not of a forgotten epoch", oldEpoch)
			}

			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
		})
	}
}

// TestAnOldStateIsNotReplayedAfterAKeyRotation: alpha rotated its key. A
// writer restores, from before the rotation, alpha's Tenant, beta's nonce
// and Identity and their manifests, all validly signed by the keys of that
// time: alpha's are ManifestInvalid (not signed by the key beta now pins).
// Restoring alpha's old cluster.yaml and manifest too: KeyChanged. beta
// never signs for the rotated-out key: the certificates on main are for
// the new key only. (Reading its own old directory as its own, beta finds
// there certificates for the old key, and signs new ones for the new key.)
func TestAnOldStateIsNotReplayedAfterAKeyRotation(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	old := w.ref("main")
	oldKey := w.clusters["alpha"].key()
	w.clock.Advance(time.Minute)
	w.rotateKey("alpha", func(old crypto.Signer) crypto.Signer { return old })
	w.converge()
	w.mustBeReady("alpha", "beta")
	newKey := w.clusters["alpha"].key()
	w.certifiesOnly(newKey, oldKey)

	attack := w.attack("mallory <mallory@example.com>", "restore", restore(old, "clusters/beta/inbox/alpha", "clusters/alpha/inbox/beta"))
	mustFind(t, w.verify(), "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestInvalid, attack)
	w.pass("beta")
	ps := w.peering("beta", "alpha", "beta")
	assertContains(t, "beta's status", describe(ps), tenantFile, reasons.ManifestInvalid)
	if !ready(ps) {
		t.Fatalf("beta dropped the peering: %s", describe(ps))
	}
	w.certifiesOnly(newKey, oldKey)
	before := w.signedAll()

	attack = w.attack("mallory <mallory@example.com>", "restore alpha", restore(old, layout.ClusterPath("alpha", layout.ClusterFile), layout.ClusterPath("alpha", dirmanifest.FileName)))
	mustFind(t, w.verify(), alphaCluster, reasons.KeyChanged, attack)
	w.pass("beta")
	w.nothingSigned(before)
	ps = w.peering("beta", "alpha", "beta")
	if stalled(ps) != reasons.KeyChanged {
		t.Fatalf("beta's status: %s\nwant Stalled KeyChanged", describe(ps))
	}
	w.certifiesOnly(newKey, oldKey)
}

// certifiesOnly checks that alpha's Identity and its granted slice pool on
// main hold certificates by beta's CA for key, and, when old is not nil,
// not for old (and then the answer for pool may be missing: its request
// was not readable and its certificate was for old).
func (w *world) certifiesOnly(key, old crypto.PublicKey) {
	w.t.Helper()
	ca := w.clusters["beta"].b.CABundle()
	id, err := artifact.DecodeIdentity(identityFile, w.mustShow(identityFile))
	if err != nil {
		w.t.Fatal(err)
	}
	certs := []struct {
		file, cn, org string
		crt           []byte
	}{
		{identityFile, "alpha", handshake.ControlPlaneOrganization, id.Spec.AuthParams.SignedCRT},
	}
	if data, ok := w.show(poolAnswer); ok || old == nil {
		pool, err := artifact.DecodeSlice(poolAnswer, data)
		if err != nil {
			w.t.Fatal(err)
		}
		if pool.Status.AuthParams == nil {
			w.t.Fatalf("%s holds no certificate", poolAnswer)
		}
		certs = append(certs, struct {
			file, cn, org string
			crt           []byte
		}{poolAnswer, handshake.ResourceSliceCommonName("pool", "alpha"), "alpha", pool.Status.AuthParams.SignedCRT})
	}
	for _, c := range certs {
		_, der, _ := handshake.ParsePublicKey(mustPEM(w.t, key))
		if err := handshake.VerifyClientCertificate(c.crt, ca, der, c.cn, c.org, w.clock.Now()); err != nil {
			w.t.Fatalf("%s does not certify alpha's key: %v", c.file, err)
		}
		if old != nil {
			_, der, _ := handshake.ParsePublicKey(mustPEM(w.t, old))
			if handshake.VerifyClientCertificate(c.crt, ca, der, c.cn, c.org, w.clock.Now()) == nil {
				w.t.Fatalf("%s certifies alpha's rotated-out key", c.file)
			}
		}
	}
}
