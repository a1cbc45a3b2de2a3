package attack

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// A signature proves who made a seal, never when (docs/trust.md, "A cluster
// applies only its freshest seal"). These tests replay what beta once
// signed, the way a writer of the repo would, after the spec revoked
// alpha → beta: alpha must never get its RBAC on beta back.

const (
	betaRoleBinding = "clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml"
	betaCRB         = "clusters/beta/liqo/alpha/clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml"
	twoSpecClusters = "clusters: [{id: \"alpha\"}, {id: \"beta\", provider: {nonceLifetime: \"1h\"}}]\n"
)

// reviewBranch is the review branch of cluster id in these tests.
func reviewBranch(id string) string { return "gitpeer/review/" + id }

// reviewing makes cluster id's reconciler propose what it applies on its
// review branch from its next pass on (reconcile --push-branch
// --review-scope applied).
func (w *world) reviewing(id string) {
	w.t.Helper()
	if w.reviewed == nil {
		w.reviewed = map[string]bool{}
	}
	w.reviewed[id] = true
	if err := w.openRunner(w.clusters[id]); err != nil {
		w.t.Fatal(err)
	}
}

// merge is a maintainer merging cluster id's proposal into main (a merge
// commit, as a pull request's merge button makes).
func (w *world) merge(id string) string {
	w.t.Helper()
	branch := reviewBranch(id)
	if w.ref(branch) == "" {
		w.t.Fatalf("%s has no proposal on %s to merge", id, branch)
	}
	a := w.writer()
	a.git("fetch", "-q", "origin", "refs/heads/"+branch+":refs/remotes/origin/"+branch)
	a.git("-c", "user.name=maintainer", "-c", "user.email=maintainer@example.com", "merge", "-q", "--no-ff", "--no-edit", "origin/"+branch)
	a.push()
	return w.ref("main")
}

// roundsUntil runs rounds of passes, providers first, until done (called
// after every pass with the cluster and its result) holds, for at most six
// rounds; it fails the test naming what never happened.
func (w *world) roundsUntil(what string, done func(id string, res *runner.Result) bool) {
	w.t.Helper()
	for round := 0; round < 6; round++ {
		for _, id := range w.ids {
			if done(id, w.pass(id)) {
				return
			}
		}
	}
	w.t.Fatalf("after six rounds: never %s", what)
}

// applies reports whether cluster id's applied branch holds path.
func (w *world) applies(id, path string) bool {
	w.t.Helper()
	_, ok := w.showAt(w.ref(layout.AppliedBranch(id)), path)
	return ok
}

// revokeAlphaBeta is the spec change that revokes alpha → beta.
func (w *world) revokeAlphaBeta() {
	w.t.Helper()
	w.editSpec(twoSpec[len(twoSpecClusters):], "peerings: []\n", "revoke alpha → beta")
}

// TestAReplayedSealIsUndoneBeforeAFailingPass: case 1 of issue 28. The
// spec revokes alpha → beta and beta seals a tree without alpha's
// bindings. A writer points gitpeer/applied/beta back at the older seal
// that still held them (validly signed by beta) and breaks the spec, so
// that beta's passes fail. beta's next pass fails on the spec, yet before
// it the applied branch is back at the newest seal, the one beta's pin
// store recorded.
func TestAReplayedSealIsUndoneBeforeAFailingPass(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	old := w.ref(layout.AppliedBranch("beta"))
	for _, p := range []string{betaRoleBinding, betaCRB} {
		if !w.applies("beta", p) {
			t.Fatalf("the settled seal of beta lacks %s", p)
		}
	}
	w.revokeAlphaBeta()
	w.pass("beta")
	newest := w.ref(layout.AppliedBranch("beta"))
	if newest == old || w.applies("beta", betaRoleBinding) || w.applies("beta", betaCRB) {
		t.Fatalf("beta's seal after the revocation (%s, was %s) still binds alpha", newest, old)
	}
	if got := w.pinStore("beta").Seal; got != newest {
		t.Fatalf("beta's pin store records seal %s, want its newest %s", got, newest)
	}

	w.attack("mallory <mallory@example.com>", "spec: tidy", func(a *writer) {
		a.edit("peering.cue", "peerings: []", "peerings: [")
		a.git("push", "-q", "--force", "origin", old+":refs/heads/"+layout.AppliedBranch("beta"))
	})
	if w.ref(layout.AppliedBranch("beta")) != old {
		t.Fatal("the replay did not land")
	}

	res, err := w.tryPass("beta")
	if err == nil {
		t.Fatal("beta's pass succeeded on a broken spec: the test no longer makes the pass fail")
	}
	if got := w.ref(layout.AppliedBranch("beta")); got != newest {
		t.Fatalf("after beta's failed pass (%v) its applied branch is at %s, not its newest seal %s", err, got, newest)
	}
	if res == nil || res.AppliedRestored != old {
		t.Fatalf("beta's pass does not say it restored the applied branch from %s: %+v", old, res)
	}
	for _, p := range []string{betaRoleBinding, betaCRB} {
		if w.applies("beta", p) {
			t.Fatalf("beta applies %s again", p)
		}
	}
}

