package gitsync

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/gitpeer/gitpeer/internal/crashpoint"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

// ErrPushConflict is returned (wrapped) by Sync when every push attempt was
// rejected because the remote branch moved in between, and no writer new to
// the Sync landed a commit for Options.Push.Timeout (or Options.Push.MaxAttempts
// attempts were made).
var ErrPushConflict = errors.New("push rejected: remote moved on every attempt")

// ErrForeignWrite is returned (wrapped) by Sync when a push was rejected and
// the commits that beat it changed a path the pass owns (Change.Owns, or a
// path the Change writes or deletes). Writers' paths never overlap (the
// ownership rule), so this is a hostile or broken writer: the pass's change
// is not re-applied over theirs, nothing is pushed, and the error names the
// paths. The next Sync runs the pass again on what they wrote. Commits this
// cluster signed itself (Options.Signing.Key) are not foreign: a pass beaten
// by them (a killed predecessor's push landing late) runs again on the new
// tip, at most maxRecompute times, instead of failing.
var ErrForeignWrite = errors.New("another writer changed a path this pass owns")

// ErrInvalidChange is returned (wrapped) by Sync when a pass returns a Change
// that cannot be applied: a path that is absolute, not clean, escapes the repo
// or enters .git, a path both written and deleted, or a non-empty change with
// an empty message. Retrying does not help; the pass is wrong.
var ErrInvalidChange = errors.New("invalid change")

// Change is what one pass wants on the branch: whole-file writes and
// deletions, paths slash-separated relative to the repo root, plus the commit
// message, used verbatim (trailers included). An empty Change (no writes, no
// deletes, or writes identical to the tree) makes no commit. Deleting a path
// that does not exist is not a change; deleting a directory deletes every file
// under it.
type Change struct {
	Writes  map[string][]byte
	Deletes []string
	Message string
	// Owns reports whether a path (slash-separated, a file) is this pass's
	// alone to write, e.g. layout.Writable for a cluster's reconciler. When
	// a push is rejected, the Change is re-applied on the new tip only if
	// the commits in between changed no owned path (else ErrForeignWrite).
	// The paths the Change writes or deletes (and the files under a deleted
	// directory) are always owned; nil owns only those.
	Owns func(path string) bool
	// Guard holds the secret guard's answers the pass already has (it
	// inspected what it wrote with it): each write is checked through it,
	// so bytes inspected once are not scanned again. nil: every write is
	// scanned.
	Guard *guard.Cache
	// Seal, when not nil, is exactly what the applied branch holds after
	// this Sync (Options.Applied.Branch): repo paths under Applied.Scope and
	// their content, the structural rules of the applied tree still
	// applied (no Applied.Exclude, dot-file or name Git refuses). The pass
	// decides what its cluster applies, from what it computed, instead of
	// the tip's Applied.Scope through AppliedFilter. An empty non-nil Seal
	// holds the applied branch (Result.AppliedHeld).
	Seal map[string][]byte
}

// TreePassFunc computes the change on the remote tip, read from Git
// objects (tip). SyncTree runs it once and re-applies its Change when a
// push is rejected (see SyncTree); a rejected proposal
// (Options.Review.Branch), or commits of this cluster's own key that beat its
// push, run it again, so it must be a function of what it reads. It should
// return soon after ctx ends.
type TreePassFunc func(ctx context.Context, tip *TreeFS) (*Change, error)

