// Package gitsync is the reconciler's Git side: it keeps a clone of the
// peering repo without a worktree, runs one pass of the reconciler on the
// remote tip read from Git objects, and turns the pass's change into at
// most one commit pushed to the shared branch.
//
// The surface is deliberately narrow, like fluxcd/pkg/git: Open (clone or
// reuse), SyncTree (fetch, pass on the tip's TreeFS, guard, commit, push)
// and a watcher of a user's working tree. A pass reads and writes Git
// objects and refs only: nothing is ever checked out, so no path of the
// tip (however long, deep or named) can stall it.
// Its policy (never merge, never force the shared branch; the guard
// first; the applied branch; review branches; a clone that belongs to the
// Repo) is docs/design.md, "Publishing a pass".
package gitsync

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	format "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	utilclock "k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// Default values of Options.
const (
	DefaultBranch = "main"
	// DefaultPushTimeout bounds the retries of a rejected push while no
	// writer new to the pass lands a commit (see PushRetry.Timeout).
	DefaultPushTimeout = 2 * time.Minute
	// MaxPushWait bounds one Sync's retries to MaxPushWait × Push.Timeout
	// from its first push attempt, new writers or not (20 minutes by
	// default; a burst of 50 daemons on 2 cores took under 3).
	MaxPushWait = 10
)

// Options configure a Repo, grouped by what they govern: fetching the
// remote, making commits, pushing them, the applied branch and the review
// flow. URL, Dir and Author are required; the zero value of every group is
// its default (Push) or its feature off (Signing, Applied, Review).
type Options struct {
	// Fetching the remote.

	// URL is the remote: a local path (made absolute), a file:// URL, an
	// http(s):// URL (smart HTTP) or an ssh URL. Local paths and file://
	// exec git-upload-pack/git-receive-pack, so git must be installed. A
	// URL with credentials in it is refused (gitauth.CheckURL): they go in
	// Credentials.
	URL string
	// Dir is the clone, created on first use and reused after: a Git
	// repository without a worktree, its Git directory Dir/.git
	// (core.bare set), read with git -C Dir log or show. An existing clone
	// whose origin is another URL is re-pointed at URL. Dir belongs to the
	// Repo: anything in it besides .git (the worktree of a clone an older
	// version made) is deleted by Open. Take LockCheckout on it to keep
	// other processes out.
	Dir string
	// Branch is the shared branch passes commit to; default "main".
	Branch string
	// BranchMustExist makes Open and SyncTree fail with a
	// *BranchNotFoundError when the remote has no Branch (a mistyped branch
	// name, or a branch deleted there), before any ref of the clone is
	// moved, instead of starting Branch with a root commit as Seed does.
	BranchMustExist bool
	// Credentials authenticate fetches and pushes over http(s) and ssh:
	// they are asked for at the start of Open and of every Sync, so that
	// credentials rotated on disk take effect at the next Sync, and every
	// fetch or push error goes through their Explain (package gitauth
	// implements it for a credentials directory). Nil means none: no auth
	// (ssh then falls back to go-git's default, the ssh agent) and the
	// system's CA roots.
	Credentials Credentials

	// Making commits.

	// Author is the commit author and committer.
	Author Signature
	// Clock dates commits (author and committer time: Clock.Now) and times
	// push retries (the backoff waits, Push.Timeout and the durations in
	// Contention and in a give-up's error); default clock.RealClock{}
	// (k8s.io/utils/clock, imported as utilclock since the tests name
	// their fixed commit time clock). Tests pass a
	// k8s.io/utils/clock/testing FakeClock and step it; a caller whose
	// time is a function passes ClockFunc.
	Clock utilclock.Clock
	// Signing signs commits and recognises this cluster's own.
	Signing Signing

	// Push bounds and paces the retries of a rejected push.
	Push PushRetry

	// Applied, when its Branch is set, keeps the applied branch.
	Applied Applied

	// Review, when its Branch is set, turns Sync into a review flow.
	Review Review
}

