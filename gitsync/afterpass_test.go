package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// reopenAfterPass opens a second Repo on r's clone with CheckoutAfterPass,
// as the next reconcile --once process does.
func reopenAfterPass(t *testing.T, bare string, r *Repo, name string) *Repo {
	t.Helper()
	return reopenWith(t, bare, r, name, func(o *Options) { o.CheckoutAfterPass = true })
}

func treeWrites(files map[string]string) func(context.Context, *TreeFS) (*Change, error) {
	return func(context.Context, *TreeFS) (*Change, error) {
		ch := &Change{Writes: map[string][]byte{}, Message: "pass"}
		for name, data := range files {
			ch.Writes[name] = []byte(data)
		}
		return ch, nil
	}
}

// TestCheckoutAfterPassMovesTheWorktreeOnce: a process that opens the clone
// with CheckoutAfterPass after other writers' commits, and commits, moves
// the worktree and writes the index once, from where the last process left
// it to its own commit; the checkout then is the tip, clean, and sound.
func TestCheckoutAfterPassMovesTheWorktreeOnce(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
	mustSync(t, a, writes("a", map[string]string{"x/a.yaml": "a\n", "y/gone.yaml": "g\n"}))
	mustSync(t, a, writes("a2", map[string]string{"x/a.yaml": "a2\n"}))

	c := reopenAfterPass(t, bare, b, "cl-b")
	if _, err := os.Stat(filepath.Join(c.Dir(), "x", "a.yaml")); err == nil {
		t.Error("Open with CheckoutAfterPass moved the worktree before the pass")
	}
	res, err := c.SyncTree(context.Background(), treeWrites(map[string]string{"y/c.yaml": "c\n"}))
	if err != nil || res.Commit == "" {
		t.Fatalf("SyncTree: %+v, %v", res, err)
	}
	if c.indexWrites != 1 || c.fullResets != 0 {
		t.Errorf("a working process wrote the index %d times with %d full resets, want once and none", c.indexWrites, c.fullResets)
	}
	// The next process starts from what this one left (before git status
	// below, which may rewrite the index and so void the snapshot).
	d := reopenAfterPass(t, bare, c, "cl-b")
	if _, err := d.SyncTree(context.Background(), treeWrites(map[string]string{"y/c.yaml": "c\n"})); err != nil {
		t.Fatal(err)
	}
	if d.fullResets != 0 || d.indexWrites != 0 {
		t.Errorf("an idle process on a settled checkout: %d full resets, %d index writes; want none", d.fullResets, d.indexWrites)
	}
	assertTip(t, bare, d)
	runGit(t, d.Dir(), "fsck", "--strict", "--no-progress")
}

// TestCheckoutAfterPassEndsAtTheTip: whatever the pass does (nothing on a
// tip others moved, or a proposal on a review branch), the SyncTree ends
// with the checkout at the shared branch's tip.
func TestCheckoutAfterPassEndsAtTheTip(t *testing.T) {
	t.Run("an idle pass on others' commits", func(t *testing.T) {
		bare := newBare(t)
		a := openRepo(t, bare, "cl-a")
		b := openRepo(t, bare, "cl-b")
		mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
		mustSync(t, a, writes("a", map[string]string{"x/a.yaml": "a\n"}))
		c := reopenAfterPass(t, bare, b, "cl-b")
		if res, err := c.SyncTree(context.Background(), treeWrites(map[string]string{"y/b.yaml": "b\n"})); err != nil || res.Commit != "" {
			t.Fatalf("SyncTree: %+v, %v", res, err)
		}
		assertTip(t, bare, c)
	})
	t.Run("a proposal", func(t *testing.T) {
		bare := newBare(t)
		a := openProposing(t, bare)
		other := openRepo(t, bare, "cl-o")
		mustSync(t, other, writes("o", map[string]string{"clusters/beta/b.yaml": "b\n"}))
		opts := appliedOptions(t, bare)
		opts.Dir, opts.AppliedKey, opts.PushBranch, opts.CheckoutAfterPass = a.Dir(), alphaKey.Public(), pushBranch, true
		c, err := Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.SyncTree(context.Background(), treeWrites(map[string]string{"clusters/alpha/a.yaml": "a\n"}))
		if err != nil || res.Proposed == "" {
			t.Fatalf("SyncTree: %+v, %v", res, err)
		}
		assertTip(t, bare, c)
	})
}

// TestAnIdleProcessRecordsAnIndexGitRewrote: after git status rewrote the
// index, the next idle process (CheckoutAfterPass, so it moves nothing)
// still records the index's new stat, so the process after it does not
// compare the index with the tree again.
func TestAnIdleProcessRecordsAnIndexGitRewrote(t *testing.T) {
	bare := newBare(t)
	b := openRepo(t, bare, "cl-b")
	mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
	runGit(t, b.Dir(), "update-index", "--index-version", "4")
	c := reopenAfterPass(t, bare, b, "cl-b")
	if _, err := c.SyncTree(context.Background(), treeWrites(map[string]string{"y/b.yaml": "b\n"})); err != nil {
		t.Fatal(err)
	}
	ix, ok := snapshotIndex(c.snapPath())
	now, ok2 := c.indexStat()
	if !ok || !ok2 || ix != now || c.fullResets != 0 {
		t.Errorf("snapshot records index %+v, the index is %+v; %d full resets", ix, now, c.fullResets)
	}
}
