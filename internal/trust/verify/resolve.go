package verify

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/schema"
)

// peersBut is all[cluster], sorted, without duplicates or cluster itself.
func peersBut(all map[string][]string, cluster string) []string {
	return slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(all[cluster]))), func(p string) bool { return p == cluster })
}

// repinRecord is peer's repins.yaml in tree as path and blob hash, and
// whether rec, that file as peer signed it (nil: none usable), records
// cluster's key fingerprint as re-pinned.
func repinRecord(tree fs.FS, rec *layout.Repins, peer, cluster, fingerprint string) (pathBlob, bool) {
	file := layout.ClusterPath(peer, layout.RepinsFile)
	if rec == nil || !rec.Repinned(cluster, fingerprint) {
		return pathBlob{path: file}, false
	}
	data, err := fs.ReadFile(tree, file)
	if err != nil {
		return pathBlob{path: file}, false
	}
	return pathBlob{file, plumbing.ComputeHash(plumbing.BlobObject, data)}, true
}

// resolveRepinned marks Resolved (ResolutionRepinned) each KeyChanged
// finding of h whose new key every peer of its cluster in spec (at least
// one) records as re-pinned in its repins.yaml in tree, the checked
// commit, that file being listed with its content in the peer's manifest
// verified with the key the peer publishes there, and first written after
// the key change in walk order. A peer's record is its
// reconciler's word, signed, that its admin re-pinned that very key
// (gitpeer trust): a key swap no admin vouched for stays a finding, and so
// does one some peer still refuses.
func (h *history) resolveRepinned(tree fs.FS, spec *schema.Spec) {
	if len(h.keyChanges) == 0 || spec == nil {
		return
	}
	records := map[string]*layout.Repins{} // by peer; nil: none usable
	record := func(peer string) *layout.Repins {
		if r, ok := records[peer]; ok {
			return r
		}
		r := signedRepins(tree, peer)
		records[peer] = r
		return r
	}
	all := peersOf(spec)
	for _, kc := range h.keyChanges {
		peers := peersBut(all, kc.cluster)
		if len(peers) == 0 {
			continue
		}
		ok := true
		var commit string
		for _, peer := range peers {
			// A signature proves who, never when: a record older than the
			// key change (a key re-pinned once, published again later by
			// whoever holds it) vouches for nothing since.
			k, repinned := repinRecord(tree, record(peer), peer, kc.cluster, kc.fingerprint)
			if at, seen := h.repinsAt[k]; !repinned || !seen || at <= kc.at {
				ok = false
				break
			}
			if c := h.manifestBy[k]; !c.IsZero() && commit == "" {
				commit = c.String()
			}
		}
		if !ok {
			continue
		}
		h.findings[kc.index].Resolved = &Resolution{Reason: ResolutionRepinned, Commit: commit,
			Message: fmt.Sprintf("%s re-pinned %s's key %s on its admin's word (gitpeer trust), as %s signed", strings.Join(peers, ", "), kc.cluster, kc.fingerprint,
				joinPaths(peers, layout.RepinsFile))}
	}
}

// joinPaths names clusters/<id>/<name> for each of ids.
func joinPaths(ids []string, name string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = layout.ClusterPath(id, name)
	}
	return strings.Join(out, ", ")
}

// signedRepins reads peer's repins.yaml in tree if peer's manifest,
// verified with the key peer publishes in tree, lists it with its
// content; nil otherwise.
func signedRepins(tree fs.FS, peer string) *layout.Repins {
	file := layout.ClusterPath(peer, layout.RepinsFile)
	data, err := layout.ReadFileLimit(tree, file, layout.MaxRepinsSize)
	if err != nil {
		return nil
	}
	ci, err := layout.ReadClusterInfo(tree, peer)
	if err != nil {
		return nil
	}
	pub, _, err := handshake.ParsePublicKey([]byte(ci.PublicKey))
	if err != nil {
		return nil
	}
	dir := layout.ClusterPath(peer)
	mdata, err := layout.ReadFileLimit(tree, path.Join(dir, dirmanifest.FileName), dirmanifest.MaxSize)
	if err != nil {
		return nil
	}
	m, err := dirmanifest.Parse(path.Join(dir, dirmanifest.FileName), mdata)
	if err != nil || m.Verify(pub, peer, dir) != nil || !m.Covers(layout.RepinsFile, data) {
		return nil
	}
	r, err := layout.ParseRepins(file, peer, data)
	if err != nil {
		return nil
	}
	return r
}
