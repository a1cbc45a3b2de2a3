package reconcile

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

// distrusted is why a peer's cluster.yaml did not match its pins in this
// pass: the condition reason and message every peering with it stalls on.
type distrusted struct{ reason, message string }

// trusted is a peer whose cluster.yaml matched its pins in this pass.
type trusted struct {
	info *layout.ClusterInfo
	key  crypto.PublicKey
	der  []byte
}

// Key implements dirmanifest.Trust: this cluster's own key, and the keys of
// the peers trusted in this pass.
func (p *pass) Key(writer string) (crypto.PublicKey, bool) {
	if writer == p.self {
		return p.ownKey, true
	}
	t, ok := p.trusted[writer]
	if !ok {
		return nil, false
	}
	return t.key, true
}

// MinSequence implements dirmanifest.Trust. This cluster's own directories are
// read with no floor: what it signed is what it wrote, and a push that lost
// a race leaves the repo one sequence behind the pin store. What a pass
// carries over of them, and the decisions it keeps, are checked against
// the floor of what it published instead (ownRolledBack).
func (p *pass) MinSequence(writer, dir string) uint64 {
	if writer == p.self {
		return 0
	}
	if pin := p.pins.Lookup(writer); pin != nil {
		return pin.Seen(dir)
	}
	return 0
}

// trustPeer checks peer's published cluster.yaml against what this cluster
// pinned for it, pinning it first when the peering is approved (the spec
// declares it) and nothing is pinned yet. Where the spec makes peer a
// provider of this cluster (in any peering: the decision is the same
// whichever role asks first), its CA and API server are pinned facts. Only
// values a signature vouches for are ever pinned: a cluster.yaml listed with
// its hash in peer's manifest, verified with the key being pinned, or one
// carrying a valid rotation statement. ok is false when the peering cannot
// go on; st says why.
func (p *pass) trustPeer(peer string, st *peeringObject) (*layout.ClusterInfo, bool) {
	if t, ok := p.trusted[peer]; ok {
		return t.info, true
	}
	if d, ok := p.distrust[peer]; ok {
		stall(st, layout.StepPending, d.reason, "%s", d.message)
		return nil, false
	}
	provider := p.providers[peer]
	file := layout.ClusterPath(peer, layout.ClusterFile)
	ci, err := p.in.Cache.readClusterInfo(p.raw, peer)
	switch {
	case errors.Is(err, layout.ErrNotPublished):
		progress(st, layout.StepPending, reasons.WaitingForCluster, "waiting for %s to publish %s: its admin runs gitpeer init --cluster %s --repo CLONE on it and merges the commit (see gitpeer validate)", peer, file, peer)
		return nil, false
	case err != nil:
		stall(st, layout.StepPending, reasons.InvalidClusterInfo, "%v", err)
		return nil, false
	}
	fail := func(reason, format string, a ...any) (*layout.ClusterInfo, bool) {
		msg := fmt.Sprintf(format, a...)
		p.distrust[peer] = distrusted{reason, msg}
		stall(st, layout.StepPending, reason, "%s", msg)
		return nil, false
	}
	specFP := ""
	if c, ok := p.in.Spec.Cluster(peer); ok {
		specFP = c.Fingerprint
	}
	pin := p.pins.Lookup(peer)
	if pin != nil && pin.Damaged != "" && !pin.Repin {
		// Never trusted anew by itself: a damaged pin is not a missing one.
		return fail(reasons.PinDamaged, "%s", pins.DamagedMessage(p.self, peer, pin.Damaged))
	}
	// First trust, or an admin's re-pin: the spec approves the peering, and
	// the fingerprint the admin gave must match.
	first := pin == nil || pin.PublicKey == "" || pin.Repin
	if first && pin != nil && pin.Repin && pin.Fingerprint != "" && pin.Fingerprint != ci.Fingerprint {
		return fail(reasons.KeyChanged, "%s: publicKey: %s is not the %s an admin asked to trust (gitpeer trust --peer %s)", file, ci.Fingerprint, pin.Fingerprint, peer)
	}
	if specFP != "" && specFP != ci.Fingerprint {
		// Editing the spec never overrides a pin, nor does a stale pin in
		// the spec override a rotation: humans must agree with the key.
		return fail(reasons.KeyNotPinned, "%s: publicKey: fingerprint %s is not the %s pinned in the spec", file, ci.Fingerprint, specFP)
	}
	pub, der, err := handshake.ParsePublicKey([]byte(ci.PublicKey))
	if err != nil {
		return fail(reasons.InvalidClusterInfo, "%s: publicKey: %v", file, err)
	}
	if err := pins.CheckValues(ci.Fingerprint, ci.PublicKey, ci.APIServer, ci.CA); err != nil {
		return fail(reasons.InvalidClusterInfo, "%s: %v", file, err)
	}
	switch what := changes(ci, pin, provider); {
	case first:
		// The key is new to this cluster: its own signature over the
		// cluster.yaml is what there is to check, and the values pinned are
		// those its holder vouched for.
		if err := p.clusterInfoSigned(peer, pub); err != nil {
			// gitpeer init signs what it publishes, and a cluster's first
			// pass signs a cluster.yaml committed by hand: wait for that.
			progress(st, layout.StepPending, reasons.WaitingForCluster, "waiting for %s to sign %s, which is not pinned until it is (%s): %v", peer, file, reasons.UnsignedChange, err)
			return nil, false
		}
		p.pin(peer, ci)
	case what != "":
		if err := ci.VerifyRotation(pin.Fingerprint); err != nil {
			return fail(reasons.KeyChanged, "%s: %s changed from what this cluster pinned (%s) and %v; if the change is genuine, run gitpeer trust --peer %s --fingerprint %s here",
				file, what, pin.Fingerprint, err, peer, ci.Fingerprint)
		}
		p.pin(peer, ci) // the rotation statement signs key, API server and CA
	case !provider && (ci.APIServer != pin.APIServer || ci.CA != pin.CA):
		// A consumer's API server and CA are not ours to trust; keep them
		// current, as its key signed them, so that a later provider role
		// starts from them. An unsigned edit is not copied: the pin keeps
		// what was signed.
		if p.clusterInfoSigned(peer, pub) == nil {
			pin.APIServer, pin.CA = ci.APIServer, ci.CA
		}
	}
	p.trusted[peer] = trusted{info: ci, key: pub, der: der}
	return ci, true
}

