package gitsync

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/commitsig"
)

// The applied branch (design, "Trust" point 3) is the ref this cluster's Flux
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
// tree at AppliedScope equals tip's, tip being the shared branch tip after
// the Sync (own: this Sync pushed it). It records the outcome in res.
func (r *Repo) updateApplied(ctx context.Context, tip plumbing.Hash, own bool, res *Result) error {
	if tip.IsZero() {
		return nil // no shared branch yet: nothing to vouch for
	}
	target := tip
	if !own {
		cur, err := r.repo.Reference(r.appliedTracking(), true)
		switch {
		case err == nil:
			same, err := r.sameScope(cur.Hash(), tip)
			if err != nil {
				return fmt.Errorf("update %s: %w", r.appliedRef(), err)
			}
			if same && r.signedByUs(cur.Hash()) {
				res.Applied = cur.Hash().String()
				return nil
			}
		case !errors.Is(err, plumbing.ErrReferenceNotFound):
			return fmt.Errorf("update %s: %w", r.appliedRef(), err)
		}
		if target, err = r.seal(tip); err != nil {
			return fmt.Errorf("update %s: %w", r.appliedRef(), err)
		}
	}

	ref := r.appliedRef()
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(ref, target)); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if err := r.pushSpecs(ctx, config.RefSpec("+"+ref+":"+ref)); err != nil {
		return fmt.Errorf("update %s on %s: %w", ref, r.opts.URL, r.explain(err))
	}
	res.Applied, res.Sealed = target.String(), !own
	return nil
}

// signedByUs reports whether commit h carries this cluster's signature, in
// SignatureFormat when that is set, when AppliedKey is known: a writer who
// points the applied branch at an unsigned commit with the same scope, or
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
	_, err = commitsig.Verify(c, map[string]crypto.PublicKey{r.opts.ClusterID: r.opts.AppliedKey})
	return err == nil
}

// sameScope reports whether the applied commit a and the tip b hold the same
// AppliedScope (both without it counts as the same). An a that cannot be
// read as a commit (someone pointed the ref at a tree, say) is not the same:
// it is overwritten rather than left to fail every Sync.
func (r *Repo) sameScope(a, b plumbing.Hash) (bool, error) {
	eb, err := r.scopeEntry(b)
	if err != nil {
		return false, err
	}
	ea, err := r.scopeEntry(a)
	if err != nil {
		return false, nil
	}
	return ea == eb, nil
}

type scopeEntry struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

// scopeEntry returns the tree entry at AppliedScope in commit h, the zero
// value when there is none.
func (r *Repo) scopeEntry(h plumbing.Hash) (scopeEntry, error) {
	c, err := r.repo.CommitObject(h)
	if err != nil {
		return scopeEntry{}, fmt.Errorf("read commit %s: %w", h, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return scopeEntry{}, fmt.Errorf("read tree of %s: %w", h, err)
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

// sealMessage is the message of a seal commit of cluster for scope: the
// commit on the applied branch that vouches for scope as it stands on the
// shared branch when a commit by someone else (a merge by the Git host, say)
// is the tip.
func sealMessage(cluster, scope string) string {
	return fmt.Sprintf("%s: seal %s\n\nGitpeer-Cluster: %s\nGitpeer-Step: seal\n", cluster, scope, cluster)
}

// seal stores a signed commit with tip's tree and tip as its only parent,
// authored like the commits of Sync, and returns its hash. It goes to the
// applied branch only, never to the shared branch.
func (r *Repo) seal(tip plumbing.Hash) (plumbing.Hash, error) {
	tc, err := r.repo.CommitObject(tip)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("seal: read tip %s: %w", tip, err)
	}
	h, err := r.writeCommit(tc.TreeHash, tip, sealMessage(r.opts.ClusterID, r.opts.AppliedScope))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("seal: %w", err)
	}
	return h, nil
}
