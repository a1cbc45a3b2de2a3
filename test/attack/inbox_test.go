package attack

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// Inboxes hold artifacts only (docs/trust.md): a reader acts on the
// artifacts it expects from the folder's writer in its part, and ignores
// and names (UnexpectedArtifact) anything else, signed or not.

// mustReportUnexpected fails unless cluster's status of consumer → provider,
// on main, carries UnexpectedArtifacts naming file.
func (w *world) mustReportUnexpected(cluster, consumer, provider, file string) {
	w.t.Helper()
	ps := w.peering(cluster, consumer, provider)
	c := condition(ps, reconcile.ConditionUnexpectedArtifacts)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasons.UnexpectedArtifact || !strings.Contains(c.Message, file) {
		w.t.Fatalf("%s's view of %s → %s does not report %s as %s: %s", cluster, consumer, provider, file, reasons.UnexpectedArtifact, describe(ps))
	}
}

// mustNotReportUnexpected fails if cluster's status of consumer → provider
// still reports an UnexpectedArtifact.
func (w *world) mustNotReportUnexpected(cluster, consumer, provider string) {
	w.t.Helper()
	ps := w.peering(cluster, consumer, provider)
	if c := condition(ps, reconcile.ConditionUnexpectedArtifacts); c != nil {
		w.t.Fatalf("%s's view of %s → %s still reports: %s", cluster, consumer, provider, describe(ps))
	}
}

