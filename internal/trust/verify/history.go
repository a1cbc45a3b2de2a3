package verify

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// History checks every commit reachable from HEAD of the repository at dir
// (or from opts.Ref; through every parent of merges; with opts.Base, only those not reachable
// from Base). A commit's own changes are the paths whose content differs
// from every parent's (all paths for a root commit), so a change is judged
// once, in the commit that made it, and an evil merge is judged on what it
// adds. For each own change in a writer's directory:
//
//   - a changed or added file must be listed with its content in the
//     directory's manifest at that commit, signed with the key the writer
//     publishes in that commit's clusters/<writer>/cluster.yaml
//     (UnsignedChange, ManifestInvalid, OwnershipViolation otherwise);
//   - a deleted file must no longer be listed there, unless the whole
//     directory went with its manifest (a withdrawal);
//   - a changed manifest must verify and not go below the highest sequence
//     seen for it before (ManifestRolledBack); a deleted one must take its
//     directory with it.
//
// Without opts.RequireManifests, changes to directories that have no
// manifest at that commit are not judged. Commit trailers play no part.
//
// Key continuity: a commit that changes a cluster.yaml's public key, API
// server or CA relative to the last one known before it (so also across a
// deletion) must carry a rotation statement signed by that previous key
// (KeyChanged). A commit carrying an SSH or OpenPGP signature that names a
// cluster's key (SSH: the key in it; OpenPGP: its issuer, the OpenPGP key
// derived from the cluster key) must verify against the cluster keys known
// before it (BadCommitSignature; see
// Options.SignatureVerifier), and a commit a cluster signed may change only
// what that cluster may write (OwnershipViolation). Unsigned commits are no
// finding by themselves.
//
// Without opts.Base, every applied branch the repository holds
// (gitpeer/applied/<id>, as a branch or a remote-tracking ref) is judged
// against the history walked: its head a seal of its cluster (InvalidSeal)
// holding every change the cluster's key signed to its tree since the
// seal's parent that the checked commit still holds (StaleSeal); those
// findings name the ref and its head (see applied).
//
// Findings name the path (none for a commit's signature) and the full commit
// hash, oldest commit first. dir may be a checkout or a bare repository. A
// commit whose parents are missing (a shallow clone) is not judged; it only
// tells what was known.
func History(dir string, opts Options) ([]Finding, error) {
	findings, _, err := historyWith(dir, opts, nil, false)
	return findings, err
}

// historyWith is History with its verified manifests looked up in, and kept
// in, verified (nil: none): Check shares one with the tree's manifest
// checks, which verify the tip's manifests History verified already. With
// rendered, the history it returns lists which commit wrote each rendered
// file (history.rendered); nil when HEAD has no commit.
func historyWith(dir string, opts Options, verified *dirmanifest.Cache, rendered bool) ([]Finding, *history, error) {
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer done()
	head, err := repo.Head()
	if opts.Ref != "" {
		var h *plumbing.Hash
		if h, err = repo.ResolveRevision(plumbing.Revision(opts.Ref)); err != nil {
			return nil, nil, fmt.Errorf("%s: revision %q does not resolve: %w", dir, opts.Ref, err)
		}
		head = plumbing.NewHashReference(plumbing.HEAD, *h)
	}
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil, nil // no commit yet
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: HEAD: %w", dir, err)
	}
	h := &history{
		repo:       repo,
		opts:       opts,
		sums:       map[plumbing.Hash]string{},
		trees:      newTreeCache(),
		infos:      map[infoKey]*identity{},
		manifests:  map[manifestKey]*manifestAt{},
		verified:   verified,
		manifestBy: map[pathBlob]plumbing.Hash{},
		repinsAt:   map[pathBlob]int{},
		lastChange: map[string]plumbing.Hash{},
	}
	if rendered {
		h.rendered = map[pathBlob]plumbing.Hash{}
	}
	order, err := h.walk(head.Hash())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	excluded := map[plumbing.Hash]bool{}
	if opts.Base != "" {
		base, err := repo.ResolveRevision(plumbing.Revision(opts.Base))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: --base %s: %w (fetch it first, e.g. git fetch origin %s, and give origin/%s)", dir, opts.Base, err, opts.Base, opts.Base)
		}
		if excluded, err = h.ancestors(*base); err != nil {
			return nil, nil, fmt.Errorf("%s: --base %s: %w", dir, opts.Base, err)
		}
	}
	if opts.Base != "" {
		if h.sequenced, err = h.judgedManifestDirs(order, excluded); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	children := map[plumbing.Hash]int{}
	for _, n := range order {
		for _, p := range n.parents {
			children[p.Hash]++
		}
	}
	if opts.Base == "" || opts.fromCheckpoint != nil {
		// The applied branches are judged against the branch checked,
		// not against a pull request's (see applied); from a
		// checkpoint, against the commits since it when that is what
		// the whole history would say (see appliedFromCheckpoint).
		h.signed = map[pathBlob][]*object.Commit{}
	}
	states := map[plumbing.Hash]*known{}
	for _, n := range order {
		parentStates := make([]*known, 0, len(n.parents))
		for _, p := range n.parents {
			parentStates = append(parentStates, states[p.Hash])
		}
		st, err := h.commit(n, parentStates, !excluded[n.c.Hash] && !n.boundary)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: commit %s: %w", dir, n.c.Hash, err)
		}
		states[n.c.Hash] = st
		for _, p := range n.parents {
			if children[p.Hash]--; children[p.Hash] == 0 {
				delete(states, p.Hash)
			}
		}
	}
	if len(order) > 0 {
		if err := h.resolveRepaired(order[len(order)-1].c); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	if h.signed != nil && len(order) > 0 {
		if opts.fromCheckpoint != nil {
			ok, err := h.appliedFromCheckpoint(order, plumbing.NewHash(opts.fromCheckpoint.Commit))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", dir, err)
			}
			if !ok {
				return nil, nil, errNeedsFullHistory
			}
		}
		if err := h.applied(order, states[order[len(order)-1].c.Hash]); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return h.findings, h, nil
}

