package attack

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Issue 28's cases 1 to 3 as verify sees them: what a cluster once signed,
// brought back by a writer after the spec revoked a peering.

// revokedInDrain returns a copy of the settled alpha → beta world in which
// the spec revoked the peering and every cluster ran its passes, beta
// draining the Tenant (its RBAC unbound, its artifacts kept for the drain
// period), and main as it was before the revocation.
func revokedInDrain(t *testing.T) (*world, string) {
	t.Helper()
	return revokedInDrainFrom(t, settled(t, twoSpec))
}

// revokedInDrainFrom is revokedInDrain from w, a settled alpha → beta world.
func revokedInDrainFrom(t *testing.T, w *world) (*world, string) {
	t.Helper()
	old := w.ref("main")
	rbac := w.rbacFiles(old)
	peering := twoSpec[strings.Index(twoSpec, "peerings: ["):]
	w.editSpec(peering, "peerings: []\n", "revoke alpha → beta")
	// Until beta's next pass, the tree holds the full rendering: what beta
	// wrote while the spec held the peering. No finding.
	noTreeFindings(t, w.verify())
	w.converge()
	for _, f := range rbac {
		if _, ok := w.show(f); ok {
			t.Fatalf("beta's pass left %s after the revocation", f)
		}
	}
	noTreeFindings(t, w.verify())
	return w, old
}

// rbacFiles are the RoleBinding and ClusterRoleBinding files beta renders
// for alpha in revision rev (at least one, or the test fails).
func (w *world) rbacFiles(rev string) []string {
	w.t.Helper()
	var out []string
	for _, f := range w.listTree(rev, layout.PeerDir("beta", "alpha")) {
		if base := filepath.Base(f); strings.HasPrefix(base, "rolebinding-") || strings.HasPrefix(base, "clusterrolebinding-") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		w.t.Fatalf("beta renders no RBAC for alpha at %s", rev)
	}
	return out
}

