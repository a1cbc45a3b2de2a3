package verify

import (
	"bytes"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// A checkpoint (gitpeer verify --checkpoint FILE) is a commit a run of
// the same checks found green: no failing finding, its tree and every
// commit before it judged. A later run from it judges only the commits
// since it, and checks of the tree only what they changed and what depends
// on it (as Options.Base does), and still judges every applied branch the
// clone holds. It is kept outside the repository, in a file the caller
// owns (a CI cache, like a known_hosts): a writer of the repository can
// neither forge it nor move it; the repository's content never says where
// to start.
//
// What a run from a checkpoint cannot see in the commits since it, the
// checkpoint carries or refuses:
//   - a key change resolved as re-pinned before it (Repinned): its
//     resolution depends on the peers' repins.yaml and the spec at the
//     commit checked, so it is judged again there (see carriedRepins);
//   - the certificates of the clusters the change leaves alone: ValidUntil
//     is the earliest expiry of those the run checked; past it, the run
//     checks everything;
//   - an applied branch whose seal is older than the checkpoint and does
//     not hold the tree checked: whether a change its cluster signed before
//     the checkpoint makes it stale is history's, so the run checks
//     everything (see appliedFromCheckpoint).

// CheckpointKind is the kind of a checkpoint file.
const CheckpointKind = "VerifyCheckpoint"

// MaxCheckpointSize bounds a checkpoint file (its carried re-pins grow
// with the key changes the peers re-pinned, one line per peer).
const MaxCheckpointSize = 4 << 20

// Checkpoint is a checkpoint file: JSON, apiVersion gitpeer.io/v1alpha1,
// kind VerifyCheckpoint.
type Checkpoint struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Repository is the root commits (full hex hashes, sorted) of the
	// history checked: a checkpoint of another repository is not used.
	Repository []string `json:"repository"`
	// Options is the caller's digest of what it checked with (its
	// version, the options that change a verdict): Check does not read
	// it; the caller uses only a checkpoint of its own digest.
	Options string `json:"options"`
	// Commit is the full hex hash of the commit found green.
	Commit string `json:"commit"`
	// ValidUntil is the earliest expiry (NotAfter) of a certificate the
	// checks found valid at Commit's tree; nil: none checked.
	ValidUntil *time.Time `json:"validUntil,omitempty"`
	// Repinned are the key changes (KeyChanged findings) before Commit
	// that the peers re-pinned (see Repinned).
	Repinned []Repinned `json:"repinned,omitempty"`
}

// Repinned is a KeyChanged finding before a checkpoint that every peer
// re-pinned: the finding (its resolution as it was), the cluster and the
// fingerprint of the key it published, and each peer's repins.yaml blob
// (full hex hash) at the checkpoint.
type Repinned struct {
	Finding     Finding           `json:"finding"`
	Cluster     string            `json:"cluster"`
	Fingerprint string            `json:"fingerprint"`
	Records     map[string]string `json:"records"`
}

// ParseCheckpoint parses a checkpoint file (file names it in errors). It
// refuses anything but a checkpoint of this format: unknown fields, a
// hash that is not 40 hex digits, no root commit, an unsorted or repeated
// one, an empty options digest, a re-pin with no peer.
func ParseCheckpoint(file string, data []byte) (*Checkpoint, error) {
	if len(data) > MaxCheckpointSize {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", file, len(data), MaxCheckpointSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cp Checkpoint
	if err := dec.Decode(&cp); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the checkpoint", file)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: %s: %s", file, field, fmt.Sprintf(format, a...))
	}
	switch {
	case cp.APIVersion != layout.APIVersion:
		return nil, bad("apiVersion", "is %q, want %q", cp.APIVersion, layout.APIVersion)
	case cp.Kind != CheckpointKind:
		return nil, bad("kind", "is %q, want %q", cp.Kind, CheckpointKind)
	case cp.Options == "":
		return nil, bad("options", "is empty")
	case !fullHash(cp.Commit):
		return nil, bad("commit", "%q is not a full commit hash", cp.Commit)
	case len(cp.Repository) == 0:
		return nil, bad("repository", "lists no root commit")
	}
	for i, r := range cp.Repository {
		if !fullHash(r) {
			return nil, bad(fmt.Sprintf("repository[%d]", i), "%q is not a full commit hash", r)
		}
		if i > 0 && r <= cp.Repository[i-1] {
			return nil, bad(fmt.Sprintf("repository[%d]", i), "not sorted, or repeated")
		}
	}
	for i, r := range cp.Repinned {
		field := fmt.Sprintf("repinned[%d]", i)
		switch {
		case r.Cluster == "" || r.Fingerprint == "":
			return nil, bad(field, "names no cluster or fingerprint")
		case len(r.Records) == 0:
			return nil, bad(field+".records", "names no peer")
		case r.Finding.Reason != reasons.KeyChanged:
			return nil, bad(field+".finding.reason", "is %q, want %q", r.Finding.Reason, reasons.KeyChanged)
		}
		for peer, blob := range r.Records {
			if peer == "" || !fullHash(blob) {
				return nil, bad(field+".records", "%q: %q is not a full blob hash", peer, blob)
			}
		}
	}
	return &cp, nil
}

