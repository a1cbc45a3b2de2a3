package runner

import (
	"context"
	"crypto"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/reconcile"
)

// Compute is what a pass computes on in.Tree, the one function Runner.Pass
// and gitpeer plan share so that plan shows what the pass would commit: it
// adds the cluster's OpenPGP key to in when format is openpgp (the pass
// publishes it), runs reconcile.Pass and diffs its output against the tree.
// Errors are reconcile.Pass's and reconcile.Diff's, and the backend's
// failure to give the OpenPGP key.
func Compute(ctx context.Context, in reconcile.Input, format commitsig.Format) (*reconcile.Output, *reconcile.Plan, error) {
	pgpKey, err := OpenPGPKey(in.Backend, format)
	if err != nil {
		return nil, nil, err
	}
	in.OpenPGPKey = pgpKey
	out, err := reconcile.Pass(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	plan, err := reconcile.Diff(in.Tree, in.Backend.ClusterID(), out)
	if err != nil {
		return nil, nil, err
	}
	return out, plan, nil
}

// StagedKey is the signer of the key rotate-key staged in b, which a pass
// announces until it switches to it; nil when none is staged. It reads and
// never promotes: for a read-only pass (plan).
func StagedKey(ctx context.Context, b backend.Backend) (crypto.Signer, error) {
	next, err := b.Next(ctx)
	if err != nil {
		return nil, err
	}
	return staged(next), nil
}
