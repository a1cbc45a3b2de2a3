package layout

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/gitpeer/gitpeer/manifest"
)

// Size caps of the files a reader takes from a peering repo, in bytes. A
// file above its cap is refused before it is decoded, and, where the tree
// says the size first (Capped, ReadFileLimit), before it is read at all:
// one peer, or a repo writer, must not be able to make a reconciler hold
// more than a few of them in memory, nor to make it copy an unbounded value
// into its pin store. docs/trust.md ("Peer isolation and size caps") states
// them; the spec (peering.cue) has its own bounds (schema.Limits) and a
// manifest.yaml is capped at manifest.MaxSize.
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
// manifest.ErrTooLarge, so that the signed view names such a file
// FileTooLarge rather than an unsigned change.
var ErrTooLarge = manifest.ErrTooLarge

// SizeLimit is the cap of the repo file at slash-separated path name, by
// what the file is: manifest.MaxSize for a manifest.yaml, the constants
// above for the others.
func SizeLimit(name string) int64 {
	base := path.Base(name)
	switch {
	case base == manifest.FileName:
		return manifest.MaxSize
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
// before reading it (see ReadFileLimit); listings and stats pass through.
// A pass reads the repo through it, so no file a peer or a repo writer
// commits is held whole in memory past its cap.
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
func (c cappedFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(c.base, name) }

// Stat implements fs.StatFS.
func (c cappedFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(c.base, name) }

var (
	_ fs.ReadFileFS = cappedFS{}
	_ fs.ReadDirFS  = cappedFS{}
	_ fs.StatFS     = cappedFS{}
)
