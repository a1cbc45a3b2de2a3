package runner

import (
	"fmt"

	"github.com/gitpeer/gitpeer/backend"
	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/layout"
)

// Signed returns opts with what every reconciler of b's cluster commits
// with: its author, SSH signatures with the cluster key (so Flux's
// GitRepository.spec.verify and `git log --show-signature` can check them),
// and the applied branch gitpeer/applied/<id> vouching for clusters/<id>/.
// The cluster key must be Ed25519 (Liqo's default); others are refused,
// since SSH commit signatures are checked for Ed25519 keys only.
func Signed(opts gitsync.Options, b backend.Backend) (gitsync.Options, error) {
	id := b.ClusterID()
	signer, err := commitsig.NewSigner(b.Signer())
	if err != nil {
		return opts, fmt.Errorf("cluster %s: commit signing: %w", id, err)
	}
	if opts.Author.Name == "" {
		opts.Author = gitsync.Signature{Name: "gitpeer (" + id + ")", Email: id + "@gitpeer.invalid"}
	}
	opts.Signer = signer
	opts.ClusterID = id
	opts.AppliedBranch = layout.AppliedBranch(id)
	opts.AppliedScope = layout.ClusterPath(id)
	opts.AppliedKey = b.Signer().Public()
	return opts, nil
}