// Result reports what Sync did.
type Result struct {
	Commit string // hex hash of the pushed commit, "" if nothing changed
	// Message is the pushed commit's message as the pass gave it (a
	// proposal adds trailer.Applied, naming the seal in force), "" if
	// nothing changed.
	Message string
	Files   []string // changed paths, sorted (added, modified, deleted)
	// Attempts counts the pushes made, the first included: Attempts-1 of
	// them were retries after a rejected push (the remote had moved), each
	// re-applying the pass's change on the new tip.
	Attempts int

	// Applied is the hex hash the remote applied branch points at after
	// the Sync: a seal commit this Sync made, or the unchanged applied
	// branch. It is "" without Options.Applied.Branch, while the shared
	// branch has no commits, or when AppliedHeld.
	Applied string
	// Sealed reports that Applied is a seal commit this Sync made and
	// pushed (to the applied branch only).
	Sealed bool
	// AppliedHeld, when not "", says why the applied branch was left where
	// it was: nothing at the shared branch tip is vouched for (no
	// Applied.Scope there, or AppliedFilter refused it), and an applied tree
	// with nothing in it would have the cluster's engine prune everything.
	AppliedHeld string
	// AppliedRestored, when not "", is the head the remote applied branch
	// was found at, which this Sync replaced with the newest seal
	// (Options.Applied.Seals) before its pass: someone else moved the branch.
	AppliedRestored string

	// PushBranch is Options.Review.Branch. With it, the pass's commit goes
	// to PushBranch, and Commit is "", unless Options.Review.Paths leaves
	// part of the change out of review: then Commit and Message are the
	// commit pushed to the shared branch with that part, CommitFiles its
	// paths.
	PushBranch  string
	CommitFiles []string
	// Proposed is the hex hash of the commit PushBranch holds after the
	// Sync, the shared branch tip plus the pass's change (Message, Files);
	// "" when the pass changed nothing.
	Proposed string
	// Withdrawn reports that this Sync deleted PushBranch: the pass changed
	// nothing, so whatever the branch proposed is merged or moot.
	Withdrawn bool
}

// SyncTree runs one pass and publishes its change as at most one commit on
// the shared branch (or, with Options.Review.Branch, on the review branch),
// then points the applied branch at the cluster's vouched tree of the tip
// (Options.Applied.Branch), as docs/design.md ("Publishing a pass") says:
// fetch, pass on the tip's tree (TreeFS), guard.Check of every written
// file, commit, push without force; a rejected push re-applies the same
// change on the new tip after Backoff until it lands or Push.Timeout
// (bounded by MaxPushWait) passes. Everything is Git objects and refs: the
// commit's tree is built from the tip's and the change (gitobj.Writer),
// and nothing is checked out. It returns what was pushed (Result) and
// errors wrapping ErrForeignWrite (a new tip changed a path the Change
// owns and no commit of this cluster's key explains it), ErrPushConflict
// (the retries ran out), ErrForeignCommit (the review branch holds
// someone's work), guard.ErrSecret, ErrInvalidChange, ctx's error, or the
// pass's, transport and storage errors. On an error the local branch is
// left at the last fetched tip and nothing of this SyncTree is pushed to
// the shared branch; a failure of the applied branch's update is named
// with its ref, after the shared push stood.
func (r *Repo) SyncTree(ctx context.Context, pass TreePassFunc) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seal.restored, r.seal.files, r.seal.replaced, r.seal.last, r.seal.fs, r.seal.plan = false, nil, "", "", nil, nil

	if err := r.loadCredentials(); err != nil {
		return Result{}, err
	}
	publish := r.publish
	if r.opts.Review.Branch != "" {
		publish = r.propose
	}
	res, tip, err := publish(ctx, pass)
	res.AppliedRestored = r.seal.replaced
	if err != nil {
		return res, err
	}
	if r.opts.Applied.Branch != "" {
		if err := r.updateApplied(ctx, tip, &res); err != nil {
			return res, err
		}
	}
	// The pass landed: a failed repack only leaves the clone as it was.
	r.housekeeping, r.housekeepingErr = r.keepClean()
	return res, nil
}

