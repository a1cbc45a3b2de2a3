package reconcile

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// withdrawals is what a pass knows of its own earlier state beyond the
// tree: which of its directories a repo writer rolled back, and what it
// holds there unchanged (docs/trust.md, "Withdrawals are signed").
type withdrawals struct {
	// held are this cluster's inbox directories (clusters/<peer>/inbox/<self>)
	// found rolled back when the pass had to carry them over: the pass keeps
	// exactly the signed files the restored manifest lists, and the manifest,
	// byte for byte, and signs nothing there. Directory → repo path → content.
	held map[string]map[string][]byte
	// rolledBack are, per peer, what the pass refused to carry over for it,
	// for the peering's status.
	rolledBack map[string][]string
}

// ownRolledBack returns the manifest of this cluster's own directory dir
// (clusters/<self> or clusters/<peer>/inbox/<self>) as the repo holds it,
// its bytes, and why it is not what this cluster last published there:
// signed by this cluster, with a sequence below the highest this cluster
// found published (pins.Store.Published), it is an older state a repo
// writer restored from history. "" when the manifest is missing or not
// this cluster's (the signed view reads nothing of it then) or not older.
func (p *pass) ownRolledBack(dir string) (*dirmanifest.Manifest, []byte, string) {
	m, why := p.ownRolledBackWhy(dir)
	if m == nil {
		return nil, nil, ""
	}
	data, err := fs.ReadFile(p.raw, path.Join(dir, dirmanifest.FileName))
	if err != nil {
		return nil, nil, ""
	}
	return m, data, why
}

// ownRolledBackWhy is ownRolledBack without the manifest's bytes.
func (p *pass) ownRolledBackWhy(dir string) (*dirmanifest.Manifest, string) {
	m, ok := p.ownManifest(dir)
	if !ok {
		return nil, ""
	}
	floor := p.pins.Published[dir]
	if m.Sequence >= floor {
		return m, ""
	}
	return m, fmt.Sprintf("%s: sequence %d is lower than %d, which %s published there: an old state restored from history (%s)",
		path.Join(dir, dirmanifest.FileName), m.Sequence, floor, p.self, reasons.ManifestRolledBack)
}

// ownManifest is the manifest of this cluster's own directory dir in the
// repo, when this cluster signed it. The signed view checks its own
// directories with no floor (MinSequence), once per pass and through the
// pass's cache, so this is what the repo holds, whatever its sequence.
func (p *pass) ownManifest(dir string) (*dirmanifest.Manifest, bool) {
	return p.view.Verified(p.self, dir)
}

// outboxRolledBack reports whether this cluster's outbox to peer is an
// older state than it published there (ownRolledBack): its decisions are
// not this cluster's to keep.
func (p *pass) outboxRolledBack(peer string) bool {
	_, why := p.ownRolledBackWhy(layout.ClusterPath(peer, layout.InboxDir, p.self))
	return why != ""
}

// grantableNow reports whether prev, the answer to consumer's slice name
// found in an older outbox of this cluster's (outboxRolledBack), may be
// kept while the request is unreadable: a denial, or an acceptance the spec
// still lists and the provider's terms would grant as a new request.
// Anything else there is a decision this cluster withdrew since, which a
// repo writer put back.
func (p *pass) grantableNow(consumer, name string, prev *authv1beta1.ResourceSlice) bool {
	if !artifact.SliceAccepted(prev) {
		return true
	}
	_, asProvider := p.in.Spec.PeeringsOf(p.self)
	for _, pr := range asProvider {
		if pr.Consumer != consumer {
			continue
		}
		for _, sl := range pr.Slices {
			if sl.Name == name {
				d := policy.Decide(p.terms.classes, authv1beta1.TenantCondition(pr.Condition()),
					policy.Request{Class: string(prev.Spec.Class), Resources: prev.Spec.Resources})
				return d.Accepted
			}
		}
	}
	return false
}

