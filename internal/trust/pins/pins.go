// Package pins is a cluster's trust anchors, kept in its backend and never
// in the peering repo: per peer the key it pinned (and, for a provider, the
// CA and API server its consumers trust), the highest manifest sequence it
// has seen per directory, and, as a provider, the nonce epochs it issued.
// The repo can be rewritten by anyone with push access; what a reconciler
// compares against must not be.
package pins

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// APIVersion and Kind of an encoded Store.
const (
	APIVersion = "gitpeer.io/v1alpha1"
	Kind       = "PinStore"
)

// MaxIssuedEpochs is how many issued nonce epochs a provider remembers per
// consumer: an answer to one of them that is no longer current is
// NonceExpired (an honest late answer), to any other epoch NonceReplayed.
const MaxIssuedEpochs = 4

// ErrMalformed means an encoded store does not parse.
var ErrMalformed = errors.New("malformed pin store")

// Bounds of what a store holds: every value is checked against them when a
// store is written (Encode) and read (Parse), so a store never holds more
// than a peer's published cluster.yaml may carry (layout.MaxClusterInfoSize),
// whatever an earlier version of gitpeer, or a hand, wrote into it.
const (
	// MaxStoreSize caps an encoded store, in bytes: a few KiB per peer for
	// thousands of peers. A larger one is refused before it is decoded.
	MaxStoreSize = 64 << 20
	// MaxPublicKeySize caps Peer.PublicKey, PEM: an RSA key of 8192 bits
	// takes under 1.5 KiB.
	MaxPublicKeySize = 16 << 10
	// MaxAPIServerLength caps Peer.APIServer, an https URL, in bytes.
	MaxAPIServerLength = 2048
	// MaxCASize caps Peer.CA, a PEM bundle: it comes from a cluster.yaml,
	// itself capped at layout.MaxClusterInfoSize.
	MaxCASize = layout.MaxClusterInfoSize
	// MaxSequences caps how many directories a Peer.Sequences records: a
	// peer writes its own directory and its inbox directory here.
	MaxSequences = 64
)

// ErrDamaged means a pinned value is out of its bounds or malformed.
var ErrDamaged = errors.New("damaged pin")

var fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CheckValues checks the values a cluster pins for a peer (an empty value
// is allowed: nothing pinned): the fingerprint is "sha256:<64 hex>", the
// public key a PEM PKIX key of at most MaxPublicKeySize bytes whose
// fingerprint that is, the API server an https URL of at most
// MaxAPIServerLength bytes, and the CA one or more PEM certificates in at
// most MaxCASize bytes. Errors wrap ErrDamaged and name the field.
func CheckValues(fingerprint, publicKey, apiServer, ca string) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, a...), ErrDamaged)
	}
	if fingerprint != "" && !fingerprintRE.MatchString(fingerprint) {
		return bad("fingerprint", "%.80q is not sha256:<64 hex digits>", fingerprint)
	}
	if len(publicKey) > MaxPublicKeySize {
		return bad("publicKey", "%d bytes, more than %d", len(publicKey), MaxPublicKeySize)
	}
	if publicKey != "" {
		pub, _, err := handshake.ParsePublicKey([]byte(publicKey))
		if err != nil {
			return bad("publicKey", "%v", err)
		}
		if fp, err := handshake.Fingerprint(pub); err != nil || (fingerprint != "" && fp != fingerprint) {
			return bad("publicKey", "its fingerprint is not %s", fingerprint)
		}
	}
	if len(apiServer) > MaxAPIServerLength {
		return bad("apiServer", "%d bytes, more than %d", len(apiServer), MaxAPIServerLength)
	}
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return bad("apiServer", "%.80s", err)
		}
	}
	if len(ca) > MaxCASize {
		return bad("ca", "%d bytes, more than %d", len(ca), MaxCASize)
	}
	if ca != "" {
		if err := layout.CheckCABundle([]byte(ca)); err != nil {
			return bad("ca", "%v", err)
		}
	}
	return nil
}