// clusterInfoSigned checks that peer's cluster.yaml, as the repo holds it,
// is listed with its content in peer's manifest (clusters/<peer>/
// manifest.yaml), signed with key, at a sequence not below one already seen.
// It reads both files capped (layout.SizeLimit).
func (p *pass) clusterInfoSigned(peer string, key crypto.PublicKey) error {
	dir := layout.ClusterPath(peer)
	file := path.Join(dir, dirmanifest.FileName)
	data, err := layout.ReadFileLimit(p.raw, path.Join(dir, layout.ClusterFile), layout.MaxClusterInfoSize)
	if err != nil {
		return err
	}
	m, err := p.signedManifest(peer, key)
	if err != nil {
		return err
	}
	if seen := p.MinSequence(peer, dir); m.Sequence < seen {
		return fmt.Errorf("%s: sequence %d is lower than %d, already seen (%s)", file, m.Sequence, seen, reasons.ManifestRolledBack)
	}
	if !m.Covers(layout.ClusterFile, data) {
		return fmt.Errorf("%s: does not list %s with its content (%s)", file, layout.ClusterFile, reasons.UnsignedChange)
	}
	return nil
}

// signedManifest reads clusters/<peer>/manifest.yaml from the repo as it
// is (capped at dirmanifest.MaxSize) and verifies it with key; errors name the
// file. A manifest whose exact bytes parsed and verified with the same key,
// writer and directory before (the cluster's dirmanifest.Cache, which the
// signed view fills and reads with the same key) is not parsed or verified
// again; the caller's rollback check runs every time. The returned
// manifest may be shared: callers only read it.
func (p *pass) signedManifest(peer string, key crypto.PublicKey) (*dirmanifest.Manifest, error) {
	dir := layout.ClusterPath(peer)
	file := path.Join(dir, dirmanifest.FileName)
	data, err := layout.ReadFileLimit(p.raw, file, dirmanifest.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	cache := p.in.Cache.manifestCache()
	if cache != nil {
		if m, ok := cache.Lookup(data, key, peer, dir); ok {
			return m, nil
		}
	}
	m, err := dirmanifest.Parse(file, data)
	if err != nil {
		return nil, err
	}
	if err := m.Verify(key, peer, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if cache != nil {
		cache.Remember(data, key, peer, dir, m)
	}
	return m, nil
}

// changes names the pinned facts ci differs in ("" when none, or when
// nothing is pinned): the key, and for a provider its API server and CA.
func changes(ci *layout.ClusterInfo, pin *pins.Peer, provider bool) string {
	if pin == nil {
		return ""
	}
	var what []string
	if ci.Fingerprint != pin.Fingerprint {
		what = append(what, "publicKey")
	}
	if provider && ci.APIServer != pin.APIServer {
		what = append(what, "apiServer")
	}
	if provider && !artifact.SameCertificates([]byte(ci.CA), []byte(pin.CA)) {
		what = append(what, "ca")
	}
	return strings.Join(what, ", ")
}

func (p *pass) pin(peer string, ci *layout.ClusterInfo) {
	pin := p.pins.Peer(peer)
	if pin.Repin && pin.PublicKey != "" && pin.PublicKey != ci.PublicKey {
		// An admin's re-pin of a key other than the one pinned: recorded,
		// and published signed (repins.yaml), for verify to tell it from a
		// key swap nobody vouched for.
		pin.RecordRepin(ci.Fingerprint)
	}
	pin.Fingerprint, pin.PublicKey, pin.APIServer, pin.CA, pin.Repin, pin.Damaged = ci.Fingerprint, ci.PublicKey, ci.APIServer, ci.CA, false, ""
}

// ignoredNote lists the files of peer's inbox directory the view would not
// read, for the peering's status: a repo writer's edit is reported, never
// acted on.
func (p *pass) ignoredNote(peer string) string {
	ignored := p.view.Audit(peer, layout.ClusterPath(p.self, layout.InboxDir, peer))
	if len(ignored) == 0 {
		return p.withdrawnNote(peer)
	}
	parts := make([]string, 0, len(ignored))
	for _, ig := range ignored {
		parts = append(parts, fmt.Sprintf("%s (%s)", ig.Path, ig.Reason))
	}
	return fmt.Sprintf("; ignored, not signed by %s: %s", peer, strings.Join(parts, ", ")) + p.withdrawnNote(peer)
}

// seal adds a signed manifest to every directory this cluster writes in
// Output.Files, a tombstone to every inbox directory it withdrew, and
// records what it saw of its peers' manifests and published of its own. A
// directory whose files are unchanged keeps its manifest byte for byte; a
// held one (carryRolledBack) is not signed.
func (p *pass) seal() error {
	p.restoreHeld()
	byDir := map[string]map[string][]byte{}
	for f, data := range p.out.Files {
		writer, dir, ok := dirmanifest.Scope(f)
		if !ok || writer != p.self {
			return fmt.Errorf("internal: pass wants to write %s, which %s does not own", f, p.self)
		}
		if p.withdrawals.held[dir] != nil {
			continue // held as a repo writer restored it, signed anew by nothing
		}
		if err := p.checkOutbox(f); err != nil {
			return err
		}
		if byDir[dir] == nil {
			byDir[dir] = map[string][]byte{}
		}
		byDir[dir][strings.TrimPrefix(f, dir+"/")] = data
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	now := uint64(max(p.in.Now.Unix(), 1))
	for _, dir := range dirs {
		files := byDir[dir]
		file := path.Join(dir, dirmanifest.FileName)
		prevSeq := p.pins.Own[dir]
		if old, ok := p.view.Verified(p.self, dir); ok {
			// An older manifest of ours, restored from history, is not
			// kept even when it lists the same files: its readers saw a
			// higher sequence since.
			// Nor one of the key a switch replaces (ownKey): readers
			// verify with the key cluster.yaml publishes from this pass on.
			if _, rolledBack := p.ownRolledBackWhy(dir); old.SameFiles(files) && rolledBack == "" && !p.switchesKey() {
				if data, err := fs.ReadFile(p.raw, file); err == nil {
					p.out.Files[file] = data
					continue
				}
			}
			prevSeq = max(prevSeq, old.Sequence)
		}
		seq := max(now, prevSeq+1)
		m, data, err := dirmanifest.Build(p.in.Backend.Signer(), p.self, dir, files, seq)
		if err != nil {
			return err
		}
		// The next pass reads it back: verified once here, not parsed there.
		p.in.Cache.manifestCache().Signed(m, data, p.in.Backend.Signer().Public())
		p.signed(dir, file, seq, data)
	}
	// The same directories for both: tombstones signs only some of them,
	// and adds none.
	outboxes, err := p.ownInboxDirs()
	if err != nil {
		return err
	}
	if err := p.tombstones(outboxes, byDir); err != nil {
		return err
	}
	if err := p.recordPublished(outboxes); err != nil {
		return err
	}
	p.seeFormerPeers()
	for peer := range p.trusted {
		dir := layout.ClusterPath(p.self, layout.InboxDir, peer)
		if m, ok := p.view.Verified(peer, dir); ok {
			p.pins.Peer(peer).See(dir, m.Sequence)
		}
	}
	return nil
}

// signed records a manifest this pass signed for dir at seq: its sequence
// in the pin store (Own, so that the next is higher) and the manifest as
// file in the pass's output.
func (p *pass) signed(dir, file string, seq uint64, data []byte) {
	if p.pins.Own == nil {
		p.pins.Own = map[string]uint64{}
	}
	p.pins.Own[dir] = seq
	p.out.Files[file] = data
}

// carry writes again, unchanged, every file this cluster signed under dirs:
// the state of a peering a repo writer's change must not undo (a swapped
// cluster.yaml, a refused artifact) stays as it was until the peer's signed
// artifacts or an admin move it on. It carries what this cluster last
// signed, never an older state of its own directory restored from history
// (carryRolledBack).
func (p *pass) carry(dirs ...string) error {
	for _, dir := range dirs {
		if p.carryRolledBack(dir) {
			continue
		}
		err := fs.WalkDir(p.in.Tree, dir, func(f string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && f == dir {
				return fs.SkipDir
			}
			if errors.Is(err, layout.ErrTooManyEntries) {
				return fs.SkipDir // not read, so left as it stands (Diff)
			}
			if err != nil || d.IsDir() {
				return err
			}
			if writer, _, ok := dirmanifest.Scope(f); !ok || writer != p.self {
				return nil // not ours to sign, whatever a caller asked to carry
			}
			if !p.outboxArtifact(f) {
				return nil // not an artifact: withdrawn
			}
			data, err := fs.ReadFile(p.in.Tree, f)
			if err != nil {
				return nil // not signed by us: not ours to keep
			}
			p.out.Files[f] = data
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// switchesKey reports whether the pass is a rollover's switch: the tree's
// files of this cluster are signed by another key (ownKey) than the one
// it signs with.
func (p *pass) switchesKey() bool {
	a, ok := p.ownKey.(interface{ Equal(crypto.PublicKey) bool })
	return !ok || !a.Equal(p.in.Backend.Signer().Public())
}
