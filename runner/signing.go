package runner

import (
	"fmt"

	"github.com/gitpeer/gitpeer/backend"
	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/layout"
)

// Signed returns opts with what every reconciler of b's cluster commits
// with: its author, signatures with the cluster key in format ("" is SSH:
// Flux's GitRepository.spec.verify checks those; OpenPGP is what Argo CD's
// AppProject sourceIntegrity checks), and the applied branch
// gitpeer/applied/<id> vouching for clusters/<id>/. A Runner on the Repo
// of these options publishes the cluster's OpenPGP key when format is
// OpenPGP. The cluster key must be Ed25519 (Liqo's default); others are
// refused, since commit signatures are made and checked for Ed25519 keys
// only.
func Signed(opts gitsync.Options, b backend.Backend, format commitsig.Format) (gitsync.Options, error) {
	id := b.ClusterID()
	if format == "" {
		format = commitsig.FormatSSH
	}
	signer, err := commitsig.NewFormatSigner(format, b.Signer())
	if err != nil {
		return opts, fmt.Errorf("cluster %s: commit signing: %w", id, err)
	}
	if opts.Author.Name == "" {
		opts.Author = gitsync.Signature{Name: "gitpeer (" + id + ")", Email: id + "@gitpeer.invalid"}
	}
	opts.Signer = signer
	opts.SignatureFormat = format
	opts.ClusterID = id
	opts.AppliedBranch = layout.AppliedBranch(id)
	opts.AppliedScope = layout.ClusterPath(id)
	opts.AppliedKey = b.Signer().Public()
	return opts, nil
}

// OpenPGPKey is what b's cluster publishes as clusters/<id>/openpgp.asc
// when its commits are signed in format (reconcile.Input.OpenPGPKey): its
// armored OpenPGP public key for OpenPGP, else nil.
func OpenPGPKey(b backend.Backend, format commitsig.Format) ([]byte, error) {
	if format != commitsig.FormatOpenPGP {
		return nil, nil
	}
	key, err := commitsig.OpenPGPPublicKey(b.Signer(), commitsig.OpenPGPUserID(b.ClusterID()))
	if err != nil {
		return nil, fmt.Errorf("OpenPGP key: %w", err)
	}
	return key, nil
}
