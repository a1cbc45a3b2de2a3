package gitsync

import (
	"context"
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
	var said remoteLines
	err := gitobj.PushNarrow(ctx, gitobj.Push{
		URL: r.opts.URL, CABundle: r.caBundle, Auth: r.auth, Store: r.repo.Storer,
		Branch: branch, Base: base, Commit: commit, Force: force, Progress: &said,
	})
	if err != nil {
		return withRemoteLines(err, &said)
	}
	return r.trackPushed(branch, commit)
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
