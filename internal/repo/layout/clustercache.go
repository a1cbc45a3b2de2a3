package layout

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
)

// maxClusterInfos bounds how many parsed cluster.yaml files a
// ClusterInfoCache holds; when full it starts over empty.
const maxClusterInfos = 1 << 12

// ClusterInfoCache remembers the cluster.yaml files ParseClusterInfo
// accepted, by the SHA-256 of the cluster ID and the exact bytes: a
// reconciler reads every peer's cluster.yaml at every pass, and they
// hardly ever change. ParseClusterInfo is a function of (id, bytes), so
// the answer for the same pair is the answer; refusals are not kept (each
// is parsed again, its message as ParseClusterInfo gives it). Safe for
// concurrent use; the zero value is not: use NewClusterInfoCache.
type ClusterInfoCache struct {
	m *boundedmap.Map[[sha256.Size]byte, *ClusterInfo]
}

// NewClusterInfoCache returns an empty ClusterInfoCache.
func NewClusterInfoCache() *ClusterInfoCache {
	return &ClusterInfoCache{m: boundedmap.New[[sha256.Size]byte, *ClusterInfo](maxClusterInfos)}
}

// Parse is ParseClusterInfo(ClusterPath(id, ClusterFile), id, data),
// answered from the cache when the same bytes under the same id were
// accepted before. The caller owns the ClusterInfo it gets (a copy). A nil
// cache parses every time.
func (c *ClusterInfoCache) Parse(id string, data []byte) (*ClusterInfo, error) {
	file := ClusterPath(id, ClusterFile)
	if c == nil {
		return ParseClusterInfo(file, id, data)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s\n", len(id), id)
	h.Write(data)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	if ci, ok := c.m.Get(k); ok {
		return ci.clone(), nil
	}
	ci, err := ParseClusterInfo(file, id, data)
	if err != nil {
		return nil, err
	}
	c.m.Put(k, ci.clone())
	return ci, nil
}

// Read is ReadClusterInfo(tree, id), its parse answered from the cache:
// the file is read from tree every time.
func (c *ClusterInfoCache) Read(tree fs.FS, id string) (*ClusterInfo, error) {
	data, err := readClusterFile(tree, id)
	if err != nil {
		return nil, err
	}
	return c.Parse(id, data)
}

// readClusterFile reads clusters/<id>/cluster.yaml for ReadClusterInfo:
// a missing file wraps ErrNotPublished, other errors are *FieldError.
func readClusterFile(tree fs.FS, id string) ([]byte, error) {
	if err := checkDirID(id, ClusterFile); err != nil {
		return nil, err
	}
	file := ClusterPath(id, ClusterFile)
	data, err := ReadFileLimit(tree, file, MaxClusterInfoSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", file, ErrNotPublished)
	}
	if err != nil {
		return nil, &FieldError{File: file, Reason: err.Error(), Err: err}
	}
	return data, nil
}

// clone is a deep copy of c.
func (c *ClusterInfo) clone() *ClusterInfo {
	d := *c
	if c.Rotation != nil {
		r := *c.Rotation
		r.Signature = bytes.Clone(c.Rotation.Signature)
		d.Rotation = &r
	}
	return &d
}
