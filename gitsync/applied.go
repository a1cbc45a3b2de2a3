package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
)

// The applied branch (docs/design.md, trust point 3) is the ref this cluster's Flux
// applies from. Only this cluster writes it, so it is the one ref gitsync
// force-updates: it must follow this cluster's view wherever someone else
// moved it (back to an old commit, say). The shared branch is never forced.

// SealKeeper keeps a cluster's newest seal where no writer of the repo
// reaches it: the cluster's backend (runner records it in the pin store).
type SealKeeper interface {
	// LastSeal is the hex hash of the newest seal recorded, "" for none.
	LastSeal(ctx context.Context) (string, error)
	// RecordSeal records commit (hex) as the newest seal. Sync calls it
	// before pushing the seal: a seal that is recorded and then lost in
	// the push is pushed by the next Sync's restore.
	RecordSeal(ctx context.Context, commit string) error
}

// checkApplied validates the applied-branch options; they are all unset or
// all set (Applied.ClusterID and Signing.Signer included).
func checkApplied(opts Options) error {
	if opts.Applied.Branch == "" {
		if opts.Applied.Scope != "" {
			return errors.New("open: Applied.Scope is set without Applied.Branch")
		}
		return nil
	}
	if err := plumbing.NewBranchReferenceName(opts.Applied.Branch).Validate(); err != nil {
		return fmt.Errorf("open: applied branch %q: %w", opts.Applied.Branch, err)
	}
	if opts.Applied.Branch == opts.Branch {
		return fmt.Errorf("open: applied branch %q is the shared branch", opts.Applied.Branch)
	}
	if opts.Applied.Scope == "" {
		return errors.New("open: Applied.Branch needs Applied.Scope")
	}
	if err := checkPath(opts.Applied.Scope); err != nil {
		return fmt.Errorf("open: applied scope: %w", err)
	}
	if opts.Applied.ClusterID == "" || strings.ContainsFunc(opts.Applied.ClusterID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("open: Applied.Branch needs an Applied.ClusterID without spaces or control characters, got %q", opts.Applied.ClusterID)
	}
	if opts.Signing.Signer == nil {
		return errors.New("open: Applied.Branch needs a Signing.Signer: the applied branch must point at signed commits")
	}
	switch opts.Signing.Format {
	case "", commitsig.FormatSSH, commitsig.FormatOpenPGP:
	default:
		return fmt.Errorf("open: unknown Signing.Format %q", opts.Signing.Format)
	}
	return nil
}

// appliedRef is the applied branch's name, locally and on the remote.
func (r *Repo) appliedRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.opts.Applied.Branch)
}

// appliedTracking is the remote-tracking ref of the applied branch, as of the
// last fetch; absent when the remote has no applied branch.
func (r *Repo) appliedTracking() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", r.opts.Applied.Branch)
}

// sealPlan is what the applied branch holds after a Sync whose shared
// branch tip is tip: head, a seal this Sync made (fresh: still to record
// and push, sending what it adds to base) or the branch's current head;
// or, when held is not "", nothing new (Result.AppliedHeld).
type sealPlan struct {
	tip, head, base plumbing.Hash
	fresh           bool
	// pushed: head is a seal this Sync pushed with tip (pushSealed).
	pushed bool
	held   string
}

// planSeal plans the applied branch for the shared branch tip (planSeal's
// caller has run the pass: r.seal.files), making the seal commit when one
// is needed, and keeps the plan for updateApplied, so that a proposal can
// name the very seal its Sync pushes (trailer.Applied). tip must not be
// zero.
func (r *Repo) planSeal(tip plumbing.Hash) (*sealPlan, error) {
	if p := r.seal.plan; p != nil && p.tip == tip {
		return p, nil
	}
	ref := r.appliedRef()
	var (
		tree plumbing.Hash
		err  error
	)
	p := &sealPlan{tip: tip}
	if r.seal.files != nil {
		tree, p.held, err = r.sealTree(r.seal.files, tip)
	} else {
		tree, p.held, err = r.appliedTree(tip)
	}
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", ref, err)
	}
	cur, err := r.repo.Reference(r.appliedTracking(), true)
	if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("update %s: %w", ref, err)
	}
	if cur != nil {
		p.head = cur.Hash()
	}
	if p.held != "" {
		r.seal.plan = p
		return p, nil
	}
	// The objects to send are those the new head's tree adds to the
	// remote's current head's, vouched trees of nearby tips (a handful of
	// files), not those it adds to tip's whole tree: that diff reads most
	// of the repo's trees (100 ms at 14,600 files). The remote has every
	// object of its head, and tip, the new head's parent.
	p.base = tip
	if cur != nil {
		if r.holds(cur.Hash(), tree) {
			r.seal.plan = p
			return p, nil
		}
		if _, err := gitobj.TreeHash(r.repo.Storer, cur.Hash()); err == nil {
			p.base = cur.Hash()
		}
	}
	if p.head, err = r.writeCommit(tree, tip, sealMessage(r.opts.Applied.ClusterID, r.opts.Applied.Scope)); err != nil {
		return nil, fmt.Errorf("update %s: seal: %w", ref, err)
	}
	p.fresh = true
	r.seal.plan = p
	return p, nil
}

