package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// specChanges is what a spec does to the peerings that are live, as
// validate and verify --base name it: Problems are mistakes that exit 1 (a
// cluster ID close to a published cluster the spec no longer declares: a
// misspelling or a rename, which revokes), Revoked the live peerings the
// spec no longer declares (deliberate, but never silent), Unpublished the
// spec's clusters without a clusters/<id>/cluster.yaml yet (their peerings
// wait for `gitpeer init`).
type specChanges struct {
	Problems    []schema.Problem
	Revoked     []string // "consumer → provider (where it is live)"
	Unpublished []string // one sentence each
}

// livePeering is a peering some evidence says exists: the spec at a base
// revision, or a cluster's status.yaml past Pending.
type livePeering struct {
	Consumer, Provider string
	// Where says where it was seen: "in the spec at main" or
	// "Ready in clusters/beta/status.yaml".
	Where string
}

// reviewSpecChanges compares spec (loaded from file, whose bytes are data,
// read from tree) with what is live: the spec at the base revision
// baseRev (base, when baseRev is not ""), else every published cluster's
// status.yaml in tree. A status.yaml that cannot be read is skipped: the
// reconciler that writes it says why.
func reviewSpecChanges(tree fs.FS, file string, data []byte, spec *schema.Spec, base *schema.Spec, baseRev string) specChanges {
	at := schema.NewLocator(file, data)
	var out specChanges
	published := publishedClusters(tree)
	declared := map[string]bool{}
	for _, c := range spec.Clusters {
		declared[c.ID] = true
	}
	wanted := map[schema.Pair]bool{}
	for _, p := range spec.Peerings {
		wanted[p.Pair()] = true
	}

	var live []livePeering
	if base != nil {
		for _, p := range base.Peerings {
			live = append(live, livePeering{p.Consumer, p.Provider, "in the spec at " + baseRev})
		}
	} else {
		live = statusPeerings(tree, published)
	}

	// Clusters the change drops: published (or declared at base) and no
	// longer declared. A new unpublished ID close to one of them is most
	// likely that cluster misspelled or renamed.
	dropped := map[string]bool{}
	for id := range published {
		if !declared[id] {
			dropped[id] = true
		}
	}
	if base != nil {
		for _, c := range base.Clusters {
			if !declared[c.ID] {
				dropped[c.ID] = true
			}
		}
	}
	for i, c := range spec.Clusters {
		if published[c.ID] {
			continue
		}
		if near := closest(c.ID, dropped); near != "" {
			out.Problems = append(out.Problems, at.Problem(cue.MakePath(cue.Str("clusters"), cue.Index(i), cue.Str("id")).String(),
				fmt.Sprintf("%s has no %s; did you mean %s, whose %s is published and which the spec no longer declares? "+
					"A cluster ID is the name its key is published under: renaming it in the spec does not rename the cluster, "+
					"it removes %s's peerings (its providers revoke them) and declares a new cluster that waits for `gitpeer init --cluster %s`. "+
					"Fix the spelling, or if %s is meant to go, remove it in its own change",
					c.ID, layout.ClusterPath(c.ID, layout.ClusterFile), near, layout.ClusterPath(near, layout.ClusterFile),
					near, c.ID, near)))
			continue
		}
		out.Unpublished = append(out.Unpublished, fmt.Sprintf("%s has no %s published yet: its peerings wait until `gitpeer init --cluster %s` runs on that cluster and its cluster.yaml reaches the branch",
			c.ID, layout.ClusterPath(c.ID, layout.ClusterFile), c.ID))
	}

	seen := map[schema.Pair]bool{}
	for _, p := range live {
		k := schema.Pair{Consumer: p.Consumer, Provider: p.Provider}
		if wanted[k] || seen[k] {
			continue
		}
		seen[k] = true
		out.Revoked = append(out.Revoked, fmt.Sprintf("%s → %s (%s)", p.Consumer, p.Provider, p.Where))
	}
	sort.Strings(out.Revoked)
	return out
}

// publishedClusters is the set of IDs with a clusters/<id>/cluster.yaml in
// tree (present, whatever it holds).
func publishedClusters(tree fs.FS) map[string]bool {
	ids := map[string]bool{}
	entries, err := fs.ReadDir(tree, "clusters")
	if err != nil {
		return ids
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(tree, layout.ClusterPath(e.Name(), layout.ClusterFile)); err == nil {
			ids[e.Name()] = true
		}
	}
	return ids
}

