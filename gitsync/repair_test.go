package gitsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRepairsFilesACrashCutShort cuts short, one at a time, each file
// go-git rewrites in place, as a process killed in the middle of that write
// leaves it, then opens the clone again: the next Sync works, the clone
// mirrors the remote and git finds both sound. Without the repair each of
// these failed every Open or Sync from then on.
func TestOpenRepairsFilesACrashCutShort(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "alpha")
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, writes("first", map[string]string{"clusters/alpha/a.yaml": "a: 1\n"}))
	gitDir := filepath.Join(opts.Dir, ".git")
	n := 1
	for _, name := range []string{"HEAD", "config", "index", "refs/heads/main", "refs/remotes/origin/main"} {
		for _, cut := range []string{"empty", "half"} {
			t.Run(name+" "+cut, func(t *testing.T) {
				p := filepath.Join(gitDir, filepath.FromSlash(name))
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
