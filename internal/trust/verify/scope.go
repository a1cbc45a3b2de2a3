package verify

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/schema"
)

// Scope is what Check with Options.Base (and without Options.Full) checked
// of the tree: the trees of the clusters the commits since Base touched
// and of those depending on them, and the changed files elsewhere. The
// commit checks judge the commits since Base either way.
//
// Which clusters depend on a change:
//   - a path under clusters/<id>/: id;
//   - a path under clusters/<to>/inbox/<from>/: to and from (both sides'
//     rendered objects and artifact checks read it);
//   - clusters/<id>/cluster.yaml, or id's declaration in the spec: id, every
//     cluster peering with it in the spec or at Base, every cluster holding
//     an inbox from it and every cluster with an inbox in id's tree (each
//     checks what id signs with the key it publishes and the spec pins);
//   - a peering of the spec added, removed or changed: its consumer and
//     provider.
//
// A changed .gitattributes, .gitmodules or .sourceignore anywhere, a
// kustomization outside clusters/ (they change how a checkout or a GitOps
// engine reads the whole tree), or no spec at Base to compare with, makes
// the whole tree checked (All, with Why). Any other file outside clusters/
// is checked for private material and as a checkout sees it (a link, a
// submodule); a root .gitattributes with a rule that rewrites content has
// the whole tree's paths checked against it.
//
// The contract: a scoped check reports every finding the full check
// reports on what the change touched and on what depends on it, and
// nothing else of the tree: the tree at Base was checked when it merged. A
// finding already in an untouched cluster's tree at Base (or a certificate
// of one that expired since) is the full check's (verify without --base,
// or with --full).
type Scope struct {
	// Base is Options.Base, as given.
	Base string
	// Paths is how many file paths differ between Base's tree and the
	// tree checked.
	Paths int
	// Clusters are the clusters whose trees were checked, sorted (none
	// with All).
	Clusters []string
	// Of is how many clusters the tree and the spec hold.
	Of int
	// All means every check ran on the whole tree, for the reason Why.
	All bool
	Why string
	// Checkpoint means Base is the commit of Options.Checkpoint.
	Checkpoint bool
}

// String is one line for a person: how much of the tree was checked and
// why.
func (s Scope) String() string {
	if s.All {
		return fmt.Sprintf("checked all %s clusters: %s", thousands(s.Of), s.Why)
	}
	paths := thousands(s.Paths) + " paths"
	if s.Paths == 1 {
		paths = "1 path"
	}
	if s.Checkpoint {
		return fmt.Sprintf("checked %s of %s clusters: those the commits since the checkpoint %s touched (%s changed) and those depending on them; verify without --checkpoint checks all",
			thousands(len(s.Clusters)), thousands(s.Of), shortHash(s.Base), paths)
	}
	return fmt.Sprintf("checked %s of %s clusters: those the commits since %s touched (%s changed) and those depending on them; --full checks all",
		thousands(len(s.Clusters)), thousands(s.Of), s.Base, paths)
}

// thousands formats n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// treeScope is what the tree checks of a verifier look at; nil is the
// whole tree.
type treeScope struct {
	// clusters are the clusters whose trees are checked.
	clusters map[string]bool
	// neighbours are the clusters whose cluster.yaml the checks of those
	// read (their peers, the writers of their inboxes): read, not judged.
	neighbours map[string]bool
	// paths are the changed file paths; dirs every directory above one
	// ("." aside).
	paths, dirs map[string]bool
	// wholeCheckout: a root .gitattributes rewrites content, so the
	// checkout checks look at every path (a new file may match one of its
	// rules).
	wholeCheckout bool
	// sorted is clusters, sorted.
	sorted []string
}

// has reports whether cluster id's tree is checked.
func (s *treeScope) has(id string) bool { return s == nil || s.clusters[id] }

// needsInfo reports whether cluster id's cluster.yaml is read.
func (s *treeScope) needsInfo(id string) bool { return s == nil || s.clusters[id] || s.neighbours[id] }

// peering reports whether the peering's artifacts are checked: when either
// side's tree is.
func (s *treeScope) peering(p schema.Peering) bool { return s.has(p.Consumer) || s.has(p.Provider) }

// inClusters reports whether p, a path of the walk of clusters/, is in a
// checked cluster's tree (clusters/ itself is).
func (s *treeScope) inClusters(p string) bool {
	if s == nil || p == layout.ClustersDir {
		return true
	}
	rest, ok := strings.CutPrefix(p, layout.ClustersDir+"/")
	if !ok {
		return true
	}
	id, _, _ := strings.Cut(rest, "/")
	return s.clusters[id]
}

// walks reports whether a walk of the whole tree visits p: a changed
// file, or a directory above one.
func (s *treeScope) walks(p string, dir bool) bool {
	if s == nil || p == "." {
		return true
	}
	if dir {
		return s.dirs[p]
	}
	return s.paths[p]
}

// checkout reports whether checkoutFiles looks at p (see walks).
func (s *treeScope) checkout(p string, dir bool) bool {
	return s == nil || s.wholeCheckout || s.walks(p, dir)
}

