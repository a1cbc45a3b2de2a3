package gitsync

import (
	"crypto"
	"errors"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
)

// Rekey makes the Repo sign with signer, whose public key is key, and take
// the applied tree through filter (Options.Signing.Signer, Signing.Key and
// Applied.Filter), from its next Sync on: the switch of a cluster key
// rollover. The key it replaces still tells this cluster's own commits
// (a proposal it made before the switch, a commit a second reconciler
// signed with it), but no longer vouches for an applied head: the first
// Sync after Rekey reseals it with signer. It must not run during a Sync.
func (r *Repo) Rekey(signer git.Signer, key crypto.PublicKey, filter AppliedFilter) error {
	if signer == nil || key == nil {
		return errors.New("rekey: needs a signer and its public key")
	}
	if r.opts.Signing.Key != nil {
		r.former = append(r.former, r.opts.Signing.Key)
	}
	r.opts.Signing.Signer, r.opts.Signing.Key, r.opts.Applied.Filter = signer, key, filter
	r.applied.key, r.applied.tree = appliedKey{}, plumbing.ZeroHash // made with the old filter
	return nil
}

// signedByKey reports whether c carries a signature by key alone.
func signedByKey(c *object.Commit, key crypto.PublicKey) bool {
	_, err := commitsig.Verify(c, map[string]crypto.PublicKey{"self": key})
	return err == nil
}
