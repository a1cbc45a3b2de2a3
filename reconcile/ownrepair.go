package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// A cluster's own cluster.yaml is what it publishes of itself: its ID, key,
// API server and CA, all of which its backend holds. An edit nobody signed
// (a writer's new apiServer, a key of their own) is not read by any peer,
// which pinned the cluster's signed facts, so the reconciler need not stall
// on it: it publishes the file again from its backend and signs it, as it
// does every other file of its tree that a writer changed.

// mayRepairOwnInfo reports whether the pass republishes its cluster.yaml:
// the file (damaged: it did not parse) is not signed by this cluster, and
// its directory is this cluster's all the same. That is the case when the
// directory's manifest verifies with the cluster's key (a writer edited the
// file alone), or when its pin store records manifests it signed there (a
// writer re-signed the directory with a key of their own). A directory
// another key signed for a cluster that never signed there (a reconciler
// started with another cluster's state, or a new one) is not taken over:
// matchBackend says what is wrong.
func (p *pass) mayRepairOwnInfo(ctx context.Context, damaged error) bool {
	if damaged == nil && p.ownInfoIsOwn(ctx) {
		return false
	}
	if p.pins.Own[layout.ClusterPath(p.self)] > 0 {
		return true
	}
	_, err := p.signedManifest(p.self, p.in.Backend.Signer().Public())
	return err == nil
}

// ownInfoIsOwn reports whether the repo's clusters/<self>/cluster.yaml is
// signed by this cluster: by the key in force, or by the key a rollover
// replaced (whose statement ownInfo turns into the new cluster.yaml).
func (p *pass) ownInfoIsOwn(ctx context.Context) bool {
	if p.clusterInfoSigned(p.self, p.in.Backend.Signer().Public()) == nil {
		return true
	}
	prev, err := p.in.Backend.PreviousKey(ctx)
	return err == nil && p.clusterInfoSigned(p.self, prev.Public()) == nil
}

// republishOwnInfo replaces the cluster's unsigned (or unreadable, damaged)
// cluster.yaml with the backend's, carrying a rotation statement by the
// key a rollover replaced when there is one, so that a peer still pinning
// that key accepts it as it would the original.
func (p *pass) republishOwnInfo(ctx context.Context, damaged error) error {
	own, err := p.in.Backend.ClusterInfo()
	if err != nil {
		return fmt.Errorf("own cluster info: %w", err)
	}
	prev, err := p.in.Backend.PreviousKey(ctx)
	switch {
	case err == nil:
		if err := layout.SignRotation(own, prev); err != nil {
			return fmt.Errorf("own cluster info: rotation statement: %w", err)
		}
	case !errors.Is(err, backend.ErrNoPreviousKey):
		return fmt.Errorf("own cluster info: the key a rollover replaced: %w", err)
	}
	data, err := own.Encode()
	if err != nil {
		return fmt.Errorf("own cluster info: %w", err)
	}
	if damaged != nil {
		p.republished = fmt.Sprintf("it did not read (%v)", damaged)
	} else {
		p.republished = "it was not signed by " + p.self
	}
	p.me, p.rotated = own, data
	return nil
}