// statusShows fails unless gitpeer status's collection, read from a fresh
// clone of main as a reviewer runs it, shows cluster reporting file as
// UnexpectedArtifact on the peering.
func (w *world) statusShows(cluster, consumer, provider, file string) {
	w.t.Helper()
	a := w.writer()
	spec, _, err := schema.Load(a.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	peerings, err := peerstatus.Collect(layout.NewTree(a.dir), spec)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range peerings {
		if p.Consumer != consumer || p.Provider != provider {
			continue
		}
		for _, c := range p.Unexpected() {
			if c.Cluster == cluster && c.Reason == reasons.UnexpectedArtifact && strings.Contains(c.Message, file) {
				return
			}
		}
		w.t.Fatalf("gitpeer status does not show %s reporting %s: %+v", cluster, file, p.Conditions)
	}
	w.t.Fatalf("gitpeer status has no peering %s → %s", consumer, provider)
}

// neverApplied registers, for cluster id's applied branch from now on, that
// its kustomization names neither an inbox nor the planted binding, and
// that the binding is not among its rendered objects.
func (w *world) neverApplied(id string) {
	w.forbid(id, layout.ClusterPath(id, layout.KustomizationFile), "inbox")
	w.forbid(id, layout.ClusterPath(id, layout.KustomizationFile), "clusterrolebinding-evil")
	for _, peer := range w.ids {
		w.forbid(id, layout.ClusterPath(id, layout.LiqoDir, peer, "clusterrolebinding-evil.yaml"), "")
	}
}

// noEvilRendered fails if any file under clusters/<id>/liqo/ of cluster
// id's applied branch holds the planted binding's subject.
func (w *world) noEvilRendered(id string) {
	w.t.Helper()
	branch := layout.AppliedBranch(id)
	for _, f := range w.listTree(branch, layout.ClusterPath(id, layout.LiqoDir)) {
		if data, ok := w.showAt(branch, f); ok && strings.Contains(string(data), "namespace: evil") {
			w.t.Fatalf("%s applies the planted binding in %s:\n%s", branch, f, data)
		}
	}
}

// TestAFilePlantedInAnInboxIsIgnoredAndNamed: while alpha and beta
// handshake, a repo writer plants an unsigned ClusterRoleBinding in alpha's
// inbox at beta, where kustomize-controller would apply it if it generated
// a kustomization from every manifest under clusters/alpha. alpha's pass
// sends its Tenant all the same and names the file UnexpectedArtifact in
// its status, gitpeer status shows it, verify names it (UnexpectedArtifact
// and UnsignedChange); beta, whose folder it is, removes it; the handshake
// completes, nothing is signed for it, and no applied branch ever lists or
// renders it.
func TestAFilePlantedInAnInboxIsIgnoredAndNamed(t *testing.T) {
	t.Parallel()
	w := fresh(t, twoSpec)
	planted := "clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml"
	for _, id := range w.ids {
		w.neverApplied(id)
	}
	w.pass("beta") // nonce
	attack := w.attack("mallory <mallory@example.com>", "alpha: bind the operator", func(a *writer) {
		a.write(planted, []byte(evilBinding))
	})

	w.pass("alpha")
	if ps := w.peering("alpha", "alpha", "beta"); ps.Step != layout.StepTenantSent {
		t.Fatalf("alpha did not send its Tenant beside the planted file: %s", describe(w.peering("alpha", "alpha", "beta")))
	}
	w.mustReportUnexpected("alpha", "alpha", "beta", planted)
	w.statusShows("alpha", "alpha", "beta", planted)
	findings := w.verify()
	mustFind(t, findings, planted, reasons.UnexpectedArtifact, "")
	mustFind(t, findings, planted, reasons.UnsignedChange, attack)
	w.noEvilRendered("alpha")

	w.pass("beta") // the Identity; beta's folder is beta's to keep clean
	if _, ok := w.show(planted); ok {
		t.Fatalf("beta's pass left %s in its folder", planted)
	}
	w.converge()
	w.mustBeReady("alpha", "beta")
	w.mustNotReportUnexpected("alpha", "alpha", "beta")
	for _, id := range w.ids {
		w.noEvilRendered(id)
	}
	noTreeFindings(t, w.verify())
}

// TestAnExtraObjectAPeerSignsIntoItsOutboxIsIgnoredAndNamed: alpha, a
// hostile consumer holding its own key, signs a ClusterRoleBinding into its
// folder of beta's inbox beside its Tenant, at each step of the handshake.
// The signature holds, so only the inbox rule stops it: beta issues the
// Identity and reaches Ready all the same, names the file
// UnexpectedArtifact in its status (shown by gitpeer status), verify names
// it (UnexpectedArtifact, and no UnsignedChange: alpha signed it), beta
// signs one certificate (alpha's Identity) and nothing else, and no
// applied branch ever lists or renders the binding.
func TestAnExtraObjectAPeerSignsIntoItsOutboxIsIgnoredAndNamed(t *testing.T) {
	t.Parallel()
	w := fresh(t, twoSpec)
	extra := "clusters/beta/inbox/alpha/clusterrolebinding-evil.yaml"
	for _, id := range w.ids {
		w.neverApplied(id)
	}
	alpha := w.clusters["alpha"].b.Signer()
	sign := func() {
		w.attack(alphaAuthor, "alpha: send tenant to beta\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
			a.write(extra, []byte(evilBinding))
			a.resign(alpha, "alpha", "clusters/beta/inbox/alpha")
		})
	}
	w.pass("beta")  // nonce
	w.pass("alpha") // Tenant and slice requests
	sign()
	before := w.signed("beta")

	w.pass("beta")
	if ps := w.peering("beta", "alpha", "beta"); ps.Step != layout.StepIdentityIssued {
		t.Fatalf("beta did not issue alpha's Identity beside the extra object: %s", describe(ps))
	}
	w.mustReportUnexpected("beta", "alpha", "beta", extra)
	w.statusShows("beta", "alpha", "beta", extra)
	findings := w.verify()
	mustFind(t, findings, extra, reasons.UnexpectedArtifact, "")
	for _, f := range findings {
		if f.File == extra && f.Commit == "" && f.Reason != reasons.UnexpectedArtifact {
			t.Errorf("verify finds more than the inbox rule in alpha's signed file: %s", f)
		}
	}
	w.noEvilRendered("beta")

	w.pass("alpha") // accepts the Identity (an honest pass withdraws the extra object)
	sign()          // and the hostile peer signs it in again
	w.pass("beta")
	w.mustBeReady("alpha", "beta")
	w.mustReportUnexpected("beta", "alpha", "beta", extra)
	// alpha's Identity and the one slice beta grants (pool), nothing more.
	if n := w.signed("beta") - before; n != 2 {
		t.Errorf("beta signed %d certificates, want 2 (the Identity and pool)", n)
	}
	for _, id := range w.ids {
		w.noEvilRendered(id)
	}
	mustFind(t, w.verify(), extra, reasons.UnexpectedArtifact, "")
}
