package gitsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRepairsFilesACrashCutShort cuts short, one at a time, each file
// go-git rewrites in place, as a process killed in the middle of that write
// leaves it, then opens the clone again: the next Sync works, the clone
// mirrors the remote and git finds both sound. Without the repair each of
// these failed every Open or Sync from then on. A pack's index cut short,
// the pack beside it, hid the pack's objects.
func TestOpenRepairsFilesACrashCutShort(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "alpha")
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, writes("first", map[string]string{"clusters/alpha/a.yaml": "a: 1\n"}))
	// Another clone's commit: alpha's next fetch stores it in a pack.
	other := openRepo(t, bare, "beta")
	mustSync(t, other, writes("beta", map[string]string{"clusters/beta/b.yaml": "b: 1\n"}))
	if _, err := Open(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(opts.Dir, ".git")
	// packIndex is the index of the pack the last fetch wrote.
	packIndex := func(t *testing.T) string {
		idxs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*.idx"))
		if len(idxs) == 0 {
			t.Fatal("alpha's clone has no pack index")
		}
		return strings.TrimPrefix(filepath.ToSlash(idxs[0]), filepath.ToSlash(gitDir)+"/")
	}
	n := 1
	for _, name := range []string{"HEAD", "config", "refs/heads/main", "refs/remotes/origin/main", "pack index"} {
		for _, cut := range []string{"empty", "half"} {
			t.Run(name+" "+cut, func(t *testing.T) {
				file := name
				if name == "pack index" {
					file = packIndex(t)
				}
				p := filepath.Join(gitDir, filepath.FromSlash(file))
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				keep := 0
				if cut == "half" {
					keep = len(data) / 2
				}
				if err := os.WriteFile(p, data[:keep], 0o644); err != nil {
					t.Fatal(err)
				}
				r, err := Open(context.Background(), opts)
				if err != nil {
					t.Fatalf("Open after %s was cut short: %v", name, err)
				}
				n++
				res := mustSync(t, r, writes(fmt.Sprint("pass ", n), map[string]string{"clusters/alpha/a.yaml": fmt.Sprintf("a: %d\n", n)}))
				if res.Commit == "" || r.Head() != runGit(t, bare, "rev-parse", "main") {
					t.Fatalf("Sync after %s was cut short: %+v, head %s", name, res, r.Head())
				}
				assertClean(t, opts.Dir)
				runGit(t, opts.Dir, "fsck", "--strict", "--no-progress")
				fsck(t, bare)
			})
		}
	}
}

// TestOpenInitsAgainWhenAnInitWasKilled: a first Open killed in the middle
// of its init leaves a .git without HEAD; the next Open inits again instead
// of refusing the directory as "not a git clone" (found by
// TestAReconcilerKilledMidWriteConverges in cmd/gitpeer).
func TestOpenInitsAgainWhenAnInitWasKilled(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "alpha")
	if err := os.MkdirAll(filepath.Join(opts.Dir, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	// What is left of a clone an earlier repair was discarding when it was
	// killed: removed too.
	stale := opts.Dir + ".discarded"
	if err := os.MkdirAll(filepath.Join(stale, "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open over a killed init: %v", err)
	}
	if res := mustSync(t, r, writes("first", map[string]string{"clusters/alpha/a.yaml": "a: 1\n"})); res.Commit == "" {
		t.Fatal("no commit")
	}
	assertClean(t, opts.Dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", stale, err)
	}
}

// TestOpenConvertsACloneWithAWorktree: a clone an older gitpeer made (a
// checkout: worktree, index, worktree snapshot), with a stray file, a
// torn index and a checkout 1,500 directories deep that a tip no checkout
// can hold left half-written, is converted in place by Open: its objects
// and refs are kept (its commits are still there), everything but .git
// is removed, and git takes it as a repository without a worktree. The
// next SyncTree works on it, and a second Open finds nothing to convert.
func TestOpenConvertsACloneWithAWorktree(t *testing.T) {
	bare := newBare(t)
	if _, err := Seed(context.Background(), testOptions(t, bare, "seed"), map[string][]byte{"peering.cue": []byte("x: 1\n")}, "init"); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, bare, "alpha")
	runGit(t, "", "clone", "-q", bare, opts.Dir)
	seeded := runGit(t, opts.Dir, "rev-parse", "HEAD")
	deep := filepath.Join(opts.Dir, "docs", strings.Repeat("a"+string(filepath.Separator), 1500))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(opts.Dir, ".git")
	for name, data := range map[string]string{
		filepath.Join(opts.Dir, "stray.yaml"):     "stray\n",
		filepath.Join(gitDir, "gitpeer-snapshot"): "gitpeer-snapshot 1\n",
		filepath.Join(gitDir, "index"):            "DIRC\x00\x00",
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open of a clone with a worktree: %v", err)
	}
	assertClean(t, opts.Dir)
	if exists(gitDir, "gitpeer-snapshot") {
		t.Error("the worktree snapshot is still there")
	}
	if got := runGit(t, opts.Dir, "rev-parse", "HEAD"); got != seeded {
		t.Errorf("HEAD is %s after the conversion, want %s", got, seeded)
	}
	res := mustSync(t, r, writes("first", map[string]string{"clusters/alpha/a.yaml": "a: 1\n"}))
	if res.Commit == "" || runGit(t, opts.Dir, "rev-parse", "HEAD") != res.Commit || !atHead(opts.Dir, "clusters/alpha/a.yaml") {
		t.Fatalf("SyncTree on the converted clone: %+v", res)
	}
	if _, err := Open(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	assertClean(t, opts.Dir)
	runGit(t, opts.Dir, "fsck", "--strict", "--no-progress")
}
