// Package gitobj is gitpeer's Git plumbing, apart from the policy of
// publishing a pass (package gitsync): reading a commit's tree as an fs.FS
// (TreeFS, OpenCommitTree), writing trees and commits from a tree and an
// edit (Writer), the tree of a commit (TreeHash, Tree), the difference of
// two trees by their hashes (Diff), and the narrow push of one commit
// (PushNarrow). It works on go-git's object stores; what a commit should
// hold, when to push and what to do on a refusal are gitsync's.
package gitobj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TreeFS is one commit's tree read from a repository's Git objects, not from
// the worktree: what a pass reads through it is the commit, whatever lies in
// the worktree, and a read costs the objects on its path, not a scan of the
// checkout. It implements fs.FS, fs.ReadFileFS, fs.ReadDirFS and fs.StatFS
// with layout.Tree's rules: symbolic links are listed (fs.ModeSymlink) but
// every read, stat or listing through one fails with layout.ErrSymlink, and
// a submodule is listed as an irregular file that cannot be read. Modes are
// Git's (0644, 0755, directories 0755); times are zero. Safe for concurrent
// use.
type TreeFS struct {
	s    storer.EncodedObjectStorer
	root plumbing.Hash // zero: the empty tree of a branch without commits

	mu sync.Mutex
	// dirs are the trees this TreeFS decoded, by hash: a path's key would
	// cost its length to hash at every level of every lookup, cubic in
	// the depth of a walk (a path 2,100 directories deep took minutes).
	dirs map[plumbing.Hash]*treeDir
	// decoded, shared by the TreeFS of one clone (or memory tree), keeps
	// decoded trees by hash across passes: a tree is immutable, and most
	// of those a pass reads (every cluster's inbox, looking for its own
	// folder) did not change since the last one.
	decoded *TreeCache
}

// TreeCache is decoded trees by hash, shared by the TreeFS of one
// repository across passes, forgotten all at once past maxCachedTrees (a
// pass of a 1,000-cluster mesh reads about 2,000).
type TreeCache = boundedmap.Map[plumbing.Hash, *treeDir]

const maxCachedTrees = 20000

// NewTreeCache is an empty TreeCache.
func NewTreeCache() *TreeCache { return boundedmap.New[plumbing.Hash, *treeDir](maxCachedTrees) }

// errBadEntry is a tree entry Git's fsck refuses.
var errBadEntry = errors.New("invalid tree entry")

// CheckEntryName refuses, with an error, a tree entry name that is not one
// clean path element, or is .git (or its NTFS short name): names Git's
// fsck refuses.
func CheckEntryName(name string) error {
	switch {
	case name == "", name == ".", name == "..", strings.ContainsAny(name, "/\\\x00"),
		strings.EqualFold(name, ".git"), strings.EqualFold(name, "git~1"):
		return fmt.Errorf("%w: %q", errBadEntry, name)
	}
	return nil
}

// treeDir is a decoded tree with its entries by name; never changed once
// made. A tree refused for its number of entries (checkEntries) is kept
// undecoded, with what was found of it: entries is then nil and tooMany
// set.
type treeDir struct {
	entries []object.TreeEntry
	byName  map[string]int
	tooMany *layout.TooManyEntriesError
}

// NewTreeFS is the tree of commit in s (the empty tree when commit is
// zero), sharing decoded trees through cache (nil: none). An error names a
// commit s cannot read.
func NewTreeFS(s storer.EncodedObjectStorer, commit plumbing.Hash, cache *TreeCache) (*TreeFS, error) {
	root, err := TreeHash(s, commit)
	if err != nil {
		return nil, err
	}
	return TreeFSOf(s, root, cache), nil
}

// TreeFSOf is the tree whose hash is root in s (zero: the empty tree),
// sharing decoded trees through cache (nil: none).
func TreeFSOf(s storer.EncodedObjectStorer, root plumbing.Hash, cache *TreeCache) *TreeFS {
	return &TreeFS{s: s, root: root, dirs: map[plumbing.Hash]*treeDir{}, decoded: cache}
}

// dir decodes (once) the tree of directory p, whose object is h. A tree
// above p's entry cap (layout.EntryLimit) is refused with a
// *layout.TooManyEntriesError before any of its entries is decoded, and
// the refusal is remembered as the tree would be.
func (t *TreeFS) dir(p string, h plumbing.Hash) (*treeDir, error) {
	if d, ok := t.dirs[h]; ok && d.holdsAt(p) {
		return d.refused(p)
	}
	if d, ok := t.decoded.Get(h); ok && d.holdsAt(p) {
		t.dirs[h] = d
		return d.refused(p)
	}
	d := &treeDir{byName: map[string]int{}}
	if !h.IsZero() {
		o, tooMany, err := checkEntries(t.s, p, h)
		if err != nil {
			return nil, fmt.Errorf("tree %s of %s: %w", h, p, err)
		}
		if tooMany != nil {
			d := &treeDir{tooMany: tooMany}
			t.dirs[h] = d
			t.decoded.Put(h, d)
			return d.refused(p)
		}
		tree, err := object.DecodeTree(t.s, o)
		if err != nil {
			return nil, err
		}
		d.entries = tree.Entries
		for i, e := range d.entries {
			// Git's fsck refuses these, go-git's fetch does not: a name
			// that is not one path element could lead a walk, or a write
			// in the worktree, out of its directory.
			if err := CheckEntryName(e.Name); err != nil {
				return nil, fmt.Errorf("tree %s of %s: %w", h, p, err)
			}
			if _, dup := d.byName[e.Name]; dup {
				return nil, fmt.Errorf("tree %s of %s: %w: %q twice", h, p, errBadEntry, e.Name)
			}
			d.byName[e.Name] = i
		}
	}
	t.dirs[h] = d
	if !h.IsZero() {
		t.decoded.Put(h, d)
	}
	return d, nil
}