// history is one run of History, with its caches: blobs, cluster.yaml and
// manifests are read and verified once per distinct content.
type history struct {
	repo     *git.Repository
	opts     Options
	findings []Finding
	sums     map[plumbing.Hash]string // blob → hex SHA-256 of its content
	// trees are decoded trees' entries (newTreeCache).
	trees     *boundedmap.Map[plumbing.Hash, []object.TreeEntry]
	infos     map[infoKey]*identity
	manifests map[manifestKey]*manifestAt
	// sequenced, when set, are the only directories whose manifests the
	// commits not judged verify (see judgedManifestDirs), and those
	// commits' changes are learnedChanges.
	sequenced map[string]bool
	// changes are the own changes of judged commits judgedManifestDirs
	// listed, until commit takes them.
	changes map[plumbing.Hash]changeSet
	// verified, when set, holds the manifests that parsed and verified,
	// shared with the tree's checks of Check (nil: History's own cache
	// alone).
	verified *dirmanifest.Cache
	// signed, when set (without Base), lists for each own change a
	// cluster's key signed to its own tree (outside the inbox: what its
	// seal holds) the commits that made it, in walk order (see applied).
	signed map[pathBlob][]*object.Commit
	// rendered, when set, is for each file written under clusters/*/liqo/
	// by a judged commit (against its first parent: what a merge brings
	// onto the branch counts), and its content, the last such commit in
	// walk order (see Check's PeeringNotInSpec).
	rendered map[pathBlob]plumbing.Hash
	// repairable are the findings on a change a writer's manifest did
	// not vouch for, which the writer's signed state at the checked
	// commit may have repaired since (see resolveRepaired).
	repairable []repairable
	// manifestBy is, for each manifest content seen, the first commit
	// in walk order that wrote it; likewise each repins.yaml.
	manifestBy map[pathBlob]plumbing.Hash
	// lastChange is, for each path of a repairable finding, the last
	// commit in walk order that changed it (the finding's commit, or one
	// that repaired it since).
	lastChange map[string]plumbing.Hash
	// keyChanges are the KeyChanged findings, which the peers' signed
	// re-pins may resolve (see resolveRepinned).
	keyChanges []keyChange
	// walked counts the commits h.commit has read, in walk order (parents
	// first): a position that orders a key change and a re-pin record.
	walked int
	// repinsAt is, for each repins.yaml content seen, walked when its
	// first commit was read: a record resolves only key changes before it.
	repinsAt map[pathBlob]int
}

// keyChange is a KeyChanged finding of h.findings (by index): cluster
// published the key fingerprint without a rotation statement, at the
// commit h.walked counted as at.
type keyChange struct {
	index, at            int
	cluster, fingerprint string
}

// repairable is a finding of h.findings (by index) on path, in writer's
// directory dir.
type repairable struct {
	index             int
	path, writer, dir string
}

type infoKey struct {
	id   string
	blob plumbing.Hash
}

type manifestKey struct {
	writer, dir    string
	blob, keyBlob  plumbing.Hash
	keyInfoPresent bool
}

// identity is a parsed cluster.yaml.
type identity struct {
	blob plumbing.Hash
	info *layout.ClusterInfo
	pub  crypto.PublicKey
}

// known is what the history up to a commit tells: each cluster's last
// parseable cluster.yaml and the highest verified sequence of each
// directory's manifest. Commits share it until one changes it.
type known struct {
	identities map[string]*identity
	sequences  map[string]uint64
}

