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
	"slices"
	"sort"
	"time"

	"sigs.k8s.io/yaml"
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
// holds without Parse's checks, so the zero Store clones too.
func (s *Store) Clone() *Store {
	data, err := s.Encode()
	if err != nil {
		panic(err) // a Store always encodes
	}
	var c Store
	if err := yaml.Unmarshal(data, &c); err != nil {
		panic(err) // what Encode writes always decodes
	}
	return &c
}

// Encode renders the store as YAML with sorted keys, between Header and
// Trailer.
func (s *Store) Encode() ([]byte, error) {
	for _, p := range s.Peers {
		if p.Nonce != nil {
			sort.Slice(p.Nonce.Issued, func(i, j int) bool { return p.Nonce.Issued[i] < p.Nonce.Issued[j] })
		}
	}
	body, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(Header)+len(body)+len(Trailer)+1)
	out = append(out, Header...)
	out = append(out, body...)
	return append(out, Trailer+"\n"...), nil
}

// Parse decodes an encoded store; file names it in errors, which wrap
// ErrMalformed. A store that starts with Header must end with Trailer.
func Parse(file string, data []byte) (*Store, error) {
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
	}
	return &s, nil
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
