package attack

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Paths no checkout can hold: 2,100 directories deep (4,200 bytes, past
// Linux's PATH_MAX), a 300-byte name (past every file system's NAME_MAX),
// and names Git for Windows refuses (a device name, a trailing dot).
var (
	deepPath     = "docs/" + strings.Repeat("a/", 2100) + "x.yaml"
	longNamePath = "docs/" + strings.Repeat("n", 300) + ".yaml"
	devicePath   = "docs/aux.yaml"
	dotPath      = "docs/notes./x.yaml"
)

// pushUncheckoutable commits the paths above onto main as a repo writer
// would: with git fast-import, since no checkout of the writer's can hold
// them either.
func pushUncheckoutable(t *testing.T, w *world) {
	t.Helper()
	a := w.writer()
	var in strings.Builder
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter mallory <mallory@example.com> %d +0000\ndata 9\nadd docs\nfrom %s\n",
		w.clock.Now().Unix(), a.git("rev-parse", "HEAD"))
	for _, p := range []string{deepPath, longNamePath, devicePath, dotPath} {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata 8\nkind: x\n\n", p)
	}
	cmd := testgit.Command(a.dir, "fast-import", "--quiet", "--force")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	w.clock.Advance(time.Second)
	a.git("push", "-q", "origin", "refs/heads/main:refs/heads/main")
}

// TestAPathNoCheckoutCanHoldStallsNoPass: a repo writer commits to main a
// path 2,100 directories deep, a 300-byte name and names Windows refuses.
// A clone that checks out the tip chokes on them ("file name too long"),
// and one that moves an existing checkout could hang. Every reconciler,
// with the clone it had and with a new one, still completes its passes
// within seconds, and verify names each path UncheckoutablePath.
func TestAPathNoCheckoutCanHoldStallsNoPass(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	pushUncheckoutable(t, w)

	// The reconcilers as they were: each with the clone it had.
	for _, id := range w.ids {
		passWithin(t, w, id)
	}
	// New reconcilers, on new clones.
	for _, id := range w.ids {
		c := w.clusters[id]
		if err := openRunnerAt(w, c, filepath.Join(w.dir, "checkouts-new", id)); err != nil {
			t.Fatalf("open a new clone for %s: %v", id, err)
		}
		passWithin(t, w, id)
	}
	w.mustBeReady("alpha", "beta")

	findings := verifyNoCheckout(t, w)
	for _, p := range []string{longNamePath, devicePath, "docs/notes."} {
		mustFind(t, findings, p, reasons.UncheckoutablePath, "")
	}
	// The deep path is named once, where it grows past what a checkout
	// holds, not at each of the 2,100 levels.
	deep := 0
	for _, f := range findings {
		if f.Reason == reasons.UncheckoutablePath && strings.HasPrefix(deepPath, f.File+"/") {
			deep++
		}
	}
	if deep != 1 {
		t.Errorf("verify names the deep path %d times, want once: %v", deep, findings)
	}
	// The commit that brought them is as legitimate as any other writer's
	// outside clusters/: nothing else is found in the tree.
	for _, f := range findings {
		if f.Commit == "" && f.Reason != reasons.UncheckoutablePath {
			t.Errorf("verify finds in the tree: %s", f)
		}
	}
}

// openRunnerAt is world.openRunner on a clone in dir.
func openRunnerAt(w *world, c *cluster, dir string) error {
	opts, err := runner.Signed(gitsync.Options{
		URL: w.remote, Dir: dir, Clock: gitsync.ClockFunc(w.clock.Now),
		Push: gitsync.PushRetry{Backoff: func(gitsync.Contention) time.Duration { return time.Millisecond }},
	}, c.b, w.format)
	if err != nil {
		return err
	}
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		return err
	}
	c.r = &runner.Runner{Repo: repo, Backend: c.b, Now: w.clock.Now, LoadSpec: w.loadSpec}
	return nil
}

// passWithin runs one pass of id, which must succeed within a minute.
func passWithin(t *testing.T, w *world, id string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := w.clusters[id].r.Pass(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pass of %s: %v", id, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the pass of %s hangs", id)
	}
	if err := w.checkApplied(id, true); err != nil {
		t.Fatal(err)
	}
}

// verifyNoCheckout is world.verify on a clone without a checkout: the
// reviewer's git cannot check out what the attack commits.
func verifyNoCheckout(t *testing.T, w *world) []verify.Finding {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "review")
	if out, err := testgit.Command("", "clone", "-q", "--no-checkout", w.remote, dir).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	tree, err := gitobj.OpenCommitTree(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	file, data, err := schema.FindSpec(tree, dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := schema.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := verify.Check(dir, spec, verify.Options{Now: w.clock.Now(), History: true, RequireManifests: true})
	if err != nil {
		t.Fatal(err)
	}
	return findings
}
