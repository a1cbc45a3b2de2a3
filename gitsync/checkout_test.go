package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncFollowsOtherWritersIncrementally moves one clone through tips
// another writer made (files added, changed, deleted, directories emptied,
// a file replacing a directory and back, an executable bit set by the git
// CLI), and checks after each that the pass sees exactly the tip and that
// git sees a clean clone.
func TestSyncFollowsOtherWritersIncrementally(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	// b follows some tips only, so that one move turns a directory into a
	// file and back.
	steps := []struct {
		ch     *Change
		follow bool
	}{
		{&Change{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a\n"), "clusters/x/inbox/y/n.yaml": []byte("n\n"), "top": []byte("t\n")}}, true},
		{&Change{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a2\n"), "clusters/z/b.yaml": []byte("b\n")}}, true},
		{&Change{Deletes: []string{"clusters/x/inbox"}}, true},
		{&Change{Deletes: []string{"clusters/z"}}, false},
		{&Change{Writes: map[string][]byte{"clusters/z": []byte("now a file\n")}}, true},
		{&Change{Deletes: []string{"clusters/z"}}, false},
		{&Change{Writes: map[string][]byte{"clusters/z/c.yaml": []byte("a dir again\n")}}, true},
	}
	for i, step := range steps {
		ch := step.ch
		ch.Message = "step"
		mustSync(t, a, func(context.Context, string) (*Change, error) { return ch, nil })
		if !step.follow {
			continue
		}
		want := strings.TrimSpace(runGit(t, bare, "ls-tree", "-r", "main"))
		mustSync(t, b, func(_ context.Context, root string) (*Change, error) {
			for _, line := range strings.Split(want, "\n") {
				name := line[strings.IndexByte(line, '\t')+1:]
				blob := strings.Fields(line)[2]
				data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
				if err != nil || runGit(t, bare, "cat-file", "-p", blob) != strings.TrimSuffix(string(data), "\n") {
					t.Errorf("step %d: the pass reads %s as %q, %v", i, name, data, err)
				}
			}
			return nil, nil
		})
		assertClean(t, b.Dir())
		if got := strings.TrimSpace(runGit(t, b.Dir(), "ls-files", "-s")); len(strings.Split(got, "\n")) != len(strings.Split(want, "\n")) {
			t.Errorf("step %d: index has %q, tree %q", i, got, want)
		}
	}

	if b.moves < 5 {
		t.Errorf("%d of 5 moves were incremental", b.moves)
	}

	// An executable bit another writer sets with the git CLI.
	host := filepath.Join(t.TempDir(), "host")
	runGit(t, t.TempDir(), "clone", "-q", bare, host)
	runGit(t, host, "update-index", "--chmod=+x", "top")
	runGit(t, host, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-q", "-m", "x")
	runGit(t, host, "push", "-q", "origin", "main")
	mustSync(t, b, noChange())
	assertClean(t, b.Dir())
	if fi, err := os.Stat(filepath.Join(b.Dir(), "top")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("top is %v, %v; want executable", fi.Mode(), err)
	}
}

// TestSyncDiscardsSameSizeEdit edits a file in place between Syncs without
// changing its size: the pass still sees the tip.
func TestSyncDiscardsSameSizeEdit(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{"a/a.yaml": "aaaa\n"}))
	mustSync(t, r, noChange())
	if err := os.WriteFile(filepath.Join(r.Dir(), "a", "a.yaml"), []byte("bbbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, func(_ context.Context, root string) (*Change, error) {
		if data, _ := os.ReadFile(filepath.Join(root, "a", "a.yaml")); string(data) != "aaaa\n" {
			t.Errorf("the pass sees %q", data)
		}
		return nil, nil
	})
	assertClean(t, r.Dir())
}