// Signing is how a Repo signs its commits and tells its own commits from
// others'. The zero Signing signs nothing.
type Signing struct {
	// Signer, when set, signs every commit (go-git CommitOptions.Signer:
	// OpenPGP or SSH signatures, see package commitsig).
	Signer git.Signer
	// Format is the format Signer signs in (commitsig.FormatSSH or
	// commitsig.FormatOpenPGP); "" means either. With Key, an applied
	// branch whose head carries a signature of another format is
	// resealed: a cluster that switches formats gets its head signed in the
	// new one at its next Sync, which is the only one its engine checks
	// (Flux SSH, Argo CD OpenPGP).
	Format commitsig.Format
	// Key, when set, is the public key of Signer: an applied branch whose
	// commit this key did not sign is resealed even if its scope is
	// already right, and a review branch whose head this key signed is
	// this cluster's own proposal (see Review).
	Key crypto.PublicKey
}

// Applied is Options' applied branch: the branch this cluster's Flux
// applies from, written by this cluster alone (docs/trust.md). After every
// successful Sync it points at a commit signed by Signing.Signer whose
// tree is the applied tree of the shared branch tip (Scope alone,
// filtered): the applied branch as it stands when it already holds that
// tree, else a new signed seal commit of it whose only parent is the tip
// (see Sync). It is the only ref gitsync force-pushes. The zero Applied is
// no applied branch.
type Applied struct {
	// Branch is the applied branch (e.g. "gitpeer/applied/alpha"). Setting
	// it requires Scope, ClusterID and Options.Signing.Signer and a name
	// other than Options.Branch.
	Branch string
	// Scope is the repo directory, slash-separated and relative, whose
	// content the applied branch vouches for (e.g. "clusters/alpha"). The
	// applied commit's tree holds that directory alone, filtered (see
	// Exclude and Filter), at the same path.
	Scope string
	// Exclude are names directly under Scope that the applied tree leaves
	// out (e.g. "inbox": what other clusters address to this one is
	// theirs, and reaches it only as its own verified copy).
	Exclude []string
	// Filter, when set, keeps only the files of Scope it vouches for (e.g.
	// those listed, with their content, in the cluster's own signed
	// manifest); nil keeps every file the structural rules leave (see
	// AppliedFilter's type).
	Filter AppliedFilter
	// ClusterID names this cluster in seal commits: their message is
	// "<ClusterID>: seal <Scope>" with trailers Gitpeer-Cluster:
	// <ClusterID> and Gitpeer-Step: seal. It is given, not derived from
	// Scope, so that the cluster-ID rule stays with its owner.
	ClusterID string
	// Seals, when set, keeps the newest seal where no writer of the repo
	// reaches it (the cluster's backend): each Sync points the remote
	// applied branch back at Seals.LastSeal before its pass runs, whatever
	// the pass then does, and records every seal it makes with
	// Seals.RecordSeal before pushing it. A signature proves who made a
	// seal, never when: without this, a writer who points the branch at an
	// older seal has it applied until the next seal.
	Seals SealKeeper
}

// Review is Options' review flow (after Flux's image-automation-controller,
// "a push branch distinct from the checkout branch"): the pass still runs
// on Options.Branch's tip, which is only read (merged = approved), and its
// commit is pushed to Review.Branch instead, as that tip plus exactly that
// one signed commit. The zero Review is no review: passes push to
// Options.Branch.
type Review struct {
	// Branch is the branch proposals are pushed to. When the pass changes
	// nothing, Branch is deleted, so that hosts close its pull request.
	// Branch is force-updated, but only over what is absent, already
	// merged into Options.Branch, or this cluster's own previous proposal
	// (its head signed with Options.Signing.Key, its parent on
	// Options.Branch); anything else is someone's work and Sync refuses,
	// wrapping ErrForeignCommit. It requires Options.Signing.Signer and
	// Options.Signing.Key and a name other than Options.Branch and
	// Options.Applied.Branch.
	Branch string
	// Paths, with Branch, tells the paths of a pass's change that need
	// review (e.g. what the cluster applies): only those go to Branch. The
	// others are pushed to Options.Branch first, as a commit of their own,
	// signed, with the pass's message, and the proposal is made on top of
	// it; a rejected push of that commit runs the pass again on the new
	// tip. Nil: every path needs review.
	Paths func(path string) bool
}