// TestAProposalCopiedOntoMainIsNamedByVerify (issue 28, case 3): the spec
// revoked alpha → beta and beta drained alpha's Tenant. A writer copies onto
// main beta's tree as beta signed it while it still provided to alpha (as a
// proposal nobody merged would be: the Tenant active, alpha's RoleBinding and
// ClusterRoleBinding, the admission policy admitting its slices), signed by
// beta with the highest sequence. Every file is vouched for by beta's
// manifest, and each object is one gitpeer renders for some state of the
// peering, but the commit wrote them while the spec held no such peering:
// verify, and verify --base at the commit before, name each binding
// PeeringNotInSpec, with the commit.
func TestAProposalCopiedOntoMainIsNamedByVerify(t *testing.T) {
	t.Parallel()
	w, old := revokedInDrain(t)
	rbac := w.rbacFiles(old)
	before := w.ref("main")
	attack := w.attack("mallory <mallory@example.com>", "beta: restore", func(a *writer) {
		a.remove("clusters/beta/liqo")
		a.git("checkout", old, "--", "clusters/beta/liqo", "clusters/beta/kustomization.yaml", "clusters/beta/status.yaml")
		a.resign(w.clusters["beta"].b.Signer(), "beta", "clusters/beta")
	})
	for _, f := range rbac {
		if _, ok := w.show(f); !ok {
			t.Fatalf("the attack did not land %s", f)
		}
	}
	findings := w.verify()
	for _, f := range rbac {
		mustFind(t, findings, f, reasons.PeeringNotInSpec, attack)
	}
	for _, f := range findings {
		if f.Reason == reasons.PeeringNotInSpec && !strings.Contains(f.Message, "alpha") {
			t.Errorf("the finding does not name the consumer: %s", f)
		}
	}

	// The pull request's check: the same commit, judged against main
	// before it.
	a := w.writer()
	spec, _, err := schema.Load(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	based, err := verify.Check(a.dir, spec, verify.Options{Now: w.clock.Now(), RequireManifests: true, Base: before})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rbac {
		mustFind(t, based, f, reasons.PeeringNotInSpec, attack)
	}
}

// TestARestoredTreeOfAProviderIsRolledBack (issue 28, case 2): after the
// revocation, a writer restores clusters/beta/ as it was before it, validly
// signed by beta at its older sequence. verify names the manifest
// ManifestRolledBack.
func TestARestoredTreeOfAProviderIsRolledBack(t *testing.T) {
	t.Parallel()
	w, old := revokedInDrain(t)
	attack := w.attack("mallory <mallory@example.com>", "beta: restore", func(a *writer) {
		a.remove("clusters/beta/liqo")
		a.git("checkout", old, "--", "clusters/beta/liqo", "clusters/beta/kustomization.yaml", "clusters/beta/status.yaml", "clusters/beta/manifest.yaml")
	})
	mustFind(t, w.verify(), "clusters/beta/"+dirmanifest.FileName, reasons.ManifestRolledBack, attack)
}

// TestAReplayedSealIsNamedByVerify (issue 28, case 1): after the revocation,
// beta's newest seal no longer binds alpha. A writer points
// gitpeer/applied/beta back at the seal before it, validly signed by beta,
// which still holds alpha's RoleBinding, and (so that beta's passes fail
// before sealing) edits clusters/beta/cluster.yaml. verify on a clone that
// has the applied branches names the branch StaleSeal, with the replayed
// head, its parent and beta's newer commit; a clone of main alone cannot
// tell, and says nothing about it (no error). Once beta's reconciler
// restores its newest seal, the finding is gone.
func TestAReplayedSealIsNamedByVerify(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	branch := layout.AppliedBranch("beta")
	stale := w.ref(branch)
	for _, f := range w.verify() {
		if f.Reason == reasons.StaleSeal || f.Reason == reasons.InvalidSeal {
			t.Fatalf("verify on a settled world: %s", f)
		}
	}
	w, _ = revokedInDrainFrom(t, w)
	fresh := w.ref(branch)
	if fresh == stale {
		t.Fatal("beta did not seal the revocation")
	}
	parent := strings.TrimSpace(w.git("rev-parse", stale+"^"))
	a := w.writer()
	a.git("push", "-q", "-f", "origin", stale+":refs/heads/"+branch)
	w.attack("mallory <mallory@example.com>", "beta: api server", func(a *writer) {
		a.edit(layout.ClusterPath("beta", layout.ClusterFile), "https://beta.gitpeer.test:6443", "https://evil.example:6443")
	})

	findings := w.verify()
	mustFind(t, findings, "origin/"+branch, reasons.StaleSeal, stale)
	for _, f := range findings {
		if f.Reason == reasons.StaleSeal {
			assertContains(t, "the finding", f.String(), stale[:12], parent[:12], "beta")
		}
	}

	// A clone of main alone (as CI checks out) has no applied branch:
	// nothing to judge, no error.
	single := filepath.Join(t.TempDir(), "single")
	if out, err := testgit.Command("", "clone", "-q", "--single-branch", "-b", "main", w.remote, single).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	spec, _, err := schema.Load(single)
	if err != nil {
		t.Fatal(err)
	}
	opts := verify.Options{Now: w.clock.Now(), RequireManifests: true}
	got, err := verify.Check(single, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.Reason == reasons.StaleSeal {
			t.Fatalf("a clone without the applied branches: %s", f)
		}
	}
	// The documented fetch brings them.
	if out, err := testgit.Command(single, "fetch", "-q", "origin", "refs/heads/gitpeer/applied/*:refs/remotes/origin/gitpeer/applied/*").CombinedOutput(); err != nil {
		t.Fatalf("fetch: %v\n%s", err, out)
	}
	if got, err = verify.Check(single, spec, opts); err != nil {
		t.Fatal(err)
	}
	mustFind(t, got, "origin/"+branch, reasons.StaleSeal, stale)

	// beta's next pass restores its newest seal first, whatever the pass
	// then does.
	_, _ = w.clusters["beta"].r.Pass(ctx)
	if now := w.ref(branch); now != fresh {
		t.Fatalf("beta's pass left %s at %s, not its newest seal %s", branch, now, fresh)
	}
	for _, f := range w.verify() {
		if f.Reason == reasons.StaleSeal || f.Reason == reasons.InvalidSeal {
			t.Fatalf("after beta restored its seal: %s", f)
		}
	}
}

// TestAReplayedSealUnderReviewIsNamedByVerify (issue 29): beta reviews what
// it applies. Its pass proposes the revocation of alpha → beta and seals
// it at once; once the proposal is merged, and until beta's next pass,
// beta's seal is older than the merge, yet the proposal names that seal as
// the one in force (Gitpeer-Applied, under beta's signature): verify
// lists the StaleSeal as resolved (SealPending) and exits 0. A writer who
// then points gitpeer/applied/beta back at the seal before the revocation
// (validly signed by beta, and still binding alpha) is named StaleSeal,
// not resolved: no commit of beta's names that seal.
func TestAReplayedSealUnderReviewIsNamedByVerify(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	w.reviewing("beta")
	branch := layout.AppliedBranch("beta")
	stale := w.ref(branch)
	w.revokeAlphaBeta()
	if res := w.pass("beta"); res.Proposed == "" {
		t.Fatalf("beta proposed nothing for the revocation: %+v", res)
	}
	sealed := w.ref(branch)
	if sealed == stale {
		t.Fatal("beta did not seal the revocation at once")
	}
	proposal := w.ref(reviewBranch("beta"))
	w.merge("beta")

	findings := w.verify()
	mustFindResolved(t, findings, "origin/"+branch, reasons.StaleSeal, sealed)
	if failing := verify.Failing(findings, false); len(failing) > 0 {
		t.Fatalf("verify after the merge, before beta's next pass, fails on %s", failing[0])
	}
	for _, f := range findings {
		if f.Reason == reasons.StaleSeal && (f.Resolved.Reason != verify.ResolutionSealPending || f.Resolved.Commit != proposal) {
			t.Fatalf("the unsealed merge is resolved as %+v, want %s by beta's proposal %s", f.Resolved, verify.ResolutionSealPending, proposal)
		}
	}

	a := w.writer()
	a.git("push", "-q", "-f", "origin", stale+":refs/heads/"+branch)
	mustFind(t, w.verify(), "origin/"+branch, reasons.StaleSeal, stale)
}

// TestAnOldProposalReplayedWithItsSealIsNamedByVerify: beta reviews what
// it applies. It proposes alpha's bindings, naming the seal then in force
// (which holds none of them); the proposal is merged and sealed; the spec
// then revokes alpha → beta, and beta's proposal of that is merged too. A
// writer restores clusters/beta/ as the first proposal left it and points
// gitpeer/applied/beta back at the seal that proposal names: every file
// that differs now stands as a commit naming that seal introduced it, yet
// beta signed a newer proposal since, naming another. verify names the
// branch StaleSeal, not resolved.
func TestAnOldProposalReplayedWithItsSealIsNamedByVerify(t *testing.T) {
	t.Parallel()
	w := fresh(t, twoSpec)
	w.reviewing("beta")
	var proposal string
	w.roundsUntil("beta proposes alpha's bindings", func(string, *runner.Result) bool {
		if p := w.ref(reviewBranch("beta")); p != "" {
			if _, ok := w.showAt(p, betaRoleBinding); ok {
				proposal = p
			}
		}
		return proposal != ""
	})
	named := trailer.Values(w.git("log", "-1", "--format=%B", proposal), trailer.Applied)
	if len(named) != 1 {
		t.Fatalf("beta's proposal names the seals %q, want one", named)
	}
	w.merge("beta")
	w.pass("beta")
	w.revokeAlphaBeta()
	w.pass("beta")
	w.merge("beta")
	w.pass("beta")

	branch := layout.AppliedBranch("beta")
	w.attack("mallory <mallory@example.com>", "beta: restore", restore(proposal, "clusters/beta"))
	w.writer().git("push", "-q", "-f", "origin", named[0]+":refs/heads/"+branch)
	mustFind(t, w.verify(), "origin/"+branch, reasons.StaleSeal, named[0])
}
