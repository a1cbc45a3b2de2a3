package verify

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// The applied branches (docs/trust.md, "What each cluster applies"): each
// cluster's GitOps engine applies the head of gitpeer/applied/<id>, a seal:
// a commit signed by <id> whose tree is clusters/<id>/ less its inbox, as
// its reconciler computed it from the commit of the checked branch that is
// the seal's only parent. A signature says who made a seal, not when: a
// writer who can push the branch can point it back at an older seal. What
// the repository shows of that, offline, is a change <id>'s reconciler
// signed on the branch after the seal's parent, which the seal does not
// hold and the branch still does: without review branches a pass seals in
// the same Sync as it commits, so a newer seal was made (or is being
// pushed); with review branches, the next pass after a merge seals it.

// pathBlob is a path and its blob in some commit (zero: no file there).
type pathBlob struct {
	path string
	blob plumbing.Hash
}

// appliedRef is a ref of an applied branch found in the repository.
type appliedRef struct {
	id    string // the cluster
	name  string // as git names it short: gitpeer/applied/<id>, origin/gitpeer/applied/<id>
	local bool   // a branch, not a remote-tracking ref
	hash  plumbing.Hash
}

// appliedRefs lists the applied branches the repository holds, local
// (refs/heads/gitpeer/applied/<id>: a bare or mirror clone) first, then
// remote-tracking (refs/remotes/<remote>/gitpeer/applied/<id>: a clone that
// fetched them), each by name; a ref pointing where one listed before of
// the same cluster points is left out.
func (h *history) appliedRefs() ([]appliedRef, error) {
	iter, err := h.repo.References()
	if err != nil {
		return nil, err
	}
	var out []appliedRef
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		name := r.Name().String()
		ref := appliedRef{hash: r.Hash()}
		branch, local := strings.CutPrefix(name, "refs/heads/")
		if !local {
			rest, ok := strings.CutPrefix(name, "refs/remotes/")
			remote, b, ok2 := strings.Cut(rest, "/")
			if !ok || !ok2 || remote == "" {
				return nil
			}
			branch = b
		}
		id, ok := strings.CutPrefix(branch, layout.AppliedBranchPrefix)
		if !ok || id == "" || strings.Contains(id, "/") {
			return nil
		}
		ref.id, ref.local = id, local
		ref.name = strings.TrimPrefix(strings.TrimPrefix(name, "refs/heads/"), "refs/remotes/")
		out = append(out, ref)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].local != out[j].local {
			return out[i].local
		}
		return out[i].name < out[j].name
	})
	type seenKey struct {
		id   string
		hash plumbing.Hash
	}
	seen := map[seenKey]bool{}
	kept := out[:0]
	for _, r := range out {
		if k := (seenKey{r.id, r.hash}); !seen[k] {
			seen[k] = true
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// applied checks every applied branch the repository holds against the
// history walked (order, parents before children, the checked commit last;
// st what is known at it): its head must be a seal of its cluster (signed
// by the key the cluster publishes at the checked commit or at the seal's
// parent, one parent, a tree of clusters/<id>/ alone less its inbox, no
// dot-file, link or submodule: InvalidSeal) and not older than a change the
// cluster signed since (StaleSeal). A branch of a cluster that publishes no
// key in the checked history is not judged, nor the freshness of a seal
// whose parent the history does not hold (a seal of a newer commit than
// the one checked, or of another branch).
func (h *history) applied(order []*node, st *known) error {
	refs, err := h.appliedRefs()
	if err != nil || len(refs) == 0 {
		return err
	}
	if h.opts.OnApplied != nil {
		names := make([]string, len(refs))
		for i, r := range refs {
			names[i] = r.name
		}
		h.opts.OnApplied(names)
	}
	head := order[len(order)-1].c
	index := make(map[plumbing.Hash]int, len(order))
	for i, n := range order {
		index[n.c.Hash] = i
	}
	for _, r := range refs {
		if err := h.judgeApplied(r, order, index, head, st); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

// judgeApplied is applied for one ref.
func (h *history) judgeApplied(r appliedRef, order []*node, index map[plumbing.Hash]int, head *object.Commit, st *known) error {
	add := func(reason, format string, a ...any) {
		h.findings = append(h.findings, Finding{File: r.name, Reason: reason, Message: fmt.Sprintf(format, a...), Commit: r.hash.String()})
	}
	keys := map[string]crypto.PublicKey{}
	if id := st.identities[r.id]; id != nil {
		keys[r.id] = id.pub
	}
	seal, err := h.repo.CommitObject(r.hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if len(keys) > 0 {
			add(reasons.InvalidSeal, "points at %s, which is not a commit this clone holds: %s's engine applies nothing from it", shortHash(r.hash.String()), r.id)
		}
		return nil
	}
	if err != nil {
		return err
	}
	var parent plumbing.Hash
	if len(seal.ParentHashes) == 1 {
		parent = seal.ParentHashes[0]
		// The key the cluster published where the seal was computed
		// (a seal made just before a key switch landed).
		if pt, err := h.repo.CommitObject(parent); err == nil {
			if tree, err := pt.Tree(); err == nil {
				if e, err := tree.FindEntry(layout.ClusterPath(r.id, layout.ClusterFile)); err == nil {
					id, err := h.identity(r.id, e.Hash)
					if err != nil {
						return err
					}
					if id != nil && (keys[r.id] == nil || !sameKey(keys[r.id], id.pub)) {
						keys[r.id+" (at the seal's parent)"] = id.pub
					}
				}
			}
		}
	}
	if len(keys) == 0 {
		return nil // not published in the history checked: nothing to check it with
	}
	if _, err := commitsig.Verify(seal, keys); err != nil {
		add(reasons.InvalidSeal, "head %s is not signed by %s's key (%v): %s's engine, which verifies the head, applies nothing new until %s's reconciler restores its newest seal at its next pass",
			shortHash(seal.Hash.String()), r.id, err, r.id, r.id)
		return nil
	}
	if len(seal.ParentHashes) != 1 {
		add(reasons.InvalidSeal, "head %s has %d parents: a seal has exactly one, the commit it was computed from", shortHash(seal.Hash.String()), len(seal.ParentHashes))
		return nil
	}
	if bad, err := h.sealShape(seal.TreeHash, r.id); err != nil {
		return err
	} else if bad != "" {
		add(reasons.InvalidSeal, "head %s, signed by %s, holds %s: a seal holds clusters/%s/ alone, less its inbox, with no dot-file, link or submodule, and %s's engine applies whatever it holds",
			shortHash(seal.Hash.String()), r.id, bad, r.id, r.id)
		return nil
	}
	if _, ok := index[parent]; !ok || h.signed == nil {
		return nil // computed from a commit the history checked does not hold
	}
	newer, file, named, err := h.newerSigned(r.id, seal, parent, order, index, head)
	if err != nil || newer == nil {
		return err
	}
	if named {
		h.findings = append(h.findings, Finding{
			File: r.name, Reason: reasons.StaleSeal, Commit: r.hash.String(),
			Message: fmt.Sprintf("head %s is %s's seal of %s, and %s's commit %s changed %s after it: %s applies the state before that change",
				shortHash(seal.Hash.String()), r.id, shortHash(parent.String()), r.id, shortHash(newer.Hash.String()), file, r.id),
			Resolved: &Resolution{
				Reason: ResolutionSealPending,
				Message: fmt.Sprintf("every commit %s signed since names this seal as the one in force (%s): the branch is where %s's reconciler left it, and its next pass seals the change (with review branches, its first pass after the merge)",
					r.id, trailer.Applied, r.id),
				Commit: newer.Hash.String(),
			},
		})
		return nil
	}
	add(reasons.StaleSeal, "head %s is %s's seal of %s, older than %s's commit %s, which changed %s after it: %s applies a state its reconciler has replaced, or will have once this seal is pushed (a writer moved the branch back to an old seal, or %s's reconciler pushed to the branch checked and has not pushed its seal yet). %s's reconciler restores its newest seal at its next pass; with review branches (--push-branch), it seals a merged change at its first pass after the merge",
		shortHash(seal.Hash.String()), r.id, shortHash(parent.String()), r.id, shortHash(newer.Hash.String()), file, r.id, r.id, r.id)
	return nil
}

// sameKey reports whether two public keys are the same.
func sameKey(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// sealShape returns the first path of the tree t that a seal of cluster id
// may not hold ("" when none): anything but clusters/<id>/, its inbox, a
// name starting with ".", an entry other than a directory or a file of mode
// 100644.
func (h *history) sealShape(t plumbing.Hash, id string) (string, error) {
	top := layout.ClusterPath(id)
	bad := ""
	err := h.walkTree(t, "", func(p string, e object.TreeEntry) (bool, error) {
		switch {
		case p == layout.ClustersDir || p == top:
			if e.Mode != filemode.Dir {
				bad = p
			}
		case !strings.HasPrefix(p, top+"/"):
			bad = p
		case p == top+"/"+layout.InboxDir:
			bad = p
		case strings.HasPrefix(path.Base(p), "."):
			bad = p
		case e.Mode != filemode.Dir && e.Mode != filemode.Regular:
			bad = fmt.Sprintf("%s (mode %s)", p, e.Mode)
		}
		return bad == "", nil
	})
	return bad, err
}

// walkTree calls fn for every entry under tree t (prefix its path), in
// Git's order, walking into a directory when fn says so; it stops at the
// first false of fn on an entry that is not a directory as well.
func (h *history) walkTree(t plumbing.Hash, prefix string, fn func(p string, e object.TreeEntry) (bool, error)) error {
	entries, err := h.tree(t)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(prefix, e.Name)
		more, err := fn(p, e)
		if err != nil || !more {
			return err
		}
		if e.Mode == filemode.Dir {
			if err := h.walkTree(e.Hash, p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// newerSigned returns the newest commit of the history (in walk order)
// that id's key signed, that is not the seal's parent or one of its
// ancestors, not dated before the seal, and whose own change to a file of
// clusters/<id>/ (outside the inbox) still stands at head while the seal
// holds something else there; and that file. nil when there is none: the
// seal holds every change id signed since it, as far as the checked branch
// still has them. Only the files where head and the seal differ are
// looked up, so a seal that holds head's tree costs one tree comparison.
// named reports whether every change id signed to clusters/<id>/ since the
// seal's parent (standing or not) names the seal as the one in force when
// it was made (trailer.Applied, under id's signature): a change id made
// and has not sealed yet, not a seal moved back from a newer one.
func (h *history) newerSigned(id string, seal *object.Commit, parent plumbing.Hash, order []*node, index map[plumbing.Hash]int, head *object.Commit) (newest *object.Commit, file string, named bool, err error) {
	top := layout.ClusterPath(id)
	headSub, err := h.entryAt(head.TreeHash, top)
	if err != nil {
		return nil, "", false, err
	}
	sealSub, err := h.entryAt(seal.TreeHash, top)
	if err != nil {
		return nil, "", false, err
	}
	var differ []pathBlob // head's blob of each file where the seal differs
	err = gitobj.Diff(h.tree, headSub, sealSub, func(p string, from, to *object.TreeEntry) error {
		if p == layout.InboxDir {
			return fs.SkipDir
		}
		var hb, sb plumbing.Hash
		if from != nil && from.Mode != filemode.Dir {
			hb = from.Hash
		}
		if to != nil && to.Mode != filemode.Dir {
			sb = to.Hash
		}
		if hb != sb {
			differ = append(differ, pathBlob{top + "/" + p, hb})
		}
		return nil
	})
	if err != nil || len(differ) == 0 {
		return nil, "", false, err
	}
	var ancestors map[plumbing.Hash]bool // of the seal's parent, itself included: computed once needed
	// since: id's commit c is neither the seal's parent nor one of its
	// ancestors, nor dated before the seal.
	since := func(c *object.Commit) bool {
		if c.Committer.When.Before(seal.Committer.When) {
			return false
		}
		if ancestors == nil {
			ancestors = ancestorsIn(order, index, parent)
		}
		return !ancestors[c.Hash]
	}
	for _, d := range differ {
		for _, c := range h.signed[d] {
			if since(c) && (newest == nil || index[c.Hash] > index[newest.Hash]) {
				newest, file = c, d.path
			}
		}
	}
	if newest == nil {
		return nil, "", false, nil
	}
	// Every change id signed since, not only those still standing, must
	// name the seal: a proposal signed long ago, merged late over what
	// id signed after it, names an old seal too.
	for k, cs := range h.signed {
		if !strings.HasPrefix(k.path, top+"/") {
			continue
		}
		for _, c := range cs {
			if since(c) && !slices.Contains(trailer.Values(c.Message, trailer.Applied), seal.Hash.String()) {
				return newest, file, false, nil
			}
		}
	}
	return newest, file, true, nil
}

// ancestorsIn returns the commits of order that are from, or ancestors of
// from, through the parents the walk read (no object is read).
func ancestorsIn(order []*node, index map[plumbing.Hash]int, from plumbing.Hash) map[plumbing.Hash]bool {
	out := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for len(queue) > 0 {
		i, ok := index[queue[0]]
		queue = queue[1:]
		if !ok {
			continue
		}
		for _, p := range order[i].parents {
			if !out[p.Hash] {
				out[p.Hash] = true
				queue = append(queue, p.Hash)
			}
		}
	}
	return out
}

// entryAt returns the hash of the tree at directory p of tree t, zero when
// there is none (or it is not a directory).
func (h *history) entryAt(t plumbing.Hash, p string) (plumbing.Hash, error) {
	for _, name := range strings.Split(p, "/") {
		entries, err := h.tree(t)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		next := plumbing.ZeroHash
		for _, e := range entries {
			if e.Name == name && e.Mode == filemode.Dir {
				next = e.Hash
				break
			}
		}
		if next.IsZero() {
			return next, nil
		}
		t = next
	}
	return t, nil
}
