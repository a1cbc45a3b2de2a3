package verify

import (
	"bytes"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// maxCachedBlobBytes bounds what a blobCachedTree keeps: a 1,000-cluster,
// 10,000-peering tree is ~125 MB of files; past the bound it starts over.
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
	mu    sync.Mutex
	blobs map[plumbing.Hash][]byte
	size  int
}

func newBlobCachedTree(t *gitobj.TreeFS) *blobCachedTree {
	return &blobCachedTree{TreeFS: t, blobs: map[plumbing.Hash][]byte{}}
}

// ReadFile is TreeFS.ReadFile, from the cache for a regular file read
// before; the caller owns the bytes returned.
func (t *blobCachedTree) ReadFile(name string) ([]byte, error) {
	e, err := t.TreeFS.Entry(name)
	if err != nil || e == nil || !cachedMode(e.Mode) {
		return t.TreeFS.ReadFile(name) // its answer and errors, as they are
	}
	t.mu.Lock()
	data, ok := t.blobs[e.Hash]
	t.mu.Unlock()
	if ok {
		return bytes.Clone(data), nil
	}
	data, err = t.TreeFS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if _, ok := t.blobs[e.Hash]; !ok {
		if t.size+len(data) > maxCachedBlobBytes {
			clear(t.blobs)
			t.size = 0
		}
		t.blobs[e.Hash] = bytes.Clone(data)
		t.size += len(data)
	}
	t.mu.Unlock()
	return data, nil
}

// cachedMode reports whether a tree entry of mode m is a file whose
// content TreeFS.ReadFile returns: not a link, submodule or directory.
func cachedMode(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}
