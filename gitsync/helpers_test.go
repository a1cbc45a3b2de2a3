package gitsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is the fixed commit time of the tests.
var clock = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// runGit runs the real git CLI, which is what checks what go-git wrote.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitOutput(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
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

// testOptions are Options for a clone named name of url, with a fixed clock
// and no real waiting between push attempts.
func testOptions(t testing.TB, url, name string) Options {
	return Options{
		URL:     url,
		Dir:     filepath.Join(t.TempDir(), name),
		Author:  Signature{Name: "gitpeer " + name, Email: name + "@gitpeer.example"},
		Backoff: func(Contention) time.Duration { return time.Millisecond },
		Now:     func() time.Time { return clock },
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
func writes(msg string, files map[string]string) PassFunc {
	return func(context.Context, string) (*Change, error) {
		ch := &Change{Writes: map[string][]byte{}, Message: msg}
		for k, v := range files {
			ch.Writes[k] = []byte(v)
		}
		return ch, nil
	}
}

func mustSync(t testing.TB, r *Repo, pass PassFunc) Result {
	t.Helper()
	res, err := r.Sync(context.Background(), pass)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return res
}

// fsck fails the test unless git finds the repository sound.
func fsck(t testing.TB, bare string) {
	t.Helper()
	runGit(t, bare, "fsck", "--strict", "--no-progress")
}

// assertClean fails unless the clone matches its HEAD exactly, as git sees it.
func assertClean(t testing.TB, dir string) {
	t.Helper()
	if st := runGit(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("worktree of %s is not clean:\n%s", dir, st)
	}
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil
}
