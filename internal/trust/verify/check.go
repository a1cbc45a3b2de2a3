package verify

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/schema"
)

// SignatureVerifier checks the SSH or OpenPGP signature of commit c against
// the cluster keys known before it (cluster ID → public key) and returns
// the cluster ID whose key made it. commitsig.Verify is the one verify uses
// unless Options names another.
type SignatureVerifier func(c *object.Commit, keys map[string]crypto.PublicKey) (principal string, err error)

// Options select what Check and CheckTree look at beyond Tree.
type Options struct {
	// Now is the time certificates are checked at; zero means time.Now().
	Now time.Time
	// RequireManifests makes every file of a writer's directory without a
	// manifest.yaml a finding, in the tree and in each commit that changes
	// it. A directory that carries a manifest is checked either way, and a
	// commit deleting a manifest from a directory that keeps files is always
	// a finding.
	RequireManifests bool
	// History also scans every blob of every commit reachable from any ref
	// for private material (guard.ScanHistory), whatever Base says.
	History bool
	// Base, when set, limits the commit checks (signed changes, key
	// continuity, commit signatures) to the commits reachable from HEAD but
	// not from Base, a revision such as a branch, tag or hash: what a pull
	// request adds. The commits before it still tell which keys were known.
	// Check (not CheckTree) also limits the tree checks to what the change
	// touched and what depends on it (see Scope), unless Full.
	Base string
	// Full, with Base, runs the tree checks on the whole tree: the commit
	// checks still judge only the commits since Base.
	Full bool
	// OnScope, when set, is told what Check with Base checked of the tree,
	// before the checks run.
	OnScope func(Scope)
	// Ref, when set, is the revision (branch, tag, hash) of the repository
	// whose committed tree Check checks and from which History walks the
	// commits; "" means HEAD. A directory that is not a repository takes
	// none.
	Ref string
	// SignatureVerifier checks the commits that carry an SSH or OpenPGP
	// signature; nil means commitsig.Verify. A signature made with a key no
	// cluster published (a maintainer's) is not a finding whatever it says:
	// the commit is judged as an unsigned one, and so is an OpenPGP
	// signature that cannot be read (people sign with tools of all ages).
	// One that names a cluster's key but does not verify, or an SSH
	// signature that cannot be read, is a BadCommitSignature.
	SignatureVerifier SignatureVerifier

	// BaseSpec is the spec at Base (see grants), when the caller has read
	// it already (bounded, as the CLI reads specs); nil: Check reads it.
	BaseSpec *schema.Spec
	// ParseSpec parses a spec Check reads from a commit of the history
	// (see PeeringNotInSpec); nil means schema.Parse. The CLI bounds it
	// as it bounds the spec it checks.
	ParseSpec func(file string, data []byte) (*schema.Spec, error)
	// OnApplied, when set, is told which applied branches (refs of
	// gitpeer/applied/<id>, local or remote-tracking) the commit checks
	// found and judged, once, before they are judged; never without any,
	// nor with Base.
	OnApplied func(refs []string)

	// Checkpoint, when set, is a checkpoint a previous run of the same
	// checks recorded (see Checkpoint; the caller compares its Options
	// digest): Check judges only the commits since its commit and checks
	// of the tree only what they changed and what depends on it, as with
	// Base (the grants are judged against the spec checked alone, and
	// the applied branches are judged), if its repository is this one
	// and its commit is the commit checked or an ancestor. Otherwise it
	// checks everything (OnNote says why), and a commit that is not in
	// the checked history (a rewrite since) is a CheckpointNotAncestor
	// finding. Not with Base.
	Checkpoint *Checkpoint
	// OnNote, when set, is told, in a sentence for a person, why Check
	// did not run from Options.Checkpoint.
	OnNote func(string)
	// OnCheckpoint, when set, is given the checkpoint of the commit
	// checked (Options left empty, for the caller's digest) once the
	// checks ran: the caller records it only after a run with no failing
	// finding. Not called with Base, outside a Git repository, or in a
	// shallow clone.
	OnCheckpoint func(*Checkpoint)

	// fromCheckpoint is the checkpoint Base was set from (see Checkpoint).
	fromCheckpoint *Checkpoint
	// expiry, when set, keeps the earliest expiry of the certificates the
	// tree's checks found valid.
	expiry *expiry
}

func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// ErrNotRepository means Check was asked for history checks (History or
// Base) of a directory that is not a Git repository.
var ErrNotRepository = errors.New("not a Git repository")

