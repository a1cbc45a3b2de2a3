package guard

import (
	"crypto/sha256"
	"sync"
)

// maxCached bounds how many results a Cache holds; when full it starts over
// empty.
const maxCached = 1 << 16

// Cache remembers Inspect's answers by the SHA-256 of the content, so that
// content checked once (an artifact rewritten unchanged every pass, a
// status message repeated) is not scanned again. Inspect is a pure function
// of the bytes, so an answer for the same bytes is the answer. Safe for
// concurrent use; the zero value is not: use NewCache.
type Cache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]result
}

type result struct {
	reason string
	found  bool
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{m: map[[sha256.Size]byte]result{}} }

// Inspect is Inspect(content), answered from the cache when the same bytes
// were inspected before. A nil Cache inspects every time.
func (c *Cache) Inspect(content []byte) (reason string, found bool) {
	if c == nil {
		return Inspect(content)
	}
	k := sha256.Sum256(content)
	c.mu.Lock()
	r, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return r.reason, r.found
	}
	reason, found = Inspect(content)
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = map[[sha256.Size]byte]result{}
	}
	c.m[k] = result{reason, found}
	c.mu.Unlock()
	return reason, found
}
