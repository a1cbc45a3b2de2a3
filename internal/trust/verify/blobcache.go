package verify

import (
	"bytes"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// maxCachedBlobBytes bounds what a blobCachedTree keeps: a 1,000-cluster,
// 10,000-peering tree is ~125 MB of files; past the bound it starts over
// (boundedmap.NewSized), and a blob larger than the bound is not kept.
const maxCachedBlobBytes = 128 << 20

// blobCachedTree is a commit's tree whose regular files' contents are kept
// by blob hash once read: the checks read each file three or four times
// (the walk of clusters/, the rendered objects, the kustomize build, the
// manifest audit), and each read inflated the object again from the pack,
// one at a time under gitobj's lock. Git's blob hash names the exact bytes,
// so a hit is the content TreeFS.ReadFile would return. Only regular and
// executable files are served from it, the mode checked on every read: a
// symbolic link or submodule with the same hash is read by TreeFS, which
// refuses it as before. Every other method is TreeFS's. Safe for
// concurrent use.
type blobCachedTree struct {
	*gitobj.TreeFS
	blobs *boundedmap.Map[plumbing.Hash, []byte] // at most maxCachedBlobBytes in all
}

func newBlobCachedTree(t *gitobj.TreeFS) *blobCachedTree {
	size := func(b []byte) int { return len(b) }
	return &blobCachedTree{TreeFS: t, blobs: boundedmap.NewSized[plumbing.Hash](maxCachedBlobBytes, size)}
}

// ReadFile is TreeFS.ReadFile, from the cache for a regular file read
// before; the caller owns the bytes returned.
func (t *blobCachedTree) ReadFile(name string) ([]byte, error) {
	e, err := t.TreeFS.Entry(name)
	if err != nil || e == nil || !cachedMode(e.Mode) {
		return t.TreeFS.ReadFile(name) // its answer and errors, as they are
	}
	if data, ok := t.blobs.Get(e.Hash); ok {
		return bytes.Clone(data), nil
	}
	data, err := t.TreeFS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	// The cache keeps its own copy: the caller may change data.
	t.blobs.Put(e.Hash, bytes.Clone(data))
	return data, nil
}

// cachedMode reports whether a tree entry of mode m is a file whose
// content TreeFS.ReadFile returns: not a link, submodule or directory.
func cachedMode(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}
