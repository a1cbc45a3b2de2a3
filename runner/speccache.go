package runner

import (
	"context"
	"crypto/sha256"
	"sync"

	"github.com/gitpeer/gitpeer/schema"
)

// specCache keeps the last spec a Runner evaluated, keyed by the SHA-256 of
// the spec file's path and bytes: evaluating a large spec takes seconds (a
// bounded evaluator process), and most passes run on a spec that did not
// change. The bytes are the commit's, read by the pass, so a changed spec
// changes the key and a stale spec is never served; a spec that fails to
// load is not kept.
type specCache struct {
	mu   sync.Mutex
	key  [sha256.Size]byte
	spec *schema.Spec
}

// load returns the spec of file (holding data), from the cache when it holds
// these bytes, else from load.
func (c *specCache) load(ctx context.Context, file string, data []byte, load func(context.Context, string, []byte) (*schema.Spec, error)) (*schema.Spec, error) {
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(data)
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	c.mu.Lock()
	if c.spec != nil && c.key == key {
		spec := c.spec
		c.mu.Unlock()
		return spec, nil
	}
	c.mu.Unlock()
	spec, err := load(ctx, file, data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.key, c.spec = key, spec
	c.mu.Unlock()
	return spec, nil
}
