package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrSymlink means a repo path is, or goes through, a symbolic link.
var ErrSymlink = errors.New("symbolic link")

// Tree is a checkout of a peering repo that refuses symbolic links: a peer
// can commit a link in its inbox pointing at our state directory, and
// following it would read (and maybe echo into a status message) private
// material. It implements fs.FS, fs.ReadFileFS and fs.ReadDirFS.
type Tree struct {
	root string
	// dirs, when set, holds the directories (host paths) an Lstat found to
	// be directories, not links: a snapshot tree checks each once.
	dirs *sync.Map
}

// NewTree returns the checkout rooted at dir.
func NewTree(dir string) *Tree { return &Tree{root: dir} }

// NewSnapshotTree is NewTree for a checkout that does not change while it
// is read (gitpeer verify's): it remembers the directories it found not to
// be links, so that reading a file costs one Lstat of the file rather than
// one per element of its path. Anything it has not seen as a directory,
// and the file itself, is checked at every call, with the same errors as
// NewTree's.
func NewSnapshotTree(dir string) *Tree { return &Tree{root: dir, dirs: &sync.Map{}} }

// check refuses name when it, or any directory above it, is a symbolic link.
func (t *Tree) check(op, name string) (string, error) {
	p, _, err := t.lstat(op, name)
	return p, err
}

// lstat is check that also returns what Lstat said of name itself (nil for
// "."): not a link, so what Stat would say.
func (t *Tree) lstat(op, name string) (string, fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p := t.root
	if name == "." {
		return p, nil, nil
	}
	var fi fs.FileInfo
	elems := strings.Split(name, "/")
	for i, elem := range elems {
		p = filepath.Join(p, elem)
		last := i == len(elems)-1
		if !last && t.dirs != nil {
			if _, ok := t.dirs.Load(p); ok {
				continue
			}
		}
		var err error
		fi, err = os.Lstat(p)
		if err != nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: unwrapPathError(err)}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: refusing to follow it", ErrSymlink)}
		}
		if t.dirs != nil && fi.IsDir() {
			t.dirs.Store(p, true)
		}
	}
	return p, fi, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open implements fs.FS.
func (t *Tree) Open(name string) (fs.File, error) {
	p, err := t.check("open", name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// ReadFile implements fs.ReadFileFS; only regular files are read.
func (t *Tree) ReadFile(name string) ([]byte, error) {
	p, fi, err := t.lstat("read", name)
	if err != nil {
		return nil, err
	}
	if fi == nil || !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	return os.ReadFile(p)
}

// ReadDir implements fs.ReadDirFS. Entries that are links are listed (so a
// walk sees them) but every read through them fails.
func (t *Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := t.check("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if name == "." && e.Name() == ".git" {
			continue // the repository's own store is not part of the tree
		}
		out = append(out, e)
	}
	return out, nil
}

// Stat implements fs.StatFS without following links.
func (t *Tree) Stat(name string) (fs.FileInfo, error) {
	p, err := t.check("stat", name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

var _ fs.ReadFileFS = (*Tree)(nil)

// ObjectHashed is implemented by the fs.DirEntry values of a tree read from
// Git objects (gitobj.TreeFS): ObjectHash is the entry's Git object hash
// (20 bytes, SHA-1), equal for two entries exactly when they hold the same
// content, a directory the same whole subtree. A reader may keep what it
// found under a directory by that hash and skip reading it again while the
// hash is unchanged; entries of other trees (a checkout on disk) do not
// implement it, and are read every time.
type ObjectHashed interface {
	ObjectHash() [20]byte
}