// publish is Sync without the applied branch. It also returns the shared
// branch tip after it: the pushed commit, or the fetched tip when nothing
// changed (zero while the branch has no commits).
func (r *Repo) publish(ctx context.Context, pass TreePassFunc) (Result, plumbing.Hash, error) {
	var res Result
	base, err := r.refresh(ctx)
	if err != nil {
		return res, plumbing.ZeroHash, err
	}
	ch, p, err := r.runPass(ctx, pass, base)
	if err != nil {
		r.rollback(base)
		return res, plumbing.ZeroHash, err
	}
	started := r.opts.Clock.Now()
	attempt := started  // when the attempt under way started
	landed := 0         // commits the last refetch found on top of the tip before it
	progress := started // when a writer new to this Sync last landed a commit
	writers := map[string]bool{}
	recomputed := 0 // passes run again on this cluster's own late commits
	for tip := base; ; {
		if len(p.files) == 0 {
			return res, tip, nil // nothing to change on this tip
		}
		commit, err := r.commitPlan(p, tip, false)
		if err != nil {
			r.rollback(tip)
			return res, plumbing.ZeroHash, err
		}
		if commit.IsZero() {
			return res, tip, nil
		}

		res.Attempts++
		err = r.pushSealed(ctx, tip, commit)
		if err == nil {
			crashpoint.Reached(crashpoint.Pushed)
			r.setHead(commit)
			res.Commit, res.Message, res.Files = commit.String(), p.message, p.files
			return res, commit, nil
		}
		if !isRejected(err) {
			// Our commit is not on the remote: drop it so that the clone
			// mirrors the remote again whatever happens next.
			r.rollback(tip)
			return res, plumbing.ZeroHash, fmt.Errorf("push %s to %s: %w", r.opts.Branch, r.opts.URL, r.explain(err))
		}
		c := Contention{Attempt: res.Attempts, Landed: landed, Window: r.opts.Clock.Since(attempt)}
		if err := r.waitRetry(ctx, c, started, progress, err); err != nil {
			r.rollback(tip)
			return res, plumbing.ZeroHash, err
		}
		attempt = r.opts.Clock.Now()
		// The refresh resets the clone to the new tip, dropping our commit.
		next, err := r.refresh(ctx)
		if err != nil {
			r.rollback(tip)
			return res, plumbing.ZeroHash, err
		}
		var fresh bool
		if landed, fresh = r.landedBetween(tip, next, writers); fresh {
			progress = r.opts.Clock.Now()
		}
		// Only what landed since the last check: the earlier ranges from
		// base were checked by the earlier retries, and a path changed
		// between base and next changed in one of them. Diffing from base
		// each time would cost more with every commit that beats us.
		if err := r.checkForeign(ctx, ch, tip, next); err != nil {
			if !errors.Is(err, ErrForeignWrite) || recomputed >= maxRecompute || !r.ownWrites(ctx, ch, tip, next) {
				return res, plumbing.ZeroHash, err
			}
			// What changed this pass's paths are commits this cluster
			// signed: a predecessor killed after it pushed (its
			// git-receive-pack, or the server, landed the push after
			// this pass fetched), or a second reconciler of the same
			// cluster. They are its own word, not a foreign one:
			// recompute on them rather than fail.
			recomputed++
			if ch, p, err = r.runPass(ctx, pass, next); err != nil {
				r.rollback(next)
				return res, plumbing.ZeroHash, err
			}
			tip = next
			continue
		}
		tip = next
		// Re-plan against the new tip's tree: the same files, since none
		// of them changed, but the deletions of directories and the
		// identical writes are decided afresh. The change itself was
		// validated (and guarded) on the first attempt.
		if p, err = r.diffTree(ch, tip); err != nil {
			return res, plumbing.ZeroHash, err
		}
	}
}

// waitRetry waits Backoff(c) before push attempt number c.Attempt+1 after a
// rejected push (err) of a Sync that started pushing at started, at most
// until Push.Timeout from progress, the last time a writer new to the Sync
// landed a commit (started, before any). It returns an error wrapping
// ErrPushConflict when that attempt would be past MaxAttempts or
// Push.Timeout has passed, and the context's error when it ends first.
func (r *Repo) waitRetry(ctx context.Context, c Contention, started, progress time.Time, err error) error {
	giveUp := func() error {
		return fmt.Errorf("push %s to %s after %d attempts in %s, the last %s without a commit from a writer new to this pass: %w: %w",
			r.pushTarget(), r.opts.URL, c.Attempt, r.opts.Clock.Since(started).Round(time.Millisecond),
			r.opts.Clock.Since(progress).Round(time.Millisecond), ErrPushConflict, r.explain(err))
	}
	if r.opts.Push.MaxAttempts > 0 && c.Attempt >= r.opts.Push.MaxAttempts {
		return giveUp()
	}
	left := min(r.opts.Push.Timeout-r.opts.Clock.Since(progress), MaxPushWait*r.opts.Push.Timeout-r.opts.Clock.Since(started))
	if left <= 0 {
		return giveUp()
	}
	// The last attempt starts at the deadline rather than not at all.
	wait := min(r.opts.Push.Backoff(c), left)
	t := r.opts.Clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("push %s to %s: %w", r.pushTarget(), r.opts.URL, ctx.Err())
	case <-t.C():
		return nil
	}
}