// holdsAt says whether d, decoded or refused under some directory's cap,
// stands as it is at directory p: the same tree may stand at paths whose
// caps (layout.EntryLimit) differ, and is then checked again there.
func (d *treeDir) holdsAt(p string) bool {
	if d.tooMany != nil {
		return d.tooMany.Limit >= layout.EntryLimit(p)
	}
	return len(d.entries) <= layout.EntryLimit(p)
}

// refused is d, or its refusal as directory p's error.
func (d *treeDir) refused(p string) (*treeDir, error) {
	if d.tooMany == nil {
		return d, nil
	}
	e := *d.tooMany
	e.Dir = p
	return nil, &e
}

// minTreeEntryBytes is the smallest entry of a tree object: a 5-digit
// mode (a directory's), a space, a one-byte name, a NUL and a hash.
const minTreeEntryBytes = 5 + 1 + 1 + 1 + 20

// checkEntries reads tree object h of directory p as far as its entry cap
// (layout.EntryLimit) allows: a tree object larger than layout.
// TreeSizeLimit is refused from the size its header gives, before it is
// read; one that may hold more entries than the cap has its entries
// counted in its raw bytes, without decoding them. It returns the object
// to decode, or the refusal.
func checkEntries(s storer.EncodedObjectStorer, p string, h plumbing.Hash) (plumbing.EncodedObject, *layout.TooManyEntriesError, error) {
	limit := layout.EntryLimit(p)
	size, err := s.EncodedObjectSize(h)
	if err != nil {
		return nil, nil, err
	}
	if size > layout.TreeSizeLimit(p) {
		return nil, &layout.TooManyEntriesError{Dir: p, Size: size, Limit: limit}, nil
	}
	o, err := s.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, nil, err
	}
	if size <= int64(limit)*minTreeEntryBytes {
		return o, nil, nil // cannot hold more than limit entries
	}
	n, err := countEntries(o)
	if err != nil {
		return nil, nil, err
	}
	if n > limit {
		return nil, &layout.TooManyEntriesError{Dir: p, Entries: n, Size: size, Limit: limit}, nil
	}
	return o, nil, nil
}

