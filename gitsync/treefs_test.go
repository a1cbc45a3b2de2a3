package gitsync

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// treeOf commits files, a symbolic link and a submodule with the git CLI
// and returns the Repo that fetched that tip and the pass's TreeFS of it.
func treeOf(t *testing.T) (*Repo, *TreeFS) {
	t.Helper()
	bare := newBare(t)
	work := filepath.Join(t.TempDir(), "w")
	runGit(t, filepath.Dir(work), "clone", "-q", bare, work)
	for name, data := range map[string]string{
		"peering.cue":                   "clusters: []\n",
		"clusters/a/cluster.yaml":       "id: a\n",
		"clusters/a/inbox/b/nonce.yaml": "nonce: x\n",
		"clusters/b/run.sh":             "#!/bin/sh\n",
	} {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(work, "clusters/b/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A peer's link into our state directory, and a gitlink.
	if err := os.Symlink("/etc", filepath.Join(work, "clusters", "b", "state")); err != nil {
		t.Fatal(err)
	}
	runGit(t, work, "add", "-A")
	runGit(t, work, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",clusters/b/sub")
	testgit.Git(t, work, "commit", "-qm", "tree")
	runGit(t, work, "push", "-q", "origin", "HEAD:main")

	r := openRepo(t, bare, "reader")
	var tree *TreeFS
	if _, err := r.SyncTree(context.Background(), func(_ context.Context, tip *TreeFS) (*Change, error) {
		tree = tip
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return r, tree
}

// TestTreeFSReadsTheCommit: the pass's TreeFS is the commit, file for file,
// passes the standard fs.FS conformance test where it holds no link, and
// refuses links as layout.Tree does.
func TestTreeFSReadsTheCommit(t *testing.T) {
	r, tree := treeOf(t)
	// fstest opens every entry it lists: the part without a link.
	sub, err := fs.Sub(tree, "clusters/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(sub, "cluster.yaml", "inbox/b/nonce.yaml"); err != nil {
		t.Fatal(err)
	}
	// What Git reads in the clone, the TreeFS gives.
	for _, name := range []string{"peering.cue", "clusters/a/inbox/b/nonce.yaml", "clusters/b/run.sh"} {
		want, err := testgit.Command(r.Dir(), "cat-file", "blob", "HEAD:"+name).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tree.ReadFile(name); err != nil || string(got) != string(want) {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if fi, err := tree.Stat("clusters/b/run.sh"); err != nil || fi.Mode() != 0o755 || fi.Size() != int64(len("#!/bin/sh\n")) {
		t.Errorf("Stat(run.sh) = %v, %v; want an executable of 10 bytes", fi, err)
	}

	entries, err := tree.ReadDir("clusters/b")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range entries {
		listed = append(listed, e.Name()+":"+e.Type().String())
	}
	if got, want := strings.Join(listed, " "), "run.sh:---------- state:L--------- sub:?---------"; got != want {
		t.Errorf("ReadDir(clusters/b) = %s, want %s", got, want)
	}

	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"read through a link", func() error { _, err := tree.ReadFile("clusters/b/state/passwd"); return err }, layout.ErrSymlink},
		{"read a link", func() error { _, err := tree.ReadFile("clusters/b/state"); return err }, layout.ErrSymlink},
		{"stat a link", func() error { _, err := tree.Stat("clusters/b/state"); return err }, layout.ErrSymlink},
		{"list a link", func() error { _, err := tree.ReadDir("clusters/b/state"); return err }, layout.ErrSymlink},
		{"open a link", func() error { _, err := tree.Open("clusters/b/state"); return err }, layout.ErrSymlink},
		{"under a file", func() error { _, err := tree.ReadFile("peering.cue/x"); return err }, syscall.ENOTDIR},
		{"missing", func() error { _, err := tree.ReadFile("clusters/c/cluster.yaml"); return err }, fs.ErrNotExist},
		{"not valid", func() error { _, err := tree.ReadFile("../x"); return err }, fs.ErrInvalid},
	} {
		err := tc.do()
		var pe *fs.PathError
		if !errors.Is(err, tc.want) || !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a *fs.PathError wrapping %v", tc.name, err, tc.want)
		}
	}
	if _, err := tree.ReadFile("clusters/b/sub"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("reading a submodule: %v, want not a regular file", err)
	}
}

// TestMemoryTreeIsWhatSyncCommits: the same changes applied to a
// MemoryTree and committed by Sync give the same tree, file for file, and
// a change Sync refuses is refused with nothing changed.
func TestMemoryTreeIsWhatSyncCommits(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	m := NewMemoryTree()
	for _, ch := range []*Change{
		{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a\n"), "clusters/x/inbox/y/n.yaml": []byte("n\n"), "top": []byte("t\n")}},
		{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a2\n")}, Deletes: []string{"clusters/x/inbox", "nothing/here"}},
	} {
		ch.Message = "step"
		mustSync(t, r, func(context.Context, *TreeFS) (*Change, error) { return ch, nil })
		if err := m.Apply(ch); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := m.FS().Files(".", func(name string) { got = append(got, name) }); err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(runGit(t, bare, "ls-tree", "-r", "--name-only", "main"))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("memory tree has %q, main %q", got, want)
	}
	for _, name := range want {
		data, err := m.FS().ReadFile(name)
		if err != nil || string(data) != runGit(t, bare, "show", "main:"+name)+"\n" {
			t.Errorf("%s = %q, %v", name, data, err)
		}
	}
	before := m.root
	if err := m.Apply(&Change{Writes: map[string][]byte{"../x": []byte("x")}, Message: "bad"}); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("Apply of a path leaving the tree = %v, want ErrInvalidChange", err)
	}
	if m.root != before {
		t.Error("a refused change changed the tree")
	}
}