// PushRetry is how a Sync retries a push the remote rejected because
// another writer landed first: it refetches, checks and retries its commit
// on the new tip, after a backoff. The zero PushRetry is the defaults.
type PushRetry struct {
	// Timeout bounds the time one Sync retries rejected pushes without
	// progress: no push attempt starts later than Timeout after the
	// last commit by a writer (commit author) new to this Sync landed on
	// the branch, or after the first attempt before any did; default
	// DefaultPushTimeout. In a burst (every daemon of a mesh wakes on the
	// same spec change) each writer lands once, so the bound restarts
	// with each of them and a pass waits its turn however many are ahead;
	// a writer landing commit after commit ahead of it (a hot loop) does
	// not restart it. However many new writers land, no attempt starts
	// later than MaxPushWait × Timeout after the first: commit authors
	// are what any repo writer says they are, and a stream of made-up ones
	// must not hold a pass forever. Retries are bounded in time, not in
	// count.
	Timeout time.Duration
	// MaxAttempts, when positive, is the maximum number of push attempts
	// of one Sync, including the first one; default 0: as many as
	// Timeout allows.
	MaxAttempts int
	// Backoff returns how long to wait after a rejected push before
	// refetching, from what the Sync has seen of the other writers;
	// default DefaultBackoff.
	Backoff func(Contention) time.Duration
}

// Credentials authenticate a Repo's fetches and pushes.
type Credentials interface {
	// Transport returns the auth method (nil: none) and the PEM CA bundle
	// (nil: the system's roots) for the fetches and pushes of one Open or
	// Sync.
	Transport() (transport.AuthMethod, []byte, error)
	// Explain returns err, from a fetch or a push, as an error naming its
	// cause and what to do, or err itself when it does not know it; the
	// result must hold no secret.
	Explain(err error) error
}

// Signature is the identity commits are made with.
type Signature struct{ Name, Email string }

// Repo is a clone, without a worktree, of one branch of a remote. Its
// methods are safe for concurrent use; Syncs of one Repo run one at a time.
type Repo struct {
	opts Options
	dir  string
	repo *git.Repository

	mu sync.Mutex // serialises Sync

	housekeeping    Housekeeping // of the last successful Sync
	housekeepingErr error
	// decoded is the trees passes decoded, by hash (TreeFS).
	decoded *gitobj.TreeCache
	// applied is the last applied tree made, for the scope tree it came
	// from (appliedTree).
	applied struct {
		key  appliedKey
		tree plumbing.Hash
	}
	// seal is what the Sync under way knows of its seal: whether the
	// applied branch was restored yet, and the files its pass sealed
	// (Change.Seal, of the last run of the pass; nil: the tip's scope
	// through AppliedFilter).
	seal struct {
		restored bool
		files    map[string][]byte
		replaced string // the head restoreApplied replaced
		last     string // the newest seal Options.Applied.Seals holds
		fs       *TreeFS
		plan     *sealPlan // the applied branch's plan for a tip (planSeal)
	}
	// noAtomic: the host does not offer atomic pushes, so a seal is
	// pushed after the commit it seals (pushSealed).
	noAtomic bool
	// former are the keys Rekey replaced: commits they signed are still
	// this cluster's own (signedBySelf).
	former []crypto.PublicKey

	// auth and caBundle are those of the current Open or Sync (see
	// Options.Credentials).
	auth     transport.AuthMethod
	caBundle []byte

	headMu sync.Mutex
	head   string

	// seen is where the watched remote refs pointed at the last fetch or
	// push (RemoteRefs, Unseen).
	seen seenRefs

	// pending is the tree of this cluster's own proposal on the push
	// branch while a pass of SyncTree runs with Options.Review.Branch
	// (Pending); nil otherwise.
	pending *TreeFS

	// onDate is a test seam: when set, it runs each time a commit is
	// dated, between the fetch and the push of an attempt (the tests land
	// other writers' commits there). Nil outside tests.
	onDate func()
}

