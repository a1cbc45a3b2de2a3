package gitobj

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// go-git commits from the index: every file staged reads and rewrites the
// whole index, and every commit rebuilds every tree of the repo from it, so
// a pass that changes twenty files of a 100,000-file repo would cost as
// much as the repo. Writer builds a commit's tree from the tip's tree
// instead, rewriting only the trees on the changed paths (Git's own
// objects, so the git CLI reads them as any other).

// Edit is a set of file writes and deletions to apply to a tree, held as a
// tree of path elements: at a file, its new content (write) or its removal
// (del); at a directory, what changes under it. One element can be both,
// when a file replaces a deleted directory. The zero value is no change.
type Edit struct {
	write []byte
	del   bool
	under map[string]*Edit
}

func (e *Edit) child(name string) *Edit {
	if e.under == nil {
		e.under = map[string]*Edit{}
	}
	n := e.under[name]
	if n == nil {
		n = &Edit{}
		e.under[name] = n
	}
	return n
}

func (e *Edit) at(name string) *Edit {
	for _, elem := range strings.Split(name, "/") {
		e = e.child(elem)
	}
	return e
}

// Write sets file name (a clean slash-separated path) to data.
func (e *Edit) Write(name string, data []byte) { e.at(name).write = data }

// Delete removes the file (a tree entry other than a directory) at name, a
// clean slash-separated path; a directory there stays (delete its files),
// and a directory left empty goes. A write of the same name still applies,
// over the deleted file.
func (e *Edit) Delete(name string) { e.at(name).del = true }

// LinkParentError is a write below a symbolic link of the tree, which Git
// would store and a checkout would follow out of the tree.
type LinkParentError struct {
	// Path is the first file written below Link; Link the link's path.
	Path, Link string
}

func (e *LinkParentError) Error() string { return e.Path + ": parent " + e.Link + " is a symlink" }

// Writer writes Git objects to a store (a clone's, or memory).
type Writer struct{ S storer.EncodedObjectStorer }

// Tree stores tree root (zero: empty) with e applied (blobs and the trees
// on changed paths; objects already there are not rewritten) and returns
// its hash. A rewritten file keeps its executable bit; empty directories
// are dropped, and a tree left with nothing is Git's empty tree. It
// refuses a write below a symbolic link with a *LinkParentError, and fails
// on a write below a file or over a directory that e does not delete.
func (w Writer) Tree(root plumbing.Hash, e *Edit) (plumbing.Hash, error) {
	h, empty, err := w.rebuild("", root, e)
	if err == nil && empty {
		// A commit always has a root tree: Git's empty tree, as
		// git rm -r . && git commit makes.
		return w.StoreTree(&object.Tree{})
	}
	return h, err
}

// rebuild returns the hash of tree h (zero: empty) of directory dir with c
// applied, and whether it is empty (Git stores no empty directory).
func (w Writer) rebuild(dir string, h plumbing.Hash, c *Edit) (plumbing.Hash, bool, error) {
	entries := map[string]object.TreeEntry{}
	if !h.IsZero() {
		t, err := object.GetTree(w.S, h)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("read tree of %s: %w", dirName(dir), err)
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	names := make([]string, 0, len(c.under))
	for name := range c.under {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n, full := c.under[name], path.Join(dir, name)
		e, exists := entries[name]
		if n.del && exists && e.Mode != filemode.Dir {
			delete(entries, name)
			exists = false
		}
		if len(n.under) > 0 {
			var sub plumbing.Hash
			if exists {
				switch e.Mode {
				case filemode.Dir:
					sub = e.Hash
				case filemode.Symlink:
					return plumbing.ZeroHash, false, &LinkParentError{Path: firstUnder(full, n), Link: full}
				default:
					return plumbing.ZeroHash, false, fmt.Errorf("write %s: %s is not a directory", firstUnder(full, n), full)
				}
			}
			nh, empty, err := w.rebuild(full, sub, n)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if empty {
				delete(entries, name)
				exists = false
			} else {
				e = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: nh}
				entries[name], exists = e, true
			}
		}
		if n.write != nil {
			if exists && e.Mode == filemode.Dir {
				return plumbing.ZeroHash, false, fmt.Errorf("write %s: is a directory", full)
			}
			blob, err := w.store(plumbing.BlobObject, n.write)
			if err != nil {
				return plumbing.ZeroHash, false, fmt.Errorf("write %s: %w", full, err)
			}
			mode := filemode.Regular
			if exists && e.Mode == filemode.Executable {
				mode = filemode.Executable // rewriting a file keeps its mode, as in a worktree
			}
			entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: blob}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git's order: a directory sorts as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	nh, err := w.StoreTree(t)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("write tree of %s: %w", dirName(dir), err)
	}
	return nh, false, nil
}

// store writes an object of type t holding data, unless it is stored
// already, and returns its hash.
func (w Writer) store(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	o := w.S.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	wr, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := wr.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wr.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.storeObject(o)
}

func (w Writer) storeObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if w.S.HasEncodedObject(o.Hash()) == nil {
		return o.Hash(), nil
	}
	return w.S.SetEncodedObject(o)
}

// StoreTree stores t, whose entries are in Git's order, unless it is
// stored already, and returns its hash.
func (w Writer) StoreTree(t *object.Tree) (plumbing.Hash, error) {
	o := w.S.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.storeObject(o)
}

// Signer signs the encoding of a commit without its signature and returns
// the armored (OpenPGP) or PEM (SSH) signature; go-git's git.Signer is one.
type Signer interface {
	Sign(message io.Reader) ([]byte, error)
}

// Commit stores c, signed with signer when it is not nil, as go-git's
// Worktree.Commit signs: the commit encoded without its signature is what
// is signed. It returns the commit's hash; an error wraps the signer's
// ("sign: ...") or the store's.
func (w Writer) Commit(c *object.Commit, signer Signer) (plumbing.Hash, error) {
	if signer != nil {
		unsigned := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		s, err := signer.Sign(rd)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("sign: %w", err)
		}
		c.PGPSignature = string(s)
	}
	o := w.S.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.storeObject(o)
}

// firstUnder is the first file c writes or deletes below name, for errors
// that name the path a caller asked for.
func firstUnder(name string, c *Edit) string {
	for len(c.under) > 0 {
		names := make([]string, 0, len(c.under))
		for n := range c.under {
			names = append(names, n)
		}
		sort.Strings(names)
		name, c = path.Join(name, names[0]), c.under[names[0]]
	}
	return name
}

func dirName(dir string) string {
	if dir == "" {
		return "the root"
	}
	return dir
}
