// Package boundedmap is the one cache shape gitpeer's memoizing caches share:
// a map that starts over empty when it holds its bound (of entries, or of
// the sizes of its values), so that memory stays bounded whatever a repo
// holds, at the price of recomputing after a reset. A pass reads the same
// objects again and again, so an entry lost to a reset is recomputed once
// and kept again.
package boundedmap

import "sync"

// Map is a map bounded by its number of entries (New) or by the sum of
// its values' sizes (NewSized), safe for concurrent use; the zero value is
// not usable. Putting a new key into a full Map first empties it. A nil
// *Map keeps nothing: Get misses, Put does nothing.
type Map[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
	// max bounds the entries (New); 0 with size set.
	max int
	// size and maxSize bound the sum of size(v) over the values (NewSized);
	// total is that sum.
	size           func(V) int
	maxSize, total int
}

// New returns an empty Map that holds at most max entries (max < 1 is 1).
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{m: map[K]V{}, max: max}
}

// NewSized returns an empty Map whose values' sizes, size(v) in whatever
// unit size counts (bytes, say), add up to at most maxSize. Putting a value
// that would pass the bound empties the Map first; a value larger than
// maxSize by itself is not kept.
func NewSized[K comparable, V any](maxSize int, size func(V) int) *Map[K, V] {
	return &Map[K, V]{m: map[K]V{}, size: size, maxSize: maxSize}
}

// Get returns the value kept for k, and whether there is one.
func (c *Map[K, V]) Get(k K) (V, bool) {
	if c == nil {
		var zero V
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// Put keeps v for k; when k is new and the Map holds its bound, or v would
// pass the bound of sizes, every other entry is dropped first.
func (c *Map[K, V]) Put(k K, v V) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size == nil {
		if _, ok := c.m[k]; !ok && len(c.m) >= max(c.max, 1) {
			clear(c.m)
		}
		c.m[k] = v
		return
	}
	n := c.size(v)
	if n > c.maxSize {
		return
	}
	if old, ok := c.m[k]; ok {
		delete(c.m, k)
		c.total -= c.size(old)
	}
	if c.total+n > c.maxSize {
		clear(c.m)
		c.total = 0
	}
	c.m[k] = v
	c.total += n
}

// Len is how many entries the Map holds.
func (c *Map[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Size is the sum of the sizes of the values a NewSized Map holds; 0 for
// one made by New.
func (c *Map[K, V]) Size() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
