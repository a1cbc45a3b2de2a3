package reconcile

import (
	"io/fs"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

// Cache is what one cluster's passes reuse from one pass to the next, each
// entry keyed by the exact bytes (and, for manifests, the key) it was
// computed from, so that an unchanged repo is not checked again from
// scratch: manifests that parsed and verified (dirmanifest.Cache), the
// secret guard's answers (guard.Cache), the YAML of objects rendered
// before (liqo.Encoder), the cluster.yaml files parsed before
// (layout.ClusterInfoCache) and the signature, CSR and certificate checks
// that succeeded before (handshake.VerifyCache). Every pass still makes every trust
// decision; only the work on identical input is skipped. Keep one per
// cluster for the life of its reconciler; safe for concurrent use.
type Cache struct {
	manifests *dirmanifest.Cache
	guard     *guard.Cache
	encoder   *liqo.Encoder
	// clusters are the cluster.yaml files parsed before, peers' and our own.
	clusters *layout.ClusterInfoCache
	// verified are the nonce signatures, CSRs and certificates that
	// checked before.
	verified *handshake.VerifyCache
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{manifests: dirmanifest.NewCache(), guard: guard.NewCache(), encoder: liqo.NewEncoder(), clusters: layout.NewClusterInfoCache(), verified: handshake.NewVerifyCache()}
}

func (c *Cache) manifestCache() *dirmanifest.Cache {
	if c == nil {
		return nil
	}
	return c.manifests
}

// Guard is the secret guard's answers kept across passes (nil for a nil
// Cache): the runner hands it to gitsync, whose check of the commit then
// finds what the pass's isolate inspected.
func (c *Cache) Guard() *guard.Cache {
	if c == nil {
		return nil
	}
	return c.guard
}

// verifier is the cache of successful signature, CSR and certificate
// checks (nil for a nil Cache: every check is made).
func (c *Cache) verifier() *handshake.VerifyCache {
	if c == nil {
		return nil
	}
	return c.verified
}

// readClusterInfo is layout.ReadClusterInfo, its parse answered from the
// cache when the same bytes were accepted before.
func (c *Cache) readClusterInfo(tree fs.FS, id string) (*layout.ClusterInfo, error) {
	if c == nil {
		return layout.ReadClusterInfo(tree, id)
	}
	return c.clusters.Read(tree, id)
}

// encode is liqo.Encode, through the cache's Encoder when there is one.
func (c *Cache) encode(obj any) ([]byte, error) {
	if c == nil {
		return liqo.Encode(obj)
	}
	return c.encoder.Encode(obj)
}