// check checks p's values (CheckValues) and records; errors wrap
// ErrDamaged.
func (p *Peer) check() error {
	if err := CheckValues(p.Fingerprint, "", "", ""); err != nil {
		return err
	}
	if err := CheckValues(p.keyFingerprint(), p.PublicKey, p.APIServer, p.CA); err != nil {
		return err
	}
	if len(p.Sequences) > MaxSequences {
		return fmt.Errorf("sequences: %d directories, more than %d: %w", len(p.Sequences), MaxSequences, ErrDamaged)
	}
	if p.Nonce != nil && len(p.Nonce.Issued) > MaxIssuedEpochs {
		return fmt.Errorf("nonce.issued: %d epochs, more than %d: %w", len(p.Nonce.Issued), MaxIssuedEpochs, ErrDamaged)
	}
	if len(p.Damaged) > maxDamaged {
		return fmt.Errorf("damaged: %d bytes, more than %d: %w", len(p.Damaged), maxDamaged, ErrDamaged)
	}
	if err := checkRepinned(p.Repinned); err != nil {
		return fmt.Errorf("%w: %w", err, ErrDamaged)
	}
	return nil
}

// checkRepinned checks Peer.Repinned: at most MaxRepinned fingerprints,
// each sha256:<64 hex>.
func checkRepinned(fps []string) error {
	if len(fps) > MaxRepinned {
		return fmt.Errorf("repinned: %d fingerprints, more than %d", len(fps), MaxRepinned)
	}
	for i, fp := range fps {
		if !fingerprintRE.MatchString(fp) {
			return fmt.Errorf("repinned[%d]: %.80q is not sha256:<64 hex digits>", i, fp)
		}
	}
	return nil
}

// keyFingerprint is the fingerprint PublicKey must have: Fingerprint,
// except while an admin's re-pin request is pending, when Fingerprint is
// the key the admin asked to trust next (gitpeer trust --fingerprint) and
// PublicKey still the one pinned before.
func (p *Peer) keyFingerprint() string {
	if p.Repin {
		return ""
	}
	return p.Fingerprint
}

// maxDamaged caps Peer.Damaged, a message.
const maxDamaged = 1024

// DamagedMessage is what a reader of the store says of peer's damaged pin,
// with the fix: cluster self's admin checks the peer's key with its admin
// and re-pins it.
func DamagedMessage(self, peer, damaged string) string {
	return fmt.Sprintf("this cluster's pin store holds a damaged pin for %s (%s), written by an earlier version of gitpeer or by hand; nothing of %s is trusted until it is re-pinned: check %s's fingerprint with its admin, then run gitpeer trust --cluster %s --peer %s --fingerprint sha256:…",
		peer, damaged, peer, peer, self, peer)
}

// Header and Trailer are the first and the last line of every store Encode
// writes (YAML comments). A store that starts with Header but does not end
// with Trailer was cut short, by a crash during a write that was not atomic
// or by a full disk, and is refused: cut at a line break, it would still
// parse, with peers or their keys missing, and a missing pin is trusted
// anew. A store without Header (written by hand, or before Header existed)
// is read as it is.
const (
	Header  = "# gitpeer pin store: complete when its last line is \"" + Trailer + "\"\n"
	Trailer = "# end of pin store"
)

// Store is one cluster's pins. The zero value is an empty store.
type Store struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ClusterID is the cluster the store belongs to.
	ClusterID string `json:"clusterID"`
	// Own are the highest manifest sequences this cluster signed, per
	// directory: a writer never reuses or goes below one, even if the repo's
	// manifest was deleted or rolled back.
	Own map[string]uint64 `json:"own,omitempty"`
	// Published are, per directory this cluster signs, the highest sequence
	// of its own manifest a pass found in the repo: what the cluster last
	// published there. A pass carries over its own earlier state only from a
	// manifest at least that high, never from an older one a repo writer
	// restored from history (see docs/trust.md, "Withdrawals are signed").
	Published map[string]uint64 `json:"published,omitempty"`
	// Peers by cluster ID.
	Peers map[string]*Peer `json:"peers,omitempty"`
	// Foreign are, per directory this cluster signs, the highest sequence
	// of a manifest signed with its key that it did not sign (above Own
	// when it was found): another process holding the key wrote it.
	Foreign map[string]uint64 `json:"foreign,omitempty"`
	// ForeignPasses counts the passes in a row that found such a manifest
	// newer than any found before: one may be a predecessor's (a state
	// dir restored from an older copy), two in a row are a second
	// reconciler of the cluster still writing.
	ForeignPasses int `json:"foreignPasses,omitempty"`
	// Seal is the newest seal this cluster's reconciler made: the hex hash
	// of the signed commit its applied branch (gitpeer/applied/<id>) must
	// point at, recorded before that commit is pushed. A signature proves
	// who made a seal, never when: an older seal is as validly signed as
	// this one, so every pass points the applied branch back here before
	// anything else, and the kubernetes backend pins the cluster's GitOps
	// source to it (docs/trust.md, "A cluster applies only its freshest
	// seal"). Empty until the first seal.
	Seal string `json:"seal,omitempty"`
}