// Open clones opts.URL into opts.Dir, or opens the clone already there, then
// fetches and points the local branch at the remote branch tip. Nothing is
// checked out: the clone has no worktree, and the worktree of a clone an
// older version made is removed (see openOrInit). An empty remote (no
// commits yet), or one without the branch, is fine: the first SyncTree
// creates the branch, with no parent; with Options.BranchMustExist it is a
// *BranchNotFoundError instead. A clone whose HEAD, config or loose refs a
// crash cut short is repaired first (see repairClone). Open fails when an
// option is invalid, when Dir holds something other than a clone of URL,
// or when the remote cannot be read.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", opts.Dir, err)
	}
	repo, err := openOrInit(dir, opts)
	if err != nil {
		return nil, err
	}
	r := &Repo{opts: opts, dir: dir, repo: repo, decoded: gitobj.NewTreeCache()}
	if err := r.loadCredentials(); err != nil {
		return nil, err
	}
	if _, err = r.refresh(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Dir returns the absolute path of the clone (its Git directory is
// Dir/.git).
func (r *Repo) Dir() string { return r.dir }

// CacheFile is the path of .git/gitpeer-<name> in the clone: where what
// belongs to the clone but never to a commit is kept between processes
// (the evaluated spec), removed with the clone.
// Whoever can write there can already change what a pass reads (the
// clone's objects and refs), so such a file adds nothing to trust; each
// is still only a hint its reader checks for shape and staleness.
func (r *Repo) CacheFile(name string) string {
	return cacheFile(filepath.Join(r.dir, ".git"), name)
}

func cacheFile(gitDir, name string) string { return filepath.Join(gitDir, "gitpeer-"+name) }

// SignatureFormat returns Options.Signing.Format: the format the Repo's
// commits are signed in, "" when that is not known.
func (r *Repo) SignatureFormat() commitsig.Format { return r.opts.Signing.Format }

// Head returns the hex hash of the local branch tip after the last Sync or
// Open: the pushed commit, or the remote tip when nothing was pushed. It is
// "" while the branch has no commits.
func (r *Repo) Head() string {
	r.headMu.Lock()
	defer r.headMu.Unlock()
	return r.head
}

func (r *Repo) setHead(h plumbing.Hash) {
	r.headMu.Lock()
	defer r.headMu.Unlock()
	if h.IsZero() {
		r.head = ""
	} else {
		r.head = h.String()
	}
}

func withDefaults(opts Options) (Options, error) {
	if opts.URL == "" {
		return opts, errors.New("open: URL is required")
	}
	if opts.Dir == "" {
		return opts, errors.New("open: Dir is required")
	}
	if opts.Author.Name == "" || opts.Author.Email == "" {
		return opts, errors.New("open: Author name and email are required")
	}
	if opts.Branch == "" {
		opts.Branch = DefaultBranch
	}
	if err := plumbing.NewBranchReferenceName(opts.Branch).Validate(); err != nil {
		return opts, fmt.Errorf("open: branch %q: %w", opts.Branch, err)
	}
	if err := checkApplied(opts); err != nil {
		return opts, err
	}
	if err := checkPush(opts); err != nil {
		return opts, err
	}
	if opts.Push.Timeout <= 0 {
		opts.Push.Timeout = DefaultPushTimeout
	}
	if opts.Push.Backoff == nil {
		opts.Push.Backoff = DefaultBackoff
	}
	if opts.Clock == nil {
		opts.Clock = utilclock.RealClock{}
	}
	u, err := normalizeURL(opts.URL)
	if err != nil {
		return opts, err
	}
	opts.URL = u
	return opts, nil
}

// Contention is what a Sync has seen of the other writers when a push of
// its was rejected: the input of Options.Push.Backoff.
type Contention struct {
	// Attempt counts the push attempts made so far, the rejected one
	// included (1-based).
	Attempt int
	// Landed is how many commits other writers pushed to the branch
	// between the Sync's two latest fetches, the one the rejected attempt
	// started from and the one before: roughly how many writers push at
	// once. It is 0 at the first rejection (no refetch yet).
	Landed int
	// Window is how long the rejected attempt took, from its fetch (the
	// commit, for the first attempt, whose fetch came before the pass) to
	// the rejection: the time one push needs on this remote and machine
	// as loaded as they are.
	Window time.Duration
}

// Bounds of DefaultBackoff.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// DefaultBackoff is the default Options.Push.Backoff: max(1, Landed) × Window,
// with "equal jitter" (half fixed, half random), within 10ms and 10s.
//
// Every commit that lands invalidates every attempt in flight, so what a
// retry needs is a moment when no other writer is between its fetch and
// its push. With Landed writers pushing at once and each attempt taking
// Window, spreading the retries over Landed windows gives each a fair
// chance of such a moment, and keeps the losers from spending on doomed
// attempts the CPU and the remote the winner needs. It does not grow with
// Attempt: an exponential backoff by attempt count makes the writers that
// have waited longest ever less likely to win against fresh ones (a burst
// of 50 writers on 2 cores left some losing for minutes), whereas here
// every writer of a burst backs off by the same measure of the same
// contention, which shrinks as the burst drains.
func DefaultBackoff(c Contention) time.Duration {
	d := time.Duration(max(1, c.Landed)) * c.Window
	d = min(max(d, minBackoff), maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// loadCredentials sets the auth and CA bundle of the next fetches and
// pushes from Options.
func (r *Repo) loadCredentials() error {
	if r.opts.Credentials == nil {
		return nil
	}
	auth, ca, err := r.opts.Credentials.Transport()
	if err != nil {
		return fmt.Errorf("credentials for %s: %w", r.opts.URL, err)
	}
	r.auth, r.caBundle = auth, ca
	return nil
}

// explain is Credentials.Explain, when there are Credentials.
func (r *Repo) explain(err error) error {
	if r.opts.Credentials == nil {
		return err
	}
	return r.opts.Credentials.Explain(err)
}

// normalizeURL makes a local path absolute, since the clone's
// process may run from another directory than the one that configured it.
// It refuses a URL with credentials in it (gitauth.CheckURL): the URL is
// stored in the clone's .git/config and shown in messages.
func normalizeURL(u string) (string, error) {
	if err := gitauth.CheckURL(u); err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	ep, err := transport.NewEndpoint(u)
	if err != nil {
		return "", fmt.Errorf("open: URL %q: %w", u, err)
	}
	if ep.Protocol == "file" && !strings.HasPrefix(u, "file://") {
		abs, err := filepath.Abs(u)
		if err != nil {
			return "", fmt.Errorf("open: URL %q: %w", u, err)
		}
		return abs, nil
	}
	return u, nil
}

// openOrInit opens the clone in dir, or initialises one there (dir missing or
// empty) with origin pointing at opts.URL. An existing clone whose origin
// has another URL (the repo moved, or is now reached over another
// transport) is re-pointed at opts.URL: the next refresh mirrors the new
// remote's branch whatever the old one held, since Dir belongs to the Repo.
// Fetching is left to refresh, which handles an empty remote the same way on
// first use and later.
//
// The clone is Dir/.git with core.bare set, and nothing beside it. A clone
// an older version made (with a worktree, its index and worktree snapshot
// in .git) is converted in place: its objects and refs are kept, its
// worktree, index and snapshot removed (dropWorktree). Each step is
// idempotent and Open repeats them all, so a process killed midway leaves
// a clone the next Open finishes converting.
func openOrInit(dir string, opts Options) (*git.Repository, error) {
	if err := repairClone(dir, opts.Branch); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	repo, err := plainOpen(dir)
	switch {
	case err == nil:
		if err := dropWorktree(dir); err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		if err := setOrigin(repo, opts); err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		return repo, nil
	case !errors.Is(err, git.ErrRepositoryNotExists):
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("open %s: directory is not empty and not a git clone", dir)
	}
	repo, err = git.PlainInitWithOptions(filepath.Join(dir, git.GitDirName), &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(opts.Branch)},
	})
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := setOrigin(repo, opts); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	return plainOpen(dir)
}

// plainOpen opens the clone in dir (its Git directory dir/.git, as
// openOrInit makes it) without a worktree.
//
// Pack files are opened per read, not kept open: go-git's Packfile keeps
// its scanner's state between reads, and EncodedObjectSize
// (GetSizeByOffset) on a kept pack can start from a header another read
// left pending, misreading the object ("zlib reset error: invalid
// header"; seen on a blob restored from an older commit). A checkout
// masked it: the reset read every blob into the object cache first.
func plainOpen(dir string) (*git.Repository, error) {
	if fi, err := os.Stat(filepath.Join(dir, git.GitDirName)); err != nil || !fi.IsDir() {
		return nil, git.ErrRepositoryNotExists
	}
	dot := osfs.New(filepath.Join(dir, git.GitDirName))
	s := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(), filesystem.Options{})
	return git.Open(s, nil)
}

// dropWorktree removes from the clone in dir what only a worktree needs:
// every entry of dir but .git (an older version's checkout), and the index
// and worktree snapshot in .git. os.RemoveAll removes a path however deep
// or long, relative to its parent's descriptor, so a checkout that a tip
// no checkout can hold left half-written goes too.
func dropWorktree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("drop the worktree: %w", err)
	}
	for _, e := range entries {
		if e.Name() == git.GitDirName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("drop the worktree: %w", err)
		}
	}
	gitDir := filepath.Join(dir, git.GitDirName)
	for _, p := range []string{filepath.Join(gitDir, "index"), cacheFile(gitDir, "snapshot")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("drop the worktree: %w", err)
		}
	}
	return nil
}

