package gitsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/gitobj"
	"github.com/gitpeer/gitpeer/trailer"
)

// The applied branch (docs/design.md, trust point 3) is the ref this cluster's Flux
// applies from. Only this cluster writes it, so it is the one ref gitsync
// force-updates: it must follow this cluster's view wherever someone else
// moved it (back to an old commit, say). The shared branch is never forced.

// checkApplied validates the applied-branch options; they are all unset or
// all set (ClusterID and Signer included).
func checkApplied(opts Options) error {
	if opts.AppliedBranch == "" {
		if opts.AppliedScope != "" {
			return errors.New("open: AppliedScope is set without AppliedBranch")
		}
		return nil
	}
	if err := plumbing.NewBranchReferenceName(opts.AppliedBranch).Validate(); err != nil {
		return fmt.Errorf("open: applied branch %q: %w", opts.AppliedBranch, err)
	}
	if opts.AppliedBranch == opts.Branch {
		return fmt.Errorf("open: applied branch %q is the shared branch", opts.AppliedBranch)
	}
	if opts.AppliedScope == "" {
		return errors.New("open: AppliedBranch needs AppliedScope")
	}
	if err := checkPath(opts.AppliedScope); err != nil {
		return fmt.Errorf("open: applied scope: %w", err)
	}
	if opts.ClusterID == "" || strings.ContainsFunc(opts.ClusterID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("open: AppliedBranch needs a ClusterID without spaces or control characters, got %q", opts.ClusterID)
	}
	if opts.Signer == nil {
		return errors.New("open: AppliedBranch needs a Signer: the applied branch must point at signed commits")
	}
	switch opts.SignatureFormat {
	case "", commitsig.FormatSSH, commitsig.FormatOpenPGP:
	default:
		return fmt.Errorf("open: unknown SignatureFormat %q", opts.SignatureFormat)
	}
	return nil
}

// appliedRef is the applied branch's name, locally and on the remote.
func (r *Repo) appliedRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.opts.AppliedBranch)
}

// appliedTracking is the remote-tracking ref of the applied branch, as of the
// last fetch; absent when the remote has no applied branch.
func (r *Repo) appliedTracking() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", r.opts.AppliedBranch)
}

// updateApplied points the remote applied branch at a signed commit whose
// tree is the vouched tree of tip (appliedTree), tip being the shared
// branch tip after the Sync. It records the outcome in res.
func (r *Repo) updateApplied(ctx context.Context, tip plumbing.Hash, res *Result) error {
	if tip.IsZero() {
		return nil // no shared branch yet: nothing to vouch for
	}
	ref := r.appliedRef()
	tree, held, err := r.appliedTree(tip)
	if err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if held != "" {
		res.AppliedHeld = held
		return nil
	}
	// The objects to send are those the new head's tree adds to the
	// remote's current head's, vouched trees of nearby tips (a handful of
	// files), not those it adds to tip's whole tree: that diff reads most
	// of the repo's trees (100 ms at 14,600 files). The remote has every
	// object of its head, and tip, the new head's parent.
	base := tip
	cur, err := r.repo.Reference(r.appliedTracking(), true)
	switch {
	case err == nil:
		if r.holds(cur.Hash(), tree) {
			res.Applied = cur.Hash().String()
			return nil
		}
		if _, err := gitobj.TreeHash(r.repo.Storer, cur.Hash()); err == nil {
			base = cur.Hash()
		}
	case !errors.Is(err, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("update %s: %w", ref, err)
	}
	target, err := r.writeCommit(tree, tip, sealMessage(r.opts.ClusterID, r.opts.AppliedScope))
	if err != nil {
		return fmt.Errorf("update %s: seal: %w", ref, err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(ref, target)); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if err := r.pushNarrow(ctx, r.opts.AppliedBranch, base, target, true); err != nil {
		return fmt.Errorf("update %s on %s: %w", ref, r.opts.URL, r.explain(err))
	}
	res.Applied, res.Sealed = target.String(), true
	return nil
}

// holds reports whether commit h, the applied branch's head, already
// vouches for tree: it is a commit of exactly that tree, signed by this
// cluster (signedByUs). Its parent is not compared: a head computed from
// an older tip of the shared branch with the same result stays, so that a
// settled repo stays still. Anything else (a commit of another tree, one
// signed by another key or in another format, a ref pointed at a tree) is
// replaced rather than left to fail every Sync.
func (r *Repo) holds(h, tree plumbing.Hash) bool {
	t, err := gitobj.TreeHash(r.repo.Storer, h)
	if err != nil || t != tree {
		return false
	}
	return r.signedByUs(h)
}

// signedByUs reports whether commit h carries this cluster's signature, in
// SignatureFormat when that is set, when AppliedKey is known: a writer who
// points the applied branch at an unsigned commit with the same tree, or
// at one signed by another key, would otherwise stall this cluster's
// engine until the content changes; and after a switch of formats the
// engine checks only the new one.
func (r *Repo) signedByUs(h plumbing.Hash) bool {
	if r.opts.AppliedKey == nil {
		return true
	}
	c, err := r.repo.CommitObject(h)
	if err != nil {
		return false
	}
	if f := r.opts.SignatureFormat; f != "" && commitsig.FormatOf(c.PGPSignature) != f {
		return false
	}
	return signedByKey(c, r.opts.AppliedKey)
}

// sealMessage is the message of a seal commit of cluster for scope: the
// commit on the applied branch that vouches for scope as computed on the
// shared branch tip that is its parent.
func sealMessage(cluster, scope string) string {
	return trailer.Message(cluster, "seal "+scope, "seal")
}

type scopeEntry struct {
	Hash plumbing.Hash
	Mode filemode.FileMode
}

// scopeEntry returns the tree entry at AppliedScope in commit h, the zero
// value when there is none.
func (r *Repo) scopeEntry(h plumbing.Hash) (scopeEntry, error) {
	tree, err := gitobj.Tree(r.repo.Storer, h)
	if err != nil {
		return scopeEntry{}, err
	}
	e, err := tree.FindEntry(r.opts.AppliedScope)
	switch {
	case err == nil:
		return scopeEntry{e.Hash, e.Mode}, nil
	case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return scopeEntry{}, nil
	default:
		return scopeEntry{}, fmt.Errorf("read %s in %s: %w", r.opts.AppliedScope, h, err)
	}
}
