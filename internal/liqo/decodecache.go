package liqo

import (
	"crypto/sha256"
	"sync"
)

// Bounds of the decode cache: documents larger than maxCachedDocument are
// not kept, and when the kept JSON reaches maxCachedBytes the cache starts
// over empty, so memory stays bounded whatever a repo holds.
const (
	maxCachedDocument = 64 << 10
	maxCachedBytes    = 32 << 20
)

// decoded is the process's decode cache.
var decoded = &decodeCache{m: map[decodeKey][]byte{}}

// decodeCache remembers the JSON of artifacts that passed decodeStrict's
// checks (toJSON), keyed by the SHA-256 of their exact bytes and the
// apiVersion and kind asked for: a reconciler reads the same artifacts at
// every pass, and the YAML parsing was the dear part of reading them. Only
// what toJSON accepted is kept; the strict decoding into a fresh object,
// and every check after it, runs at every call, so callers never share an
// object. Safe for concurrent use.
type decodeCache struct {
	mu    sync.Mutex
	m     map[decodeKey][]byte
	bytes int
}

type decodeKey struct {
	data             [sha256.Size]byte
	apiVersion, kind string
}

// json is toJSON(data, apiVersion, kind), from the cache when the same
// bytes passed before. The result must not be modified.
func (c *decodeCache) json(data []byte, apiVersion, kind string) ([]byte, error) {
	if len(data) > maxCachedDocument {
		return toJSON(data, apiVersion, kind)
	}
	k := decodeKey{data: sha256.Sum256(data), apiVersion: apiVersion, kind: kind}
	c.mu.Lock()
	j, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return j, nil
	}
	j, err := toJSON(data, apiVersion, kind)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.bytes+len(j) > maxCachedBytes {
		c.m, c.bytes = map[decodeKey][]byte{}, 0
	}
	if _, ok := c.m[k]; !ok {
		c.m[k] = j
		c.bytes += len(j)
	}
	c.mu.Unlock()
	return j, nil
}
