package verify

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/schema"
)

// rotationReasons are the reasons of the tree findings a key rotation in
// progress makes on what a peer keeps for the previous key: an answer,
// Identity or grant checked against the new key, and the objects rendered
// from them. Nothing about signatures of directories, layout or private
// material is among them: those a rotation never excuses.
var rotationReasons = map[string]bool{reasons.RenderedMismatch: true, reasons.UnexpectedObject: true, reasons.OutOfOrder: true, reasons.EpochMismatch: true, reasons.InvalidCertificate: true, reasons.InvalidCSR: true, reasons.SignatureVerificationFailed: true, reasons.KeyNotPinned: true, reasons.UntrustedCA: true, reasons.UntrustedAPIServer: true, reasons.UntrustedCertificate: true}

// signedReasons are the reasons of the tree findings on a file that its
// writer's manifest does not vouch for. A rotation explains one only on a
// directory of the rotated cluster still signed, as before the rotation,
// by its previous key (the cluster re-signs it with the new key at its
// next pass): the file and the manifest unchanged since.
var signedReasons = map[string]bool{reasons.UnsignedChange: true, reasons.ManifestInvalid: true}

// maxRotationWalk bounds the commits resolveRotation walks back (first
// parents) to find where a rotation was published.
const maxRotationWalk = 10000

// rotationFinding is a tree finding (by index) that a rotation may
// explain, and the clusters whose rotation would.
type rotationFinding struct {
	index    int
	clusters []string // the sides of the peering the file belongs to
}