func (k *known) clone() *known {
	out := &known{identities: make(map[string]*identity, len(k.identities)), sequences: make(map[string]uint64, len(k.sequences))}
	for id, v := range k.identities {
		out.identities[id] = v
	}
	for d, s := range k.sequences {
		out.sequences[d] = s
	}
	return out
}

// node is a commit and its parents present in the repository; boundary
// means some parent is missing (a shallow clone's edge).
type node struct {
	c        *object.Commit
	parents  []*object.Commit
	boundary bool
}

// walk returns every commit reachable from head, parents before children.
func (h *history) walk(head plumbing.Hash) ([]*node, error) {
	type frame struct {
		n    *node
		next int
	}
	visited := map[plumbing.Hash]bool{}
	start, err := h.node(head)
	if err != nil {
		return nil, err
	}
	visited[head] = true
	stack := []*frame{{n: start}}
	var order []*node
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		if f.next == len(f.n.parents) {
			order = append(order, f.n)
			stack = stack[:len(stack)-1]
			continue
		}
		p := f.n.parents[f.next]
		f.next++
		if visited[p.Hash] {
			continue
		}
		visited[p.Hash] = true
		pn, err := h.node(p.Hash)
		if err != nil {
			return nil, err
		}
		stack = append(stack, &frame{n: pn})
	}
	return order, nil
}

func (h *history) node(hash plumbing.Hash) (*node, error) {
	c, err := h.repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", hash, err)
	}
	n := &node{c: c}
	for _, ph := range c.ParentHashes {
		p, err := h.repo.CommitObject(ph)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			n.boundary = true
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", ph, err)
		}
		n.parents = append(n.parents, p)
	}
	return n, nil
}

// ancestors returns the commits reachable from base, base included.
func (h *history) ancestors(base plumbing.Hash) (map[plumbing.Hash]bool, error) {
	out := map[plumbing.Hash]bool{base: true}
	queue := []plumbing.Hash{base}
	for len(queue) > 0 {
		c, err := h.repo.CommitObject(queue[0])
		queue = queue[1:]
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range c.ParentHashes {
			if !out[p] {
				out[p] = true
				queue = append(queue, p)
			}
		}
	}
	return out, nil
}

// change is one own change of a commit: the path's blob in the commit (zero
// when deleted).
type change struct {
	path string
	to   plumbing.Hash
	mode filemode.FileMode
}

// nodeChanges is ownChanges of n's commit against its parents'.
func (h *history) nodeChanges(n *node) ([]change, error) {
	own, _, err := h.nodeChangeSet(n)
	return own, err
}

// nodeChangeSet is ownChanges of n's commit against its parents', and
// what else it changed against its first parent (see ownChanges).
func (h *history) nodeChangeSet(n *node) (own, merged []change, err error) {
	if c, ok := h.changes[n.c.Hash]; ok {
		delete(h.changes, n.c.Hash)
		return c.own, c.merged, nil
	}
	return h.ownChanges(n.c.TreeHash, treesOf(n.parents), h.diff)
}

// changeSet is a commit's own changes and what else it changed against
// its first parent (see ownChanges).
type changeSet struct{ own, merged []change }

// learnedChanges is nodeChanges of a commit that is not judged while
// h.sequenced is set, restricted to the only changes commit reads of it:
// each clusters/<id>/cluster.yaml and the manifest.yaml of each sequenced
// directory. The diff reads only the trees above those paths: a commit
// before Base costs the trees of clusters/ and of each cluster's directory
// that changed, not every tree that did (for the root commit, the whole
// repository).
func (h *history) learnedChanges(n *node) ([]change, error) {
	inboxes := map[string]bool{} // clusters/<id>/inbox with a sequenced directory
	for d := range h.sequenced {
		if parent := path.Dir(d); path.Base(parent) == layout.InboxDir {
			inboxes[parent] = true
		}
	}
	keep := func(p string) (record, descend bool) {
		parts := strings.Split(p, "/")
		if parts[0] != layout.ClustersDir {
			return false, false
		}
		switch len(parts) {
		case 1, 2:
			return false, true
		case 3:
			dir := path.Dir(p)
			switch parts[2] {
			case layout.ClusterFile:
				return true, false
			case dirmanifest.FileName:
				return h.sequenced[dir], false
			case layout.InboxDir:
				return false, inboxes[p]
			}
		case 4:
			return false, parts[2] == layout.InboxDir && h.sequenced[p]
		case 5:
			return parts[4] == dirmanifest.FileName, false
		}
		return false, false
	}
	diff := func(a, b plumbing.Hash, out map[string]change) error {
		return h.diffPruned(a, b, keep, out)
	}
	own, _, err := h.ownChanges(n.c.TreeHash, treesOf(n.parents), diff)
	return own, err
}

