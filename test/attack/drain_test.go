package attack

import (
	"regexp"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// TestABackdatedRevocationDoesNotCutTheDrainShort: once the spec revokes
// alpha → beta, beta keeps alpha's Tenant Drained in the repo for its drain
// period, so the GitOps engine applies the drained Tenant before pruning it.
// A writer backdates revokingSince in beta's status.yaml to have the Tenant
// withdrawn at once, before Liqo saw it drained. beta's next pass reads
// only its signed status: the Tenant stays, and is withdrawn only after
// the drain period counted from beta's own drain.
func TestABackdatedRevocationDoesNotCutTheDrainShort(t *testing.T) {
	t.Parallel()
	const tenant = "clusters/beta/liqo/alpha/tenant-alpha.yaml"
	w := settled(t, twoSpec)
	w.editSpec(twoSpec[len("clusters: [{id: \"alpha\"}, {id: \"beta\", provider: {nonceLifetime: \"1h\"}}]\n"):], "peerings: []\n", "revoke alpha → beta")
	w.pass("beta")
	ps := w.peering("beta", "alpha", "beta")
	if ps == nil || ps.Step != layout.StepRevoking || ps.RevokingSince == nil {
		t.Fatalf("beta after the revocation: %s", describe(ps))
	}
	drained := ps.RevokingSince.Time

	attack := w.attack("gitpeer (beta) <beta@gitpeer.invalid>", "beta: update status\n\nGitpeer-Cluster: beta\n", func(a *writer) {
		data := a.read("clusters/beta/status.yaml")
		re := regexp.MustCompile(`revokingSince: "[^"]+"`)
		if !re.Match(data) {
			t.Fatalf("no revokingSince in beta's status:\n%s", data)
		}
		a.write("clusters/beta/status.yaml", re.ReplaceAll(data, []byte(`revokingSince: "2020-01-01T00:00:00Z"`)))
	})
	mustFind(t, w.verify(), "clusters/beta/status.yaml", reasons.UnsignedChange, attack)
	w.clock.Advance(time.Minute)
	w.pass("beta")
	if _, ok := w.show(tenant); !ok {
		t.Fatal("beta withdrew alpha's drained Tenant within its drain period: the backdated status was believed")
	}
	if ps := w.peering("beta", "alpha", "beta"); ps == nil || ps.RevokingSince == nil || ps.RevokingSince.Time.Before(drained) {
		t.Fatalf("beta's status after the attack: %s", describe(ps))
	}

	w.clock.Advance(reconcile.DefaultDrainPeriod)
	w.pass("beta")
	if _, ok := w.show(tenant); ok {
		t.Fatal("alpha's Tenant outlived beta's drain period")
	}
}
