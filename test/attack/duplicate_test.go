package attack

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// DuplicateReconciler is told only from evidence a writer without the
// cluster's key cannot make (docs/trust.md): commits signed with the key
// that the reconciler did not create. Its seals and proposals are its own.

// TestASealFastForwardedOntoMainIsNoSecondReconciler: a writer holding no
// key fast-forwards main through beta's seal commits (a seal's parent is
// the main commit it vouches for, so main can move onto it, and on to a
// commit restoring the tree), twice, each time with a change that makes
// beta commit and seal again. beta's reconciler, running on as a daemon
// does, reports no DuplicateReconciler: every pass succeeds and still
// writes, and the peering stays Ready.
func TestASealFastForwardedOntoMainIsNoSecondReconciler(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	const notes = "clusters/beta/inbox/alpha/notes.yaml"
	// Something beta answers with a commit and a seal: an unexpected
	// file in its inbox, named in its status, then gone.
	w.attack("mallory <mallory@example.com>", "notes for beta", func(a *writer) {
		a.write(notes, []byte("kind: ConfigMap\n"))
	})
	planted := true
	for round := 1; round <= 3; round++ {
		res, err := w.tryPass("beta")
		if errors.Is(err, runner.ErrDuplicateReconciler) {
			t.Fatalf("round %d: beta reports a second reconciler after a writer fast-forwarded main through its seals: %v", round, err)
		}
		if err != nil {
			t.Fatalf("round %d: beta's pass: %v", round, err)
		}
		if res.Commit == "" || !res.Sealed {
			t.Fatalf("round %d: beta's pass wrote nothing (commit %q, sealed %v)", round, res.Commit, res.Sealed)
		}
		if round == 3 {
			break
		}
		// The fast-forward: main moves to beta's seal (whose tree is
		// clusters/beta/ alone), then to a commit restoring main's tree,
		// with the notes file taken out or put back.
		seal, tip := w.ref(layout.AppliedBranch("beta")), w.ref("main")
		if parent := strings.TrimSpace(w.git("rev-parse", seal+"^")); parent != tip {
			t.Fatalf("round %d: beta's seal %s has parent %s, not main's tip %s", round, seal, parent, tip)
		}
		a := w.writer()
		a.git("checkout", "-q", "-B", "main", seal)
		a.git("checkout", tip, "--", ".")
		if planted {
			a.remove(notes)
		} else {
			a.write(notes, []byte("kind: ConfigMap\n"))
		}
		planted = !planted
		a.commit("mallory <mallory@example.com>", "restore main")
		a.push()
		if got := strings.TrimSpace(w.git("rev-parse", "main^")); got != seal {
			t.Fatalf("round %d: main's parent is %s, not beta's seal %s", round, got, seal)
		}
	}
	w.mustBeReady("alpha", "beta")
}