// Peer is what a cluster pinned for one peer.
type Peer struct {
	// Fingerprint is "sha256:<hex>" of the peer's pinned public key.
	Fingerprint string `json:"fingerprint,omitempty"`
	// PublicKey is the pinned key, PEM "PUBLIC KEY" (PKIX).
	PublicKey string `json:"publicKey,omitempty"`
	// APIServer and CA are the peer's as pinned with its key; they are
	// enforced only where the peer is this cluster's provider.
	APIServer string `json:"apiServer,omitempty"`
	CA        string `json:"ca,omitempty"`
	// Repin is set by `gitpeer trust`: the next pass trusts the peer's
	// published cluster.yaml anew (matching Fingerprint when that is set).
	Repin bool `json:"repin,omitempty"`
	// Sequences are the highest manifest sequences seen, per directory.
	Sequences map[string]uint64 `json:"sequences,omitempty"`
	// Nonce is, where the peer is this cluster's consumer, the nonce epoch
	// it must answer.
	Nonce *Nonce `json:"nonce,omitempty"`
	// Damaged, when set, says which pinned value Parse found out of its
	// bounds or malformed (and dropped): the peer is trusted again only
	// once an admin re-pins it (Repin), never anew by itself.
	Damaged string `json:"damaged,omitempty"`
	// Repinned are the fingerprints ("sha256:<hex>") of the keys a pass
	// pinned on an admin's re-pin request (Repin), oldest first, at most
	// MaxRepinned: the cluster publishes them, signed, in
	// clusters/<self>/repins.yaml, for gitpeer verify to tell a key
	// recovery its admin vouched for from a key swap.
	Repinned []string `json:"repinned,omitempty"`
}

// MaxRepinned is how many re-pinned fingerprints a Peer remembers: a
// re-pin is a rare admin's act, and the newest are those the repo's
// history still shows.
const MaxRepinned = 8

// RecordRepin records fp as a key pinned on an admin's re-pin request,
// keeping the newest MaxRepinned.
func (p *Peer) RecordRepin(fp string) {
	p.Repinned = append(slices.DeleteFunc(p.Repinned, func(s string) bool { return s == fp }), fp)
	if len(p.Repinned) > MaxRepinned {
		p.Repinned = p.Repinned[len(p.Repinned)-MaxRepinned:]
	}
}

// Nonce is a provider's record of the nonces it issued to one consumer.
type Nonce struct {
	// Epoch is the current epoch: the Unix second it was issued at.
	Epoch uint64 `json:"epoch"`
	// Expires is when an unanswered current nonce is replaced.
	Expires time.Time `json:"expires"`
	// Issued are the most recent epochs issued, current included, oldest
	// first, at most MaxIssuedEpochs.
	Issued []uint64 `json:"issued,omitempty"`
}

// New returns an empty store for clusterID.
func New(clusterID string) *Store {
	return &Store{APIVersion: APIVersion, Kind: Kind, ClusterID: clusterID}
}

// Peer returns the pins of id, creating an empty entry.
func (s *Store) Peer(id string) *Peer {
	if s.Peers == nil {
		s.Peers = map[string]*Peer{}
	}
	p := s.Peers[id]
	if p == nil {
		p = &Peer{}
		s.Peers[id] = p
	}
	return p
}

// Lookup returns the pins of id, or nil.
func (s *Store) Lookup(id string) *Peer { return s.Peers[id] }

// Pinned reports whether p holds a key.
func (p *Peer) Pinned() bool { return p != nil && p.PublicKey != "" && !p.Repin }

// Seen returns the highest sequence seen for dir.
func (p *Peer) Seen(dir string) uint64 { return p.Sequences[dir] }

// See records seq for dir if it is higher than what was seen.
func (p *Peer) See(dir string, seq uint64) {
	if p.Sequences == nil {
		p.Sequences = map[string]uint64{}
	}
	if seq > p.Sequences[dir] {
		p.Sequences[dir] = seq
	}
}

// SeePublished records seq as published for dir, this cluster's own
// directory, if it is higher than what was recorded.
func (s *Store) SeePublished(dir string, seq uint64) {
	if s.Published == nil {
		s.Published = map[string]uint64{}
	}
	if seq > s.Published[dir] {
		s.Published[dir] = seq
	}
}