// treesOf is the tree hashes of commits.
func treesOf(commits []*object.Commit) []plumbing.Hash {
	out := make([]plumbing.Hash, 0, len(commits))
	for _, c := range commits {
		out = append(out, c.TreeHash)
	}
	return out
}

// ownChanges lists the paths whose content in tree differs from each of
// the parents' trees (every file when there are none), sorted; trees are
// given by hash, and diff records what differs between two of them (see
// history.diff). merged, for a merge, lists the other paths whose content
// differs from the first parent's, sorted: what the merge brought onto the
// first parent's line from another (nil when there is one parent or none).
func (h *history) ownChanges(tree plumbing.Hash, parents []plumbing.Hash, diff func(a, b plumbing.Hash, out map[string]change) error) (own, merged []change, err error) {
	if len(parents) == 0 {
		all := map[string]change{}
		if err := diff(plumbing.ZeroHash, tree, all); err != nil {
			return nil, nil, err
		}
		return sortedChanges(all, nil, 0), nil, nil
	}
	counts := map[string]int{}
	var first map[string]change
	for i, pt := range parents {
		seen := map[string]change{}
		if err := diff(pt, tree, seen); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			first = seen
		}
		for p := range seen {
			counts[p]++
		}
	}
	if len(parents) > 1 {
		rest := map[string]change{}
		for p, c := range first {
			if counts[p] != len(parents) {
				rest[p] = c
			}
		}
		merged = sortedChanges(rest, nil, 0)
	}
	return sortedChanges(first, counts, len(parents)), merged, nil
}