// pushTarget is the branch passes push to: Review.Branch in a review flow,
// else Branch.
func (r *Repo) pushTarget() string {
	if r.opts.Review.Branch != "" {
		return r.opts.Review.Branch
	}
	return r.opts.Branch
}

// maxCounted bounds landedBetween's walk.
const maxCounted = 1000

// landedBetween counts the commits from old (excluded) to tip along first
// parents: the commits other writers landed since old was fetched. It adds
// their authors' emails to writers, and reports whether one was not there
// yet: a writer new to this Sync landed. A tip not descended from old
// (history rewritten) counts what was walked, at most maxCounted; an
// unreadable commit ends the walk.
func (r *Repo) landedBetween(old, tip plumbing.Hash, writers map[string]bool) (n int, fresh bool) {
	for h := tip; h != old && !h.IsZero() && n < maxCounted; {
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return n + 1, fresh
		}
		n++
		if !writers[c.Author.Email] {
			writers[c.Author.Email], fresh = true, true
		}
		if c.NumParents() == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return n, fresh
}

// checkForeign returns an error wrapping ErrForeignWrite when the commits
// from base (the tip the pass read, or that a retry was made on) to tip
// changed a path that ch owns.
func (r *Repo) checkForeign(ctx context.Context, ch *Change, base, tip plumbing.Hash) error {
	changed, err := r.changedPaths(ctx, base, tip)
	if err != nil {
		return fmt.Errorf("compare %s with %s: %w", short(base), short(tip), err)
	}
	owned := ch.owned()
	var hit []string
	for _, name := range changed {
		if owned(name) {
			hit = append(hit, name)
		}
	}
	if len(hit) == 0 {
		return nil
	}
	const shown = 10
	list := strings.Join(hit[:min(len(hit), shown)], ", ")
	if len(hit) > shown {
		list += fmt.Sprintf(" and %d more", len(hit)-shown)
	}
	return fmt.Errorf("push %s to %s: the commits %s..%s that beat this pass's push changed %s: %w; nothing was pushed",
		r.opts.Branch, r.opts.URL, short(base), short(tip), list, ErrForeignWrite)
}

// maxRecompute bounds how many times one Sync runs its pass again because
// commits this cluster signed beat its push (ownWrites): a predecessor's
// late push lands once; a second reconciler of the same cluster racing
// this one would otherwise hold it forever.
const maxRecompute = 3

// ownWrites reports whether every commit from base (excluded) to tip, along
// first parents, that changed a path ch owns was signed by this cluster
// (Options.Signing.Key, as Applied.ClusterID). It is false without Signing.Key, for a
// merge, for a walk of more than maxCounted commits, and on any error: only
// what is shown to be this cluster's own is recomputed over.
func (r *Repo) ownWrites(ctx context.Context, ch *Change, base, tip plumbing.Hash) bool {
	if r.opts.Signing.Key == nil {
		return false
	}
	owned := ch.owned()
	for h, n := tip, 0; h != base; n++ {
		c, err := r.repo.CommitObject(h)
		if err != nil || c.NumParents() != 1 || n >= maxCounted {
			return false
		}
		if !r.signedBySelf(c) {
			changed, err := r.changedPaths(ctx, c.ParentHashes[0], h)
			if err != nil || slices.ContainsFunc(changed, owned) {
				return false
			}
		}
		h = c.ParentHashes[0]
	}
	return true
}

// owned reports the paths a Change owns: those it touches, and those
// Change.Owns claims. A commit by someone else that changed one of them
// is a foreign write (checkForeign, ownWrites).
func (ch *Change) owned() func(string) bool {
	touches := ch.touches()
	return func(name string) bool { return touches(name) || ch.Owns != nil && ch.Owns(name) }
}

