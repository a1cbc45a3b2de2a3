package gitobj

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// The zero hash stands for the empty tree throughout this package: the
// tree of "no commit yet" (a branch without commits, the parent of a root
// commit), which Git stores nowhere.

// TreeHash is the hash of commit's root tree in s; the zero hash when
// commit is zero (no commit: the empty tree). An error names a commit s
// cannot read.
func TreeHash(s storer.EncodedObjectStorer, commit plumbing.Hash) (plumbing.Hash, error) {
	if commit.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}

// Tree is the root tree of commit in s, decoded; an empty tree (whose Hash
// is zero) when commit is zero. Errors are TreeHash's, or name the tree s
// cannot read.
func Tree(s storer.EncodedObjectStorer, commit plumbing.Hash) (*object.Tree, error) {
	h, err := TreeHash(s, commit)
	if err != nil || h.IsZero() {
		return &object.Tree{}, err
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", commit, err)
	}
	return t, nil
}

// ReadTree returns the entries of the tree whose hash is h, in Git's
// order. Diff never asks it for the zero hash.
type ReadTree func(h plumbing.Hash) ([]object.TreeEntry, error)

// StoreTrees reads trees from s, decoding each every time it is asked.
func StoreTrees(s storer.EncodedObjectStorer) ReadTree {
	return func(h plumbing.Hash) ([]object.TreeEntry, error) {
		t, err := object.GetTree(s, h)
		if err != nil {
			return nil, err
		}
		return t.Entries, nil
	}
}

// Diff walks trees a and b (zero: the empty tree) read through read and
// calls fn for every entry whose hash or mode differs between them, with
// its slash-separated path and its entry in a (from) and in b (to); nil
// where the tree has no such entry. A directory's entry comes before what
// differs under it, which Diff then walks: a directory that replaces a file
// (or the other way round) is walked as added (deleted) whole. Entries
// come in b's order, then those only in a. Subtrees with the same hash are
// never read, so the cost is that of what changed, not of the trees'
// size. fn returning fs.SkipDir for a directory skips what differs under
// it; any other error of read or fn stops the walk and is returned.
func Diff(read ReadTree, a, b plumbing.Hash, fn func(name string, from, to *object.TreeEntry) error) error {
	return diff(read, a, b, "", fn)
}

func diff(read ReadTree, a, b plumbing.Hash, prefix string, fn func(name string, from, to *object.TreeEntry) error) error {
	if a == b {
		return nil
	}
	var ta, tb []object.TreeEntry
	var err error
	if !a.IsZero() {
		if ta, err = read(a); err != nil {
			return err
		}
	}
	if !b.IsZero() {
		if tb, err = read(b); err != nil {
			return err
		}
	}
	inA := make(map[string]int, len(ta))
	for i := range ta {
		inA[ta[i].Name] = i
	}
	visit := func(name string, ea, eb *object.TreeEntry) error {
		if ea != nil && eb != nil && ea.Hash == eb.Hash && ea.Mode == eb.Mode {
			return nil
		}
		p := path.Join(prefix, name)
		if err := fn(p, ea, eb); errors.Is(err, fs.SkipDir) {
			return nil // what differs under p is not walked
		} else if err != nil {
			return err
		}
		var da, db plumbing.Hash
		if ea != nil && ea.Mode == filemode.Dir {
			da = ea.Hash
		}
		if eb != nil && eb.Mode == filemode.Dir {
			db = eb.Hash
		}
		if da.IsZero() && db.IsZero() {
			return nil
		}
		return diff(read, da, db, p, fn)
	}
	for i := range tb {
		eb := &tb[i]
		var ea *object.TreeEntry
		if j, ok := inA[eb.Name]; ok {
			ea = &ta[j]
			delete(inA, eb.Name)
		}
		if err := visit(eb.Name, ea, eb); err != nil {
			return err
		}
	}
	for i := range ta {
		if _, only := inA[ta[i].Name]; only {
			if err := visit(ta[i].Name, &ta[i], nil); err != nil {
				return err
			}
		}
	}
	return nil
}
