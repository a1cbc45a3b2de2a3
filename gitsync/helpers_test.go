package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// clock is the fixed commit time of the tests.
var clock = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// runGit runs the real git CLI, which is what checks what go-git wrote:
// testgit.Git.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return testgit.Git(t, dir, args...)
}

// gitOutput is runGit's trimmed output and error, for a git command a test
// expects to fail.
func gitOutput(dir string, args ...string) (string, error) {
	out, err := testgit.Command(dir, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// newBare creates an empty bare remote whose HEAD is main.
func newBare(t testing.TB) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "peering.git")
	if err := InitBare(bare, "main"); err != nil {
		t.Fatal(err)
	}
	return bare
}

// testOptions are Options for a clone named name of url, on a fake clock
// that starts at clock and moves only by the waits between push attempts,
// which take no real time.
func testOptions(t testing.TB, url, name string) Options {
	return Options{
		URL:    url,
		Dir:    filepath.Join(t.TempDir(), name),
		Author: Signature{Name: "gitpeer " + name, Email: name + "@gitpeer.example"},
		Push:   PushRetry{Backoff: func(Contention) time.Duration { return time.Millisecond }},
		Clock:  newSkippingClock(),
	}
}

func openRepo(t testing.TB, url, name string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), testOptions(t, url, name))
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	return r
}

// writes is a pass that always wants the same files.
func writes(msg string, files map[string]string) TreePassFunc {
	return func(context.Context, *TreeFS) (*Change, error) {
		ch := &Change{Writes: map[string][]byte{}, Message: msg}
		for k, v := range files {
			ch.Writes[k] = []byte(v)
		}
		return ch, nil
	}
}

func mustSync(t testing.TB, r *Repo, pass TreePassFunc) Result {
	t.Helper()
	res, err := r.SyncTree(context.Background(), pass)
	if err != nil {
		t.Fatalf("SyncTree: %v", err)
	}
	return res
}

// fsck fails the test unless git finds the repository sound.
func fsck(t testing.TB, bare string) {
	t.Helper()
	runGit(t, bare, "fsck", "--strict", "--no-progress")
}

// assertClean fails unless the clone in dir is one without a worktree, as
// git sees it: dir holds .git alone, with no index, git takes it as bare,
// and HEAD is a local branch.
func assertClean(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			t.Errorf("the clone %s holds %s beside .git: a worktree", dir, e.Name())
		}
	}
	if exists(filepath.Join(dir, ".git"), "index") {
		t.Errorf("the clone %s has an index", dir)
	}
	if bare := runGit(t, dir, "rev-parse", "--is-bare-repository"); bare != "true" {
		t.Errorf("git takes %s for a repository with a worktree (--is-bare-repository: %s)", dir, bare)
	}
	if head := runGit(t, dir, "symbolic-ref", "HEAD"); !strings.HasPrefix(head, "refs/heads/") {
		t.Errorf("HEAD of %s is %s, want a branch", dir, head)
	}
}

// exists reports whether the file name is there in directory dir.
func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil
}

// atHead reports whether the commit HEAD of the clone in dir holds the
// path name: what a pass of the clone committed there.
func atHead(dir, name string) bool {
	_, err := testgit.Command(dir, "cat-file", "-e", "HEAD:"+name).CombinedOutput()
	return err == nil
}
