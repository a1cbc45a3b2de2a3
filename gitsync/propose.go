package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// Review flows (Options.Review.Branch), after Flux's image-automation-controller:
// the pass still reads the shared branch alone (merged = approved), but its
// commit goes to a push branch that a human reviews and merges. The push
// branch is this cluster's own proposal, so it is force-updated, yet only
// over this cluster's own previous proposal: a commit someone else put there
// is never overwritten.

// ErrForeignCommit is returned (wrapped) by Sync with Options.Review.Branch
// when the push branch holds a commit this cluster did not make and that is
// not merged into the shared branch: replacing or deleting the branch would
// lose it, so nothing is pushed. Merging or deleting the branch settles it.
var ErrForeignCommit = errors.New("push branch holds a commit gitpeer did not make")

// foreignCommitError names the commit that blocks the push branch.
type foreignCommitError struct {
	branch string
	commit *object.Commit
}

func (e *foreignCommitError) Error() string {
	return fmt.Sprintf("branch %s has commit %s by %s <%s> that gitpeer did not make; merge or delete it, then re-run",
		e.branch, e.commit.Hash.String()[:12], e.commit.Author.Name, e.commit.Author.Email)
}

func (e *foreignCommitError) Unwrap() error { return ErrForeignCommit }

// checkPush validates Options.Review.Branch: a valid branch name other than the
// shared and the applied branch, with a Signing.Signer and its public key
// (Signing.Key), by which Sync recognises its own previous proposals.
func checkPush(opts Options) error {
	if opts.Review.Branch == "" {
		return nil
	}
	if err := plumbing.NewBranchReferenceName(opts.Review.Branch).Validate(); err != nil {
		return fmt.Errorf("open: push branch %q: %w", opts.Review.Branch, err)
	}
	switch {
	case opts.Review.Branch == opts.Branch:
		return fmt.Errorf("open: push branch %q is the shared branch", opts.Review.Branch)
	case opts.Review.Branch == opts.Applied.Branch:
		return fmt.Errorf("open: push branch %q is the applied branch", opts.Review.Branch)
	case opts.Signing.Signer == nil || opts.Signing.Key == nil:
		return errors.New("open: Review.Branch needs a Signing.Signer and its public key (Signing.Key) to recognise its own proposals")
	}
	return nil
}

// pushRef is the push branch's name, locally and on the remote.
func (r *Repo) pushRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.opts.Review.Branch)
}

// pushTracking is the remote-tracking ref of the push branch, as of the
// last fetch; absent when the remote has no push branch.
func (r *Repo) pushTracking() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", r.opts.Review.Branch)
}

