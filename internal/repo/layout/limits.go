package layout

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// Size caps of the files a reader takes from a peering repo, in bytes. A
// file above its cap is refused before it is decoded, and, where the tree
// says the size first (Capped, ReadFileLimit), before it is read at all:
// one peer, or a repo writer, must not be able to make a reconciler hold
// more than a few of them in memory, nor to make it copy an unbounded value
// into its pin store. docs/trust.md ("Peer isolation and size caps") states
// them; the spec (peering.cue) has its own bounds (schema.Limits) and a
// manifest.yaml is capped at dirmanifest.MaxSize.
const (
	// MaxClusterInfoSize caps clusters/<id>/cluster.yaml: a public key, an
	// API server URL and a CA bundle of a few certificates (about 2 KiB
	// each), and a rotation statement, take a few KiB.
	MaxClusterInfoSize = 128 << 10
	// MaxArtifactSize caps a handshake artifact (nonce.yaml, tenant.yaml,
	// identity.yaml, a ResourceSlice request or answer) and each object a
	// cluster renders under clusters/<id>/liqo/: the largest, an Identity,
	// carries the provider's CA bundle (at most MaxClusterInfoSize) in
	// base64 and one certificate.
	MaxArtifactSize = 256 << 10
	// MaxKustomizationSize caps clusters/<id>/kustomization.yaml: one line
	// of about 80 bytes per rendered object, several per peering.
	MaxKustomizationSize = 4 << 20
	// MaxStatusSize caps clusters/<id>/status.yaml: a few conditions and
	// slices per peering, for a cluster with thousands of peerings.
	MaxStatusSize = 16 << 20
	// MaxFileSize caps any other file read from the repo.
	MaxFileSize = 16 << 20
)

// ErrTooLarge means a repo file is larger than its cap (SizeLimit). It is
// dirmanifest.ErrTooLarge, so that the signed view names such a file
// FileTooLarge rather than an unsigned change.
var ErrTooLarge = dirmanifest.ErrTooLarge

// Entry caps of the directories a reader takes from a peering repo. A
// directory above its cap is refused whole, from its tree object's size
// and entry count, before any entry of it is decoded (gitobj.TreeFS;
// Capped checks a tree that cannot say after listing it): a repo writer
// who commits a folder of a million entries (one blob shared by all, a
// tree object of a few tens of MB) must not make every pass of a
// reconciler decode, list and audit them. The refusal is named for the
// peering whose folder it is (TooManyEntries). docs/trust.md ("Peer
// isolation and size caps") states them.
const (
	// MaxFolderEntries caps a directory under clusters/ that holds files
	// of one cluster or one peering: a cluster's own directory, one
	// sender's folder of an inbox (clusters/<id>/inbox/<from>/), the
	// objects a cluster renders for one peer (clusters/<id>/liqo/<peer>/),
	// its flux/. Each holds a handful of files, and about two more per
	// ResourceSlice of the peering: room for some 2,000 slices.
	MaxFolderEntries = 4096
	// MaxPeerEntries caps the directories that hold one entry per cluster
	// or per peer: clusters/, a cluster's inbox/ (one folder per peer
	// writing to it) and liqo/ (one folder per peer, and the few objects
	// shared by all), and any directory outside clusters/ (the root among
	// them). A hub peered with 10,000 consumers holds 10,000 there, and
	// clusters/ of a 10,000-cluster repo 10,000.
	MaxPeerEntries = 16384
	// MaxTreeEntryBytes is the largest entry of a directory within its
	// cap in a Git tree object: a mode of 6 digits, a space, a name of at
	// most 255 bytes (the longest file name a checkout can hold on common
	// file systems), a NUL and a 20-byte object hash. A tree object above
	// EntryLimit times this is refused from its size alone, without
	// being read.
	MaxTreeEntryBytes = 6 + 1 + 255 + 1 + 20
)

// ErrTooManyEntries means a repo directory holds more entries than its cap
// (EntryLimit). It is dirmanifest.ErrTooManyEntries, so that the signed view
// names such a folder TooManyEntries.
var ErrTooManyEntries = dirmanifest.ErrTooManyEntries

// EntryLimit is the cap on the number of entries of the repo directory at
// slash-separated path dir ("." the root): MaxPeerEntries for clusters/,
// clusters/<id>/inbox/, clusters/<id>/liqo/ and anything outside
// clusters/, MaxFolderEntries for any other directory under clusters/.
func EntryLimit(dir string) int {
	parts := strings.Split(dir, "/")
	switch {
	case parts[0] != ClustersDir, len(parts) == 1:
		return MaxPeerEntries
	case len(parts) == 3 && (parts[2] == InboxDir || parts[2] == LiqoDir):
		return MaxPeerEntries
	}
	return MaxFolderEntries
}

