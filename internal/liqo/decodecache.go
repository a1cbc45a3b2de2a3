package liqo

import (
	"crypto/sha256"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
)

// Bounds of the decode cache: documents larger than maxCachedDocument are
// not kept, and when the kept JSON would pass maxCachedBytes the cache
// starts over empty, so memory stays bounded whatever a repo holds.
const (
	maxCachedDocument = 64 << 10
	maxCachedBytes    = 32 << 20
)

// decoded is the process's decode cache: the JSON of artifacts that passed
// decodeStrict's checks (toJSON), keyed by the SHA-256 of their exact bytes
// and the apiVersion and kind asked for. A reconciler reads the same
// artifacts at every pass, and the YAML parsing was the dear part of
// reading them. Only what toJSON accepted is kept; the strict decoding
// into a fresh object, and every check after it, runs at every call, so
// callers never share an object.
var decoded = boundedmap.NewSized[decodeKey, []byte](maxCachedBytes, func(j []byte) int { return len(j) })

type decodeKey struct {
	data             [sha256.Size]byte
	apiVersion, kind string
}

// cachedJSON is toJSON(data, apiVersion, kind), from the cache when the
// same bytes passed before. The result must not be modified.
func cachedJSON(data []byte, apiVersion, kind string) ([]byte, error) {
	if len(data) > maxCachedDocument {
		return toJSON(data, apiVersion, kind)
	}
	k := decodeKey{data: sha256.Sum256(data), apiVersion: apiVersion, kind: kind}
	if j, ok := decoded.Get(k); ok {
		return j, nil
	}
	j, err := toJSON(data, apiVersion, kind)
	if err != nil {
		return nil, err
	}
	decoded.Put(k, j)
	return j, nil
}