// propose is publish for Options.Review.Branch. The pass runs on the shared
// branch tip T, which is never pushed to; the push branch becomes T plus
// the pass's commit, or is deleted when the pass changes nothing. It
// returns T.
func (r *Repo) propose(ctx context.Context, pass TreePassFunc) (Result, plumbing.Hash, error) {
	res := Result{PushBranch: r.opts.Review.Branch}
	started := r.opts.Clock.Now()
	for {
		attempt := r.opts.Clock.Now()
		tip, err := r.refresh(ctx)
		if err != nil {
			return res, plumbing.ZeroHash, err
		}
		cur, own, err := r.currentProposal(tip)
		if err != nil {
			return res, plumbing.ZeroHash, err
		}
		if r.pending, err = r.pendingTree(cur, own); err != nil {
			return res, plumbing.ZeroHash, err
		}
		ch, p, err := r.runPass(ctx, pass, tip)
		r.pending = nil
		if err == nil && r.opts.Review.Paths != nil {
			var pushed plumbing.Hash
			pushed, p, err = r.pushUnreviewed(ctx, ch, tip, &res)
			if err != nil && isRejected(err) {
				// main moved since the fetch: run the pass again on it,
				// as publish would on its own commits.
				r.rollback(tip)
				c := Contention{Attempt: res.Attempts, Landed: 1, Window: r.opts.Clock.Since(attempt)}
				if err := r.waitRetry(ctx, c, started, started, err); err != nil {
					return res, plumbing.ZeroHash, err
				}
				continue
			}
			if !pushed.IsZero() {
				// The proposal goes on the commit main now holds.
				tip = pushed
			}
		}
		var commit plumbing.Hash
		if err == nil {
			commit, err = r.commitPlan(p, tip, true)
		}
		// The shared branch is only read (beyond what pushUnreviewed
		// pushed): the clone goes back to its tip whatever the pass made.
		r.rollback(tip)
		if err != nil {
			return res, plumbing.ZeroHash, err
		}

		var spec config.RefSpec
		switch {
		case commit.IsZero() && cur.IsZero():
			return res, tip, nil // nothing proposed, nothing to withdraw
		case commit.IsZero():
			spec = config.RefSpec(":" + r.pushRef())
		case own && r.sameProposal(cur, commit):
			// The open proposal already holds this change on this tip:
			// leave it (and its review) alone.
			res.Proposed, res.Message, res.Files = cur.String(), p.message, p.files
			return res, tip, nil
		default:
			if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.pushRef(), commit)); err != nil {
				return res, plumbing.ZeroHash, fmt.Errorf("propose on %s: %w", r.pushRef(), err)
			}
			spec = config.RefSpec(r.pushRef() + ":" + r.pushRef())
			if !cur.IsZero() {
				spec = "+" + spec
			}
		}

		res.Attempts++
		err = r.pushLeased(ctx, spec, cur)
		if err == nil {
			if commit.IsZero() {
				res.Withdrawn = true
			} else {
				res.Proposed, res.Message, res.Files = commit.String(), p.message, p.files
			}
			return res, tip, nil
		}
		if !isRejected(err) && !strings.Contains(err.Error(), "required to be") {
			return res, plumbing.ZeroHash, fmt.Errorf("push %s to %s: %w", r.pushRef(), r.opts.URL, r.explain(err))
		}
		// Someone moved the push branch since the fetch: look again, and
		// refuse if what they pushed is not ours.
		// One writer (a human, or a replica) moved it: not a burst.
		c := Contention{Attempt: res.Attempts, Landed: 1, Window: r.opts.Clock.Since(attempt)}
		if err := r.waitRetry(ctx, c, started, started, err); err != nil {
			return res, plumbing.ZeroHash, err
		}
	}
}

// pushUnreviewed pushes to the shared branch the part of ch that
// Options.Review.Paths says needs no review, as one signed commit on tip, and
// returns that commit (zero when that part changes nothing) and the plan
// of the part that does, on the tip the branch then has. A push the host
// rejects because the branch moved is returned as it is (isRejected).
func (r *Repo) pushUnreviewed(ctx context.Context, ch *Change, tip plumbing.Hash, res *Result) (plumbing.Hash, *plan, error) {
	direct, reviewed := splitChange(ch, r.opts.Review.Paths)
	dp, err := r.diffTree(direct, tip)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	commit, err := r.commitPlan(dp, tip, false)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if !commit.IsZero() {
		res.Attempts++
		if err := r.pushSealed(ctx, tip, commit); err != nil {
			if isRejected(err) {
				return plumbing.ZeroHash, nil, err
			}
			return plumbing.ZeroHash, nil, fmt.Errorf("push %s to %s: %w", r.opts.Branch, r.opts.URL, r.explain(err))
		}
		r.setHead(commit)
		res.Commit, res.Message, res.CommitFiles = commit.String(), dp.message, dp.files
		tip = commit
	}
	p, err := r.diffTree(reviewed, tip)
	return commit, p, err
}

