package gitobj

import (
	"errors"
	"fmt"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrNoCommit means a repository's HEAD names no commit yet (a branch
// without commits): there is no committed tree to read.
var ErrNoCommit = errors.New("no commit yet")

// CommitTree is the tree of one commit of a local repository, read from
// its Git objects as a reconciler's pass reads the tip (a TreeFS), whatever
// the worktree holds: .gitattributes (ident, filters, eol, text), a smudge
// filter configured in the checkout, or an uncommitted edit change nothing
// of what it reads. Close releases the repository's files.
type CommitTree struct {
	*TreeFS
	// Commit is the full hash of the commit read.
	Commit string
	// Rev is the revision as it was asked for ("HEAD" when none was).
	Rev  string
	done func()
}

// Close releases the repository's pack files; the tree cannot be read
// afterwards.
func (c *CommitTree) Close() error {
	if c.done != nil {
		c.done()
		c.done = nil
	}
	return nil
}

// OpenCommitTree opens the Git repository at dir (a checkout's root, a
// linked worktree made by git worktree add, or a bare repository; not a
// directory inside a checkout) and returns the tree of the commit rev
// names: a branch, tag, remote-tracking branch, hash or any revision
// go-git resolves (HEAD when rev is ""). Errors: one wrapping
// git.ErrRepositoryNotExists when dir is not a repository; one naming rev
// when it does not resolve to a commit; ErrNoCommit when rev is HEAD (or
// "") on a branch without commits.
func OpenCommitTree(dir, rev string) (*CommitTree, error) {
	repo, done, err := openShared(dir)
	if err != nil {
		return nil, err
	}
	if rev == "" {
		rev = "HEAD"
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		done()
		if rev == "HEAD" && errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, fmt.Errorf("%s: HEAD: %w", dir, ErrNoCommit)
		}
		return nil, fmt.Errorf("%s: revision %q does not resolve: %w", dir, rev, err)
	}
	t, err := NewTreeFS(&lockedStorer{EncodedObjectStorer: repo.Storer}, *h, nil)
	if err != nil {
		done()
		return nil, fmt.Errorf("%s: revision %q: %w", dir, rev, err)
	}
	return &CommitTree{TreeFS: t, Commit: h.String(), Rev: rev, done: done}, nil
}

// MaxOpenPacks is how many pack files OpenCommitTree keeps open between
// reads. By default go-git opens (and resolves the path of) a pack for
// every object it reads from it. gitsync's clone does that (see its
// plainOpen), and its housekeeping keeps it under 50 packs.
const MaxOpenPacks = 64

// openShared opens the repository at dir with up to MaxOpenPacks pack
// files kept open, as a gitsync clone's.
func openShared(dir string) (*git.Repository, func(), error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, nil, err
	}
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, func() {}, nil
	}
	shared := filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(), filesystem.Options{MaxOpenDescriptors: MaxOpenPacks})
	r, err := git.Open(shared, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return r, func() { _ = shared.Close() }, nil
}

// Open opens the Git repository at dir (a checkout's root, a linked
// worktree made by git worktree add, or a bare repository) with go-git's
// default storage: for a few reads or writes. OpenHistory reads many
// objects faster; gitsync opens its own clone. Outside this package and
// gitsync, code opens repositories through these (test/structure keeps it
// so). An error wraps git.ErrRepositoryNotExists when dir is not a
// repository.
func Open(dir string) (*git.Repository, error) {
	return git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
}

// OpenHistory opens the Git repository at dir (a checkout, a linked
// worktree made by git worktree add, or a bare repository) for reading
// many objects, a whole history say: its pack files stay open and objects
// are cached, where go-git by default reopens a pack file for every object
// it reads (about 25 times slower over a long history). done releases the
// files. An error wraps git.ErrRepositoryNotExists when dir is not a
// repository.
func OpenHistory(dir string) (repo *git.Repository, done func(), err error) {
	repo, err = git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, nil, err
	}
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, func() {}, nil
	}
	fast := filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true, ExclusiveAccess: true})
	r, err := git.Open(fast, nil)
	if err != nil {
		return repo, func() {}, nil
	}
	return r, func() { _ = fast.Close() }, nil
}

// IsRepository reports whether dir is a Git repository OpenCommitTree
// opens (a checkout's root, a linked worktree, or a bare repository), as
// opposed to a plain directory or one inside a checkout. An error other
// than "not a repository" (an unreadable .git) is returned.
func IsRepository(dir string) (bool, error) {
	_, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, git.ErrRepositoryNotExists):
		return false, nil
	}
	return false, fmt.Errorf("open %s: %w", dir, err)
}

// lockedStorer reads one object at a time, each whole into memory: go-git's
// pack files share a reader between the objects read from them, and verify
// reads a CommitTree on many goroutines.
type lockedStorer struct {
	storer.EncodedObjectStorer
	mu sync.Mutex
}

// EncodedObject reads object h whole, under the lock.
func (s *lockedStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.EncodedObjectStorer.EncodedObject(t, h)
	if err != nil {
		return nil, err
	}
	m := &plumbing.MemoryObject{}
	m.SetType(o.Type())
	if err := copyObject(m, o); err != nil {
		return nil, err
	}
	return m, nil
}

// EncodedObjectSize is the size of object h, under the lock.
func (s *lockedStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.EncodedObjectStorer.EncodedObjectSize(h)
}