// CheckTree runs Tree's checks and, as Flux would see the tree: every
// writer's directory against its signed manifest (verified with the key the
// writer publishes in its cluster.yaml), each cluster's kustomization built
// with kustomize on that cluster's own tree alone, its objects compared with
// what gitpeer renders, and the whole tree (not only clusters/) for private
// material, and the files that make a checkout differ from the committed
// tree (.gitattributes rules on peering paths, .sourceignore, submodules,
// symbolic links). Findings are sorted by file; nil means every check
// holds.
func CheckTree(tree fs.FS, spec *schema.Spec, opts Options) []Finding {
	findings, _ := checkTree(tree, spec, opts, guard.NewCache(), nil, nil)
	return findings
}

// checkTree is CheckTree with the guard's answers kept in cache, for the
// history scan that follows to reuse, the manifests that verified looked up
// in verified (nil: none), on what scope covers (nil: the whole tree). It
// also returns the rendered files that are objects of a peering the spec
// does not hold, for the history to judge (see unheldObject).
func checkTree(tree fs.FS, spec *schema.Spec, opts Options, cache *guard.Cache, verified *dirmanifest.Cache, scope *treeScope) ([]Finding, []unheldObject) {
	v := newVerifier(tree, spec, opts.now())
	if opts.fromCheckpoint == nil {
		// A checkpoint is not a pull request's base: a grant the
		// spec withdrew since is a finding, as the full check's.
		v.baseSpec = opts.BaseSpec
	}
	v.expiry = opts.expiry
	v.guard = cache
	v.verified = verified
	v.scope = scope
	v.run()
	v.privateMaterial()
	v.manifests(opts.RequireManifests)
	v.builds()
	v.checkoutFiles()
	return v.sorted(), v.unheld
}

// Check runs every check on the repository at dir: CheckTree and, when dir
// is a Git repository, the commit checks over its history (see History; both
// at once), then, with opts.History, the scan of every commit for private
// material. With opts.Base (and not opts.Full), the tree checks cover only
// what the commits since Base changed and what depends on it (see Scope;
// opts.OnScope is told which), so that a pull request's check costs what
// its change does. A Git repository's tree is the commit opts.Ref names (HEAD by
// default) read from Git objects, as the reconcilers read it, never the
// worktree (which .gitattributes and filters may rewrite); a directory that
// is not a repository is read as it stands. In a repository, a rendered
// object of a peering the spec does not hold, other than what a revocation
// renders, is judged by the spec of the commit that wrote it
// (PeeringNotInSpec; see notInSpec). Tree findings come first, sorted by
// file, then commit findings oldest first, then PeeringNotInSpec.
// An error means the checks could not run (unreadable repository, unknown
// Base); findings are never errors.
func Check(dir string, spec *schema.Spec, opts Options) ([]Finding, error) {
	if opts.Base == "" && (opts.Checkpoint != nil || opts.OnCheckpoint != nil) {
		if _, done, err := gitobj.OpenHistory(dir); err == nil {
			done()
			return checkCheckpointed(dir, spec, opts)
		}
	}
	r, err := check(dir, spec, opts)
	if err != nil {
		return nil, err
	}
	return r.findings, nil
}

// checked is what check found: the findings, and for a Git repository
// the history walked (nil: no commit), the tree checked and the re-pins
// carried from a checkpoint (see carriedRepins).
type checked struct {
	findings []Finding
	h        *history
	tree     fs.FS
	carried  []Finding
}

// checkCheckpointed is Check in a Git repository with Options.Checkpoint
// or OnCheckpoint.
func checkCheckpointed(dir string, spec *schema.Spec, opts Options) ([]Finding, error) {
	ct, err := gitobj.OpenCommitTree(dir, opts.Ref)
	if err != nil {
		return nil, err // names the revision
	}
	head := plumbing.NewHash(ct.Commit)
	ct.Close()
	cp := opts.Checkpoint
	var at string
	if cp != nil {
		at = cp.Commit
	}
	lin, err := lineageOf(dir, head, at)
	if err != nil {
		return nil, err
	}
	from, note, finding := useCheckpoint(cp, lin, head, opts.now())
	o := opts
	o.Checkpoint, o.OnCheckpoint, o.Ref = nil, nil, head.String()
	if opts.OnCheckpoint != nil {
		o.expiry = &expiry{}
	}
	if from != "" {
		o.Base, o.fromCheckpoint = from, cp
	}
	// The scope is told once the run from the checkpoint held: a run
	// that had to check everything has none.
	var scope *Scope
	o.OnScope = func(s Scope) { scope = &s }
	r, err := check(dir, spec, o)
	if errors.Is(err, errNeedsFullHistory) {
		scope = nil
		note = "an applied branch's seal is older than the checkpoint and does not hold the tree checked: whether it is stale is the whole history's, so everything was checked"
		o.Base, o.fromCheckpoint = "", nil
		if o.expiry != nil {
			o.expiry = &expiry{}
		}
		r, err = check(dir, spec, o)
	}
	if err != nil {
		return nil, err
	}
	if scope != nil && opts.OnScope != nil {
		opts.OnScope(*scope)
	}
	if note != "" && opts.OnNote != nil {
		opts.OnNote(note)
	}
	findings := r.findings
	if finding != nil {
		findings = append([]Finding{*finding}, findings...)
	}
	if opts.OnCheckpoint != nil && !lin.shallow && len(lin.roots) > 0 {
		next := &Checkpoint{APIVersion: layout.APIVersion, Kind: CheckpointKind, Repository: lin.roots, Commit: head.String()}
		var kept *time.Time
		if o.fromCheckpoint != nil {
			kept = o.fromCheckpoint.ValidUntil
		}
		next.ValidUntil = o.expiry.earliest(kept)
		next.Repinned = repinnedOf(r.h, r.carried, o.fromCheckpoint, r.tree, spec)
		opts.OnCheckpoint(next)
	}
	return findings, nil
}