// Issue makes epoch the current nonce epoch, valid until expires.
func (p *Peer) Issue(epoch uint64, expires time.Time) {
	issued := []uint64{}
	if p.Nonce != nil {
		issued = append(issued, p.Nonce.Issued...)
	}
	if !slices.Contains(issued, epoch) {
		issued = append(issued, epoch)
	}
	if len(issued) > MaxIssuedEpochs {
		issued = issued[len(issued)-MaxIssuedEpochs:]
	}
	p.Nonce = &Nonce{Epoch: epoch, Expires: expires.UTC(), Issued: issued}
}

// WasIssued reports whether epoch is one this provider issued and still
// remembers.
func (p *Peer) WasIssued(epoch uint64) bool {
	return p.Nonce != nil && slices.Contains(p.Nonce.Issued, epoch)
}

// Clone returns a deep copy: a pass works on a copy and the caller keeps
// the result only once the pass has been computed. It copies what the store
// holds without Parse's or Encode's checks, so the zero Store clones too.
func (s *Store) Clone() *Store {
	// A copy field by field, not a YAML round trip (which cost a pass 5 %
	// of its CPU in the handshake benchmark); it keeps what the round trip
	// gave: empty maps and lists are nil (omitempty), a nil peer stays nil,
	// and times lose their monotonic reading and come back in UTC or a
	// fixed zone, as JSON writes and reads them.
	return &Store{
		APIVersion: s.APIVersion, Kind: s.Kind, ClusterID: s.ClusterID,
		Own: cloneSequences(s.Own), Published: cloneSequences(s.Published), Foreign: cloneSequences(s.Foreign),
		Peers: clonePeers(s.Peers), ForeignPasses: s.ForeignPasses, Seal: s.Seal,
	}
}

func cloneSequences(m map[string]uint64) map[string]uint64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func clonePeers(m map[string]*Peer) map[string]*Peer {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]*Peer, len(m))
	for id, p := range m {
		if p == nil {
			c[id] = nil
			continue
		}
		q := *p
		q.Sequences = cloneSequences(p.Sequences)
		if len(p.Repinned) > 0 {
			q.Repinned = slices.Clone(p.Repinned)
		} else {
			q.Repinned = nil
		}
		if p.Nonce != nil {
			n := *p.Nonce
			n.Expires = jsonTime(p.Nonce.Expires)
			n.Issued = nil
			if len(p.Nonce.Issued) > 0 {
				n.Issued = slices.Clone(p.Nonce.Issued)
			}
			q.Nonce = &n
		}
		c[id] = &q
	}
	return c
}

// jsonTime is t as JSON writes and reads it back (RFC 3339, no monotonic
// reading, the zone as a fixed offset or UTC); t itself when JSON cannot
// write it.
func jsonTime(t time.Time) time.Time {
	if t.Location() == time.UTC {
		return t.Round(0) // what the round trip gives, without formatting
	}
	b, err := t.MarshalJSON()
	if err != nil {
		return t
	}
	var back time.Time
	if err := back.UnmarshalJSON(b); err != nil {
		return t
	}
	return back
}

// Encode renders the store as YAML with sorted keys, between Header and
// Trailer. It refuses (ErrDamaged, naming the peer and field) a store
// holding a value out of its bounds: no version of gitpeer that has these
// checks writes one.
func (s *Store) Encode() ([]byte, error) {
	ids := make([]string, 0, len(s.Peers))
	for id := range s.Peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := s.Peers[id]
		if p == nil {
			return nil, fmt.Errorf("pin store: peers.%s: empty: %w", id, ErrDamaged)
		}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("pin store: peers.%s.%w", id, err)
		}
		if p.Nonce != nil {
			sort.Slice(p.Nonce.Issued, func(i, j int) bool { return p.Nonce.Issued[i] < p.Nonce.Issued[j] })
		}
	}
	if err := checkSeal(s.Seal); err != nil {
		return nil, fmt.Errorf("pin store: %w: %w", err, ErrDamaged)
	}
	body, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxStoreSize {
		return nil, fmt.Errorf("pin store: %d bytes, more than %d: %w", len(body), MaxStoreSize, ErrDamaged)
	}
	out := make([]byte, 0, len(Header)+len(body)+len(Trailer)+1)
	out = append(out, Header...)
	out = append(out, body...)
	return append(out, Trailer+"\n"...), nil
}