// TestAReviewedRevocationIsSealedAtOnceAndStays: case 2 of issue 28, and
// the rule that taking access away never waits for a review. beta reviews
// what it applies. The spec revokes alpha → beta: beta's very next pass
// seals a tree without alpha's bindings, although its proposal is not
// merged yet. The proposal is merged; then a writer restores clusters/beta/
// on main from before the revocation (beta's own signed files, an older
// manifest). beta proposes the repair, and meanwhile seals nothing of
// what was restored.
func TestAReviewedRevocationIsSealedAtOnceAndStays(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	w.reviewing("beta")
	before := w.ref("main")
	w.revokeAlphaBeta()
	w.forbid("beta", betaRoleBinding, "")
	w.forbid("beta", betaCRB, "")
	res := w.pass("beta")
	if res.Proposed == "" {
		t.Fatalf("beta proposed nothing for the revocation: %+v", res)
	}
	if _, ok := w.show(betaRoleBinding); !ok {
		t.Fatal("the revocation reached main without a merge")
	}
	// checkApplied (after every pass) holds: the bindings are not sealed.
	w.merge("beta")
	w.pass("beta")
	w.pass("alpha")

	attack := w.attack("mallory <mallory@example.com>", "beta: restore", restore(before, "clusters/beta"))
	if _, ok := w.show(betaRoleBinding); !ok {
		t.Fatalf("the restore (%s) did not bring the binding back to main", attack)
	}
	for range 2 {
		res := w.pass("beta")
		if res.Proposed == "" {
			t.Fatalf("beta did not propose to repair its restored tree: %+v", res)
		}
	}
}

// TestACopiedProposalIsNotSealed: case 3 of issue 28. beta reviews what it
// applies. While alpha → beta is being set up, beta proposes alpha's
// Tenant and bindings; nobody merges the proposal, and the spec revokes
// the peering, which withdraws it. A writer copies the old proposal's
// clusters/beta/ onto main: files beta signed, with its highest sequence.
// beta seals none of alpha's objects.
func TestACopiedProposalIsNotSealed(t *testing.T) {
	t.Parallel()
	w := fresh(t, twoSpec)
	w.reviewing("beta")
	var proposal string
	w.roundsUntil("beta proposes alpha's bindings", func(id string, _ *runner.Result) bool {
		if p := w.ref(reviewBranch("beta")); p != "" {
			if _, ok := w.showAt(p, betaRoleBinding); ok {
				proposal = p
			}
		}
		return proposal != ""
	})
	w.forbid("beta", betaRoleBinding, "")
	w.forbid("beta", betaCRB, "")
	w.forbid("beta", "clusters/beta/liqo/alpha/tenant-alpha.yaml", "")
	w.revokeAlphaBeta()
	w.pass("beta")

	w.attack("mallory <mallory@example.com>", "beta: merge", restore(proposal, "clusters/beta"))
	if _, ok := w.show(betaRoleBinding); !ok {
		t.Fatal("the copy did not bring the binding to main")
	}
	w.pass("beta")
	w.pass("beta")
	// checkApplied (after every pass) holds: no binding, no Tenant. What
	// the revocation itself renders while it drains (the tenant namespace,
	// the admission policy) may be sealed: beta renders it now.
	for _, p := range []string{betaRoleBinding, betaCRB} {
		if w.applies("beta", p) {
			t.Fatalf("beta applies %s after the copy", p)
		}
	}
}

// TestAProposedIdentityIsNotActedOn: issue 29, point 7. alpha reviews what
// it applies. Its pass that verifies beta's Identity proposes the rendered
// Identity for review; until that is merged alpha's backend does nothing
// with it (no kubeconfig), as alpha's engine applies nothing of it. After
// the merge, the next pass stores the kubeconfig.
func TestAProposedIdentityIsNotActedOn(t *testing.T) {
	t.Parallel()
	w := fresh(t, twoSpec)
	w.reviewing("alpha")
	path := w.clusters["alpha"].b.KubeconfigPath("beta")
	w.roundsUntil("alpha proposes beta's Identity", func(id string, res *runner.Result) bool {
		if id != "alpha" || len(res.AwaitingMerge) == 0 {
			return false
		}
		if res.AwaitingMerge[0] != "beta" || res.Proposed == "" {
			t.Fatalf("alpha's pass: awaiting %v, proposed %q", res.AwaitingMerge, res.Proposed)
		}
		return true
	})
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("alpha stored a kubeconfig for an Identity nobody merged: %v", err)
	}
	w.merge("alpha")
	if res := w.pass("alpha"); len(res.AwaitingMerge) != 0 || res.Kubeconfigs["beta"] != path {
		t.Fatalf("alpha's pass after the merge: awaiting %v, kubeconfigs %v", res.AwaitingMerge, res.Kubeconfigs)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no kubeconfig after the merge: %v", err)
	}
}
