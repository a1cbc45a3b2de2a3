package gitsync

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestAWorkingProcessDecodesTheIndexOnce: a new process whose pass moves the
// worktree to the fetched tip and then to its own commit reads the index
// file once; the second move uses the index the first one wrote.
func TestAWorkingProcessDecodesTheIndexOnce(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
	mustSync(t, a, writes("a", map[string]string{"x/a.yaml": "a\n"}))
	c := reopen(t, bare, b, "cl-b") // moves b's worktree to a's commit
	mustSync(t, c, writes("c", map[string]string{"y/c.yaml": "c\n"}))
	if c.moves != 1 || c.indexDecodes != 1 {
		t.Errorf("a process that moved the worktree %d times decoded the index %d times, want once", c.moves, c.indexDecodes)
	}
	assertTip(t, bare, c)
	runGit(t, c.Dir(), "fsck", "--strict", "--no-progress")
	if out := runGit(t, c.Dir(), "status", "--porcelain"); out != "" {
		t.Errorf("git status after the pass: %q, want a clean checkout (the index as written)", out)
	}
}

// TestAnIndexAnotherWriterChangedIsReadAfresh: once git in the checkout
// rewrote the index, the copy this Repo cached is not served, and the next
// Sync resets the checkout fully (its worktree was not touched, so the
// stat scan alone would not see it).
func TestAnIndexAnotherWriterChangedIsReadAfresh(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	mustSync(t, a, writes("a", map[string]string{"x/a.yaml": "a\n"}))
	runGit(t, a.Dir(), "update-index", "--chmod=+x", "x/a.yaml")
	if a.indexAsLeft() {
		t.Fatal("an index git rewrote is taken as the one this Repo left")
	}
	resets := a.fullResets
	if _, err := a.Sync(context.Background(), writes("b", map[string]string{"x/b.yaml": "b\n"})); err != nil {
		t.Fatal(err)
	}
	if a.fullResets != resets+1 {
		t.Errorf("%d full resets after git changed the index, want 1", a.fullResets-resets)
	}
	assertTip(t, bare, a)

	runGit(t, a.Dir(), "update-index", "--chmod=+x", "x/a.yaml")
	decodes := a.indexDecodes
	idx, err := a.readIndex()
	if err != nil {
		t.Fatal(err)
	}
	e, err := idx.Entry("x/a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.Mode != filemode.Executable || a.indexDecodes != decodes+1 {
		t.Errorf("after git changed the index: mode %v, %d new decodes; want the executable bit read afresh", e.Mode, a.indexDecodes-decodes)
	}
}