// Parse decodes an encoded store; file names it in errors, which wrap
// ErrMalformed. A store that starts with Header must end with Trailer; one
// above MaxStoreSize is refused before it is decoded. A peer whose pinned
// values are out of their bounds or malformed (CheckValues) does not fail
// the store: those values are dropped and Peer.Damaged says which, so that
// the other peers go on and that one waits for an admin's re-pin.
func Parse(file string, data []byte) (*Store, error) {
	if len(data) > MaxStoreSize {
		return nil, fmt.Errorf("%s: larger than %d bytes, which gitpeer never writes (an earlier version pinned unbounded values): restore it from a backup, or remove it and check every peer's key with its admin: %w", file, MaxStoreSize, ErrMalformed)
	}
	if bytes.HasPrefix(data, []byte(Header)) && !bytes.HasSuffix(bytes.TrimRight(data, " \t\r\n"), []byte("\n"+Trailer)) {
		return nil, fmt.Errorf("%s: cut short: its last line is not %q, as in every store gitpeer writes (a write interrupted by a crash, or a full disk): %w", file, Trailer, ErrMalformed)
	}
	var s Store
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", file, err, ErrMalformed)
	}
	if s.APIVersion != APIVersion || s.Kind != Kind {
		return nil, fmt.Errorf("%s: apiVersion/kind: want %s %s: %w", file, APIVersion, Kind, ErrMalformed)
	}
	for id, p := range s.Peers {
		if p == nil {
			return nil, fmt.Errorf("%s: peers.%s: empty: %w", file, id, ErrMalformed)
		}
		p.repair()
	}
	if err := checkSeal(s.Seal); err != nil {
		// Dropped, not fatal: the next seal records a good one, and until
		// then the applied branch is only not restored.
		s.Seal = ""
	}
	return &s, nil
}

var sealRE = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// checkSeal checks Store.Seal: empty, or a commit hash in lowercase hex
// (SHA-1's 40 digits or SHA-256's 64).
func checkSeal(seal string) error {
	if seal != "" && !sealRE.MatchString(seal) {
		return fmt.Errorf("seal: %.80q is not a commit hash", seal)
	}
	return nil
}

// repair drops every value of p out of its bounds or malformed and records
// which in Damaged. A pin with a damaged key, API server or CA is not
// trusted until an admin re-pins it; a record out of bounds (sequences,
// nonce epochs) is cut to its bounds, as later passes rebuild it.
func (p *Peer) repair() {
	var damaged []string
	if p.Damaged != "" {
		damaged = append(damaged, p.Damaged)
	}
	if len(p.Damaged) > maxDamaged {
		damaged = []string{strings.ToValidUTF8(p.Damaged[:maxDamaged/2], "") + "…"}
	}
	drop := func(value *string, err error) {
		if err != nil {
			damaged = append(damaged, err.Error())
			*value = ""
		}
	}
	drop(&p.Fingerprint, CheckValues(p.Fingerprint, "", "", ""))
	drop(&p.PublicKey, CheckValues("", p.PublicKey, "", ""))
	if p.PublicKey != "" {
		drop(&p.PublicKey, CheckValues(p.keyFingerprint(), p.PublicKey, "", ""))
	}
	drop(&p.APIServer, CheckValues("", "", p.APIServer, ""))
	drop(&p.CA, CheckValues("", "", "", p.CA))
	if len(p.Sequences) > MaxSequences {
		damaged = append(damaged, fmt.Sprintf("sequences: %d directories, more than %d", len(p.Sequences), MaxSequences))
		p.Sequences = nil
	}
	if checkRepinned(p.Repinned) != nil {
		// A record, not a trust anchor: dropped without distrusting the
		// peer (verify then names the key change unresolved).
		p.Repinned = nil
	}
	if p.Nonce != nil && len(p.Nonce.Issued) > MaxIssuedEpochs {
		slices.Sort(p.Nonce.Issued)
		p.Nonce.Issued = p.Nonce.Issued[len(p.Nonce.Issued)-MaxIssuedEpochs:]
	}
	if len(damaged) > 0 {
		msg := strings.Join(damaged, "; ")
		if len(msg) > maxDamaged {
			msg = strings.ToValidUTF8(msg[:maxDamaged-len("…")], "") + "…"
		}
		p.Damaged = msg
	}
}

// KeepRequests carries into s (a pass's result, computed from before) the
// re-pin requests an admin made (gitpeer trust) while the pass ran, as found
// in current, the store as it is now: the pass's save must not undo them.
func (s *Store) KeepRequests(before, current *Store) {
	for id, p := range current.Peers {
		if p == nil || !p.Repin {
			continue
		}
		if b := before.Lookup(id); b != nil && b.Repin && b.Fingerprint == p.Fingerprint {
			continue // the pass saw this request and acted on it
		}
		c := *p
		s.Peer(id) // ensure the map exists
		s.Peers[id] = &c
	}
}