// splitChange divides ch by reviewed: direct writes and deletes the paths
// reviewed rejects, the other the rest; both keep ch's message and owned
// paths.
func splitChange(ch *Change, reviewed func(string) bool) (direct, rest *Change) {
	direct = &Change{Writes: map[string][]byte{}, Message: ch.Message, Owns: ch.Owns}
	rest = &Change{Writes: map[string][]byte{}, Message: ch.Message, Owns: ch.Owns}
	for name, data := range ch.Writes {
		if reviewed(name) {
			rest.Writes[name] = data
		} else {
			direct.Writes[name] = data
		}
	}
	for _, name := range ch.Deletes {
		if reviewed(name) {
			rest.Deletes = append(rest.Deletes, name)
		} else {
			direct.Deletes = append(direct.Deletes, name)
		}
	}
	return direct, rest
}

// Pending is the tree of this cluster's own proposal, the head of the push
// branch as fetched, while a pass of Sync or SyncTree runs with
// Options.Review.Branch and that head is a proposal this cluster made on a
// commit of the shared branch (not merged yet); nil otherwise, and outside
// a pass. It is for the pass alone (it is called from the pass function):
// what the pass decides still comes from the shared branch (merged is
// approved), but what it made before and would only make anew with other
// bytes (a certificate it signed) it may take from here, so that the same
// tip and the same inputs give the same proposal and its review stands.
func (r *Repo) Pending() fs.FS {
	if r.pending == nil {
		return nil
	}
	return r.pending
}

// pendingTree is the tree of cur when it is this cluster's own unmerged
// proposal (own), else nil.
func (r *Repo) pendingTree(cur plumbing.Hash, own bool) (*TreeFS, error) {
	if !own || cur.IsZero() {
		return nil, nil
	}
	t, err := gitobj.NewTreeFS(r.repo.Storer, cur, r.decoded)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.pushRef(), err)
	}
	return t, nil
}

// pushLeased pushes spec only if the remote push branch is still cur (absent
// when cur is zero), so that a commit pushed there since the fetch is never
// overwritten. An absent branch needs no lease: the unforced push of a
// commit on the shared branch tip fails if a branch appeared meanwhile.
func (r *Repo) pushLeased(ctx context.Context, spec config.RefSpec, cur plumbing.Hash) error {
	var said remoteLines
	opts := r.pushOptions(&said, spec)
	if !cur.IsZero() {
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(cur.String() + ":" + r.pushRef().String())}
	}
	return r.runPush(ctx, opts, &said)
}

// currentProposal reads the push branch as last fetched and decides whether
// Sync may replace it: it may when the branch is absent (zero hash), when
// its head is merged into tip (reachable from it), or when its head is this
// cluster's own proposal: a commit signed with Signing.Key whose one parent
// is merged into tip, or that has none while tip is zero (own). Anything else is someone's work: the error
// wraps ErrForeignCommit and names the first commit gitpeer did not make.
func (r *Repo) currentProposal(tip plumbing.Hash) (cur plumbing.Hash, own bool, err error) {
	ref, err := r.repo.Reference(r.pushTracking(), true)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		return plumbing.ZeroHash, false, nil
	case err != nil:
		return plumbing.ZeroHash, false, fmt.Errorf("read %s: %w", r.pushRef(), err)
	}
	cur = ref.Hash()
	head, err := r.repo.CommitObject(cur)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read %s at %s: %w", r.pushRef(), cur, err)
	}
	var tipCommit *object.Commit
	if !tip.IsZero() {
		if tipCommit, err = r.repo.CommitObject(tip); err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("read %s at %s: %w", r.opts.Branch, tip, err)
		}
	}
	merged := func(c *object.Commit) bool {
		if tipCommit == nil {
			return false
		}
		ok, err := c.IsAncestor(tipCommit)
		return err == nil && ok
	}
	if merged(head) {
		return cur, false, nil
	}
	// Walk down own commits to the first that is someone else's (a human
	// commit under a rebased proposal is theirs too), or to the target.
	c := head
	if tipCommit == nil && head.NumParents() == 0 && r.signedBySelf(head) {
		return cur, true, nil // the proposal of a branch's first commit
	}
	for range 64 {
		if !r.signedBySelf(c) || c.NumParents() != 1 {
			break
		}
		parent, err := c.Parent(0)
		if err != nil {
			break
		}
		if merged(parent) {
			if c == head {
				return cur, true, nil
			}
			break
		}
		c = parent
	}
	return plumbing.ZeroHash, false, fmt.Errorf("propose on %s: %w", r.opts.Review.Branch, &foreignCommitError{branch: r.opts.Review.Branch, commit: c})
}

