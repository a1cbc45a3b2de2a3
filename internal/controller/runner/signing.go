package runner

import (
	"context"
	"crypto"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
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
	opts.Signing.Signer = signer
	opts.Signing.Format = format
	opts.Applied.ClusterID = id
	opts.Applied.Branch = layout.AppliedBranch(id)
	opts.Applied.Scope = layout.ClusterPath(id)
	opts.Applied.Exclude = []string{layout.InboxDir}
	opts.Signing.Key = b.Signer().Public()
	opts.Applied.Filter = SignedByManifest(id, opts.Signing.Key)
	opts.Applied.Seals = pinnedSeal{b}
	return opts, nil
}

// pinnedSeal keeps a cluster's newest seal in its pin store
// (pins.Store.Seal), beside its other anchors and out of any repo
// writer's reach.
type pinnedSeal struct{ b backend.Backend }

func (p pinnedSeal) LastSeal(ctx context.Context) (string, error) {
	s, err := p.b.LoadPins(ctx)
	if err != nil {
		return "", fmt.Errorf("pins: %w", err)
	}
	return s.Seal, nil
}

func (p pinnedSeal) RecordSeal(ctx context.Context, commit string) error {
	s, err := p.b.LoadPins(ctx)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	s.Seal = commit
	if err := p.b.SavePins(ctx, s); err != nil {
		return fmt.Errorf("save pins: %w", err)
	}
	return nil
}

// rekey makes repo sign with b's cluster key from its next Sync on, as
// Signed set it up for the key b held then: after a rollover promoted the
// staged key (backend.KeyRoller).
func rekey(repo *gitsync.Repo, b backend.Backend) error {
	format := repo.SignatureFormat()
	if format == "" {
		format = commitsig.FormatSSH
	}
	signer, err := commitsig.NewFormatSigner(format, b.Signer())
	if err != nil {
		return fmt.Errorf("cluster %s: commit signing: %w", b.ClusterID(), err)
	}
	pub := b.Signer().Public()
	return repo.Rekey(signer, pub, SignedByManifest(b.ClusterID(), pub))
}

// SignedByManifest is the applied-tree filter of cluster id: it keeps
// clusters/<id>/manifest.yaml and exactly the files that manifest lists
// with their content, once the manifest verifies with key (the cluster's
// own). So the tree the cluster's engine applies holds only what the
// cluster's reconciler computed and signed, whatever else a writer of the
// shared branch left in clusters/<id>/ (with a review branch, the tip of
// main may hold such a file until the proposal removing it is merged).
// A manifest that is missing, malformed or not signed by key is an error
// naming the file: nothing at that tip is vouched for.
func SignedByManifest(id string, key crypto.PublicKey) gitsync.AppliedFilter {
	dir := layout.ClusterPath(id)
	file := path.Join(dir, dirmanifest.FileName)
	return func(tip fs.FS) (func(string) bool, error) {
		data, err := fs.ReadFile(tip, file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		m, err := dirmanifest.Parse(file, data)
		if err != nil {
			return nil, err
		}
		if err := m.Verify(key, id, dir); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return func(name string) bool {
			if name == file {
				return true
			}
			rel, ok := strings.CutPrefix(name, dir+"/")
			if !ok {
				return false
			}
			if _, listed := m.Lookup(rel); !listed {
				return false // not read: a planted file may be large
			}
			data, err := fs.ReadFile(tip, name)
			return err == nil && m.Covers(rel, data)
		}, nil
	}
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