// touches reports the paths a Change always owns: the paths it writes, the files
// under those it deletes, and the paths standing where a written file or
// its directories go.
func (ch *Change) touches() func(string) bool {
	exact := map[string]bool{}
	dirs := map[string]bool{} // directories the writes need
	for name := range ch.Writes {
		exact[name] = true
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	deleted := map[string]bool{}
	for _, name := range ch.Deletes {
		deleted[name] = true
	}
	return func(name string) bool {
		if exact[name] || dirs[name] || deleted[name] {
			return true
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if exact[d] || deleted[d] {
				return true // under a written file or a deleted directory
			}
		}
		return false
	}
}

// changedPaths lists the files (slash-separated) whose content or mode
// differs between the trees of commits from and to; a zero hash is an empty
// tree.
func (r *Repo) changedPaths(ctx context.Context, from, to plumbing.Hash) ([]string, error) {
	trees := make([]plumbing.Hash, 2)
	for i, h := range []plumbing.Hash{from, to} {
		var err error
		if trees[i], err = gitobj.TreeHash(r.repo.Storer, h); err != nil {
			return nil, err
		}
	}
	var out []string
	err := gitobj.Diff(gitobj.StoreTrees(r.repo.Storer), trees[0], trees[1], func(name string, a, b *object.TreeEntry) error {
		if (a != nil && a.Mode != filemode.Dir) || (b != nil && b.Mode != filemode.Dir) {
			out = append(out, name)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// short is a commit hash cut as git log --oneline cuts it, "(none)" for no
// commit.
func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:12]
}

// runPass runs pass on tip's tree and plans its change against it.
func (r *Repo) runPass(ctx context.Context, pass TreePassFunc, tip plumbing.Hash) (*Change, *plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("pass: %w", err)
	}
	// Before the first pass of the Sync, whatever it does: the applied
	// branch is back on the newest seal (Options.Applied.Seals).
	if !r.seal.restored {
		r.seal.restored = true
		if err := r.restoreApplied(ctx, tip); err != nil {
			return nil, nil, err
		}
	}
	tree, err := gitobj.NewTreeFS(r.repo.Storer, tip, r.decoded)
	if err != nil {
		return nil, nil, err
	}
	ch, err := pass(ctx, tree)
	if err != nil {
		return nil, nil, fmt.Errorf("pass: %w", err)
	}
	if ch == nil {
		ch = &Change{}
	}
	r.seal.files, r.seal.plan = ch.Seal, nil
	p, err := planChange(ch, tree, short(tip))
	if err != nil {
		return nil, nil, err
	}
	return ch, p, nil
}

// commitPlan commits p on tip, signed with Signing.Signer, and points the local
// branch at the commit. It returns the zero hash when there is nothing to
// commit. The commit's tree is built from tip's (gitobj.Writer), rewriting
// only the trees on the changed paths. A proposal (the commit goes to
// the review branch) names the seal in force in its message
// (trailer.Applied, appliedNamed).
func (r *Repo) commitPlan(p *plan, tip plumbing.Hash, proposal bool) (plumbing.Hash, error) {
	if len(p.files) == 0 {
		return plumbing.ZeroHash, nil
	}
	from, err := gitobj.Tree(r.repo.Storer, tip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err := r.writeTree(p, from.Hash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if tree == from.Hash {
		// The plan compares hashes, so this means the same tree: no change.
		return plumbing.ZeroHash, nil
	}
	crashpoint.Reached(crashpoint.FilesWritten)
	msg := p.message
	if proposal {
		named, err := r.appliedNamed(tip)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if !named.IsZero() {
			msg = trailer.Append(msg, trailer.Applied, named.String())
		}
	}
	h, err := r.writeCommit(tree, tip, msg)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(r.opts.Branch), h)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	crashpoint.Reached(crashpoint.Committed)
	return h, nil
}

// signature is the author and committer of every commit this Repo makes,
// cleaned as go-git's Worktree.Commit would clean it.
func (r *Repo) signature() object.Signature {
	clean := strings.NewReplacer("<", "", ">", "", "\n", "")
	if r.onDate != nil {
		r.onDate()
	}
	return object.Signature{
		Name:  clean.Replace(r.opts.Author.Name),
		Email: clean.Replace(r.opts.Author.Email),
		When:  r.opts.Clock.Now(),
	}
}

// refresh fetches the branch and points the local branch at it. It returns
// the tip, or the zero hash when the remote has no such branch yet.
func (r *Repo) refresh(ctx context.Context) (plumbing.Hash, error) {
	tip, err := r.fetch(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.reset(tip); err != nil {
		return plumbing.ZeroHash, err
	}
	r.setHead(tip)
	return tip, nil
}

// fetch updates the tracking ref of the branch, and of the applied and the
// push branch when there are, and returns the branch tip (zero when the
// remote has no such branch). A missing applied or push branch is not an
// error: its tracking ref is removed.
func (r *Repo) fetch(ctx context.Context) (plumbing.Hash, error) {
	tracking := plumbing.NewRemoteReferenceName("origin", r.opts.Branch)
	specs := []config.RefSpec{trackingSpec(r.opts.Branch)}
	var optional []string
	for _, b := range []string{r.opts.Applied.Branch, r.opts.Review.Branch} {
		if b != "" {
			optional = append(optional, b)
			specs = append(specs, trackingSpec(b))
		}
	}
	err := r.fetchSpecs(ctx, specs)
	if len(specs) > 1 {
		noMatch := errors.Is(err, git.NoMatchingRefSpecError{})
		empty := errors.Is(err, transport.ErrEmptyRemoteRepository)
		if noMatch || empty {
			// go-git fails the whole fetch when one ref is missing: the
			// applied branch before its first update, the push branch
			// while nothing is proposed, the branch, or all. Fetch each
			// alone.
			if err := r.fetchOptional(ctx, optional, empty); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		if noMatch {
			err = r.fetchSpecs(ctx, specs[:1])
		}
	}
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, git.NoMatchingRefSpecError{}):
		if r.opts.BranchMustExist {
			return plumbing.ZeroHash, r.branchNotFound(ctx, errors.Is(err, transport.ErrEmptyRemoteRepository))
		}
		// No branch on the remote (yet, or any more): forget any stale
		// tracking ref so the next commit is a root commit.
		if err := r.repo.Storer.RemoveReference(tracking); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("fetch %s: %w", r.opts.URL, err)
		}
		r.seeTracking()
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("fetch %s from %s: %w", r.opts.Branch, r.opts.URL, r.explain(err))
	}
	ref, err := r.repo.Reference(tracking, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("fetch %s from %s: %w", r.opts.Branch, r.opts.URL, err)
	}
	r.seeTracking()
	return ref.Hash(), nil
}

// fetchOptional fetches each of branches alone, removing the tracking ref of
// those the remote does not have (all of them when the remote is empty).
func (r *Repo) fetchOptional(ctx context.Context, branches []string, empty bool) error {
	for _, b := range branches {
		err := errors.New("empty") // not fetched: the remote has no refs
		if !empty {
			err = r.fetchSpecs(ctx, []config.RefSpec{trackingSpec(b)})
		}
		switch {
		case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		case empty, errors.Is(err, git.NoMatchingRefSpecError{}), errors.Is(err, transport.ErrEmptyRemoteRepository):
			if err := r.repo.Storer.RemoveReference(plumbing.NewRemoteReferenceName("origin", b)); err != nil {
				return fmt.Errorf("fetch %s: %w", r.opts.URL, err)
			}
		default:
			return fmt.Errorf("fetch %s from %s: %w", b, r.opts.URL, r.explain(err))
		}
	}
	return nil
}

func (r *Repo) fetchSpecs(ctx context.Context, specs []config.RefSpec) error {
	return r.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   specs,
		Auth:       r.auth,
		CABundle:   r.caBundle,
		Tags:       git.NoTags,
	})
}

// reset points the local branch at tip (removes it when tip is zero), with
// HEAD on the branch: what git log and git show in the clone read. The
// clone has no index and no worktree to move.
func (r *Repo) reset(tip plumbing.Hash) error {
	branch := plumbing.NewBranchReferenceName(r.opts.Branch)
	if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch)); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if tip.IsZero() {
		if err := r.repo.Storer.RemoveReference(branch); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		return nil
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(branch, tip)); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return nil
}

// rollback is reset for error paths: the error being returned matters more
// than a failure to clean up, which the next SyncTree's reset retries
// anyway.
func (r *Repo) rollback(tip plumbing.Hash) {
	if err := r.reset(tip); err == nil {
		r.setHead(tip)
	}
}