// resolveRotation marks Resolved (ResolutionKeyRotationInProgress) each
// tree finding of findings (those with no commit) that a key rotation in
// progress explains: a cluster X of the peering the file belongs to
// publishes, at the checked commit head, a cluster.yaml with a rotation
// statement signed by its previous key, first published at commit R of
// head's first-parent line; the cluster.yaml before R (at R's first
// parent P) published exactly that previous key; the file has kept the
// same content on that line from P to head; and the tree at P, checked as
// the tree is (with P's spec), holds no finding on that file (and field).
// That is the state a peer keeps for the previous key until it answers the
// new one (docs/trust.md, "A consumer's rotation"): what it keeps held
// every check before the rotation, and nobody changed it since. A file a
// writer restored after the rotation changed on that line, and is not
// excused.
func resolveRotation(dir string, head plumbing.Hash, tree fs.FS, spec *schema.Spec, opts Options, findings []Finding) error {
	var candidates []rotationFinding
	for i, f := range findings {
		if f.Commit != "" || f.Resolved != nil || !rotationReasons[f.Reason] && !signedReasons[f.Reason] {
			continue
		}
		if sides := sidesOf(f.File, spec); len(sides) > 0 {
			candidates = append(candidates, rotationFinding{index: i, clusters: sides})
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	rotated := map[string]*layout.ClusterInfo{}
	for _, c := range candidates {
		for _, id := range c.clusters {
			if _, seen := rotated[id]; seen {
				continue
			}
			rotated[id] = nil
			ci, err := layout.ReadClusterInfo(tree, id)
			if err != nil || ci.Rotation == nil {
				continue
			}
			prev, _, err := handshake.ParsePublicKey([]byte(ci.Rotation.PreviousPublicKey))
			if err != nil {
				continue
			}
			fp, err := handshake.Fingerprint(prev)
			if err != nil || ci.VerifyRotation(fp) != nil {
				continue
			}
			rotated[id] = ci
		}
	}
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return err
	}
	defer done()
	for id, ci := range rotated {
		if ci == nil {
			continue
		}
		var mine []rotationFinding
		files := map[string]bool{}
		for _, c := range candidates {
			f := findings[c.index]
			if f.Resolved != nil || !contains(c.clusters, id) {
				continue
			}
			if signedReasons[f.Reason] {
				writer, dir, ok := dirmanifest.Scope(f.File)
				if !ok || writer != id {
					continue // only the rotated cluster's own signature lags
				}
				files[path.Join(dir, dirmanifest.FileName)] = true
			}
			mine = append(mine, c)
			files[f.File] = true
		}
		if len(mine) == 0 {
			continue
		}
		r, p, kept, err := rotationCommit(repo.CommitObject, head, id, files)
		if err != nil || p == nil {
			continue // not found within the walk: nothing excused
		}
		// Read under gitobj's lock: the checks read it in parallel.
		ct, err := gitobj.OpenCommitTree(dir, p.Hash.String())
		if err != nil {
			continue
		}
		defer ct.Close()
		var pTree fs.FS = newBlobCachedTree(ct.TreeFS)
		before, err := layout.ReadClusterInfo(pTree, id)
		if err != nil || before.Fingerprint == ci.Fingerprint || ci.VerifyRotation(before.Fingerprint) != nil {
			continue // not a rotation from the key published before
		}
		pSpec := spec
		if file, data, err := schema.FindSpec(pTree, ""); err == nil {
			parse := opts.ParseSpec
			if parse == nil {
				parse = schema.Parse
			}
			if pSpec, err = parse(file, data); err != nil {
				continue
			}
		}
		scope := rotationScope(pSpec, mine, findings)
		then, _ := checkTree(pTree, pSpec, Options{Now: opts.now(), RequireManifests: opts.RequireManifests}, guard.NewCache(), nil, scope)
		held := map[[2]string]bool{}
		for _, f := range then {
			held[[2]string{f.File, ""}] = true
			held[[2]string{f.File, f.Field}] = true
		}
		for _, c := range mine {
			f := &findings[c.index]
			if !kept[f.File] || held[[2]string{f.File, ""}] && f.Reason != reasons.UnexpectedObject || held[[2]string{f.File, f.Field}] {
				continue
			}
			if signedReasons[f.Reason] {
				_, dir, _ := dirmanifest.Scope(f.File)
				if m := path.Join(dir, dirmanifest.FileName); !kept[m] || held[[2]string{m, ""}] {
					continue
				}
			}
			f.Resolved = &Resolution{Reason: ResolutionKeyRotationInProgress, Commit: r.Hash.String(),
				Message: fmt.Sprintf("%s rotated its key to %s with a statement signed by its previous key %s; this is as it was before, when it held every check: kept until the peering answers the new key",
					id, ci.Fingerprint, before.Fingerprint)}
		}
	}
	return nil
}

// rotationCommit walks head's first-parent line back while id's
// cluster.yaml is the one head holds, at most maxRotationWalk commits:
// r is the last commit that holds it (the one that published it), p r's
// first parent (nil when r has none, or the walk ended first); kept are
// the files (of files) whose content is the same at every commit from p
// to head.
func rotationCommit(get func(plumbing.Hash) (*object.Commit, error), head plumbing.Hash, id string, files map[string]bool) (r, p *object.Commit, kept map[string]bool, err error) {
	file := layout.ClusterPath(id, layout.ClusterFile)
	c, err := get(head)
	if err != nil {
		return nil, nil, nil, err
	}
	want, err := entryHash(c, file)
	if err != nil {
		return nil, nil, nil, err
	}
	blobs := map[string]plumbing.Hash{}
	kept = map[string]bool{}
	for f := range files {
		if blobs[f], err = entryHash(c, f); err != nil {
			return nil, nil, nil, err
		}
		kept[f] = true
	}
	for range maxRotationWalk {
		if len(c.ParentHashes) == 0 {
			return c, nil, nil, nil
		}
		parent, err := get(c.ParentHashes[0])
		if err != nil {
			return c, nil, nil, nil // a shallow clone's edge
		}
		for f := range files {
			if b, err := entryHash(parent, f); err != nil || b != blobs[f] {
				kept[f] = false
			}
		}
		b, err := entryHash(parent, file)
		if err != nil {
			return nil, nil, nil, err
		}
		if b != want {
			return c, parent, kept, nil
		}
		c = parent
	}
	return c, nil, nil, nil
}

// entryHash is the blob hash of path in c's tree; zero when absent.
func entryHash(c *object.Commit, p string) (plumbing.Hash, error) {
	t, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	e, err := t.FindEntry(p)
	if missingEntry(err) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}

// sidesOf names the clusters whose rotation could explain a finding on
// file: both sides of the peering of an inbox or a liqo/<peer>/ file, a
// cluster and its peers in spec for its kustomization. None for anything
// else.
func sidesOf(file string, spec *schema.Spec) []string {
	cluster, from, rest, ok := layout.Split(file)
	switch {
	case !ok:
		return nil
	case from != "":
		return []string{cluster, from}
	case rest == layout.KustomizationFile:
		return append([]string{cluster}, peersOf(spec)[cluster]...)
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 3 && parts[0] == layout.LiqoDir {
		return []string{cluster, parts[1]}
	}
	return nil
}

// rotationScope is the scope of the check of the tree before a rotation:
// the trees of the clusters the findings of mine are in, and their peers.
func rotationScope(spec *schema.Spec, mine []rotationFinding, findings []Finding) *treeScope {
	s := &treeScope{clusters: map[string]bool{}, neighbours: map[string]bool{}, paths: map[string]bool{}, dirs: map[string]bool{}}
	peers := peersOf(spec)
	for _, c := range mine {
		if cluster, _, _, ok := layout.Split(findings[c.index].File); ok {
			s.clusters[cluster] = true
		}
		for _, id := range c.clusters {
			s.clusters[id] = true
		}
	}
	for id := range s.clusters {
		for _, p := range peers[id] {
			s.neighbours[p] = true
		}
		s.sorted = append(s.sorted, id)
	}
	sort.Strings(s.sorted)
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