// Marshal encodes cp as ParseCheckpoint reads it.
func (cp *Checkpoint) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func fullHash(s string) bool {
	if len(s) != 40 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// errNeedsFullHistory means a run from a checkpoint met what only the
// whole history decides (see appliedFromCheckpoint): Check runs again
// without it.
var errNeedsFullHistory = errors.New("needs the whole history")

// lineage is what Check reads of the history before it runs from a
// checkpoint, or records one: the root commits reachable from the commit
// checked and whether the checkpoint's commit is one of its ancestors.
type lineage struct {
	roots   []string
	shallow bool // a commit's parent is missing: the roots are not known
	holds   bool // the checkpoint's commit is the commit checked or an ancestor
}

// lineageOf walks the commits reachable from head in the repository at
// dir (each read once) for the root commits and whether commit is among
// them ("" for none).
func lineageOf(dir string, head plumbing.Hash, commit string) (*lineage, error) {
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer done()
	out := &lineage{}
	want := plumbing.NewHash(commit)
	seen := map[plumbing.Hash]bool{head: true}
	queue := []plumbing.Hash{head}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if commit != "" && h == want {
			out.holds = true
		}
		c, err := repo.CommitObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			out.shallow = true
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read commit %s: %w", dir, h, err)
		}
		if len(c.ParentHashes) == 0 {
			out.roots = append(out.roots, h.String())
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	slices.Sort(out.roots)
	return out, nil
}

// useCheckpoint decides whether Check runs from cp at the commit head of
// the repository at dir, at time now. It returns the commit to start from
// ("" for a run of everything), a note for a person when cp is not used
// (cp nil: none), and a finding when cp's commit is not in head's history
// (history rewritten since: a run of everything, and a finding, never a
// silent pass).
func useCheckpoint(cp *Checkpoint, lin *lineage, head plumbing.Hash, now time.Time) (from, note string, finding *Finding) {
	switch {
	case cp == nil:
		return "", "", nil
	case lin.shallow:
		return "", "a shallow clone: the checkpoint's repository cannot be told, every commit the clone holds was checked (clone the whole history to run from a checkpoint)", nil
	case !slices.Equal(cp.Repository, lin.roots):
		return "", fmt.Sprintf("the checkpoint is of another repository (root commits %s, this one's %s): not used, everything was checked",
			shortHashes(cp.Repository), shortHashes(lin.roots)), nil
	case !lin.holds:
		return "", "", &Finding{Reason: reasons.CheckpointNotAncestor, Commit: cp.Commit, Message: fmt.Sprintf(
			"the checkpoint's commit %s, found green before, is not in the history of %s: the history was rewritten since (a force-push), and what a run from it skipped is not known to be the same; everything was checked; once the rewrite is reviewed, delete the checkpoint file to accept it",
			shortHash(cp.Commit), shortHash(head.String()))}
	case cp.ValidUntil != nil && !now.Before(*cp.ValidUntil):
		return "", fmt.Sprintf("a certificate checked at the checkpoint expired at %s: everything was checked", cp.ValidUntil.UTC().Format(time.RFC3339)), nil
	}
	return cp.Commit, "", nil
}

func shortHashes(hs []string) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = shortHash(h)
	}
	return strings.Join(out, ", ")
}

// appliedFromCheckpoint reports whether the applied branches can be judged
// from the commits since the checkpoint from (what h.signed holds in a run
// from it) as the whole history would judge them: for each, its seal holds
// exactly what head holds of its cluster's tree (newerSigned then finds
// nothing, whatever history says), or the seal's parent is from or a
// descendant of it (every commit before from is then an ancestor of the
// parent, which newerSigned leaves out), or a change the cluster signed
// since from makes it stale already. A seal not in the clone, not signed
// or of another shape than one parent is judged without history.
func (h *history) appliedFromCheckpoint(order []*node, from plumbing.Hash) (bool, error) {
	refs, err := h.appliedRefs()
	if err != nil || len(refs) == 0 {
		return true, err
	}
	head := order[len(order)-1].c
	var index map[plumbing.Hash]int
	for _, r := range refs {
		seal, err := h.repo.CommitObject(r.hash)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if len(seal.ParentHashes) != 1 {
			continue
		}
		same, err := h.sealHoldsHead(seal, head, r.id)
		if err != nil {
			return false, err
		}
		if same {
			continue
		}
		parent := seal.ParentHashes[0]
		if parent == from {
			continue
		}
		if index == nil {
			index = make(map[plumbing.Hash]int, len(order))
			for i, n := range order {
				index[n.c.Hash] = i
			}
		}
		if _, ok := index[parent]; !ok {
			continue // not judged for freshness by the whole history either
		}
		if ancestorsIn(order, index, parent)[from] {
			continue
		}
		// A change the cluster signed since the checkpoint that makes the
		// seal stale makes it stale for the whole history too (which may
		// name a newer one): StaleSeal either way. Unless every such
		// change names the seal (SealPending): whether the commits before
		// the checkpoint do too, only the whole history can tell.
		newer, _, named, err := h.newerSigned(r.id, seal, parent, order, index, head)
		if err != nil {
			return false, err
		}
		if newer == nil || named {
			return false, nil
		}
	}
	return true, nil
}