// countEntries counts the entries of tree object o ("<mode> <name>\0"
// and a 20-byte hash each) from its raw bytes.
func countEntries(o plumbing.EncodedObject) (int, error) {
	r, err := o.Reader()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	br := bufio.NewReader(r)
	n := 0
	for {
		_, err := br.ReadSlice(0)
		for errors.Is(err, bufio.ErrBufferFull) { // a name longer than the buffer
			_, err = br.ReadSlice(0)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if _, err := br.Discard(20); err != nil {
			return n, fmt.Errorf("truncated tree entry: %w", err)
		}
		n++
	}
}

// lookup finds name's entry (nil for "."), refusing a path through a
// symbolic link or a file, and a link itself, as layout.Tree's lstat does;
// errors are *fs.PathError with op.
func (t *TreeFS) lookup(op, name string) (*object.TreeEntry, error) {
	e, err := t.Entry(name)
	if err == nil && e != nil && e.Mode == filemode.Symlink {
		err = fmt.Errorf("%w: refusing to follow it", layout.ErrSymlink)
	}
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return e, nil
}

// Entry is name's tree entry as the tree holds it (nil for "."), a link
// included; a path through a link is layout.ErrSymlink, through a file
// syscall.ENOTDIR, a missing one fs.ErrNotExist, an invalid one
// fs.ErrInvalid.
func (t *TreeFS) Entry(name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, fs.ErrInvalid
	}
	if name == "." {
		return nil, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// cur is name[:at], the directory being read: a slice, not a join, so
	// that a lookup costs its depth, not its depth squared.
	cur, curHash, at := ".", t.root, 0
	for {
		elem, _, more := strings.Cut(name[at:], "/")
		d, err := t.dir(cur, curHash)
		if err != nil {
			return nil, err
		}
		j, ok := d.byName[elem]
		if !ok {
			return nil, fs.ErrNotExist
		}
		e := d.entries[j]
		if !more {
			return &e, nil
		}
		switch e.Mode {
		case filemode.Dir:
		case filemode.Symlink:
			return nil, fmt.Errorf("%w: refusing to follow it", layout.ErrSymlink)
		default:
			return nil, syscall.ENOTDIR
		}
		at += len(elem)
		cur, curHash = name[:at], e.Hash
		at++ // the slash
	}
}

// Files calls fn with the path of every entry under directory dir that is
// not a directory (files, links, submodules: what an index lists), in tree
// order.
func (t *TreeFS) Files(dir string, fn func(name string)) error {
	d, err := t.readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range d.entries {
		p := path.Join(dir, e.Name)
		if e.Mode == filemode.Dir {
			if err := t.Files(p, fn); err != nil {
				return err
			}
			continue
		}
		fn(p)
	}
	return nil
}

// ReadFile implements fs.ReadFileFS; only regular (and executable) files
// are read.
func (t *TreeFS) ReadFile(name string) ([]byte, error) {
	e, err := t.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if e == nil || !e.Mode.IsFile() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	data, err := t.blob(e.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

func (t *TreeFS) blob(h plumbing.Hash) ([]byte, error) {
	o, err := t.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(make([]byte, 0, o.Size()))
	if err := copyObject(buf, o); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyObject copies the content of object o to w.
func copyObject(w io.Writer, o plumbing.EncodedObject) error {
	r, err := o.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

// ReadDir implements fs.ReadDirFS: the entries sorted by name.
func (t *TreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := t.readDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(d.entries))
	for i, e := range d.entries {
		out[i] = &treeEntry{fs: t, e: e}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (t *TreeFS) readDir(name string) (*treeDir, error) {
	e, err := t.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	h := t.root
	if e != nil {
		if e.Mode != filemode.Dir {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
		}
		h = e.Hash
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(name, h)
	var tooMany *layout.TooManyEntriesError
	if errors.As(err, &tooMany) {
		return nil, err // it names the directory
	}
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return d, nil
}

// Stat implements fs.StatFS without following links.
func (t *TreeFS) Stat(name string) (fs.FileInfo, error) {
	e, err := t.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return &treeEntry{fs: t, e: object.TreeEntry{Name: ".", Mode: filemode.Dir, Hash: t.root}}, nil
	}
	te := &treeEntry{fs: t, e: *e}
	if _, err := te.Info(); err != nil { // the size of a blob: fails if it is missing
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return te, nil
}

// Open implements fs.FS: a file reads its blob, a directory lists its
// entries.
func (t *TreeFS) Open(name string) (fs.File, error) {
	fi, err := t.Stat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.Unwrap(err)}
	}
	if fi.IsDir() {
		entries, err := t.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &treeDirFile{info: fi, entries: entries}, nil
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	data, err := t.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &treeFile{info: fi, Reader: bytes.NewReader(data)}, nil
}

// treeEntry is a tree entry as fs.DirEntry and fs.FileInfo; a blob's size
// is read when asked for.
type treeEntry struct {
	fs   *TreeFS
	e    object.TreeEntry
	once sync.Once
	size int64
	err  error
}

func (te *treeEntry) Name() string { return path.Base(te.e.Name) }
func (te *treeEntry) IsDir() bool  { return te.e.Mode == filemode.Dir }
func (te *treeEntry) Type() fs.FileMode {
	return te.Mode().Type()
}

func (te *treeEntry) Info() (fs.FileInfo, error) {
	te.once.Do(func() {
		if te.e.Mode.IsFile() || te.e.Mode == filemode.Symlink {
			te.size, te.err = te.fs.s.EncodedObjectSize(te.e.Hash)
		}
	})
	return te, te.err
}

func (te *treeEntry) Size() int64 { return te.size }

func (te *treeEntry) Mode() fs.FileMode {
	switch te.e.Mode {
	case filemode.Dir:
		return fs.ModeDir | 0o755
	case filemode.Executable:
		return 0o755
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Submodule:
		return fs.ModeIrregular
	default:
		return 0o644
	}
}

// ObjectHash is the entry's Git object hash (layout.ObjectHashed): two
// entries with the same hash hold the same content, a tree's the same whole
// subtree, so a reader may key what it found under a directory by it.
func (te *treeEntry) ObjectHash() [20]byte { return te.e.Hash }

func (te *treeEntry) ModTime() time.Time { return time.Time{} }
func (te *treeEntry) Sys() any           { return nil }
func (te *treeEntry) String() string     { return fs.FormatDirEntry(te) }

// treeFile is an open blob.
type treeFile struct {
	info fs.FileInfo
	*bytes.Reader
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *treeFile) Close() error               { return nil }

// treeDirFile is an open directory.
type treeDirFile struct {
	info    fs.FileInfo
	entries []fs.DirEntry
	off     int
}

func (f *treeDirFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *treeDirFile) Close() error               { return nil }
func (f *treeDirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: f.info.Name(), Err: errors.New("is a directory")}
}

func (f *treeDirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := f.entries[f.off:]
	if n <= 0 {
		f.off = len(f.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	f.off += n
	return rest[:n], nil
}

var (
	_ fs.ReadFileFS = (*TreeFS)(nil)
	_ fs.ReadDirFS  = (*TreeFS)(nil)
	_ fs.StatFS     = (*TreeFS)(nil)
)
