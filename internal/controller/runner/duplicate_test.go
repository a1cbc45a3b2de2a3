package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestASecondReconcilerOfTheClusterIsNamed runs two reconcilers of alpha,
// the second on a copy of the first's state dir (same key), against one
// bare repo: once the first has pushed, a second commit by alpha's key
// that it did not make fails its passes with ErrDuplicateReconciler, naming
// the commits and what to do, and it pushes nothing more (no livelock).
func TestASecondReconcilerOfTheClusterIsNamed(t *testing.T) {
	r, tip := newRunner(t)
	ctx := context.Background()
	root := filepath.Dir(r.Repo.Dir())
	signed := func(r *Runner) *Runner {
		t.Helper()
		opts, err := Signed(gitsync.Options{URL: filepath.Join(root, "remote.git"), Dir: r.Repo.Dir()}, r.Backend, "")
		if err != nil {
			t.Fatal(err)
		}
		repo, err := gitsync.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return &Runner{Repo: repo, Backend: r.Backend}
	}
	first := signed(r)
	change := specChanger(t, root)
	res, err := first.Pass(ctx)
	if err != nil || res.Commit == "" {
		t.Fatalf("first pass: %v (commit %q)", err, res.Commit)
	}
	// A restarted reconciler is no second one: its first pass reads its
	// predecessor's commits without complaint.
	restarted := signed(r)
	change("gamma")
	if res, err := restarted.Pass(ctx); err != nil || res.Commit == "" {
		t.Fatalf("a restarted reconciler's pass: %v", err)
	}
	first = restarted

	// The copy: the same key, another state dir, another clone.
	copyDir := filepath.Join(root, "state-copy")
	if out, err := exec.Command("cp", "-a", filepath.Join(root, "state"), copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	b, err := file.Open(copyDir)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := Signed(gitsync.Options{URL: filepath.Join(root, "remote.git"), Dir: filepath.Join(root, "checkout-copy")}, b, "")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	second := &Runner{Repo: repo, Backend: b}
	change("delta")
	res2, err := second.Pass(ctx)
	if err != nil || res2.Commit == "" {
		t.Fatalf("the copy's first pass: %v", err)
	}

	// One commit it did not make may be its own push that failed on its
	// side but landed: the first reconciler goes on.
	change("epsilon")
	if res, err := first.Pass(ctx); err != nil || res.Commit == "" {
		t.Fatalf("one unknown commit stopped the first reconciler: %v", err)
	}
	// The copy writes again: that is a second writer.
	change("eta")
	res3, err := second.Pass(ctx)
	if err != nil || res3.Commit == "" {
		t.Fatalf("the copy's second pass: %v", err)
	}

	change("theta")
	before := tip()
	_, err = first.Pass(ctx)
	if !errors.Is(err, ErrDuplicateReconciler) {
		t.Fatalf("the first reconciler does not name the second: %v", err)
	}
	for _, want := range []string{res2.Commit[:12], res3.Commit[:12], "signed with cluster alpha's key but were not made by this reconciler",
		"stop every reconciler of alpha but one, then restart that one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if tip() != before {
		t.Errorf("the reconciler that saw a second writer pushed")
	}
	// It stays stopped: a later pass fails the same way, pushing nothing.
	change("zeta")
	before = tip()
	if _, err := first.Pass(ctx); !errors.Is(err, ErrDuplicateReconciler) || tip() != before {
		t.Errorf("a later pass: %v (tip moved: %v)", err, tip() != before)
	}
	// The other one writes on alone: no livelock.
	if res, err := second.Pass(ctx); err != nil || res.Commit == "" {
		t.Errorf("the remaining reconciler: %v", err)
	}
}

// TestProposalsMergedAsTheyAreAreOwnCommits: with a review branch and
// --review-scope applied, a Runner pushes its handshake part to main and
// proposes the rest; a proposal merged by a fast-forward or as a merge's
// second parent lands on main as the commit it made, signed with its key,
// and is never taken for a second reconciler's. Two commits it neither
// pushed nor proposed still are. A proposal alone does not start the watch:
// before its first push, commits by its key are a predecessor's.
func TestProposalsMergedAsTheyAreAreOwnCommits(t *testing.T) {
	var s selfWrites
	s.proposed("p0")
	if err := s.check("t0", "main", "alpha", func(string, string) ([]string, bool) { return []string{"old1", "old2"}, true }); err != nil {
		t.Fatalf("before any push: %v", err)
	}
	s.pushed("c1")
	s.proposed("p1")
	s.proposed("p2")
	if err := s.check("t1", "main", "alpha", func(string, string) ([]string, bool) { return []string{"p1", "p2", "c1"}, true }); err != nil {
		t.Fatalf("its own merged proposals: %v", err)
	}
	err := s.check("t2", "main", "alpha", func(string, string) ([]string, bool) { return []string{"x1", "x2"}, true })
	if !errors.Is(err, ErrDuplicateReconciler) {
		t.Fatalf("two commits it did not make: %v, want ErrDuplicateReconciler", err)
	}
}

// TestSealsFastForwardedOntoMainAreOwnCommits: a seal's parent is main's
// tip, so a writer holding no key can fast-forward main onto it. Seals the
// Runner made are its own, however many land on main; two commits it
// neither pushed, proposed nor sealed are still a second reconciler's.
func TestSealsFastForwardedOntoMainAreOwnCommits(t *testing.T) {
	var s selfWrites
	s.pushed("c1")
	s.sealed("s1")
	if err := s.check("t1", "main", "alpha", func(string, string) ([]string, bool) { return []string{"s1"}, true }); err != nil {
		t.Fatalf("its own seal on main: %v", err)
	}
	s.pushed("c2")
	s.sealed("s2")
	if err := s.check("t2", "main", "alpha", func(string, string) ([]string, bool) { return []string{"s2", "c2"}, true }); err != nil {
		t.Fatalf("its second seal on main: %v", err)
	}
	err := s.check("t3", "main", "alpha", func(string, string) ([]string, bool) { return []string{"x1", "x2"}, true })
	if !errors.Is(err, ErrDuplicateReconciler) {
		t.Fatalf("two commits it did not make: %v, want ErrDuplicateReconciler", err)
	}
}

// specChanger returns a human's spec change in the clone root/work of
// newRunner's repo: alpha peers with one more provider, peer, so that
// each pass of alpha has something to write.
func specChanger(t *testing.T, root string) func(peer string) {
	work := filepath.Join(root, "work")
	peers := []string{"beta"}
	return func(peer string) {
		t.Helper()
		peers = append(peers, peer)
		var cl, pe []string
		for _, p := range peers {
			cl = append(cl, `{id: "`+p+`"}`)
			pe = append(pe, `{consumer: "alpha", provider: "`+p+`"}`)
		}
		spec := "clusters: [{id: \"alpha\"}, " + strings.Join(cl, ", ") + "]\npeerings: [" + strings.Join(pe, ", ") + "]\n"
		run := func(args ...string) {
			t.Helper()
			testgit.Git(t, work, args...)
		}
		run("pull", "-q", "--ff-only")
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "-A")
		run("commit", "-qm", "peer with "+peer)
		run("push", "-q", "origin", "main")
	}
}

