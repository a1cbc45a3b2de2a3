package reconcile

import (
	"io/fs"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
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
// that succeeded before (handshake.VerifyCache), and which clusters' trees
// hold no folder for this cluster in their inbox (absentInboxes). Every
// pass still makes every trust decision; only the work on identical input
// is skipped. Keep one per cluster for the life of its reconciler; safe for
// concurrent use.
type Cache struct {
	manifests *dirmanifest.Cache
	guard     *guard.Cache
	encoder   *liqo.Encoder
	// clusters are the cluster.yaml files parsed before, peers' and our own.
	clusters *layout.ClusterInfoCache
	// verified are the nonce signatures, CSRs and certificates that
	// checked before.
	verified *handshake.VerifyCache
	// absentInboxes are the clusters/<cluster> trees, by Git object hash,
	// in which clusters/<cluster>/inbox/<self> was found not to exist: a
	// pass looks for its folder in every cluster's inbox (revocations,
	// withdrawals, Diff's deletes), and at a thousand clusters those
	// lookups were the part of a pass that grew with the whole mesh.
	absentInboxes *boundedmap.Map[absentInbox, struct{}]
}

// absentInbox keys Cache.absentInboxes.
type absentInbox struct {
	self, cluster string
	tree          [20]byte
}

// maxAbsentInboxes bounds Cache.absentInboxes: three entries per cluster
// of a 10,000-cluster repo, past which it starts over empty.
const maxAbsentInboxes = 1 << 15

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{manifests: dirmanifest.NewCache(), guard: guard.NewCache(), encoder: liqo.NewEncoder(), clusters: layout.NewClusterInfoCache(), verified: handshake.NewVerifyCache(),
		absentInboxes: boundedmap.New[absentInbox, struct{}](maxAbsentInboxes)}
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

// inboxAbsent reports whether clusters/<d>/inbox/<self> was found not to
// exist before in the very tree d now holds: d, an entry listed from
// clusters/, carries its tree's Git object hash (layout.ObjectHashed, as
// gitobj.TreeFS's entries do), and a tree with the same hash holds the same
// subtree. False for a nil Cache, an entry without a hash (a checkout on
// disk, a test's map) or a tree not seen before: the caller looks.
func (c *Cache) inboxAbsent(self string, d fs.DirEntry) bool {
	k, ok := absentKey(self, d)
	if c == nil || !ok {
		return false
	}
	_, found := c.absentInboxes.Get(k)
	return found
}

// noteInboxAbsent records that a lookup of clusters/<d>/inbox/<self> in the
// tree d lists found nothing there (fs.ErrNotExist, nothing else).
func (c *Cache) noteInboxAbsent(self string, d fs.DirEntry) {
	if k, ok := absentKey(self, d); c != nil && ok {
		c.absentInboxes.Put(k, struct{}{})
	}
}

func absentKey(self string, d fs.DirEntry) (absentInbox, bool) {
	h, ok := d.(layout.ObjectHashed)
	if !ok {
		return absentInbox{}, false
	}
	return absentInbox{self: self, cluster: d.Name(), tree: h.ObjectHash()}, true
}