// senders lists the clusters with an inbox in clusters/<x>/ that the
// checks need: all of them when x's tree is checked, else those of the
// checked clusters (Stat rather than listing every inbox of the mesh).
func (s *treeScope) senders(tree fs.FS, x string) []string {
	inbox := layout.ClusterPath(x, layout.InboxDir)
	if s.has(x) {
		entries, _ := fs.ReadDir(tree, inbox)
		out := make([]string, 0, len(entries))
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	var out []string
	for _, a := range s.sorted {
		if fi, err := fs.Stat(tree, path.Join(inbox, a)); err == nil && fi.IsDir() {
			out = append(out, a)
		}
	}
	return out
}

// wholeTreeFiles are the file names (lower case) whose change has the
// whole tree checked: they change what a checkout or a GitOps engine sees
// of every path.
var wholeTreeFiles = map[string]bool{".gitattributes": true, ".gitmodules": true, ".sourceignore": true}

// scopeOf computes the scope of Check with opts.Base on tree (the tree of
// the commit opts.Ref of the repository at dir): the paths that differ
// between the trees of opts.Base and opts.Ref (subtrees with the same hash
// are not read), and what depends on them (see Scope). A nil treeScope
// means the whole tree.
func scopeOf(dir string, tree fs.FS, spec *schema.Spec, opts Options) (*treeScope, Scope, error) {
	report := Scope{Base: opts.Base}
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return nil, report, fmt.Errorf("open %s: %w", dir, err)
	}
	defer done()
	treeOf := func(rev string) (plumbing.Hash, error) {
		h, err := repo.ResolveRevision(plumbing.Revision(rev))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return gitobj.TreeHash(repo.Storer, *h)
	}
	baseTree, err := treeOf(opts.Base)
	if err != nil {
		return nil, report, fmt.Errorf("%s: --base %s: %w", dir, opts.Base, err)
	}
	ref := opts.Ref
	if ref == "" {
		ref = "HEAD"
	}
	headTree, err := treeOf(ref)
	if err != nil {
		return nil, report, fmt.Errorf("%s: %s: %w", dir, ref, err)
	}
	// History's diff: equal subtrees are skipped, so its cost is the
	// change's.
	h := &history{repo: repo, trees: newTreeCache()}
	changed := map[string]change{}
	if err := h.diff(baseTree, headTree, changed); err != nil {
		return nil, report, fmt.Errorf("%s: --base %s: %w", dir, opts.Base, err)
	}
	report.Paths = len(changed)
	report.Of = clusterCount(tree, spec)
	all := func(why string) (*treeScope, Scope, error) {
		report.All, report.Why = true, why
		return nil, report, nil
	}
	if opts.BaseSpec == nil {
		return all(fmt.Sprintf("there is no spec at %s to compare with", opts.Base))
	}

	s := &treeScope{clusters: map[string]bool{}, neighbours: map[string]bool{}, paths: map[string]bool{}, dirs: map[string]bool{}}
	keyed := map[string]bool{} // clusters whose key or declaration changed
	for _, p := range slices.Sorted(maps.Keys(changed)) {
		name := strings.ToLower(path.Base(p))
		rest, inClusters := strings.CutPrefix(p, layout.ClustersDir+"/")
		switch {
		case wholeTreeFiles[name]:
			return all(fmt.Sprintf("%s changed since %s: it changes what checkouts and GitOps engines read of the whole tree", p, opts.Base))
		case !inClusters && isKustomizationName(path.Base(p)):
			return all(fmt.Sprintf("%s changed since %s: a kustomization outside clusters/ may apply any of the tree", p, opts.Base))
		}
		s.paths[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			s.dirs[d] = true
		}
		if !inClusters {
			continue
		}
		parts := strings.SplitN(rest, "/", 4)
		s.clusters[parts[0]] = true
		switch {
		case len(parts) == 2 && parts[1] == layout.ClusterFile:
			keyed[parts[0]] = true
		case len(parts) >= 3 && parts[1] == layout.InboxDir:
			s.clusters[parts[2]] = true // the writer of the inbox
		}
	}

	clustersChanged, peeringsChanged := specChanges(opts.BaseSpec, spec)
	for _, id := range clustersChanged {
		s.clusters[id], keyed[id] = true, true
	}
	for _, p := range peeringsChanged {
		s.clusters[p.Consumer], s.clusters[p.Provider] = true, true
	}
	peers := peersOf(spec)
	basePeers := peersOf(opts.BaseSpec)
	if len(keyed) > 0 {
		// Every cluster reading what a keyed cluster signs: its peers, and
		// whoever holds an inbox from it or has one in its tree.
		holders, _ := fs.ReadDir(tree, layout.ClustersDir)
		for _, id := range slices.Sorted(maps.Keys(keyed)) {
			for _, p := range peers[id] {
				s.clusters[p] = true
			}
			for _, p := range basePeers[id] {
				s.clusters[p] = true
			}
			senders, _ := fs.ReadDir(tree, layout.ClusterPath(id, layout.InboxDir))
			for _, e := range senders {
				s.clusters[e.Name()] = true
			}
			for _, e := range holders {
				if fi, err := fs.Stat(tree, layout.ClusterPath(e.Name(), layout.InboxDir, id)); err == nil && fi.IsDir() {
					s.clusters[e.Name()] = true
				}
			}
		}
	}
	s.sorted = slices.Sorted(maps.Keys(s.clusters))
	for _, id := range s.sorted {
		for _, p := range peers[id] {
			s.neighbours[p] = true
		}
		senders, _ := fs.ReadDir(tree, layout.ClusterPath(id, layout.InboxDir))
		for _, e := range senders {
			s.neighbours[e.Name()] = true
		}
	}
	s.wholeCheckout = rootAttributesRewrite(tree)
	report.Clusters = s.sorted
	return s, report, nil
}