// updateApplied points the remote applied branch at a signed commit whose
// tree is the vouched tree of tip (appliedTree), tip being the shared
// branch tip after the Sync, as planSeal planned it. It records the
// outcome in res.
func (r *Repo) updateApplied(ctx context.Context, tip plumbing.Hash, res *Result) error {
	if tip.IsZero() {
		return nil // no shared branch yet: nothing to vouch for
	}
	p, err := r.planSeal(tip)
	if err != nil {
		return err
	}
	ref := r.appliedRef()
	switch {
	case p.held != "":
		res.AppliedHeld = p.held
		return nil
	case p.pushed:
		res.Applied, res.Sealed = p.head.String(), true
		return nil
	case !p.fresh:
		res.Applied = p.head.String()
		return r.recordSeal(ctx, p.head)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(ref, p.head)); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if err := r.recordSeal(ctx, p.head); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if err := r.pushNarrow(ctx, r.opts.Applied.Branch, p.base, p.head, true); err != nil {
		return fmt.Errorf("update %s on %s: %w", ref, r.opts.URL, r.explain(err))
	}
	res.Applied, res.Sealed = p.head.String(), true
	return nil
}

// appliedNamed is the seal a proposal this Sync makes on tip names
// (trailer.Applied): the seal this Sync leaves on the applied branch
// (planSeal), which stays in force until the cluster's first pass after
// the merge seals it. Zero: none to name (no applied branch, no tip, or
// the branch held). A commit to the shared branch names none: its own
// seal follows it in the same Sync, so a seal older than it is stale.
func (r *Repo) appliedNamed(tip plumbing.Hash) (plumbing.Hash, error) {
	if r.opts.Applied.Branch == "" || tip.IsZero() {
		return plumbing.ZeroHash, nil
	}
	p, err := r.planSeal(tip)
	if err != nil || p.held != "" {
		return plumbing.ZeroHash, err
	}
	return p.head, nil
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
// Signing.Format when that is set, when Signing.Key is known: a writer who
// points the applied branch at an unsigned commit with the same tree, or
// at one signed by another key, would otherwise stall this cluster's
// engine until the content changes; and after a switch of formats the
// engine checks only the new one.
func (r *Repo) signedByUs(h plumbing.Hash) bool {
	if r.opts.Signing.Key == nil {
		return true
	}
	c, err := r.repo.CommitObject(h)
	if err != nil {
		return false
	}
	if f := r.opts.Signing.Format; f != "" && commitsig.FormatOf(c.PGPSignature) != f {
		return false
	}
	return signedByKey(c, r.opts.Signing.Key)
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

// scopeEntry returns the tree entry at Applied.Scope in commit h, the zero
// value when there is none.
func (r *Repo) scopeEntry(h plumbing.Hash) (scopeEntry, error) {
	tree, err := gitobj.Tree(r.repo.Storer, h)
	if err != nil {
		return scopeEntry{}, err
	}
	e, err := tree.FindEntry(r.opts.Applied.Scope)
	switch {
	case err == nil:
		return scopeEntry{e.Hash, e.Mode}, nil
	case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return scopeEntry{}, nil
	default:
		return scopeEntry{}, fmt.Errorf("read %s in %s: %w", r.opts.Applied.Scope, h, err)
	}
}

// recordSeal records h as the newest seal (Options.Applied.Seals) unless it is the
// one recorded already (as restoreApplied read it, or this Sync recorded).
func (r *Repo) recordSeal(ctx context.Context, h plumbing.Hash) error {
	if r.opts.Applied.Seals == nil || r.seal.last == h.String() {
		return nil
	}
	if err := r.opts.Applied.Seals.RecordSeal(ctx, h.String()); err != nil {
		return fmt.Errorf("record seal %s: %w", short(h), err)
	}
	r.seal.last = h.String()
	return nil
}

// restoreApplied points the remote applied branch back at the newest seal
// Options.Applied.Seals recorded, when the last fetch found it anywhere else (a
// writer moved it, to an older seal say: validly signed, and stale). It
// runs before a Sync's pass, so that a pass that then fails (an edit that
// stalls it, a spec that does not load) leaves the cluster on its newest
// seal. A seal this clone does not hold whole, that the cluster's current
// key did not sign (a key switched since), or whose parent the shared
// branch tip does not hold (a seal recorded for a push that then failed,
// or a process killed in between: pushSealed) is left to the pass, which
// seals anew; Result.AppliedRestored names what was replaced.
func (r *Repo) restoreApplied(ctx context.Context, tip plumbing.Hash) error {
	if r.opts.Applied.Branch == "" || r.opts.Applied.Seals == nil {
		return nil
	}
	last, err := r.opts.Applied.Seals.LastSeal(ctx)
	if err != nil {
		return fmt.Errorf("restore %s: last seal: %w", r.appliedRef(), err)
	}
	r.seal.last = last
	if last == "" {
		return nil
	}
	seal := plumbing.NewHash(last)
	r.seal.fs = r.sealFS(seal)
	base := plumbing.ZeroHash
	cur, err := r.repo.Reference(r.appliedTracking(), true)
	switch {
	case err == nil:
		if cur.Hash() == seal {
			return nil
		}
		if _, err := gitobj.TreeHash(r.repo.Storer, cur.Hash()); err == nil {
			base = cur.Hash()
		}
	case !errors.Is(err, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("restore %s: %w", r.appliedRef(), err)
	}
	if r.seal.fs == nil || !r.sealOf(seal, tip) {
		return nil
	}
	if err := r.pushNarrow(ctx, r.opts.Applied.Branch, base, seal, true); err != nil {
		return fmt.Errorf("restore %s to seal %s on %s: %w", r.appliedRef(), short(seal), r.opts.URL, r.explain(err))
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.appliedRef(), seal)); err != nil {
		return fmt.Errorf("restore %s: %w", r.appliedRef(), err)
	}
	if cur != nil {
		r.seal.replaced = cur.Hash().String()
	} else {
		r.seal.replaced = "(none)"
	}
	return nil
}

// sealOf reports whether seal's parent is tip or one of its ancestors.
// The walk is not bounded: a bound would leave the seal of a cluster idle
// through many commits to its pass, so a writer who moved its branch back
// and broke the pass would keep it there. It runs only when the branch is
// found off the recorded seal.
func (r *Repo) sealOf(seal, tip plumbing.Hash) bool {
	c, err := r.repo.CommitObject(seal)
	if err != nil || len(c.ParentHashes) != 1 {
		return false
	}
	want := c.ParentHashes[0]
	seen := map[plumbing.Hash]bool{tip: true}
	for queue := []plumbing.Hash{tip}; len(queue) > 0; queue = queue[1:] {
		h := queue[0]
		if h == want {
			return true
		}
		c, err := r.repo.CommitObject(h)
		if err != nil {
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false
}

// sealFS is the tree of seal when this clone holds the commit and the
// cluster's current key signed it; nil otherwise.
func (r *Repo) sealFS(seal plumbing.Hash) *TreeFS {
	if !r.signedByUs(seal) {
		return nil
	}
	t, err := gitobj.NewTreeFS(r.repo.Storer, seal, r.decoded)
	if err != nil {
		return nil
	}
	return t
}

// Sealed is the tree of the newest seal Options.Applied.Seals recorded, while a
// pass of Sync runs and this clone holds that seal signed by the cluster's
// current key; nil otherwise. It is what the cluster applies until the
// pass's seal replaces it: a pass that seals only part of what it computed
// (a change awaiting review) keeps the rest as applied from here.
func (r *Repo) Sealed() fs.FS {
	if r.seal.fs == nil {
		return nil
	}
	return r.seal.fs
}

// Reviewed reports whether the change a pass makes to path (slash-separated,
// from the repo root) waits for a merge: with Options.Review.Branch, every
// path Options.Review.Paths covers (all when it is nil); without, none.
func (r *Repo) Reviewed(path string) bool {
	return r.opts.Review.Branch != "" && (r.opts.Review.Paths == nil || r.opts.Review.Paths(path))
}