// TreeSizeLimit is the size in bytes of the largest Git tree object
// directory dir may have within EntryLimit (MaxTreeEntryBytes per entry).
func TreeSizeLimit(dir string) int64 { return int64(EntryLimit(dir)) * MaxTreeEntryBytes }

// TooManyEntriesError is a directory refused for its number of entries. It
// matches ErrTooManyEntries (errors.Is).
type TooManyEntriesError struct {
	// Dir is the directory's slash-separated repo path.
	Dir string
	// Entries is how many entries it holds, at least; 0 when it was
	// refused from its tree object's Size alone.
	Entries int
	// Size is the size of its tree object in bytes, when known.
	Size int64
	// Limit is its cap (EntryLimit).
	Limit int
}

func (e *TooManyEntriesError) Error() string {
	if e.Entries == 0 {
		return fmt.Sprintf("%s: %v: a tree object of %d bytes, more than %d entries take (%d bytes at most)",
			e.Dir, ErrTooManyEntries, e.Size, e.Limit, int64(e.Limit)*MaxTreeEntryBytes)
	}
	return fmt.Sprintf("%s: %v: %d entries, more than %d", e.Dir, ErrTooManyEntries, e.Entries, e.Limit)
}

// Is makes a TooManyEntriesError match ErrTooManyEntries.
func (e *TooManyEntriesError) Is(target error) bool { return target == ErrTooManyEntries }

// SizeLimit is the cap of the repo file at slash-separated path name, by
// what the file is: dirmanifest.MaxSize for a manifest.yaml, the constants
// above for the others.
func SizeLimit(name string) int64 {
	base := path.Base(name)
	switch {
	case base == dirmanifest.FileName:
		return dirmanifest.MaxSize
	case !strings.HasPrefix(name, ClustersDir+"/"):
		return MaxFileSize
	}
	_, from, rest, ok := Split(name)
	switch {
	case !ok:
		return MaxFileSize
	case from != "":
		return MaxArtifactSize
	case rest == ClusterFile:
		return MaxClusterInfoSize
	case rest == StatusFile:
		return MaxStatusSize
	case rest == RepinsFile:
		return MaxRepinsSize
	case rest == KustomizationFile:
		return MaxKustomizationSize
	}
	return MaxArtifactSize
}

// ReadFileLimit reads name from fsys if it is at most limit bytes. The
// size is asked of the tree first (fs.Stat: a blob's size from its header
// in a TreeFS, an lstat in a Tree), so a larger file is refused without
// being read; a tree that cannot say is read through a reader that stops
// past limit. The error of a larger file is an *fs.PathError wrapping
// ErrTooLarge that says both sizes.
func ReadFileLimit(fsys fs.FS, name string, limit int64) ([]byte, error) {
	if fi, err := fs.Stat(fsys, name); err != nil {
		return nil, err
	} else if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, tooLarge(name, fi.Size(), limit)
	}
	if rf, ok := fsys.(fs.ReadFileFS); ok {
		data, err := rf.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > limit {
			return nil, tooLarge(name, int64(len(data)), limit) // it grew since the stat
		}
		return data, nil
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

func tooLarge(name string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, size, limit)}
}

// Capped is fsys whose reads of a file refuse one above its SizeLimit,
// before reading it (see ReadFileLimit), and whose listings refuse a
// directory above its EntryLimit with a *TooManyEntriesError; stats pass
// through. A pass reads the repo through it, so no file a peer or a repo
// writer commits is held whole in memory past its cap. The entry cap is
// checked before the listing is read where fsys checks it itself (a
// gitobj.TreeFS does, from the tree object); other trees are listed first.
func Capped(fsys fs.FS) fs.FS {
	if c, ok := fsys.(cappedFS); ok {
		return c
	}
	return cappedFS{fsys}
}

type cappedFS struct{ base fs.FS }

// ReadFile implements fs.ReadFileFS.
func (c cappedFS) ReadFile(name string) ([]byte, error) {
	return ReadFileLimit(c.base, name, SizeLimit(name))
}

// Open implements fs.FS: a file above its cap is refused before it is
// opened.
func (c cappedFS) Open(name string) (fs.File, error) {
	fi, err := fs.Stat(c.base, name)
	if err != nil {
		return nil, err
	}
	if limit := SizeLimit(name); fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, tooLarge(name, fi.Size(), limit)
	}
	return c.base.Open(name)
}

// ReadDir implements fs.ReadDirFS.
func (c cappedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(c.base, name)
	if err != nil {
		return nil, err
	}
	if limit := EntryLimit(name); len(entries) > limit {
		return nil, &TooManyEntriesError{Dir: name, Entries: len(entries), Limit: limit}
	}
	return entries, nil
}

// Stat implements fs.StatFS.
func (c cappedFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(c.base, name) }

var (
	_ fs.ReadFileFS = cappedFS{}
	_ fs.ReadDirFS  = cappedFS{}
	_ fs.StatFS     = cappedFS{}
)