// carryRolledBack handles a directory the pass is about to carry over
// (carry) when the signed directory holding it is this cluster's own and
// was rolled back: a reconciler carries over what it last signed, never an
// older state a repo writer put back. An inbox directory is held as the
// writer left it (the files its restored manifest lists, and that
// manifest), re-signed by nothing: its reader refuses the older sequence.
// Of clusters/<self>/ nothing is carried. The peering's status names it.
// It reports whether it handled dir; false means carry it as usual.
func (p *pass) carryRolledBack(dir string) bool {
	writer, signed, ok := dirmanifest.Scope(path.Join(dir, dirmanifest.FileName))
	if !ok || writer != p.self {
		return false
	}
	m, data, why := p.ownRolledBack(signed)
	if why == "" {
		return false
	}
	w := &p.withdrawals
	note := func(format string, a ...any) {
		peer := p.peerOf(path.Join(dir, dirmanifest.FileName))
		if peer == "" {
			return
		}
		if w.rolledBack == nil {
			w.rolledBack = map[string][]string{}
		}
		if msg := fmt.Sprintf(format, a...); !slices.Contains(w.rolledBack[peer], msg) {
			w.rolledBack[peer] = append(w.rolledBack[peer], msg)
		}
	}
	switch {
	case signed != dir || signed == layout.ClusterPath(p.self):
		note("kept nothing of %s: %s", dir, why)
	case w.held[dir] == nil:
		note("held %s as found, signed anew by nothing: %s", dir, why)
		held := map[string][]byte{path.Join(dir, dirmanifest.FileName): data}
		for _, f := range m.Files {
			file := path.Join(dir, f.Path)
			if content, err := fs.ReadFile(p.raw, file); err == nil && m.Covers(f.Path, content) {
				held[file] = content
			}
		}
		if w.held == nil {
			w.held = map[string]map[string][]byte{}
		}
		w.held[dir] = held
	}
	return true
}

// restoreHeld makes the pass's files in each held directory exactly what
// is held there, whatever the pass wrote into it after carrying it over.
func (p *pass) restoreHeld() {
	for dir, held := range p.withdrawals.held {
		for f := range p.out.Files {
			if strings.HasPrefix(f, dir+"/") {
				delete(p.out.Files, f)
			}
		}
		for f, data := range held {
			p.out.Files[f] = data
		}
	}
}

// tombstones signs the withdrawal of every inbox directory this cluster
// signed before (in the repo or in its own record), writes nothing into in
// this pass, and no longer peers through (the spec revoked the peering):
// the directory keeps a manifest listing no files, at a sequence above all
// it signed there (dirmanifest.BuildTombstone). A tombstone already in the
// repo, at or above what this cluster published, is kept as it is, also
// once the peering is approved again and until the pass writes there. A
// directory in the inbox of a cluster the spec no longer declares gets
// none, and is deleted: that is how tombstones end.
func (p *pass) tombstones(dirs []string, written map[string]map[string][]byte) error {
	now := uint64(max(p.in.Now.Unix(), 1))
	for _, dir := range dirs {
		owner := strings.Split(dir, "/")[1]
		if _, ok := written[dir]; ok || p.withdrawals.held[dir] != nil {
			continue
		}
		if _, declared := p.in.Spec.Cluster(owner); !declared {
			continue
		}
		file := path.Join(dir, dirmanifest.FileName)
		seq := max(now, p.pins.Own[dir]+1)
		old, data, why := p.ownRolledBack(dir)
		if old != nil && old.Tombstone() && why == "" {
			p.out.Files[file] = data
			continue
		}
		if p.hasPeering(p.self, owner) || p.hasPeering(owner, p.self) {
			// The spec did not withdraw it: a pass of a peering that
			// writes nothing here (waiting for a nonce a repo writer
			// deleted, say) does not sign a withdrawal its peer would act
			// on.
			continue
		}
		if old != nil {
			seq = max(seq, old.Sequence+1)
		}
		_, data, err := dirmanifest.BuildTombstone(p.in.Backend.Signer(), p.self, dir, seq)
		if err != nil {
			return err
		}
		p.signed(dir, file, seq, data)
	}
	return nil
}

