// Package boundedmap is the one cache shape gitpeer's memoizing caches share:
// a map that starts over empty when it holds its bound of entries, so that
// memory stays bounded whatever a repo holds, at the price of recomputing
// after a reset. A pass reads the same objects again and again, so an entry
// lost to a reset is recomputed once and kept again.
package boundedmap

import "sync"

// Map is a map of at most Max entries, safe for concurrent use; the zero
// value is not usable, New makes one. Putting a new key into a full Map
// first empties it. A nil *Map keeps nothing: Get misses, Put does nothing.
type Map[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]V
	max int
}

// New returns an empty Map that holds at most max entries (max < 1 is 1).
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{m: map[K]V{}, max: max}
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

// Put keeps v for k; when k is new and the Map holds its bound, every other
// entry is dropped first.
func (c *Map[K, V]) Put(k K, v V) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= max(c.max, 1) {
		clear(c.m)
	}
	c.m[k] = v
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
