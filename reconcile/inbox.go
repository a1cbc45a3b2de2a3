package reconcile

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// ConditionUnexpectedArtifacts is the type of the condition a peering's
// status carries, True, while this cluster's inbox folder of the peer
// (clusters/<self>/inbox/<peer>/) holds files that are not artifacts the
// peer sends in its part (artifact.InboxArtifact), signed or not: the pass
// ignores them (see layout.ConditionUnexpectedArtifacts).
const ConditionUnexpectedArtifacts = layout.ConditionUnexpectedArtifacts

// maxUnexpectedNamed is how many files a status message names at most: a
// writer planting thousands of files must not bloat status.yaml.
const maxUnexpectedNamed = 8

// sender is the part peer plays toward this cluster as the writer of its
// inbox folder clusters/<self>/inbox/<peer>/: provider, consumer or both,
// as the spec declares them. A part the spec no longer declares counts
// while the peer's nonce.yaml (as provider) or tenant.yaml (as consumer)
// is still there, signed or not, as gitpeer verify counts it: its writer
// withdraws them in its next pass, and the rest of what it sent goes with
// them.
func (p *pass) sender(peer string) artifact.Sender {
	present := func(name string) bool {
		_, err := fs.Stat(p.raw, layout.InboxPath(p.self, peer, name))
		return err == nil
	}
	return artifact.Sender{
		Provider: p.hasPeering(p.self, peer) || present(layout.NonceFile),
		Consumer: p.hasPeering(peer, p.self) || present(layout.TenantFile),
	}
}

// recipient is the part this cluster plays toward peer as the writer of
// its folder in peer's inbox, clusters/<peer>/inbox/<self>/: only what
// the spec declares.
func (p *pass) recipient(peer string) artifact.Sender {
	return artifact.Sender{Provider: p.hasPeering(peer, p.self), Consumer: p.hasPeering(p.self, peer)}
}

// unexpected lists, sorted, every path under clusters/<self>/inbox/<peer>/
// of the repo as it is (signed or not) that is not an artifact peer sends
// in its part: a file of another name, anything in a subfolder, a path
// that cannot be listed (a link in place of a folder). Nothing in the pass
// reads such a path: the handshake reads the artifacts by name, the slice
// requests by artifact.SliceName.
func (p *pass) unexpected(peer string) []string {
	dir := layout.ClusterPath(p.self, layout.InboxDir, peer)
	from := p.sender(peer)
	var out []string
	_ = fs.WalkDir(p.raw, dir, func(f string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && f == dir && errors.Is(err, fs.ErrNotExist):
			return fs.SkipDir
		case errors.Is(err, layout.ErrTooManyEntries):
			return fs.SkipDir // the peering is Stalled TooManyEntries
		case err != nil:
			out = append(out, f)
			return nil
		case d.IsDir():
			return nil
		}
		if !artifact.InboxArtifact(strings.TrimPrefix(f, dir+"/"), from) {
			out = append(out, f)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// reportUnexpected sets or clears ConditionUnexpectedArtifacts on every
// peering of status, for the files of the peer's inbox folder this pass
// ignored because they are not artifacts (see unexpected).
func (p *pass) reportUnexpected(status *layout.ClusterStatus) {
	found := map[string][]string{}
	for i := range status.Peerings {
		ps := &status.Peerings[i]
		peer := ps.Consumer
		if peer == p.self {
			peer = ps.Provider
		}
		files, done := found[peer]
		if !done {
			files = p.unexpected(peer)
			found[peer] = files
		}
		o := &peeringObject{status: ps}
		if len(files) == 0 {
			conditions.Delete(o, ConditionUnexpectedArtifacts)
			continue
		}
		named := files
		more := ""
		if len(named) > maxUnexpectedNamed {
			named = named[:maxUnexpectedNamed]
			more = fmt.Sprintf(" and %d more", len(files)-maxUnexpectedNamed)
		}
		from := p.sender(peer)
		conditions.MarkTrue(o, ConditionUnexpectedArtifacts, reasons.UnexpectedArtifact, "ignored %s%s: not artifacts %s sends as %s (%s)", strings.Join(named, ", "), more, peer, from.Part(p.self), artifact.InboxArtifacts(from))
	}
}

// checkOutbox refuses, as a bug, a file this pass would write into
// another cluster's inbox that is not an artifact this cluster sends it in
// its part (artifact.InboxArtifact): a reconciler writes artifacts into
// inboxes, nothing else.
func (p *pass) checkOutbox(f string) error {
	if p.outboxArtifact(f) {
		return nil
	}
	to, _, _, _ := layout.Split(f)
	return fmt.Errorf("internal: pass wants to write %s, which is not an artifact %s sends as %s", f, p.self, p.recipient(to).Part(to))
}

// outboxArtifact reports whether f, a file this cluster signed, may be
// carried over: anything but a file in another cluster's inbox that is not
// an artifact this cluster sends it in its present part (one the spec no
// longer declares is withdrawn, as a revocation withdraws it).
func (p *pass) outboxArtifact(f string) bool {
	to, from, rest, ok := layout.Split(f)
	return !ok || from != p.self || artifact.InboxArtifact(rest, p.recipient(to))
}