// sealHoldsHead reports whether the seal's clusters/<id>/ is head's, the
// inbox aside.
func (h *history) sealHoldsHead(seal, head *object.Commit, id string) (bool, error) {
	top := layout.ClusterPath(id)
	headSub, err := h.entryAt(head.TreeHash, top)
	if err != nil {
		return false, err
	}
	sealSub, err := h.entryAt(seal.TreeHash, top)
	if err != nil {
		return false, err
	}
	same := true
	err = gitobj.Diff(h.tree, headSub, sealSub, func(p string, from, to *object.TreeEntry) error {
		if p == layout.InboxDir {
			return fs.SkipDir
		}
		if (from != nil && from.Mode.IsFile()) || (to != nil && to.Mode.IsFile()) {
			same = false
		}
		return nil
	})
	return same, err
}

// carriedRepins judges again, at the checked tree (spec, its tree), each
// key change cp carries as re-pinned: still resolved when every peer of
// the cluster in spec records the re-pin in its repins.yaml, signed (as
// resolveRepinned requires), and that file is either the one it recorded
// at the checkpoint or one first written since (a record written after
// the checkpoint is after the key change). Otherwise the finding fails,
// as the whole history would find it. It returns the findings, in cp's
// order.
func (h *history) carriedRepins(tree fs.FS, spec *schema.Spec, cp *Checkpoint) []Finding {
	var out []Finding
	all := peersOf(spec)
	for _, r := range cp.Repinned {
		f := r.Finding
		peers := peersBut(all, r.Cluster)
		ok := len(peers) > 0
		for _, peer := range peers {
			k, repinned := repinRecord(tree, signedRepins(tree, peer), peer, r.Cluster, r.Fingerprint)
			if _, since := h.repinsAt[k]; !repinned || r.Records[peer] != k.blob.String() && !since {
				ok = false
				break
			}
		}
		if !ok {
			f.Resolved = nil
			f.Message += fmt.Sprintf("; re-pinned before the checkpoint %s, but not by every peer of %s now", shortHash(cp.Commit), r.Cluster)
		}
		out = append(out, f)
	}
	return out
}

// repinnedOf lists the findings of h (and those carried) resolved as
// re-pinned, for the checkpoint of the commit checked (tree).
func repinnedOf(h *history, carried []Finding, cp *Checkpoint, tree fs.FS, spec *schema.Spec) []Repinned {
	var out []Repinned
	records := func(cluster string) map[string]string {
		m := map[string]string{}
		for _, peer := range peersOf(spec)[cluster] {
			if peer == cluster {
				continue
			}
			if data, err := fs.ReadFile(tree, layout.ClusterPath(peer, layout.RepinsFile)); err == nil {
				m[peer] = plumbing.ComputeHash(plumbing.BlobObject, data).String()
			}
		}
		return m
	}
	if cp != nil {
		for i, r := range cp.Repinned {
			if i < len(carried) && carried[i].Resolved != nil {
				r.Records = records(r.Cluster)
				out = append(out, r)
			}
		}
	}
	if h == nil {
		return out
	}
	for _, kc := range h.keyChanges {
		f := h.findings[kc.index]
		if f.Resolved == nil || f.Resolved.Reason != ResolutionRepinned {
			continue
		}
		out = append(out, Repinned{Finding: f, Cluster: kc.cluster, Fingerprint: kc.fingerprint, Records: records(kc.cluster)})
	}
	return out
}

// expiry keeps the earliest NotAfter of the certificates the tree's checks
// found valid, for a checkpoint's ValidUntil (shared by a verifier's
// forks).
type expiry struct {
	mu    sync.Mutex
	until time.Time
}

// note records the certificates of PEM bundles (those that parse).
func (e *expiry) note(bundles ...[]byte) {
	if e == nil {
		return
	}
	for _, b := range bundles {
		for {
			var block *pem.Block
			block, b = pem.Decode(b)
			if block == nil {
				break
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				continue
			}
			e.mu.Lock()
			if e.until.IsZero() || c.NotAfter.Before(e.until) {
				e.until = c.NotAfter
			}
			e.mu.Unlock()
		}
	}
}

// earliest is the earliest expiry noted, or of a and it; nil: none.
func (e *expiry) earliest(a *time.Time) *time.Time {
	var out *time.Time
	if e != nil && !e.until.IsZero() {
		t := e.until.UTC()
		out = &t
	}
	if a != nil && (out == nil || a.Before(*out)) {
		t := a.UTC()
		out = &t
	}
	return out
}