// setOrigin makes origin's URL opts.URL and its fetch refspec opts.Branch's,
// creating the remote if missing, and sets core.bare: the clone has no
// worktree, and git run in Dir must not take it to have one. It drops any
// other URL (or one with credentials that an older version stored there),
// and the refspec of a branch used before (a mistyped --branch must not
// stay in the clone's config; fetches name their refspecs anyway).
func setOrigin(repo *git.Repository, opts Options) error {
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	spec := trackingSpec(opts.Branch)
	rc := cfg.Remotes["origin"]
	if cfg.Core.IsBare && cfg.Core.RepositoryFormatVersion != "" && rc != nil && len(rc.URLs) == 1 && rc.URLs[0] == opts.URL && len(rc.Fetch) == 1 && rc.Fetch[0] == spec {
		return nil
	}
	// git reads core.bare only from a config that states its format.
	cfg.Core.IsBare = true
	if cfg.Core.RepositoryFormatVersion == "" {
		cfg.Core.RepositoryFormatVersion = format.Version_0
	}
	if rc == nil {
		rc = &config.RemoteConfig{Name: "origin"}
		cfg.Remotes["origin"] = rc
	}
	rc.URLs, rc.Fetch = []string{opts.URL}, []config.RefSpec{spec}
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("set origin to %s: %w", opts.URL, err)
	}
	return nil
}