// once runs one pass of cluster alpha from the state dir state in a new
// process's shape (reconcile --once): a new Runner on its own clone,
// remembering nothing of earlier passes but what the state dir holds.
func once(t *testing.T, root, state, checkout string) (*Result, error) {
	t.Helper()
	ctx := context.Background()
	b, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := Signed(gitsync.Options{URL: filepath.Join(root, "remote.git"), Dir: filepath.Join(root, checkout)}, b, "")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return (&Runner{Repo: repo, Backend: b}).Pass(ctx)
}

// TestASecondReconcilerRunOncePerPassIsNamed: two reconcilers of alpha run
// as one process per pass (reconcile --once, in CI or a CronJob), the
// second on a copy of the first's state dir. Neither remembers its commits
// from one process to the next; their pin stores do: the second pass in a
// row to find a manifest of alpha's key that its own store did not sign
// fails with ErrDuplicateReconciler, naming the manifests and what to do,
// and pushes nothing. A state dir restored from an older copy of itself
// is no second reconciler: its passes go on.
func TestASecondReconcilerRunOncePerPassIsNamed(t *testing.T) {
	r, tip := newRunner(t)
	root := filepath.Dir(r.Repo.Dir())
	state := filepath.Join(root, "state")
	change := specChanger(t, root)
	if res, err := once(t, root, state, "a"); err != nil || res.Commit == "" {
		t.Fatalf("first pass: %v", err)
	}
	cp := func(from, to string) {
		t.Helper()
		_ = os.RemoveAll(to)
		if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
	}

	// Restored from an older copy of itself: one pass finds the newer
	// manifests, signs over them, and the next finds nothing new.
	cp(state, filepath.Join(root, "backup"))
	change("gamma")
	if _, err := once(t, root, state, "a"); err != nil {
		t.Fatal(err)
	}
	cp(filepath.Join(root, "backup"), state)
	for _, peer := range []string{"delta", "epsilon", "zeta"} {
		change(peer)
		if _, err := once(t, root, state, "a"); err != nil {
			t.Fatalf("a state dir restored from an older copy, pass after peering with %s: %v", peer, err)
		}
	}

	// A copy that writes too.
	second := filepath.Join(root, "state-copy")
	cp(state, second)
	var err error
	for i, run := range []struct{ state, checkout string }{{second, "b"}, {state, "a"}, {second, "b"}, {state, "a"}} {
		change(fmt.Sprintf("p%d", i))
		before := tip()
		if _, err = once(t, root, run.state, run.checkout); err != nil {
			if tip() != before {
				t.Errorf("the pass that named a second reconciler pushed")
			}
			break
		}
	}
	if !errors.Is(err, ErrDuplicateReconciler) {
		t.Fatalf("two reconcilers of alpha, once per pass: %v", err)
	}
	for _, want := range []string{"clusters/alpha/manifest.yaml (sequence", "not by this reconciler", "stop every reconciler of alpha but one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