// clusterCount is how many clusters the tree (directories under clusters/)
// and the spec hold.
func clusterCount(tree fs.FS, spec *schema.Spec) int {
	ids := map[string]bool{}
	entries, _ := fs.ReadDir(tree, layout.ClustersDir)
	for _, e := range entries {
		if e.IsDir() {
			ids[e.Name()] = true
		}
	}
	for _, c := range spec.Clusters {
		ids[c.ID] = true
	}
	return len(ids)
}

// specChanges compares two specs: the cluster IDs whose declarations
// (every one with that ID, in order) differ, and the peerings, by
// (consumer, provider), that one has and the other has not or has
// otherwise. The spec's owners are left out: no tree check reads them.
func specChanges(base, spec *schema.Spec) (clusters []string, peerings []schema.Pair) {
	decl := func(s *schema.Spec) map[string][]schema.Cluster {
		out := map[string][]schema.Cluster{}
		for _, c := range s.Clusters {
			out[c.ID] = append(out[c.ID], c)
		}
		return out
	}
	pairs := func(s *schema.Spec) map[schema.Pair][]schema.Peering {
		out := map[schema.Pair][]schema.Peering{}
		for _, p := range s.Peerings {
			out[p.Pair()] = append(out[p.Pair()], p)
		}
		return out
	}
	bc, sc := decl(base), decl(spec)
	for id := range union(bc, sc) {
		if !reflect.DeepEqual(bc[id], sc[id]) {
			clusters = append(clusters, id)
		}
	}
	bp, sp := pairs(base), pairs(spec)
	for p := range union(bp, sp) {
		if !reflect.DeepEqual(bp[p], sp[p]) {
			peerings = append(peerings, p)
		}
	}
	sort.Strings(clusters)
	sort.Slice(peerings, func(i, j int) bool {
		if peerings[i].Consumer != peerings[j].Consumer {
			return peerings[i].Consumer < peerings[j].Consumer
		}
		return peerings[i].Provider < peerings[j].Provider
	})
	return clusters, peerings
}

// peersOf maps each cluster to the clusters it peers with in spec, either
// way.
func peersOf(spec *schema.Spec) map[string][]string {
	out := map[string][]string{}
	for _, p := range spec.Peerings {
		out[p.Consumer] = append(out[p.Consumer], p.Provider)
		out[p.Provider] = append(out[p.Provider], p.Consumer)
	}
	return out
}

// rootAttributesRewrite reports whether a .gitattributes at the root of
// tree (any case) has a rule that rewrites content (see checkoutFiles).
func rootAttributesRewrite(tree fs.FS) bool {
	entries, _ := fs.ReadDir(tree, ".")
	for _, e := range entries {
		if !strings.EqualFold(e.Name(), ".gitattributes") {
			continue
		}
		data, err := fs.ReadFile(tree, e.Name())
		if err != nil || len(data) > maxAttributesFile {
			return true
		}
		rules := parseAttributes(data)
		macros := map[string][]gitAttr{}
		for _, r := range rules {
			if r.macro != "" {
				macros[r.macro] = r.attrs
			}
		}
		for _, r := range rules {
			if r.macro == "" && len(rewritingAttrs(r.attrs, macros, 0)) > 0 {
				return true
			}
		}
	}
	return false
}

// union is the set of keys of a and b.
func union[K comparable, V any](a, b map[K]V) map[K]bool {
	out := make(map[K]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// judgedManifestDirs lists the writers' directories whose manifest a
// judged commit of order (not excluded, not at a shallow clone's edge)
// changes. The commits before Base only tell what was known, and of the
// manifests' sequences only these directories' are ever compared
// (ManifestRolledBack): the others need not be parsed and verified, a
// YAML parse and a signature per manifest version, the whole history's
// cost.
func (h *history) judgedManifestDirs(order []*node, excluded map[plumbing.Hash]bool) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range order {
		if excluded[n.c.Hash] || n.boundary {
			continue
		}
		changes, merged, err := h.nodeChangeSet(n)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", n.c.Hash, err)
		}
		if h.changes == nil {
			h.changes = map[plumbing.Hash]changeSet{}
		}
		h.changes[n.c.Hash] = changeSet{changes, merged} // commit judges them next
		for _, ch := range changes {
			if _, dir, ok := dirmanifest.Scope(ch.path); ok && ch.path == dir+"/"+dirmanifest.FileName {
				out[dir] = true
			}
		}
	}
	return out, nil
}