// statusPeerings are the peerings the published clusters' status.yaml
// files report past Pending and not already Revoking: what is live.
func statusPeerings(tree fs.FS, published map[string]bool) []livePeering {
	ids := make([]string, 0, len(published))
	for id := range published {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var live []livePeering
	for _, id := range ids {
		st, err := layout.ReadStatus(tree, id)
		if err != nil {
			continue
		}
		for _, p := range st.Peerings {
			if p.Step == layout.StepPending || p.Step == layout.StepRevoking || p.Step == "" {
				continue
			}
			live = append(live, livePeering{p.Consumer, p.Provider,
				fmt.Sprintf("%s in %s", p.Step, layout.ClusterPath(id, layout.StatusFile))})
		}
	}
	return live
}

// closest is the ID in candidates nearest to id by edit distance, when it
// is near enough to be a slip of the keyboard (at most 2 edits, and fewer
// than a third of the longer ID's length, so that short IDs such as "a"
// and "b" are not taken for each other); "" when none is.
func closest(id string, candidates map[string]bool) string {
	best, bestD := "", 0
	for c := range candidates {
		d := editDistance(id, c)
		limit := min(2, max(len(id), len(c))/3)
		if d == 0 || d > limit {
			continue
		}
		if best == "" || d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment: insertions, deletions, substitutions and transpositions of
// adjacent bytes) between two cluster IDs, which are ASCII.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// revocationWarning is the banner validate and verify print on stderr
// for peerings a spec change removes: a removal is deliberate, so it is
// no error, but it must not pass unnoticed in a CI log.
func revocationWarning(revoked []string) string {
	if len(revoked) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "WARNING: this spec REVOKES %d live peering(s): each provider drains the consumer's Tenant and ResourceSlices on its next pass, then withdraws the Identity; what the consumer offloaded there stops:\n", len(revoked))
	for _, r := range revoked {
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	b.WriteString("If that is not meant, put the peering(s) back in the spec.\n")
	return b.String()
}

// printSpecChanges writes the revocation WARNING and the notes on the
// unpublished clusters of changes on cmd's stderr (the problems are the
// caller's to print, with its others).
func printSpecChanges(cmd *cobra.Command, changes specChanges) {
	w := cmd.ErrOrStderr()
	for _, u := range changes.Unpublished {
		fmt.Fprintf(w, "note: %s\n", u)
	}
	fmt.Fprint(w, revocationWarning(changes.Revoked))
}

// specAtBase is the spec at revision base of the repository at dir,
// within the spec limits of cmd's flags; nil when base is "". Errors name
// the revision: a base that does not resolve, has no spec, or whose spec
// does not parse cannot be compared with. head, when set, is the spec the
// command read at HEAD (or --ref): a spec file of the same name and the
// very same bytes at base is that spec, not evaluated again (a pull
// request that leaves the spec alone; at 10,000 peerings an evaluation is
// a second of CPU).
func specAtBase(cmd *cobra.Command, dir, base string, head *readSpec) (*schema.Spec, error) {
	if base == "" {
		return nil, nil
	}
	if repo, err := gitobj.IsRepository(dir); err != nil || !repo {
		return nil, fmt.Errorf("--base %s: %s is not a Git repository (a checkout's root or a bare repository): there is no base to compare with", base, dir)
	}
	src, err := openLocal(dir, base, "--base")
	if err != nil {
		return nil, err
	}
	defer src.Close()
	lim, err := specLimits(cmd)
	if err != nil {
		return nil, err
	}
	file, data, err := schema.FindSpec(src.Tree, src.Dir)
	if err != nil {
		return nil, fmt.Errorf("--base: %s: %w", src.Where(), err)
	}
	if head != nil && head.spec != nil && file == head.file && bytes.Equal(data, head.data) {
		return head.spec, nil // parsing is a function of the name and the bytes
	}
	spec, err := schema.ParseBounded(cmd.Context(), file, data, lim)
	if err != nil {
		return nil, fmt.Errorf("--base: the spec at %s does not parse, so nothing can be compared with it: %w", src.Where(), err)
	}
	return spec, nil
}

// readSpec is a spec file as a command read it: its path as
// schema.FindSpec names it, its bytes, and what they parsed to.
type readSpec struct {
	file string
	data []byte
	spec *schema.Spec
}
