package gitobj

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TestAFolderAboveItsEntryCapIsRefusedFromItsTreeObject: a folder of
// clusters/a/inbox/b/ (cap layout.MaxFolderEntries) just above its cap is
// refused with its count; one far above it, from its tree object's size
// alone; the same tree where the cap is higher (clusters/a/inbox/) is
// read. Every way of reading through a refused folder fails with the
// same error, and a folder at its cap is read.
func TestAFolderAboveItsEntryCapIsRefusedFromItsTreeObject(t *testing.T) {
	s := memory.NewStorage()
	w := Writer{S: s}
	blob, err := w.store(plumbing.BlobObject, []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	folder := func(n, nameLen int) plumbing.Hash {
		t.Helper()
		tr := &object.Tree{}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%0*d", nameLen, i)
			tr.Entries = append(tr.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob})
		}
		h, err := w.StoreTree(tr)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	dir := func(name string, h plumbing.Hash) plumbing.Hash {
		t.Helper()
		d, err := w.StoreTree(&object.Tree{Entries: []object.TreeEntry{{Name: name, Mode: filemode.Dir, Hash: h}}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	at := func(h plumbing.Hash) *TreeFS { // h as clusters/a/inbox/b
		return TreeFSOf(s, dir("clusters", dir("a", dir("inbox", dir("b", h)))), NewTreeCache())
	}
	const b = "clusters/a/inbox/b"
	for _, tc := range []struct {
		name     string
		tree     plumbing.Hash
		refused  bool
		entries  int
		messages []string
	}{
		{"at its cap", folder(layout.MaxFolderEntries, 8), false, 0, nil},
		{"just above its cap, counted", folder(layout.MaxFolderEntries+1, 8), true, layout.MaxFolderEntries + 1, []string{b, "4097 entries, more than 4096"}},
		{"far above it, by size", folder(40000, 8), true, 0, []string{b, "a tree object of", "more than 4096 entries"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := at(tc.tree)
			_, err := tree.ReadDir(b)
			if !tc.refused {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var tooMany *layout.TooManyEntriesError
			if !errors.As(err, &tooMany) || !errors.Is(err, layout.ErrTooManyEntries) {
				t.Fatalf("ReadDir: %v, want a TooManyEntriesError", err)
			}
			if tooMany.Dir != b || tooMany.Entries != tc.entries || tooMany.Limit != layout.MaxFolderEntries {
				t.Fatalf("refusal %+v", tooMany)
			}
			for _, m := range tc.messages {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("%v does not say %q", err, m)
				}
			}
			for _, read := range []func() error{
				func() error { _, err := tree.Stat(b + "/00000001"); return err },
				func() error { _, err := fs.ReadFile(tree, b+"/00000001"); return err },
				func() error { return tree.Files(b, func(string) {}) },
			} {
				if err := read(); !errors.Is(err, layout.ErrTooManyEntries) {
					t.Fatalf("a read through %s: %v, want ErrTooManyEntries", b, err)
				}
			}
			// The folder itself is listed where it stands: its parent is
			// within its cap.
			if _, err := tree.Stat(b); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The same tree where the cap is higher: read.
	big := folder(layout.MaxFolderEntries+1, 8)
	tree := TreeFSOf(s, dir("clusters", dir("a", dir("inbox", big))), NewTreeCache())
	if entries, err := tree.ReadDir("clusters/a/inbox"); err != nil || len(entries) != layout.MaxFolderEntries+1 {
		t.Fatalf("clusters/a/inbox: %d entries, %v", len(entries), err)
	}
}
