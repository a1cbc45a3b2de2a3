package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/gitpeer/gitpeer/schema"
)

// specCache keeps the last spec a Runner loaded, keyed by the SHA-256 of
// every spec file candidate of the checkout (names, sizes and contents):
// evaluating a large spec takes seconds (a bounded evaluator process), and
// most passes run on a spec that did not change. A changed, added or
// removed spec file changes the key, so a stale spec is never served; a
// spec that fails to load is not kept.
type specCache struct {
	mu   sync.Mutex
	key  [sha256.Size]byte
	spec *schema.Spec
}

// load returns the spec of dir, from the cache when its files are the ones
// the cached spec was loaded from, else from load.
func (c *specCache) load(ctx context.Context, dir string, load func(context.Context, string) (*schema.Spec, error)) (*schema.Spec, error) {
	before, ok := specKey(dir)
	c.mu.Lock()
	if ok && c.spec != nil && c.key == before {
		spec := c.spec
		c.mu.Unlock()
		return spec, nil
	}
	c.mu.Unlock()
	spec, err := load(ctx, dir)
	if err != nil {
		return nil, err
	}
	// Kept only if the files did not change while load read them.
	if after, ok2 := specKey(dir); ok && ok2 && after == before {
		c.mu.Lock()
		c.key, c.spec = before, spec
		c.mu.Unlock()
	}
	return spec, nil
}

// specKey hashes the spec file candidates of dir (schema.SpecFiles); ok is
// false when one cannot be read.
func specKey(dir string) (key [sha256.Size]byte, ok bool) {
	h := sha256.New()
	h.Write([]byte(dir))
	for _, name := range schema.SpecFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return key, false
		}
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(data)))
		h.Write([]byte{0})
		h.Write([]byte(name))
		h.Write(n[:])
		h.Write(data)
	}
	copy(key[:], h.Sum(nil))
	return key, true
}