// ownInboxDirs lists, sorted, every clusters/<peer>/inbox/<self> this
// cluster signed before: recorded in its pin store, or holding a manifest
// it signed in the repo. A manifest anyone else put there is not a reason
// to sign anything: the pass deletes it like any file it did not write.
func (p *pass) ownInboxDirs() ([]string, error) {
	seen := map[string]bool{}
	for dir := range p.pins.Own {
		if writer, signed, ok := dirmanifest.Scope(path.Join(dir, dirmanifest.FileName)); ok && writer == p.self && signed == dir && dir != layout.ClusterPath(p.self) {
			seen[dir] = true
		}
	}
	// A manifest.yaml is only found under a directory.
	inboxes, err := p.inboxesForSelf()
	if err != nil {
		return nil, err
	}
	for _, c := range inboxes {
		dir := layout.ClusterPath(c, layout.InboxDir, p.self)
		if seen[dir] {
			continue
		}
		if _, err := fs.Stat(p.raw, path.Join(dir, dirmanifest.FileName)); err != nil {
			continue
		}
		if _, ok := p.ownManifest(dir); ok {
			seen[dir] = true
		}
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// recordPublished records, for clusters/<self> and each of this cluster's
// inbox directories dirs (ownInboxDirs), the
// sequence of its manifest the repo holds, when this cluster signed it:
// the floor below which a later pass carries nothing over (ownRolledBack).
//
// A manifest of this cluster's key in a directory its pin store signed,
// above every sequence the store says it signed there and above any such
// found before, was signed by another process with the key: it is counted (pins.Store.Foreign, ForeignPasses,
// Output.ForeignWrites), for the caller to tell a second reconciler.
func (p *pass) recordPublished(dirs []string) error {
	var own map[string]uint64
	if p.in.Pins != nil {
		own = p.in.Pins.Own
	}
	found := false
	for _, dir := range append(dirs, layout.ClusterPath(p.self)) {
		m, ok := p.ownManifest(dir)
		if !ok {
			continue
		}
		p.pins.SeePublished(dir, m.Sequence)
		// A directory this store never signed holds what gitpeer init or
		// a predecessor with another state signed: no evidence.
		if own[dir] > 0 && m.Sequence > own[dir] && m.Sequence > p.pins.Foreign[dir] {
			if p.pins.Foreign == nil {
				p.pins.Foreign = map[string]uint64{}
			}
			p.pins.Foreign[dir] = m.Sequence
			p.out.ForeignWrites = append(p.out.ForeignWrites, fmt.Sprintf("%s/%s (sequence %d, above the %d this cluster signed)", dir, dirmanifest.FileName, m.Sequence, own[dir]))
			found = true
		}
	}
	if found {
		p.pins.ForeignPasses++
	} else {
		p.pins.ForeignPasses = 0
	}
	return nil
}

// seeFormerPeers records the sequence of the manifest each pinned peer not
// trusted in this pass (a peering revoked, or a peer whose cluster.yaml
// changed) holds in this cluster's inbox, when the pinned key signed it: a
// peer's tombstone is seen even after the peering left the spec, so the
// older directory a repo writer restores later is ManifestRolledBack.
func (p *pass) seeFormerPeers() {
	ids := make([]string, 0, len(p.pins.Peers))
	for id := range p.pins.Peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pin := p.pins.Peers[id]
		if _, ok := p.trusted[id]; ok || id == p.self || pin == nil || pin.PublicKey == "" {
			continue
		}
		pub, _, err := handshake.ParsePublicKey([]byte(pin.PublicKey))
		if err != nil {
			continue
		}
		dir := layout.ClusterPath(p.self, layout.InboxDir, id)
		if m, _, err := dirmanifest.ReadVerified(p.raw, pub, id, dir); err == nil {
			pin.See(dir, m.Sequence)
		}
	}
}

// withdrawnNote says, for a peering's status, that peer's directory in
// this cluster's inbox is a tombstone: peer withdrew it, and it reads as
// empty.
func (p *pass) withdrawnNote(peer string) string {
	dir := layout.ClusterPath(p.self, layout.InboxDir, peer)
	if m, ok := p.view.Verified(peer, dir); ok && m.Tombstone() {
		return fmt.Sprintf("; %s withdrawn by %s (tombstone at sequence %d)", dir, peer, m.Sequence)
	}
	return ""
}

// noteRolledBack adds to the status of each peering what the pass refused
// to carry over for it (carryRolledBack), in its Ready and Stalled
// conditions' messages.
func (p *pass) noteRolledBack(status *layout.ClusterStatus) {
	for i := range status.Peerings {
		ps := &status.Peerings[i]
		peer := ps.Consumer
		if peer == p.self {
			peer = ps.Provider
		}
		notes := p.withdrawals.rolledBack[peer]
		if len(notes) == 0 {
			continue
		}
		for _, typ := range []string{meta.ReadyCondition, meta.StalledCondition} {
			if c := apimeta.FindStatusCondition(ps.Conditions, typ); c != nil {
				c.Message += "; " + strings.Join(notes, "; ")
			}
		}
	}
}
