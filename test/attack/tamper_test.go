package attack

import (
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

const (
	poolRequest  = "clusters/beta/inbox/alpha/resourceslice-pool.yaml"
	poolAnswer   = "clusters/alpha/inbox/beta/resourceslice-pool.status.yaml"
	bigAnswer    = "clusters/alpha/inbox/beta/resourceslice-big.status.yaml"
	poolRendered = "clusters/alpha/liqo/beta/resourceslice-pool.yaml"
	poolIdentity = "clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml"
	bigRendered  = "clusters/alpha/liqo/beta/resourceslice-big.yaml"
	bigIdentity  = "clusters/alpha/liqo/beta/identity-resourceslice-big.yaml"
)

func sliceOf(ps *layout.PeeringStatus, name string) layout.SliceStatus {
	for _, s := range ps.Slices {
		if s.Name == name {
			return s
		}
	}
	return layout.SliceStatus{}
}

// TestATamperedSliceRequestIsNotGranted: a writer changes alpha's request
// for slice pool in beta's inbox (more cpu, still within beta's caps, so
// that it would be granted if read), deletes it, or deletes the manifest
// that signs alpha's inbox. beta grants nothing new and signs nothing: it
// keeps its previous decision byte for byte and its status names the file
// and why. alpha keeps its slice, and its next pass restores its request.
func TestATamperedSliceRequestIsNotGranted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tamper func(a *writer)
		reason string
		// restored is the file alpha's next pass writes back.
		restored string
		// found is what verify names in the attack's commit.
		found [2]string
	}{
		{"edited for more cpu", func(a *writer) { a.edit(poolRequest, `cpu: "2"`, `cpu: "4"`) }, reasons.UnsignedChange, poolRequest,
			[2]string{poolRequest, reasons.UnsignedChange}},
		{"deleted", func(a *writer) { a.remove(poolRequest) }, "missing", poolRequest,
			[2]string{poolRequest, reasons.UnsignedChange}},
		{"its manifest deleted", func(a *writer) { a.remove("clusters/beta/inbox/alpha/manifest.yaml") }, reasons.ManifestInvalid, "clusters/beta/inbox/alpha/manifest.yaml",
			[2]string{"clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			answer := w.mustShow(poolAnswer)
			rendered, identity := w.mustShow(poolRendered), w.mustShow(poolIdentity)
			w.forbid("alpha", poolAnswer, `cpu: "4"`)
			before := w.signedAll()
			attack := w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: request slice pool from beta\n\nGitpeer-Cluster: alpha\n", tc.tamper)
			mustFind(t, w.verify(), tc.found[0], tc.found[1], attack)

			w.pass("beta")
			w.nothingSigned(before)
			if got := w.mustShow(poolAnswer); string(got) != string(answer) {
				t.Fatalf("beta changed its decision on pool:\n%s", got)
			}
			ps := w.peering("beta", "alpha", "beta")
			s := sliceOf(ps, "pool")
			if s.Resources != "Accepted" || !strings.Contains(s.Message, "decision kept: "+poolRequest+" is "+tc.reason) {
				t.Fatalf("beta's status of pool: %+v\nwant the decision kept, naming %s and %s", s, poolRequest, tc.reason)
			}
			if !ready(ps) {
				t.Fatalf("beta's peering is no longer Ready: %s", describe(ps))
			}

			res := w.pass("alpha")
			if !contains(res.Files, tc.restored) {
				t.Fatalf("alpha did not restore %s: %v", tc.restored, res.Files)
			}
			if string(w.mustShow(poolRendered)) != string(rendered) || string(w.mustShow(poolIdentity)) != string(identity) {
				t.Fatal("alpha changed or withdrew its granted slice")
			}
			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
			if got := w.mustShow(poolAnswer); string(got) != string(answer) {
				t.Fatal("the decision on pool changed")
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestATamperedSliceAnswerIsNotRendered: a writer turns beta's denial of
// slice big into an acceptance (with pool's certificate), or changes or
// deletes beta's acceptance of pool, in alpha's inbox. alpha renders
// nothing for big and keeps pool exactly as accepted; its status names the
// file. beta's next pass restores its answers: no decision changes, and
// the only certificate it may sign (its own answer to pool was lost) is
// for alpha's own slice key.
func TestATamperedSliceAnswerIsNotRendered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, a *writer)
		// reason names the tampered file in alpha's status.
		reason string
	}{
		{"big's denial turned into an acceptance", func(t *testing.T, a *writer) {
			pool, err := artifact.DecodeSlice(poolAnswer, a.read(poolAnswer))
			if err != nil {
				t.Fatal(err)
			}
			big, err := artifact.DecodeSlice(bigAnswer, a.read(bigAnswer))
			if err != nil {
				t.Fatal(err)
			}
			for i := range big.Status.Conditions {
				big.Status.Conditions[i].Status = authv1beta1.ResourceSliceConditionAccepted
				big.Status.Conditions[i].Reason, big.Status.Conditions[i].Message = "ResourceSliceResourcesAccepted", "resources accepted"
			}
			big.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
			big.Status.AuthParams = pool.Status.AuthParams
			a.write(bigAnswer, encode(t, big))
		}, reasons.UnsignedChange},
		{"pool's acceptance changed", func(t *testing.T, a *writer) {
			a.edit(poolAnswer, `cpu: "2"`, `cpu: "3"`)
		}, reasons.UnsignedChange},
		{"pool's acceptance deleted", func(t *testing.T, a *writer) { a.remove(poolAnswer) }, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			w.forbid("alpha", bigRendered, "")
			w.forbid("alpha", bigIdentity, "")
			w.forbid("alpha", "clusters/alpha/kustomization.yaml", "resourceslice-big")
			rendered, identity := w.mustShow(poolRendered), w.mustShow(poolIdentity)
			before := w.signedAll()
			attack := w.attack("gitpeer (beta) <beta@gitpeer.invalid>", "beta: answer slice big of alpha\n\nGitpeer-Cluster: beta\n", func(a *writer) { tc.tamper(t, a) })

			w.pass("alpha")
			w.nothingSigned(before)
			if string(w.mustShow(poolRendered)) != string(rendered) || string(w.mustShow(poolIdentity)) != string(identity) {
				t.Fatal("alpha changed or withdrew its granted slice pool")
			}
			ps := w.peering("alpha", "alpha", "beta")
			if s := sliceOf(ps, "big"); s.Resources == "Accepted" {
				t.Fatalf("alpha reports big accepted: %+v", s)
			}
			if s := sliceOf(ps, "pool"); s.Resources != "Accepted" {
				t.Fatalf("alpha reports pool %+v", s)
			}
			file := bigAnswer
			if !strings.HasPrefix(tc.name, "big") {
				file = poolAnswer
			}
			assertContains(t, "alpha's status", describe(ps), file, tc.reason)
			mustFind(t, w.verify(), file, reasons.UnsignedChange, attack)

			w.pass("beta")
			if n := w.signed("beta") - before["beta"]; n > 1 || n == 1 && file != poolAnswer {
				t.Fatalf("beta signed %d certificates restoring %s", n, file)
			}
			ans, err := artifact.DecodeSlice(poolAnswer, w.mustShow(poolAnswer))
			if err != nil {
				t.Fatal(err)
			}
			slice := w.clusters["alpha"].b.Signer()
			_, der, _ := handshake.ParsePublicKey(mustPEM(t, slice.Public()))
			if err := handshake.VerifyClientCertificate(ans.Status.AuthParams.SignedCRT, w.clusters["beta"].b.CABundle(), der,
				handshake.ResourceSliceCommonName("pool", "alpha"), "alpha", w.clock.Now()); err != nil {
				t.Fatalf("pool's certificate is not for alpha's slice key: %v", err)
			}
			w.converge()
			w.mustBeReady("alpha", "beta")
			ps = w.peering("alpha", "alpha", "beta")
			if s := sliceOf(ps, "big"); s.Resources != "Denied" {
				t.Fatalf("big after the restore: %+v", s)
			}
			if s := sliceOf(ps, "pool"); s.Resources != "Accepted" || strings.Contains(s.Message, "kept") {
				t.Fatalf("pool after the restore: %+v", s)
			}
		})
	}
}