// check is Check without a checkpoint of its own to judge (opts.Base may
// be a checkpoint's: opts.fromCheckpoint).
func check(dir string, spec *schema.Spec, opts Options) (*checked, error) {
	_, done, err := gitobj.OpenHistory(dir)
	if err == nil {
		done()
	}
	repo := true
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		if opts.History || opts.Base != "" || opts.Ref != "" {
			return nil, fmt.Errorf("%s: %w: --history, --base and --ref need one", dir, ErrNotRepository)
		}
		repo = false
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	// The commit checks read only Git's objects, on one goroutine: they run
	// while the tree is checked.
	type result struct {
		findings []Finding
		h        *history
		err      error
	}
	commits := make(chan result, 1)
	// The manifests History verifies, the tip's among them, are not
	// parsed and verified again by the tree's checks (same bytes, same
	// key: see dirmanifest.Cache).
	verified := dirmanifest.NewCache()
	var tree fs.FS = layout.NewSnapshotTree(dir)
	if repo {
		ct, err := gitobj.OpenCommitTree(dir, opts.Ref)
		if err != nil {
			return nil, err // names the revision
		}
		defer ct.Close()
		// History walks from the very commit checked, should the ref
		// move meanwhile.
		tree, opts.Ref = newBlobCachedTree(ct.TreeFS), ct.Commit
		go func() {
			f, h, err := historyWith(dir, opts, verified, true)
			commits <- result{f, h, err}
		}()
	}
	// The tree's files are inspected for private material once: the
	// history scan finds their answers in the cache.
	cache := guard.NewCache()
	if repo && opts.Base != "" && opts.BaseSpec == nil {
		opts.BaseSpec = loadBaseSpec(dir, opts.Base, opts.ParseSpec, tree, spec)
	}
	var scope *treeScope
	if repo && opts.Base != "" {
		report := Scope{Base: opts.Base, All: true, Why: "--full was given", Of: clusterCount(tree, spec)}
		if !opts.Full {
			var err error
			if scope, report, err = scopeOf(dir, tree, spec, opts); err != nil {
				if r := <-commits; r.err != nil {
					return nil, r.err // History names an unknown Base best
				}
				return nil, err
			}
		}
		report.Checkpoint = opts.fromCheckpoint != nil
		if opts.OnScope != nil {
			opts.OnScope(report)
		}
	}
	findings, unheld := checkTree(tree, spec, opts, cache, verified, scope)
	if !repo {
		return &checked{findings: findings}, nil
	}
	r := <-commits
	if r.err != nil {
		return nil, r.err
	}
	out := &checked{h: r.h, tree: tree}
	if r.h != nil {
		r.h.resolveRepinned(tree, spec)
		r.findings = r.h.findings
		if opts.fromCheckpoint != nil {
			out.carried = r.h.carriedRepins(tree, spec, opts.fromCheckpoint)
			r.findings = append(slices.Clip(out.carried), r.findings...)
		}
	}
	if err := resolveRotation(dir, plumbing.NewHash(opts.Ref), tree, spec, opts, findings); err != nil {
		return nil, err
	}
	findings = append(findings, r.findings...)
	if len(unheld) > 0 {
		f, err := notInSpec(dir, tree, spec, opts, unheld, r.h.rendered)
		if err != nil {
			return nil, err
		}
		findings = append(findings, f...)
	}
	if opts.History {
		leaks, err := guard.ScanHistoryCached(dir, cache)
		if err != nil {
			return nil, err
		}
		for _, l := range leaks {
			findings = append(findings, Finding{File: l.Path, Reason: reasons.PrivateMaterial, Message: "private material in history: " + l.Reason, Commit: l.Commit})
		}
	}
	out.findings = findings
	return out, nil
}
