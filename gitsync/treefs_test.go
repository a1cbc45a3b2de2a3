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

	"github.com/gitpeer/gitpeer/internal/testing/testgit"
	"github.com/gitpeer/gitpeer/layout"
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
	// What the worktree (checked out by Git) holds, the TreeFS gives.
	for _, name := range []string{"peering.cue", "clusters/a/inbox/b/nonce.yaml", "clusters/b/run.sh"} {
		want, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(name)))
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

// TestSyncTreeIgnoresTheWorktree: what someone leaves in the worktree of a
// SyncTree clone (an edit, a stray file, a deletion) reaches neither the
// pass nor a commit, and a later tip that changes the edited file puts the
// committed one back.
func TestSyncTreeIgnoresTheWorktree(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	mustSync(t, a, writes("init", map[string]string{"a/a.yaml": "a\n", "a/gone.yaml": "g\n", "peering.cue": "spec\n"}))
	if _, err := b.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a/a.yaml": "edited\n", "stray.yaml": "s\n", "peering.cue": "edited spec\n"} {
		if err := os.WriteFile(filepath.Join(b.Dir(), filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(b.Dir(), "a", "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, writes("a2", map[string]string{"a/a.yaml": "a2\n"}))

	res, err := b.SyncTree(context.Background(), func(_ context.Context, tip *TreeFS) (*Change, error) {
		for name, want := range map[string]string{"a/a.yaml": "a2\n", "a/gone.yaml": "g\n", "peering.cue": "spec\n"} {
			if got, err := tip.ReadFile(name); err != nil || string(got) != want {
				t.Errorf("the pass reads %s as %q, %v; want %q", name, got, err, want)
			}
		}
		if _, err := tip.Stat("stray.yaml"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the pass sees the stray file: %v", err)
		}
		return &Change{Writes: map[string][]byte{"b/b.yaml": []byte("b\n")}, Message: "b"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" {
		t.Fatal("no commit")
	}
	if got := runGit(t, bare, "show", "--name-status", "--format=", "main"); got != "A\tb/b.yaml" {
		t.Errorf("the commit changed %q, want only b/b.yaml added", got)
	}
	for name, want := range map[string]string{"a/a.yaml": "a2\n", "a/gone.yaml": "g\n", "peering.cue": "spec\n"} {
		if got := runGit(t, bare, "show", "main:"+name); got+"\n" != want {
			t.Errorf("main:%s = %q, want %q", name, got, want)
		}
	}
	// The file the remote changed is the tip's again in the worktree.
	if got, _ := os.ReadFile(filepath.Join(b.Dir(), "a", "a.yaml")); string(got) != "a2\n" {
		t.Errorf("worktree a/a.yaml = %q, want the tip's", got)
	}
	// A plain Sync checks the worktree and restores all of it.
	mustSync(t, b, noChange())
	assertClean(t, b.Dir())
}

// TestSyncTreeDoesNotScanTheWorktree: once a Repo has checked its worktree,
// an idle SyncTree, or one moving to a new tip, stats no file outside the
// change (the scan is what made an idle pass grow with the repo); a
// plain Sync still scans.
func TestSyncTreeDoesNotScanTheWorktree(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	mustSync(t, a, writes("init", map[string]string{"a/a.yaml": "a\n"}))
	idle := func(context.Context, *TreeFS) (*Change, error) { return nil, nil }
	if _, err := b.SyncTree(context.Background(), idle); err != nil {
		t.Fatal(err)
	}
	before := b.scans
	for i := range 3 {
		if i == 1 {
			mustSync(t, a, writes("a2", map[string]string{"a/a.yaml": "a2\n"}))
		}
		if _, err := b.SyncTree(context.Background(), idle); err != nil {
			t.Fatal(err)
		}
	}
	if b.scans != before {
		t.Errorf("3 SyncTrees scanned the worktree %d times, want none", b.scans-before)
	}
	mustSync(t, b, noChange())
	if b.scans == before {
		t.Error("a Sync did not check the worktree")
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
		mustSync(t, r, func(context.Context, string) (*Change, error) { return ch, nil })
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

// TestSyncTreeWritesOverAStrayDirectoryInTheWay: someone left a directory
// in the worktree where the pass now writes a file. SyncTree, which does
// not check the worktree before the pass, still commits the pass's change
// and leaves a clean checkout.
func TestSyncTreeWritesOverAStrayDirectoryInTheWay(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	idle := func(context.Context, *TreeFS) (*Change, error) { return nil, nil }
	mustSync(t, r, writes("init", map[string]string{"keep": "k\n"}))
	if _, err := r.SyncTree(context.Background(), idle); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.Dir(), "clusters", "a", "status.yaml", "stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		return &Change{Writes: map[string][]byte{"clusters/a/status.yaml": []byte("ready\n")}, Message: "status"}, nil
	})
	if err != nil || res.Commit == "" {
		t.Fatalf("SyncTree = %+v, %v; want the change committed", res, err)
	}
	if got := runGit(t, bare, "show", "main:clusters/a/status.yaml"); got != "ready" {
		t.Errorf("main:clusters/a/status.yaml = %q", got)
	}
	assertClean(t, r.Dir())
}
