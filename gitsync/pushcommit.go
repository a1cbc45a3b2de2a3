package gitsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// pushCommit pushes commit, whose only parent is old (zero: a root commit),
// to the shared branch, fast-forward only: the host updates the branch
// only if it still points at old (gitobj.PushNarrow: just the objects
// commit adds to old, no walk of the remote's history).
func (r *Repo) pushCommit(ctx context.Context, old, commit plumbing.Hash) error {
	return r.pushNarrow(ctx, r.opts.Branch, old, commit, false)
}

// pushNarrow pushes commit to branch, sending the objects it adds to base
// (a commit the remote has in full: commit's parent, or the branch's
// current head), and points branch's
// remote-tracking ref at it. Without force, the host updates the branch
// only if it still points at base; with force, over whatever it points at
// (the applied branch, which only this cluster writes). A failure carries
// what the host said (remoteError).
func (r *Repo) pushNarrow(ctx context.Context, branch string, base, commit plumbing.Hash, force bool) error {
	return r.pushUpdates(ctx, false, gitobj.Update{Branch: branch, Base: base, Commit: commit, Force: force})
}

// pushUpdates is pushNarrow for several branches in one push, atomic when
// asked (gitobj.ErrAtomicUnsupported, nothing sent, from a host that does
// not offer it): each pushed branch's remote-tracking ref follows.
func (r *Repo) pushUpdates(ctx context.Context, atomic bool, updates ...gitobj.Update) error {
	var said remoteLines
	err := gitobj.PushNarrow(ctx, gitobj.Push{
		URL: r.opts.URL, CABundle: r.caBundle, Auth: r.auth, Store: r.repo.Storer,
		Updates: updates, Atomic: atomic, Progress: &said,
	})
	if err != nil {
		return withRemoteLines(err, &said)
	}
	for _, u := range updates {
		if err := r.trackPushed(u.Branch, u.Commit); err != nil {
			return err
		}
	}
	return nil
}

// pushSealed pushes commit, whose only parent is old, to the shared branch
// (fast-forward only, as pushCommit) together with its seal, in one
// atomic push, when the pass has a fresh seal to push and the host offers
// atomic pushes: the applied branch never lags a commit this cluster
// pushed, so verify never sees the shared branch ahead of the seal (a
// StaleSeal it could not tell from a replay). The seal is recorded first
// (Applied.Seals), as updateApplied does. Otherwise it pushes commit
// alone and updateApplied pushes the seal after it.
func (r *Repo) pushSealed(ctx context.Context, old, commit plumbing.Hash) error {
	if r.opts.Applied.Branch == "" || r.noAtomic {
		return r.pushCommit(ctx, old, commit)
	}
	p, err := r.planSeal(commit)
	if err != nil {
		return err
	}
	if !p.fresh {
		return r.pushCommit(ctx, old, commit)
	}
	if err := r.recordSeal(ctx, p.head); err != nil {
		return fmt.Errorf("update %s: %w", r.appliedRef(), err)
	}
	err = r.pushUpdates(ctx, true,
		gitobj.Update{Branch: r.opts.Branch, Base: old, Commit: commit},
		gitobj.Update{Branch: r.opts.Applied.Branch, Base: p.base, Commit: p.head, Force: true})
	if errors.Is(err, gitobj.ErrAtomicUnsupported) {
		r.noAtomic = true
		return r.pushCommit(ctx, old, commit)
	}
	if err != nil {
		return err
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.appliedRef(), p.head)); err != nil {
		return fmt.Errorf("update %s: %w", r.appliedRef(), err)
	}
	p.fresh, p.pushed = false, true
	return nil
}

// trackPushed points branch's remote-tracking ref at commit, as go-git's
// push does: it follows what was pushed.
func (r *Repo) trackPushed(branch string, commit plumbing.Hash) error {
	tracking := plumbing.NewRemoteReferenceName("origin", branch)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(tracking, commit)); err != nil {
		return fmt.Errorf("update %s: %w", tracking, err)
	}
	r.seen.see(branch, commit)
	return nil
}

// withRemoteLines is err with what the host said, as runPush reports it.
func withRemoteLines(err error, said *remoteLines) error {
	if lines := said.lines(); len(lines) > 0 {
		return &remoteError{err: err, lines: lines}
	}
	return err
}
