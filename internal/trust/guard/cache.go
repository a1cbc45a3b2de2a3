package guard

import (
	"crypto/sha256"
	"fmt"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
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
	m *boundedmap.Map[[sha256.Size]byte, result]
}

type result struct {
	reason string
	found  bool
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{m: boundedmap.New[[sha256.Size]byte, result](maxCached)} }

// Check is Check(path, content), answered from the cache when the same
// bytes were inspected before. A nil Cache inspects every time.
func (c *Cache) Check(path string, content []byte) error {
	if reason, found := c.Inspect(content); found {
		return fmt.Errorf("%s: %w: %s", path, ErrSecret, reason)
	}
	return nil
}

// Inspect is Inspect(content), answered from the cache when the same bytes
// were inspected before. A nil Cache inspects every time.
func (c *Cache) Inspect(content []byte) (reason string, found bool) {
	if c == nil {
		return Inspect(content)
	}
	k := sha256.Sum256(content)
	r, ok := c.m.Get(k)
	if ok {
		return r.reason, r.found
	}
	reason, found = Inspect(content)
	c.m.Put(k, result{reason, found})
	return reason, found
}
