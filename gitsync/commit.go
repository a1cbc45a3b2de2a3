package gitsync

import (
	"fmt"
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
// much as the repo. gitsync builds the commit's tree from the tip's tree
// instead, rewriting only the trees on the changed paths (Git's own
// objects, so the git CLI reads them as any other).

// change is a plan as a tree of path elements: at a file, its new content
// (write) or its removal (del); at a directory, what changes under it. One
// element can be both, when a file replaces a deleted directory.
type change struct {
	write []byte
	del   bool
	under map[string]*change
}

func (c *change) child(name string) *change {
	if c.under == nil {
		c.under = map[string]*change{}
	}
	n := c.under[name]
	if n == nil {
		n = &change{}
		c.under[name] = n
	}
	return n
}

// changeOf is p as a change tree.
func changeOf(p *plan) *change {
	root := &change{}
	at := func(name string) *change {
		c := root
		for _, elem := range strings.Split(name, "/") {
			c = c.child(elem)
		}
		return c
	}
	for _, name := range p.deletes {
		at(name).del = true
	}
	for name, data := range p.writes {
		at(name).write = data
	}
	return root
}

// writeTree stores tree root (zero: empty) with p applied (blobs and the trees on
// changed paths; objects already there are not rewritten) and returns its
// hash. It refuses, wrapping ErrInvalidChange, a write below a symbolic
// link (as apply does in the worktree), and fails on a write below a file
// or over a directory that p does not delete.
func (r *Repo) writeTree(p *plan, root plumbing.Hash) (plumbing.Hash, error) {
	ob := objectWriter{r.repo.Storer}
	h, empty, err := ob.rebuild("", root, changeOf(p))
	if err == nil && empty {
		// Empty directories are dropped, but a commit always has a root
		// tree: Git's empty tree, as git rm -r . && git commit makes.
		return ob.writeTreeObject(&object.Tree{})
	}
	return h, err
}

// objectWriter writes Git objects to a store (a clone's, or memory).
type objectWriter struct{ s storer.EncodedObjectStorer }

// rebuild returns the hash of tree h (zero: empty) of directory dir with c
// applied, and whether it is empty (Git stores no empty directory).
func (ob objectWriter) rebuild(dir string, h plumbing.Hash, c *change) (plumbing.Hash, bool, error) {
	entries := map[string]object.TreeEntry{}
	if !h.IsZero() {
		t, err := object.GetTree(ob.s, h)
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
					return plumbing.ZeroHash, false, fmt.Errorf("%w: %s: parent %s is a symlink", ErrInvalidChange, firstUnder(full, n), full)
				default:
					return plumbing.ZeroHash, false, fmt.Errorf("write %s: %s is not a directory", firstUnder(full, n), full)
				}
			}
			nh, empty, err := ob.rebuild(full, sub, n)
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
			blob, err := ob.store(plumbing.BlobObject, n.write)
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
	nh, err := ob.writeTreeObject(t)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("write tree of %s: %w", dirName(dir), err)
	}
	return nh, false, nil
}

// store writes an object of type t holding data, unless it is stored
// already, and returns its hash.
func (ob objectWriter) store(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	o := ob.s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return ob.storeObject(o)
}

func (ob objectWriter) storeObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if ob.s.HasEncodedObject(o.Hash()) == nil {
		return o.Hash(), nil
	}
	return ob.s.SetEncodedObject(o)
}

// writeCommit stores a commit of tree on tip (none when zero) with the
// Repo's signature and message, signed with Options.Signer when set, as
// go-git's Worktree.Commit signs: the commit encoded without its signature
// is what is signed.
func (r *Repo) writeCommit(tree, tip plumbing.Hash, message string) (plumbing.Hash, error) {
	sig := r.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !tip.IsZero() {
		c.ParentHashes = []plumbing.Hash{tip}
	}
	if r.opts.Signer != nil {
		unsigned := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		s, err := r.opts.Signer.Sign(rd)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("sign: %w", err)
		}
		c.PGPSignature = string(s)
	}
	o := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return objectWriter{r.repo.Storer}.storeObject(o)
}

// firstUnder is the first file c writes or deletes below name, for errors
// that name the path a pass asked for.
func firstUnder(name string, c *change) string {
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