// sortedChanges returns the changes whose path every one of n parents saw
// change (all of them when counts is nil), sorted by path.
func sortedChanges(changes map[string]change, counts map[string]int, n int) []change {
	out := make([]change, 0, len(changes))
	for p, c := range changes {
		if counts == nil || counts[p] == n {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// maxTrees bounds the cache of decoded trees.
const maxTrees = 1 << 16

// newTreeCache returns an empty cache of decoded trees' entries, by tree
// hash, of at most maxTrees trees.
func newTreeCache() *boundedmap.Map[plumbing.Hash, []object.TreeEntry] {
	return boundedmap.New[plumbing.Hash, []object.TreeEntry](maxTrees)
}

// diff records in out every file path whose entry differs between the
// trees a and b (the zero hash is an empty tree), by gitobj.Diff: subtrees
// with the same hash are not read, so the cost is that of what changed,
// not of the repository's size.
func (h *history) diff(a, b plumbing.Hash, out map[string]change) error {
	return h.diffPruned(a, b, func(string) (bool, bool) { return true, true }, out)
}

// diffPruned is diff restricted by keep: of the entries that differ
// between the trees a and b, it records those keep says to record, exactly
// as diff does, and walks into the directories keep says to descend into,
// reading no other tree. The paths it records are those of diff's that
// keep accepts, with the same changes.
func (h *history) diffPruned(a, b plumbing.Hash, keep func(p string) (record, descend bool), out map[string]change) error {
	return gitobj.Diff(h.tree, a, b, func(p string, ea, eb *object.TreeEntry) error {
		record, descend := keep(p)
		if record {
			switch {
			case eb != nil && eb.Mode != filemode.Dir:
				out[p] = change{path: p, to: eb.Hash, mode: eb.Mode}
			case ea != nil && ea.Mode != filemode.Dir:
				out[p] = change{path: p}
			}
		}
		if !descend {
			return fs.SkipDir
		}
		return nil
	})
}

// tree returns the entries of the tree with hash t (none for the zero hash).
func (h *history) tree(t plumbing.Hash) ([]object.TreeEntry, error) {
	if t.IsZero() {
		return nil, nil
	}
	if e, ok := h.trees.Get(t); ok {
		return e, nil
	}
	tr, err := h.repo.TreeObject(t)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", t, err)
	}
	h.trees.Put(t, tr.Entries)
	return tr.Entries, nil
}

// commit judges n's own changes when judge is set and returns what is known
// after it.
func (h *history) commit(n *node, parentStates []*known, judge bool) (*known, error) {
	h.walked++
	tree, err := n.c.Tree()
	if err != nil {
		return nil, err
	}
	var changes, merged []change
	if !judge && h.sequenced != nil {
		changes, err = h.learnedChanges(n)
	} else {
		changes, merged, err = h.nodeChangeSet(n)
	}
	if err != nil {
		return nil, err
	}
	if judge && h.rendered != nil {
		for _, list := range [][]change{changes, merged} {
			for _, ch := range list {
				if !ch.to.IsZero() && renderedPath(ch.path) {
					h.rendered[pathBlob{ch.path, ch.to}] = n.c.Hash
				}
			}
		}
	}
	st, err := h.merge(tree, parentStates)
	if err != nil {
		return nil, err
	}
	principal := ""
	if judge {
		if principal, err = h.signature(n.c, tree, st); err != nil {
			return nil, err
		}
	}
	cloned := false
	mutable := func() *known {
		if !cloned {
			st, cloned = st.clone(), true
		}
		return st
	}
	own := layout.ClusterPath(principal) + "/"
	ownInbox := layout.ClusterPath(principal, layout.InboxDir) + "/"
	for _, ch := range changes {
		if _, watched := h.lastChange[ch.path]; watched {
			h.lastChange[ch.path] = n.c.Hash
		}
		writer, dir, inArea := dirmanifest.Scope(ch.path)
		if !ch.to.IsZero() && path.Base(ch.path) == layout.RepinsFile && path.Dir(ch.path) == layout.ClusterPath(writer) {
			if k := (pathBlob{ch.path, ch.to}); h.manifestBy[k].IsZero() {
				h.manifestBy[k] = n.c.Hash
				h.repinsAt[k] = h.walked
			}
		}
		if judge && principal != "" && !layout.Writable(principal, ch.path) {
			h.add(n.c, ch.path, reasons.OwnershipViolation, "changed by a commit signed by %s, whose reconciler may only write clusters/%s/ and clusters/*/inbox/%s/", principal, principal, principal)
		}
		if principal != "" && h.signed != nil && strings.HasPrefix(ch.path, own) && !strings.HasPrefix(ch.path, ownInbox) {
			k := pathBlob{ch.path, ch.to}
			h.signed[k] = append(h.signed[k], n.c)
		}
		if !inArea {
			continue
		}
		rel := strings.TrimPrefix(ch.path, dir+"/")
		switch {
		case rel == layout.ClusterFile && dir == layout.ClusterPath(writer) && !ch.to.IsZero():
			id, err := h.identity(writer, ch.to)
			if err != nil {
				return nil, err
			}
			if id != nil {
				if judge {
					h.continuity(n.c, ch.path, id, parentStates)
				}
				mutable().identities[writer] = id
			}
		case rel == dirmanifest.FileName:
			if !ch.to.IsZero() {
				if k := (pathBlob{ch.path, ch.to}); h.manifestBy[k].IsZero() {
					h.manifestBy[k] = n.c.Hash
				}
			}
			if !judge && h.sequenced != nil && !h.sequenced[dir] {
				continue // no judged commit compares with its sequence
			}
			seq, err := h.manifestChange(n.c, tree, ch, writer, dir, parentStates, judge)
			if err != nil {
				return nil, err
			}
			if seq > st.sequences[dir] {
				mutable().sequences[dir] = seq
			}
			continue
		}
		if judge {
			if err := h.vouched(n.c, tree, ch, writer, dir, rel); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// merge combines the parents' knowledge; where parents disagree on a
// cluster's identity, the one whose cluster.yaml the commit keeps wins.
func (h *history) merge(tree *object.Tree, parents []*known) (*known, error) {
	var present []*known
	for _, p := range parents {
		if p != nil {
			present = append(present, p)
		}
	}
	switch len(present) {
	case 0:
		return &known{identities: map[string]*identity{}, sequences: map[string]uint64{}}, nil
	case 1:
		return present[0], nil
	}
	out := present[0].clone()
	for _, p := range present[1:] {
		for id, v := range p.identities {
			cur, ok := out.identities[id]
			if !ok {
				out.identities[id] = v
				continue
			}
			if cur.blob == v.blob {
				continue
			}
			if e, err := tree.FindEntry(layout.ClusterPath(id, layout.ClusterFile)); err == nil && e.Hash == v.blob {
				out.identities[id] = v
			}
		}
		for d, s := range p.sequences {
			if s > out.sequences[d] {
				out.sequences[d] = s
			}
		}
	}
	return out, nil
}

// addRepairable is add for a change to path, in writer's directory dir,
// that the writer's manifest did not vouch for.
func (h *history) addRepairable(c *object.Commit, path, writer, dir, reason, format string, a ...any) {
	h.repairable = append(h.repairable, repairable{index: len(h.findings), path: path, writer: writer, dir: dir})
	h.lastChange[path] = c.Hash
	h.add(c, path, reason, format, a...)
}

func (h *history) add(c *object.Commit, file, reason, format string, a ...any) {
	h.findings = append(h.findings, Finding{File: file, Reason: reason, Message: fmt.Sprintf(format, a...), Commit: c.Hash.String()})
}

func (h *history) blob(hash plumbing.Hash) ([]byte, error) {
	b, err := h.repo.BlobObject(hash)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", hash, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", hash, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, dirmanifest.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", hash, err)
	}
	return data, nil
}

// sum is the hex SHA-256 of a blob's content, as manifests list it.
func (h *history) sum(hash plumbing.Hash) (string, error) {
	if s, ok := h.sums[hash]; ok {
		return s, nil
	}
	b, err := h.repo.BlobObject(hash)
	if err != nil {
		return "", fmt.Errorf("read blob %s: %w", hash, err)
	}
	r, err := b.Reader()
	if err != nil {
		return "", fmt.Errorf("read blob %s: %w", hash, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("read blob %s: %w", hash, err)
	}
	s := dirmanifest.Sum(data)
	h.sums[hash] = s
	return s, nil
}

// identity parses cluster id's cluster.yaml blob; nil when it does not
// parse (Tree reports that of the checkout).
func (h *history) identity(id string, blob plumbing.Hash) (*identity, error) {
	k := infoKey{id, blob}
	if v, ok := h.infos[k]; ok {
		return v, nil
	}
	data, err := h.blob(blob)
	if err != nil {
		return nil, err
	}
	var out *identity
	if ci, err := layout.ParseClusterInfo(layout.ClusterPath(id, layout.ClusterFile), id, data); err == nil {
		if pub, _, err := handshake.ParsePublicKey([]byte(ci.PublicKey)); err == nil {
			out = &identity{blob: blob, info: ci, pub: pub}
		}
	}
	h.infos[k] = out
	return out, nil
}

// continuity requires a cluster.yaml whose key, API server or CA differ
// from the last one known before the commit to carry a rotation statement
// signed by that one's key.
func (h *history) continuity(c *object.Commit, file string, id *identity, parents []*known) {
	for _, p := range parents {
		if p == nil {
			continue
		}
		prev := p.identities[id.info.ClusterID]
		if prev == nil || prev.blob == id.blob {
			continue
		}
		var changed []string
		if prev.info.Fingerprint != id.info.Fingerprint {
			changed = append(changed, "publicKey")
		}
		if prev.info.APIServer != id.info.APIServer {
			changed = append(changed, "apiServer")
		}
		if prev.info.CA != id.info.CA {
			changed = append(changed, "ca")
		}
		if len(changed) == 0 {
			continue
		}
		if err := id.info.VerifyRotation(prev.info.Fingerprint); err != nil {
			h.keyChanges = append(h.keyChanges, keyChange{index: len(h.findings), at: h.walked, cluster: id.info.ClusterID, fingerprint: id.info.Fingerprint})
			h.add(c, file, reasons.KeyChanged, "%s changed from the published %s without a rotation statement signed by it: %v", strings.Join(changed, ", "), prev.info.Fingerprint, err)
			return
		}
	}
}

// manifestAt is a directory's manifest at a commit, checked with the key
// its writer publishes there.
type manifestAt struct {
	m      *dirmanifest.Manifest // nil when it does not verify
	reason string                // why not
	detail string
}

// manifestOf reads and verifies dir's manifest in tree; nil when there is
// none.
func (h *history) manifestOf(tree *object.Tree, writer, dir string) (*manifestAt, error) {
	file := path.Join(dir, dirmanifest.FileName)
	e, err := tree.FindEntry(file)
	if missingEntry(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	k := manifestKey{writer: writer, dir: dir, blob: e.Hash}
	if ke, err := tree.FindEntry(layout.ClusterPath(writer, layout.ClusterFile)); err == nil {
		k.keyBlob, k.keyInfoPresent = ke.Hash, true
	}
	if v, ok := h.manifests[k]; ok {
		return v, nil
	}
	out := &manifestAt{}
	h.manifests[k] = out
	data, err := h.blob(e.Hash)
	if err != nil {
		return nil, err
	}
	if h.verified != nil && k.keyInfoPresent {
		// The same bytes verified with the same key (by the tree's check
		// of the tip, running alongside): the same manifest. An error
		// reading the key is met again below, where it always was.
		if id, err := h.identity(writer, k.keyBlob); err == nil && id != nil {
			if m, ok := h.verified.Lookup(data, id.pub, writer, dir); ok {
				out.m = m
				return out, nil
			}
		}
	}
	m, err := dirmanifest.Parse(file, data)
	if err != nil {
		out.reason, out.detail = reasons.ManifestInvalid, err.Error()
		return out, nil
	}
	var id *identity
	if k.keyInfoPresent {
		if id, err = h.identity(writer, k.keyBlob); err != nil {
			return nil, err
		}
	}
	if id == nil {
		out.reason, out.detail = reasons.ManifestInvalid, fmt.Sprintf("%s: no valid key published in %s", file, layout.ClusterPath(writer, layout.ClusterFile))
		return out, nil
	}
	if err := m.Verify(id.pub, writer, dir); err != nil {
		out.reason, out.detail = reasons.ManifestInvalid, fmt.Sprintf("%s: %v", file, err)
		if errors.Is(err, dirmanifest.ErrWrongScope) {
			out.reason = reasons.OwnershipViolation
		}
		return out, nil
	}
	if h.verified != nil {
		h.verified.Remember(data, id.pub, writer, dir, m)
	}
	out.m = m
	return out, nil
}

// manifestChange judges a commit's own change to a manifest and returns its
// verified sequence (0 if none).
func (h *history) manifestChange(c *object.Commit, tree *object.Tree, ch change, writer, dir string, parents []*known, judge bool) (uint64, error) {
	if ch.to.IsZero() {
		if judge {
			gone, err := dirGone(tree, dir)
			if err != nil {
				return 0, err
			}
			if !gone {
				h.add(c, ch.path, reasons.ManifestInvalid, "deleted while %s still holds files: nothing in it is signed by %s any more", dir, writer)
			}
		}
		return 0, nil
	}
	ma, err := h.manifestOf(tree, writer, dir)
	if err != nil || ma == nil {
		return 0, err
	}
	if ma.m == nil {
		if judge {
			h.add(c, ch.path, ma.reason, "%s", ma.detail)
		}
		return 0, nil
	}
	if judge {
		for _, p := range parents {
			if p != nil && ma.m.Sequence < p.sequences[dir] {
				h.add(c, ch.path, reasons.ManifestRolledBack, "sequence %d is lower than %d, signed before: an old signed state of %s replayed", ma.m.Sequence, p.sequences[dir], dir)
				break
			}
		}
	}
	return ma.m.Sequence, nil
}

// vouched judges one own change of a file in writer's directory dir.
func (h *history) vouched(c *object.Commit, tree *object.Tree, ch change, writer, dir, rel string) error {
	ma, err := h.manifestOf(tree, writer, dir)
	if err != nil {
		return err
	}
	deleted := ch.to.IsZero()
	switch {
	case ma == nil:
		if deleted {
			gone, err := dirGone(tree, dir)
			if err != nil || gone {
				return err // a withdrawal: the directory went with its manifest
			}
		}
		if !h.opts.RequireManifests {
			return nil
		}
		if deleted {
			h.addRepairable(c, ch.path, writer, dir, reasons.UnsignedChange, "deleted while %s has no manifest signed by %s", dir, writer)
		} else {
			h.addRepairable(c, ch.path, writer, dir, reasons.UnsignedChange, "written while %s has no manifest signed by %s", dir, writer)
		}
	case ma.m == nil:
		h.addRepairable(c, ch.path, writer, dir, ma.reason, "changed, but the manifest does not vouch for it: %s", ma.detail)
	case deleted:
		if _, listed := ma.m.Lookup(rel); listed {
			h.addRepairable(c, ch.path, writer, dir, reasons.UnsignedChange, "deleted, but %s/%s, signed by %s, still lists it", dir, dirmanifest.FileName, writer)
		}
	case ch.mode == filemode.Submodule:
		h.addRepairable(c, ch.path, writer, dir, reasons.UnsignedChange, "a submodule: no manifest can vouch for it")
	default:
		sum, err := h.sum(ch.to)
		if err != nil {
			return err
		}
		if listed, ok := ma.m.Lookup(rel); !ok || listed != sum {
			h.addRepairable(c, ch.path, writer, dir, reasons.UnsignedChange, "not listed with this content in %s/%s, signed by %s", dir, dirmanifest.FileName, writer)
		}
	}
	return nil
}

// dirGone reports whether a writer's directory holds no file in tree (for
// a cluster's own directory, its inbox aside).
func dirGone(tree *object.Tree, dir string) (bool, error) {
	sub, err := tree.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	own := path.Dir(dir) == layout.ClustersDir
	for _, e := range sub.Entries {
		if !(own && e.Name == layout.InboxDir && e.Mode == filemode.Dir) {
			return false, nil
		}
	}
	return true, nil
}

// signature checks a commit signed in SSH or OpenPGP against the cluster
// keys known before it (and those its own tree adds) and returns the
// cluster that signed it, "" when it is not signed by a cluster key.
func (h *history) signature(c *object.Commit, tree *object.Tree, st *known) (string, error) {
	format := commitsig.FormatOf(c.PGPSignature)
	if format == "" {
		return "", nil
	}
	keys := map[string]crypto.PublicKey{}
	for id, v := range st.identities {
		keys[id] = v.pub
	}
	if clusters, err := tree.Tree(layout.ClustersDir); err == nil {
		for _, e := range clusters.Entries {
			if _, ok := keys[e.Name]; ok || e.Mode != filemode.Dir {
				continue
			}
			ce, err := tree.FindEntry(layout.ClusterPath(e.Name, layout.ClusterFile))
			if err != nil {
				continue
			}
			id, err := h.identity(e.Name, ce.Hash)
			if err != nil {
				return "", err
			}
			if id != nil {
				keys[e.Name] = id.pub
			}
		}
	}
	name := signatureName[format]
	claimed, _, err := commitsig.Claim(c.PGPSignature, keys)
	switch {
	case err != nil && format == commitsig.FormatSSH:
		// Only reconcilers sign with SSH keys here: an unreadable one is
		// someone's attempt at passing for one.
		h.findings = append(h.findings, Finding{Reason: reasons.BadCommitSignature, Message: fmt.Sprintf("the commit's %s signature cannot be read: %v", name, err), Commit: c.Hash.String()})
		return "", nil
	case err != nil:
		return "", nil // a person's OpenPGP signature go-crypto cannot read: judged as unsigned
	}
	verifier := h.opts.SignatureVerifier
	if verifier == nil {
		verifier = commitsig.Verify
	}
	principal, err := verifier(c, keys)
	switch {
	case err == nil:
		return principal, nil
	case claimed == "":
		return "", nil // a key no cluster published: judged as unsigned
	default:
		h.findings = append(h.findings, Finding{Reason: reasons.BadCommitSignature,
			Message: fmt.Sprintf("the commit's %s signature names %s's key but does not verify: %v", name, claimed, err), Commit: c.Hash.String()})
		return "", nil
	}
}

// renderedPath reports whether p is a file gitpeer renders, under
// clusters/<id>/liqo/<peer>/.
func renderedPath(p string) bool {
	parts := strings.Split(p, "/")
	return len(parts) == 5 && parts[0] == layout.ClustersDir && parts[2] == layout.LiqoDir
}

// signatureName names a signature format in findings.
var signatureName = map[commitsig.Format]string{commitsig.FormatSSH: "SSH", commitsig.FormatOpenPGP: "OpenPGP"}

// missingEntry reports whether a FindEntry error means the path is not in
// the tree: also when a component is not a directory (a file or a symbolic
// link committed where a writer's directory should be), which go-git
// reports as a missing object.
func missingEntry(err error) bool {
	return errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, plumbing.ErrObjectNotFound)
}

// resolveRepaired marks Resolved (ResolutionRepaired) each repairable
// finding whose path is, at the checked commit head, exactly as its
// writer signs it: listed with its content in the directory's manifest,
// verified with the key the writer publishes at head; or absent and not
// listed, or gone with its whole directory. What a reader acts on at head
// is then the writer's own signed state: the hand edit is history.
func (h *history) resolveRepaired(head *object.Commit) error {
	if len(h.repairable) == 0 {
		return nil
	}
	tree, err := head.Tree()
	if err != nil {
		return err
	}
	for _, r := range h.repairable {
		ok, m, err := h.signedAt(tree, r)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		res := &Resolution{Reason: ResolutionRepaired}
		if m == nil {
			res.Message = fmt.Sprintf("%s was withdrawn since, with its manifest", r.dir)
		} else {
			file := path.Join(r.dir, dirmanifest.FileName)
			res.Message = fmt.Sprintf("at %s it is as %s signs it in %s (sequence %d)", shortHash(head.Hash.String()), r.writer, file, m.Sequence)
			if _, err := tree.FindEntry(r.path); err != nil {
				res.Message = fmt.Sprintf("removed since, and %s, signed by %s, no longer lists it", file, r.writer)
			}
			if e, err := tree.FindEntry(file); err == nil {
				if c := h.manifestBy[pathBlob{file, e.Hash}]; !c.IsZero() {
					res.Commit = c.String() // the writer adopted the content
				}
			}
		}
		if c := h.lastChange[r.path]; !c.IsZero() && c.String() != h.findings[r.index].Commit {
			res.Commit = c.String() // the commit that put it back
		}
		h.findings[r.index].Resolved = res
	}
	return nil
}

// signedAt reports whether r's path in tree is as its writer signs it
// there, and the manifest that says so (nil when the directory is gone).
func (h *history) signedAt(tree *object.Tree, r repairable) (bool, *dirmanifest.Manifest, error) {
	e, err := tree.FindEntry(r.path)
	present := err == nil
	if err != nil && !missingEntry(err) {
		return false, nil, err
	}
	if !present {
		gone, err := dirGone(tree, r.dir)
		if err != nil || gone {
			return gone, nil, err
		}
	}
	ma, err := h.manifestOf(tree, r.writer, r.dir)
	if err != nil || ma == nil || ma.m == nil {
		return false, nil, err
	}
	listed, ok := ma.m.Lookup(strings.TrimPrefix(r.path, r.dir+"/"))
	if !present {
		return !ok, ma.m, nil
	}
	if e.Mode != filemode.Regular || !ok {
		return false, nil, nil
	}
	sum, err := h.sum(e.Hash)
	if err != nil {
		return false, nil, err
	}
	return sum == listed, ma.m, nil
}