// BranchNotFoundError is the error of Open and Sync with
// Options.BranchMustExist when the remote has no such branch.
type BranchNotFoundError struct {
	// Branch is Options.Branch; URL is the remote's.
	Branch, URL string
	// Empty is true when the remote has no branch at all.
	Empty bool
	// Branches are the remote's branches, those with the fewest slashes
	// first (its own, such as main, before namespaced ones such as
	// gitpeer/applied/<cluster>), then by name; nil when they could not be
	// listed.
	Branches []string
}

// maxListedBranches is how many of the remote's branches a
// BranchNotFoundError names.
const maxListedBranches = 5

func (e *BranchNotFoundError) Error() string {
	msg := fmt.Sprintf("branch %q does not exist on %s", e.Branch, e.URL)
	switch {
	case e.Empty:
		return msg + ": the remote has no branches yet"
	case len(e.Branches) == 0:
		return msg
	}
	names := e.Branches
	if len(names) > maxListedBranches {
		names = append(slices.Clip(names[:maxListedBranches]), fmt.Sprintf("and %d more", len(e.Branches)-maxListedBranches))
	}
	return fmt.Sprintf("%s (its branches: %s)", msg, strings.Join(names, ", "))
}

// branchNotFound is the error for a remote without opts.Branch (empty: it
// has no refs at all). Listing the remote's branches costs one more round
// trip, on this error path only; when it fails the error names none.
func (r *Repo) branchNotFound(ctx context.Context, empty bool) error {
	e := &BranchNotFoundError{Branch: r.opts.Branch, URL: r.opts.URL, Empty: empty}
	if empty {
		return e
	}
	remote, err := r.repo.Remote("origin")
	if err != nil {
		return e
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: r.auth, CABundle: r.caBundle})
	if err != nil {
		return e
	}
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			e.Branches = append(e.Branches, ref.Name().Short())
		}
	}
	slices.SortFunc(e.Branches, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return e
}

