package reconcile

import (
	"github.com/gitpeer/gitpeer/guard"
	"github.com/gitpeer/gitpeer/manifest"
)

// Cache is what one cluster's passes reuse from one pass to the next, each
// entry keyed by the exact bytes (and, for manifests, the key) it was
// computed from, so that an unchanged repo is not checked again from
// scratch: manifests that parsed and verified (manifest.Cache) and the
// secret guard's answers (guard.Cache). Every pass still makes every trust
// decision; only the work on identical input is skipped. Keep one per
// cluster for the life of its reconciler; safe for concurrent use.
type Cache struct {
	manifests *manifest.Cache
	guard     *guard.Cache
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{manifests: manifest.NewCache(), guard: guard.NewCache()}
}

func (c *Cache) manifestCache() *manifest.Cache {
	if c == nil {
		return nil
	}
	return c.manifests
}

func (c *Cache) guardCache() *guard.Cache {
	if c == nil {
		return nil
	}
	return c.guard
}
