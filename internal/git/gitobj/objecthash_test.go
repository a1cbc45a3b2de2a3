package gitobj

import (
	"io/fs"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// A listed entry's ObjectHash is the hash of what the tree holds there: the
// same for two directories with the same files, another once a file below
// changes, and a blob's hash for a file. Readers key what they found under
// a directory by it (reconcile.Cache), so a wrong hash would serve one
// subtree's answer for another.
func TestListedEntriesCarryTheirObjectHash(t *testing.T) {
	t.Parallel()
	s := memory.NewStorage()
	w := Writer{S: s}
	e := &Edit{}
	e.Write("c/a/inbox/x/f", []byte("1\n"))
	e.Write("c/b/inbox/x/f", []byte("1\n"))
	e.Write("c/d/inbox/y/f", []byte("1\n"))
	e.Write("c/file", []byte("2\n"))
	root, err := w.Tree(plumbing.ZeroHash, e)
	if err != nil {
		t.Fatal(err)
	}
	hashes := func(root plumbing.Hash) map[string][20]byte {
		t.Helper()
		entries, err := fs.ReadDir(TreeFSOf(s, root, nil), "c")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][20]byte{}
		for _, d := range entries {
			h, ok := d.(layout.ObjectHashed)
			if !ok {
				t.Fatalf("%s: %T gives no object hash", d.Name(), d)
			}
			out[d.Name()] = h.ObjectHash()
		}
		return out
	}
	before := hashes(root)
	if before["a"] != before["b"] || before["a"] == before["d"] {
		t.Errorf("same subtrees a, b and another d: %x %x %x", before["a"], before["b"], before["d"])
	}
	if want := plumbing.ComputeHash(plumbing.BlobObject, []byte("2\n")); before["file"] != [20]byte(want) {
		t.Errorf("file: %x, want its blob %s", before["file"], want)
	}
	e = &Edit{}
	e.Write("c/a/inbox/x/f", []byte("3\n"))
	changed, err := w.Tree(root, e)
	if err != nil {
		t.Fatal(err)
	}
	after := hashes(changed)
	if after["a"] == before["a"] || after["b"] != before["b"] {
		t.Errorf("a changed below, b did not: a %x → %x, b %x → %x", before["a"], after["a"], before["b"], after["b"])
	}
}
