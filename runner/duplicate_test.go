package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/backend/file"
	"github.com/gitpeer/gitpeer/gitsync"
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
	// A human's spec change, so that each pass has something to write.
	work := filepath.Join(root, "work")
	peers := []string{"beta"}
	change := func(peer string) {
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
			cmd := exec.Command("git", args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		run("pull", "-q", "--ff-only")
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "-A")
		run("commit", "-qm", "peer with "+peer)
		run("push", "-q", "origin", "main")
	}

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