// signedBySelf reports whether c carries a signature by Signing.Key, or by
// a key it replaced (Rekey).
func (r *Repo) signedBySelf(c *object.Commit) bool {
	if signedByKey(c, r.opts.Signing.Key) {
		return true
	}
	for _, k := range r.former {
		if signedByKey(c, k) {
			return true
		}
	}
	return false
}

// sameProposal reports whether the proposals a and b make the same change
// on the same parent: a re-run on an unchanged tip that would only change
// the commit's date and, since the proposal is not merged, re-sign each
// manifest.yaml with a higher sequence over the very same files.
func (r *Repo) sameProposal(a, b plumbing.Hash) bool {
	ca, err := r.repo.CommitObject(a)
	if err != nil {
		return false
	}
	cb, err := r.repo.CommitObject(b)
	if err != nil {
		return false
	}
	if len(ca.ParentHashes) != 1 || len(cb.ParentHashes) != 1 || ca.ParentHashes[0] != cb.ParentHashes[0] {
		return false
	}
	// A proposal names the seal in force when it was made: one naming
	// another than the cluster's current seal would, once merged, vouch
	// for that seal (verify's StaleSeal).
	if !slices.Equal(trailer.Values(ca.Message, trailer.Applied), trailer.Values(cb.Message, trailer.Applied)) {
		return false
	}
	if ca.TreeHash == cb.TreeHash {
		return true
	}
	ta, err := ca.Tree()
	if err != nil {
		return false
	}
	tb, err := cb.Tree()
	if err != nil {
		return false
	}
	// Every other file being the same, a manifest.yaml only lists their
	// hashes: it differs in its sequence and signature, and in the hash of
	// a file that differs in its dates alone (status.yaml, a slice answer's
	// conditions). A file added or deleted (or replaced by a directory, or
	// the other way round) is another change.
	err = gitobj.Diff(gitobj.StoreTrees(r.repo.Storer), ca.TreeHash, cb.TreeHash, func(name string, from, to *object.TreeEntry) error {
		isFile := func(e *object.TreeEntry) bool { return e != nil && e.Mode != filemode.Dir }
		switch {
		case !isFile(from) && !isFile(to): // directories: what differs under them comes next
			return nil
		case !isFile(from) || !isFile(to):
			return errDiffers
		case path.Base(name) == dirmanifest.FileName:
			return nil
		case strings.HasSuffix(name, ".yaml") && sameUndated(ta, tb, name):
			return nil
		}
		return errDiffers
	})
	return err == nil
}

// errDiffers stops sameProposal's walk at the first change that makes
// two proposals differ.
var errDiffers = errors.New("the proposals differ")

// sameUndated reports whether the YAML file holds the same document in both
// trees once every lastTransitionTime is dropped: a pass on an unmerged
// proposal dates its conditions anew (a peering's in status.yaml, a slice
// answer's), since the target branch has not seen them yet.
func sameUndated(ta, tb *object.Tree, file string) bool {
	var docs [2]any
	for i, t := range []*object.Tree{ta, tb} {
		f, err := t.File(file)
		if err != nil {
			return false
		}
		data, err := f.Contents()
		if err != nil {
			return false
		}
		if err := yaml.Unmarshal([]byte(data), &docs[i]); err != nil {
			return false
		}
		docs[i] = undated(docs[i])
	}
	return reflect.DeepEqual(docs[0], docs[1])
}

// undated is v without any lastTransitionTime key, at any depth.
func undated(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "lastTransitionTime")
		for k, e := range v {
			v[k] = undated(e)
		}
	case []any:
		for i, e := range v {
			v[i] = undated(e)
		}
	}
	return v
}
