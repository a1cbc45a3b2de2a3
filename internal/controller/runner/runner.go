// Package runner drives one cluster's reconciler against a peering repo: a
// pass fetches the remote tip, loads and validates the spec, runs
// reconcile.Pass, commits the difference and pushes it (re-applying the same
// change on a new tip when the push is rejected), then applies the pass's
// local effects (kubeconfigs) once the commit has landed.
package runner

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/crashpoint"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// Runner is one cluster's reconciler.
type Runner struct {
	Repo    *gitsync.Repo
	Backend backend.Backend
	// Now is the clock passes run at; time.Now by default.
	Now func() time.Time
	// CertificateLifetime is passed to reconcile.Input.
	CertificateLifetime time.Duration
	// LiqoClusterRoles is passed to reconcile.Input.
	LiqoClusterRoles bool
	// LoadSpec parses and validates the spec file the pass found at the
	// tip (file is its path in the checkout, for positions in errors; data
	// its bytes from the commit), e.g. with schema.ParseBounded; nil:
	// schema.Parse, in this process and unbounded.
	LoadSpec func(ctx context.Context, file string, data []byte) (*schema.Spec, error)
	// KeyRolloverWait is how long a staged key is announced at least
	// before it is promoted (a backend.FluxTruster also waits for Flux to
	// trust it); zero: DefaultKeyRolloverWait; negative
	// (NoKeyRolloverWait): none.
	KeyRolloverWait time.Duration
	// Fetched, when set, is called each time a pass has fetched the remote
	// tip and starts computing on it (once per pass; with a review branch,
	// once per push attempt): a daemon's readiness.
	Fetched func()

	specs     specCache
	cacheOnce sync.Once
	cache     *reconcile.Cache // checks on unchanged input, kept across passes
	self      selfWrites       // its own commits, to tell a second writer
}

// Result is what one pass did.
type Result struct {
	gitsync.Result
	Steps []string
	// Output is the pass computed on the tip it read. A rejected push
	// re-applies the same change on the new tip (gitsync.Sync), so it is
	// also what was pushed.
	Output *reconcile.Output
	// Kubeconfigs are the files written for verified Identities, by provider.
	Kubeconfigs map[string]string
	// Stuck is what a revocation left being deleted for too long
	// (backend.StuckReporter), or why that could not be checked.
	Stuck []backend.Stuck
	// KeyRollover says where a rollover of the cluster key stands: what
	// the switch to the staged key waits for, or that this pass made it;
	// "" when no key is staged.
	KeyRollover string
	// AwaitingMerge are the providers whose verified Identity this pass
	// proposed for review and did not seal: their kubeconfig is stored
	// once the proposal is merged, when the cluster applies the Identity.
	AwaitingMerge []string
	// Source is where the cluster's GitOps source is pinned to Applied,
	// the newest seal (backend.SourcePinner): "GitRepository
	// flux-system/gitpeer-<id>" say; "" when the backend pins nothing.
	Source string
}