// trackingSpec maps the remote branch to its remote-tracking ref. It is
// forced ("+") because the tracking ref must follow the remote whatever
// happened there; the local branch itself is never force-pushed.
func trackingSpec(branch string) config.RefSpec {
	return config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", branch, branch))
}

// InitBare creates a bare repository at path whose HEAD points at
// refs/heads/<branch> (default "main"; go-git would otherwise say master), so
// that a clone of it checks out that branch. It fails if path already holds a
// repository.
func InitBare(path, branch string) error {
	if branch == "" {
		branch = DefaultBranch
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("init bare %s: branch %q: %w", path, branch, err)
	}
	_, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: ref},
	})
	if err != nil {
		return fmt.Errorf("init bare %s: %w", path, err)
	}
	return nil
}

// ErrNotEmpty is returned by Seed when the remote branch already has commits.
var ErrNotEmpty = errors.New("remote branch already has commits")

// Seed makes the first commit of opts.Branch on opts.URL, holding files
// (slash-separated paths) with message, and returns its hash. It refuses with
// ErrNotEmpty when the branch already has commits, so a demo or an init never
// overwrites a live repo. opts.Dir may be empty: a temporary clone is used and
// removed. Files are checked by guard.Check like any other write.
func Seed(ctx context.Context, opts Options, files map[string][]byte, message string) (string, error) {
	if len(files) == 0 {
		return "", errors.New("seed: no files")
	}
	if opts.Dir == "" {
		tmp, err := os.MkdirTemp("", "gitpeer-seed-")
		if err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		defer os.RemoveAll(tmp)
		opts.Dir = tmp
	}
	r, err := Open(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	res, err := r.SyncTree(ctx, func(_ context.Context, tip *TreeFS) (*Change, error) {
		if entries, err := tip.ReadDir("."); err != nil {
			return nil, err
		} else if len(entries) > 0 {
			return nil, ErrNotEmpty
		}
		// The seed owns every path: a concurrent seed (or anything) that
		// wins the race makes the retry fail instead of committing on top.
		return &Change{Writes: files, Message: message, Owns: func(string) bool { return true }}, nil
	})
	if errors.Is(err, ErrForeignWrite) {
		err = ErrNotEmpty
	}
	if err != nil {
		return "", fmt.Errorf("seed %s: %w", opts.URL, err)
	}
	return res.Commit, nil
}

// ReadFiles returns the content of every regular file of fsys by
// slash-separated path, skipping .git directories and symlinks: the files
// argument of Seed for a directory (os.DirFS) or an embedded example repo
// (embed.FS, after fs.Sub).
func ReadFiles(fsys fs.FS) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case !d.Type().IsRegular():
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files[p] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read files: %w", err)
	}
	return files, nil
}
