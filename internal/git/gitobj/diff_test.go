package gitobj

import (
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestDiffIsWhatGitDiffTreeLists: the files Diff reports changed between
// two commits, a file replaced by a directory and a deletion of a whole
// directory included, are those git diff-tree -r lists; the zero hash is
// the empty tree, and the trees both sides share are never read.
func TestDiffIsWhatGitDiffTreeLists(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo")
	testgit.Git(t, filepath.Dir(dir), "init", "--quiet", "--initial-branch=main", dir)
	commit := func(files map[string][]byte, remove ...string) plumbing.Hash {
		for _, p := range remove {
			testgit.Git(t, dir, "rm", "-r", "--quiet", p)
		}
		byDir := map[string]map[string][]byte{}
		for name, data := range files {
			d := path.Dir(name)
			if byDir[d] == nil {
				byDir[d] = map[string][]byte{}
			}
			byDir[d][path.Base(name)] = data
		}
		for d, in := range byDir {
			testgit.WriteFiles(t, filepath.Join(dir, filepath.FromSlash(d)), in)
		}
		testgit.Git(t, dir, "add", "-A")
		testgit.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "c")
		return plumbing.NewHash(testgit.Git(t, dir, "rev-parse", "HEAD"))
	}
	unchanged := map[string][]byte{}
	for i := range 20 {
		unchanged["same/"+string(rune('a'+i))+"/f.yaml"] = []byte("x\n")
	}
	unchanged["clusters/a/cluster.yaml"] = []byte("a\n")
	unchanged["clusters/b/inbox/a/n.yaml"] = []byte("n\n")
	unchanged["top"] = []byte("file\n")
	one := commit(unchanged)
	two := commit(map[string][]byte{"clusters/a/cluster.yaml": []byte("a2\n"), "top/now/a/dir": []byte("d\n"), "new.yaml": []byte("y\n")}, "top", "clusters/b")

	ct, err := OpenCommitTree(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	s := ct.s
	var read []plumbing.Hash
	trees := func(h plumbing.Hash) ([]object.TreeEntry, error) {
		read = append(read, h)
		return StoreTrees(s)(h)
	}
	files := func(a, b plumbing.Hash) []string {
		var out []string
		err := Diff(trees, a, b, func(name string, from, to *object.TreeEntry) error {
			if (from != nil && from.Mode != filemode.Dir) || (to != nil && to.Mode != filemode.Dir) {
				out = append(out, name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(out)
		return out
	}
	tree := func(c plumbing.Hash) plumbing.Hash {
		h, err := TreeHash(s, c)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	got := files(tree(one), tree(two))
	want := strings.Fields(testgit.Git(t, dir, "diff-tree", "-r", "--name-only", "--no-commit-id", one.String(), two.String()))
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Diff lists %q, git diff-tree %q", got, want)
	}
	same := tree(one)
	if st, err := object.GetTree(s, same); err == nil {
		if e, err := st.FindEntry("same"); err == nil {
			for _, h := range read {
				if h == e.Hash {
					t.Errorf("Diff read the tree of same/, which both commits share")
				}
			}
		}
	}

	// fs.SkipDir on clusters/ skips what differs under it, and only that.
	var skipped []string
	if err := Diff(trees, tree(one), tree(two), func(name string, from, to *object.TreeEntry) error {
		if to != nil && to.Mode != filemode.Dir || from != nil && from.Mode != filemode.Dir {
			skipped = append(skipped, name)
		}
		if name == "clusters" {
			return fs.SkipDir
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(skipped)
	var outside []string
	for _, f := range want {
		if !strings.HasPrefix(f, "clusters/") {
			outside = append(outside, f)
		}
	}
	if strings.Join(skipped, " ") != strings.Join(outside, " ") {
		t.Errorf("Diff skipping clusters/ lists %q, want %q", skipped, outside)
	}

	// From no commit: every file of the tree, as git ls-tree -r lists it.
	if h := tree(plumbing.ZeroHash); !h.IsZero() {
		t.Errorf("TreeHash(zero) = %s, want zero (the empty tree)", h)
	}
	if et, err := Tree(s, plumbing.ZeroHash); err != nil || len(et.Entries) != 0 || !et.Hash.IsZero() {
		t.Errorf("Tree(zero) = %v, %v, want an empty tree", et, err)
	}
	got = files(plumbing.ZeroHash, tree(two))
	want = strings.Fields(testgit.Git(t, dir, "ls-tree", "-r", "--name-only", two.String()))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Diff from the empty tree lists %q, git ls-tree %q", got, want)
	}
}

// TestWriterTreeRefusesAWriteBelowALink: a write below a symbolic link of
// the tree is a *LinkParentError naming both paths, and deleting every
// file leaves Git's empty tree.
func TestWriterTreeRefusesAWriteBelowALink(t *testing.T) {
	t.Parallel()
	w := Writer{S: memory.NewStorage()}
	e := &Edit{}
	e.Write("a/file", []byte("x\n"))
	root, err := w.Tree(plumbing.ZeroHash, e)
	if err != nil {
		t.Fatal(err)
	}
	link := &object.Tree{Entries: []object.TreeEntry{{Name: "l", Mode: filemode.Symlink, Hash: plumbing.ComputeHash(plumbing.BlobObject, []byte("a"))}}}
	withLink, err := w.StoreTree(link)
	if err != nil {
		t.Fatal(err)
	}
	e = &Edit{}
	e.Write("l/x/y", []byte("y\n"))
	_, err = w.Tree(withLink, e)
	if le, ok := err.(*LinkParentError); !ok || le.Path != "l/x/y" || le.Link != "l" {
		t.Errorf("write below a link = %v, want a LinkParentError for l/x/y below l", err)
	}
	e = &Edit{}
	e.Delete("a/file")
	empty, err := w.Tree(root, e)
	if err != nil {
		t.Fatal(err)
	}
	if want := plumbing.ComputeHash(plumbing.TreeObject, nil); empty != want {
		t.Errorf("deleting every file = %s, want the empty tree %s", empty, want)
	}
}