// Pass runs one pass. Errors name what failed: the spec (with its
// file:line:col problems), the cluster's own state, or Git. When the Git
// part fails, the Result is not nil: it reports the push attempts made.
func (r *Runner) Pass(ctx context.Context) (*Result, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	res := &Result{Kubeconfigs: map[string]string{}}
	r.cacheOnce.Do(func() { r.cache = reconcile.NewCache() })
	stored, err := r.Backend.LoadPins(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: pins: %w", r.Backend.ClusterID(), err)
	}
	// Before anything else, and whatever the rest of the pass does: the
	// cluster stays on the newest seal its reconciler made, wherever a
	// writer moved the applied branch (the Sync points the branch back
	// there too, before its pass). A failure here is reported once the
	// pass is over: it must not keep the pass from sealing.
	_, pinErr := r.pinSource(ctx, stored.Seal)
	var (
		next   *backend.NextKey
		sealed map[string][]byte // what the pass's seal holds
	)
	// The pass reads the tip from Git objects, never the worktree: what it
	// sees is the commit, and reading it costs what the pass reads.
	gres, err := r.Repo.SyncTree(ctx, func(ctx context.Context, tree *gitsync.TreeFS) (*gitsync.Change, error) {
		if r.Fetched != nil {
			r.Fetched()
		}
		// Before anything is computed (a nonce issued, pins saved): a
		// second writer of this cluster is named, not fought.
		if err := r.self.check(r.Repo.Head(), r.Repo.Branch(), r.Backend.ClusterID(), r.Repo.SignedBySelf); err != nil {
			return nil, err
		}
		spec, err := r.loadSpec(ctx, tree)
		if err != nil {
			return nil, err
		}
		// A switch of keys happens here, on the tip it is decided on and
		// before anything is signed: the rest of the pass, its commit and
		// its seal are made with the key it promotes.
		var note string
		var proposal *backend.NextKey
		if next, proposal, note, err = r.rollover(ctx, tree, now()); err != nil {
			return nil, err
		}
		if note != "" { // a retry on a new tip after the switch has none
			res.KeyRollover = note
		}
		b, stagedKey := r.Backend, staged(next)
		if proposal != nil {
			// The switch as it will be once merged; Flux keeps trusting
			// the key in force beside the new one until then.
			b, stagedKey = switching{Backend: r.Backend, next: proposal, prev: r.Backend.Signer()}, r.Backend.Signer()
		}
		out, plan, err := Compute(ctx, reconcile.Input{
			Spec: spec, Tree: tree, Backend: b, Now: now(), CertificateLifetime: r.CertificateLifetime,
			LiqoClusterRoles: r.LiqoClusterRoles, Pins: stored, Cache: r.cache,
			Pending: r.Repo.Pending(), StagedKey: stagedKey,
		}, r.Repo.SignatureFormat())
		if err != nil {
			return nil, err
		}
		if proposal != nil {
			// What would reach the shared branch unreviewed (handshake
			// artifacts, with --review-scope applied) is signed by the new
			// key, which the shared branch does not publish yet: it waits
			// for the merge with the rest.
			plan.Writes, plan.Deletes = reviewedOnly(r.Repo, plan.Writes, plan.Deletes)
		}
		// Pins first, then the push: an epoch issued or a sequence seen is
		// remembered even if the push is lost, never the other way round.
		current, err := r.Backend.LoadPins(ctx)
		if err != nil {
			return nil, fmt.Errorf("pins: %w", err)
		}
		out.Pins.KeepRequests(stored, current)
		if err := r.Backend.SavePins(ctx, out.Pins); err != nil {
			return nil, fmt.Errorf("save pins: %w", err)
		}
		// After the save: the count is what the next process reads.
		if err := foreignWriter(r.Backend.ClusterID(), out); err != nil {
			return nil, err
		}
		crashpoint.Reached(crashpoint.PinsSaved)
		res.Output, res.Steps = out, reconcile.StepTexts(plan.Steps)
		self := r.Backend.ClusterID()
		seal, err := sealFiles(self, out.Files, layout.Capped(tree), r.Repo.Sealed(), r.Repo.Reviewed(layout.ClusterPath(self, layout.KustomizationFile)))
		if err != nil {
			return nil, err
		}
		sealed = seal
		return &gitsync.Change{Writes: plan.Writes, Deletes: plan.Deletes, Message: plan.Message, Guard: r.cache.Guard(), Seal: seal,
			// What the pass owns is what it recomputes: a push that lost
			// to a change of any of it is not re-applied over that.
			Owns: func(p string) bool { return layout.Writable(self, p) }}, nil
	})
	// Even when the Sync failed after its push (the applied branch): the
	// commit is this Runner's.
	r.self.pushed(gres.Commit)
	r.self.proposed(gres.Proposed)
	if gres.Sealed {
		r.self.sealed(gres.Applied)
	}
	if err != nil {
		return &Result{Result: gres}, fmt.Errorf("cluster %s: %w", r.Backend.ClusterID(), err)
	}
	res.Result = gres
	crashpoint.Reached(crashpoint.Applied)
	if gres.Applied != "" {
		res.Source, pinErr = r.pinSource(ctx, gres.Applied)
	}
	if pinErr != nil {
		return nil, fmt.Errorf("cluster %s: %w", r.Backend.ClusterID(), pinErr)
	}
	// The staged key is announced once the applied branch holds a tree
	// that trusts it: the pass changed nothing that awaits review.
	if next != nil && next.Announced.IsZero() && gres.Proposed == "" && gres.Applied != "" && gres.AppliedHeld == "" {
		if err := r.Backend.MarkAnnounced(ctx, now()); err != nil {
			return nil, fmt.Errorf("cluster %s: key rollover: %w", r.Backend.ClusterID(), err)
		}
	}
	if gres.Commit == "" && gres.Proposed == "" {
		res.Steps = nil
	}
	for _, id := range res.Output.Identities {
		provider := string(id.Spec.ClusterID)
		if !appliesIdentity(r.Backend.ClusterID(), provider, res.Output, sealed) {
			// Under review: the Identity is proposed, not merged. The
			// backend acts on what the cluster applies, as its engine does.
			res.AwaitingMerge = append(res.AwaitingMerge, provider)
			continue
		}
		where, err := r.Backend.StoreKubeconfig(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: kubeconfig for %s: %w", r.Backend.ClusterID(), id.Spec.ClusterID, err)
		}
		res.Kubeconfigs[string(id.Spec.ClusterID)] = where
	}
	for _, provider := range res.Output.Revoked {
		if err := r.Backend.RemoveKubeconfig(ctx, provider); err != nil {
			return nil, fmt.Errorf("cluster %s: remove kubeconfig for %s: %w", r.Backend.ClusterID(), provider, err)
		}
	}
	if sr, ok := r.Backend.(backend.StuckReporter); ok {
		// What the cluster shows is reported, never a reason to fail a
		// pass whose commit landed.
		stuck, err := sr.Stuck(ctx, now())
		if err != nil {
			stuck = []backend.Stuck{{Object: "namespaces", Message: fmt.Sprintf("cannot check for tenant namespaces left terminating: %v", err)}}
		}
		res.Stuck = stuck
	}
	return res, nil
}

// appliesIdentity reports whether the seal of a pass (sealed) holds the
// control-plane Identity from provider exactly as the pass rendered it
// (out): without review it always does; with review, once the proposal
// that brought it is merged.
func appliesIdentity(self, provider string, out *reconcile.Output, sealed map[string][]byte) bool {
	if sealed == nil {
		return true
	}
	for name, o := range out.Rendered {
		if o.Peer != provider || o.Kind != "Identity" || o.Slice != "" {
			continue
		}
		if data, ok := sealed[name]; ok && bytes.Equal(data, out.Files[name]) {
			return true
		}
	}
	return false
}

// pinSource points the cluster's GitOps source at seal when the backend
// can (backend.SourcePinner) and seal is set; it returns where.
func (r *Runner) pinSource(ctx context.Context, seal string) (string, error) {
	p, ok := r.Backend.(backend.SourcePinner)
	if !ok || seal == "" {
		return "", nil
	}
	where, err := p.PinSource(ctx, seal)
	if err != nil {
		return "", fmt.Errorf("pin the cluster's GitOps source to seal %s: %w", seal, err)
	}
	return where, nil
}

// loadSpec finds the spec file at the root of tree, named by its path in
// the repo (the clone has no worktree to name a file of), and evaluates it
// (LoadSpec) unless the cache (in memory, or in the clone for the next
// process) holds its bytes.
func (r *Runner) loadSpec(ctx context.Context, tree fs.FS) (*schema.Spec, error) {
	file, data, err := schema.FindSpec(tree, "")
	if err != nil {
		return nil, err
	}
	return r.specs.load(ctx, r.Repo.CacheFile("spec"), file, data, func(ctx context.Context, file string, data []byte) (*schema.Spec, error) {
		if r.LoadSpec != nil {
			return r.LoadSpec(ctx, file, data)
		}
		return schema.Parse(file, data)
	})
}

// staged is the signer of a key the pass announces, nil for none.
func staged(next *backend.NextKey) crypto.Signer {
	if next == nil {
		return nil
	}
	return next.Signer
}

// reviewedOnly keeps of writes and deletes the paths whose change repo
// proposes for review.
func reviewedOnly(repo *gitsync.Repo, writes map[string][]byte, deletes []string) (map[string][]byte, []string) {
	kept := make(map[string][]byte, len(writes))
	for p, data := range writes {
		if repo.Reviewed(p) {
			kept[p] = data
		}
	}
	var del []string
	for _, p := range deletes {
		if repo.Reviewed(p) {
			del = append(del, p)
		}
	}
	return kept, del
}
