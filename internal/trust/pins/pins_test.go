package pins_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// peerKey is a public key as a peer publishes it: PEM and fingerprint.
type peerKey struct{ pem, fingerprint string }

func newPeerKey() peerKey {
	key, err := handshake.GenerateKey()
	if err != nil {
		panic(err)
	}
	pemKey, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		panic(err)
	}
	fp, err := handshake.Fingerprint(key.Public())
	if err != nil {
		panic(err)
	}
	return peerKey{string(pemKey), fp}
}

// betaKey and otherKey are two peer keys; betaCA a peer's CA bundle.
var betaKey, otherKey, betaCA = newPeerKey(), newPeerKey(), func() string {
	ca, _, err := handshake.NewCA("beta", now, time.Hour)
	if err != nil {
		panic(err)
	}
	return string(ca.CertPEM)
}()

// store is a provider's pins with every field set.
func store() *pins.Store {
	s := pins.New("alpha")
	s.Own = map[string]uint64{"clusters/alpha": 12, "clusters/beta/inbox/alpha": 3}
	b := s.Peer("beta")
	b.Fingerprint = betaKey.fingerprint
	b.PublicKey = betaKey.pem
	b.APIServer = "https://beta.example:6443"
	b.CA = betaCA
	b.See("clusters/beta", 7)
	b.See("clusters/alpha/inbox/beta", 2)
	b.Issue(100, now.Add(time.Hour))
	b.Issue(200, now.Add(2*time.Hour))
	g := s.Peer("gamma")
	g.Repin = true
	return s
}

func encode(t *testing.T, s *pins.Store) []byte {
	t.Helper()
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestIssueKeepsTheLastMaxIssuedEpochs(t *testing.T) {
	cases := []struct {
		name       string
		issue      []uint64
		wantEpoch  uint64
		wantIssued []uint64
	}{
		{"remembers the first epoch", []uint64{10}, 10, []uint64{10}},
		{"remembers up to MaxIssuedEpochs, oldest first", []uint64{10, 20, 30, 40}, 40, []uint64{10, 20, 30, 40}},
		{"forgets the oldest beyond MaxIssuedEpochs", []uint64{10, 20, 30, 40, 50, 60}, 60, []uint64{30, 40, 50, 60}},
		{"does not list an epoch issued again twice", []uint64{10, 20, 20, 10}, 10, []uint64{10, 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p pins.Peer
			for _, e := range tc.issue {
				p.Issue(e, now)
			}
			if p.Nonce.Epoch != tc.wantEpoch || !slices.Equal(p.Nonce.Issued, tc.wantIssued) {
				t.Fatalf("epoch %d issued %v, want %d %v", p.Nonce.Epoch, p.Nonce.Issued, tc.wantEpoch, tc.wantIssued)
			}
			if len(p.Nonce.Issued) > pins.MaxIssuedEpochs {
				t.Fatalf("%d epochs remembered", len(p.Nonce.Issued))
			}
			for _, e := range tc.issue {
				if want := slices.Contains(tc.wantIssued, e); p.WasIssued(e) != want {
					t.Errorf("WasIssued(%d) = %v, want %v", e, !want, want)
				}
			}
			for _, e := range []uint64{0, 1, 11, 1000} {
				if p.WasIssued(e) {
					t.Errorf("WasIssued(%d) for an epoch never issued", e)
				}
			}
		})
	}
	t.Run("nothing was issued to a new peer", func(t *testing.T) {
		var p pins.Peer
		if p.WasIssued(0) || p.WasIssued(1) {
			t.Fatal("a peer with no nonce was issued an epoch")
		}
	})
	t.Run("keeps the expiry in UTC", func(t *testing.T) {
		var p pins.Peer
		at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
		p.Issue(1, at)
		if !p.Nonce.Expires.Equal(at) || p.Nonce.Expires.Location() != time.UTC {
			t.Fatalf("expires %v", p.Nonce.Expires)
		}
	})
	t.Run("never shares the issued list with an earlier nonce", func(t *testing.T) {
		var p pins.Peer
		p.Issue(1, now)
		before := p.Nonce
		p.Issue(2, now)
		if !slices.Equal(before.Issued, []uint64{1}) {
			t.Fatalf("the previous nonce record changed: %v", before.Issued)
		}
	})
}

func TestSeeOnlyRaises(t *testing.T) {
	cases := []struct {
		name string
		see  []uint64
		want uint64
	}{
		{"nothing seen is zero", nil, 0},
		{"records the first sequence", []uint64{5}, 5},
		{"raises to a higher sequence", []uint64{5, 9}, 9},
		{"keeps the highest when a lower one is seen", []uint64{9, 5}, 9},
		{"keeps the highest when zero is seen", []uint64{9, 0}, 9},
		{"keeps the highest when the same is seen", []uint64{9, 9}, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p pins.Peer
			for _, s := range tc.see {
				p.See("clusters/beta", s)
			}
			if got := p.Seen("clusters/beta"); got != tc.want {
				t.Fatalf("Seen = %d, want %d", got, tc.want)
			}
			if got := p.Seen("clusters/alpha/inbox/beta"); got != 0 {
				t.Fatalf("another directory has %d", got)
			}
		})
	}
}

func TestPeerCreatesOnceAndLookupDoesNot(t *testing.T) {
	var s pins.Store
	if s.Lookup("beta") != nil {
		t.Fatal("Lookup found a peer in an empty store")
	}
	if s.Lookup("beta").Pinned() {
		t.Fatal("a missing peer is pinned")
	}
	p := s.Peer("beta")
	p.PublicKey = "k"
	if s.Peer("beta") != p || s.Lookup("beta") != p {
		t.Fatal("Peer did not return the same entry")
	}
	if !p.Pinned() {
		t.Fatal("a peer with a key is not pinned")
	}
	p.Repin = true
	if p.Pinned() {
		t.Fatal("a peer marked for re-pinning is still pinned")
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := store()
	want := encode(t, orig)
	c := orig.Clone()
	if got := encode(t, c); !bytes.Equal(got, want) {
		t.Fatalf("clone differs:\n%s\nwant\n%s", got, want)
	}
	edits := []struct {
		name string
		do   func(c *pins.Store)
	}{
		{"own sequences", func(c *pins.Store) { c.Own["clusters/alpha"] = 99 }},
		{"a new peer", func(c *pins.Store) { c.Peer("delta").PublicKey = otherKey.pem }},
		{"a peer's key", func(c *pins.Store) {
			c.Peer("beta").PublicKey, c.Peer("beta").Fingerprint = otherKey.pem, otherKey.fingerprint
		}},
		{"a peer's sequences", func(c *pins.Store) { c.Peer("beta").See("clusters/beta", 1000) }},
		{"a peer's issued epochs in place", func(c *pins.Store) { c.Peer("beta").Nonce.Issued[0] = 1 }},
		{"a peer's nonce", func(c *pins.Store) { c.Peer("beta").Issue(300, now) }},
		{"a peer's repin flag", func(c *pins.Store) { c.Peer("gamma").Repin = false }},
	}
	for _, e := range edits {
		t.Run("changing the clone's "+e.name+" leaves the original", func(t *testing.T) {
			c := orig.Clone()
			e.do(c)
			if bytes.Equal(encode(t, c), want) {
				t.Fatal("the edit changed nothing: the test is not testing anything")
			}
			if got := encode(t, orig); !bytes.Equal(got, want) {
				t.Fatalf("the original changed:\n%s", got)
			}
		})
	}
}

// Clone copies field by field; it must give what the YAML round trip it
// replaced gave, nil for empty maps and lists and JSON's times included.
func TestCloneIsWhatAYAMLRoundTripGives(t *testing.T) {
	roundTrip := func(s *pins.Store) *pins.Store {
		body, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var c pins.Store
		if err := yaml.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	odd := store()
	odd.Published = map[string]uint64{}
	odd.Foreign = map[string]uint64{"clusters/alpha": 4}
	odd.ForeignPasses = 2
	odd.Peers["nil"] = nil
	odd.Peer("empty").Sequences = map[string]uint64{}
	odd.Peer("zone").Nonce = &pins.Nonce{Epoch: 5, Expires: now.In(time.FixedZone("X", 3600)), Issued: []uint64{}}
	odd.Peer("mono").Nonce = &pins.Nonce{Epoch: 6, Expires: time.Now()}
	odd.Peer("zero").Nonce = &pins.Nonce{}
	for name, s := range map[string]*pins.Store{"store": store(), "zero": {}, "odd": odd} {
		t.Run(name, func(t *testing.T) {
			got, want := s.Clone(), roundTrip(s)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Clone:\n%#v\nround trip:\n%#v", got, want)
			}
			for id, p := range want.Peers {
				if p != nil && p.Nonce != nil && !p.Nonce.Expires.Equal(got.Peers[id].Nonce.Expires) {
					t.Fatalf("%s: expires %v, round trip %v", id, got.Peers[id].Nonce.Expires, p.Nonce.Expires)
				}
			}
		})
	}
}

// The zero value is documented as an empty store; Clone used to panic on it
// because it re-checked the clone with Parse.
func TestCloneOfTheZeroValueIsAnEmptyStore(t *testing.T) {
	var s pins.Store
	c := s.Clone()
	if c == &s || c.ClusterID != "" || len(c.Peers) != 0 || len(c.Own) != 0 {
		t.Fatalf("clone of the zero store: %+v", c)
	}
	c.Peer("beta").PublicKey = "k"
	if s.Peers != nil {
		t.Fatal("the clone shares the original's peers")
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	// The same pins reached in different orders encode to the same bytes.
	a := pins.New("alpha")
	b := pins.New("alpha")
	ids := []string{"beta", "gamma", "delta", "epsilon", "zeta"}
	for _, id := range ids {
		p := a.Peer(id)
		p.See("clusters/"+id, 3)
		p.See("clusters/alpha/inbox/"+id, 4)
		p.Issue(1, now)
		p.Issue(2, now)
	}
	for _, id := range slices.Backward(ids) {
		p := b.Peer(id)
		p.See("clusters/alpha/inbox/"+id, 4)
		p.See("clusters/"+id, 3)
		p.Issue(1, now)
		p.Issue(2, now)
	}
	first := encode(t, a)
	for range 20 {
		if got := encode(t, a); !bytes.Equal(got, first) {
			t.Fatalf("two encodings differ:\n%s\n%s", got, first)
		}
	}
	if got := encode(t, b); !bytes.Equal(got, first) {
		t.Fatalf("the same pins reached in another order encode differently:\n%s\n%s", got, first)
	}
	back, err := pins.Parse("pins.yaml", first)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, back); !bytes.Equal(got, first) {
		t.Fatalf("parse and encode changed the store:\n%s\nwant\n%s", got, first)
	}
	if !strings.HasPrefix(string(first), pins.Header+"apiVersion: gitpeer.io/v1alpha1\nclusterID: alpha\nkind: PinStore\n") ||
		!strings.HasSuffix(string(first), "\n"+pins.Trailer+"\n") {
		t.Errorf("encoding does not start with the header and end with the trailer:\n%s", first)
	}
}

func TestParseRoundTripsEveryField(t *testing.T) {
	s := store()
	back, err := pins.Parse("pins.yaml", encode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	b := back.Lookup("beta")
	switch {
	case back.ClusterID != "alpha" || back.Own["clusters/alpha"] != 12:
		t.Errorf("store header %+v", back)
	case b == nil || b.Fingerprint != s.Peers["beta"].Fingerprint || b.PublicKey != s.Peers["beta"].PublicKey ||
		b.APIServer != "https://beta.example:6443" || b.CA != s.Peers["beta"].CA:
		t.Errorf("peer beta %+v", b)
	case b.Seen("clusters/beta") != 7 || b.Seen("clusters/alpha/inbox/beta") != 2:
		t.Errorf("sequences %v", b.Sequences)
	case b.Nonce.Epoch != 200 || !b.Nonce.Expires.Equal(now.Add(2*time.Hour)) || !slices.Equal(b.Nonce.Issued, []uint64{100, 200}):
		t.Errorf("nonce %+v", b.Nonce)
	case !back.Lookup("gamma").Repin:
		t.Errorf("gamma lost its repin flag")
	}
}

func TestParseRefusesGarbageNamingTheFile(t *testing.T) {
	const file = "/var/lib/gitpeer/alpha/pins.yaml"
	cases := []struct {
		name string
		data string
	}{
		{"refuses an empty file", ""},
		{"refuses a YAML list", "- a\n- b\n"},
		{"refuses text that is not YAML", "{{{\n"},
		{"refuses another kind", "apiVersion: gitpeer.io/v1alpha1\nkind: Manifest\nclusterID: alpha\n"},
		{"refuses another apiVersion", "apiVersion: v1\nkind: PinStore\nclusterID: alpha\n"},
		{"refuses an unknown field", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\ntrustEveryone: true\n"},
		{"refuses an unknown peer field", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\npeers:\n  beta:\n    key: x\n"},
		{"refuses an empty peer", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\npeers:\n  beta: null\n"},
		{"refuses a negative sequence", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\nown:\n  clusters/alpha: -1\n"},
		{"refuses a sequence that is not a number", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\nown:\n  clusters/alpha: many\n"},
		{"refuses an expiry that is not a time", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\npeers:\n  beta:\n    nonce: {epoch: 1, expires: soon}\n"},
		{"refuses a repeated field", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\nclusterID: beta\n"},
		{"refuses binary junk", "\x00\x01\x02\xff"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pins.Parse(file, []byte(tc.data))
			if !errors.Is(err, pins.ErrMalformed) {
				t.Fatalf("error = %v (store %+v), want %v", err, s, pins.ErrMalformed)
			}
			if !strings.HasPrefix(err.Error(), file+": ") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

func TestKeepRequestsCarriesARepinMadeDuringAPass(t *testing.T) {
	before := pins.New("beta")
	before.Peer("alpha").Fingerprint = "sha256:old"
	computed := before.Clone()
	computed.Peer("alpha").See("clusters/beta/inbox/alpha", 7)
	current := before.Clone()
	current.Peer("alpha").Repin, current.Peer("alpha").Fingerprint = true, "sha256:new"
	current.Peer("gamma").Repin = true

	computed.KeepRequests(before, current)
	if p := computed.Lookup("alpha"); !p.Repin || p.Fingerprint != "sha256:new" {
		t.Errorf("alpha's re-pin request was lost: %+v", p)
	}
	if p := computed.Lookup("gamma"); p == nil || !p.Repin {
		t.Errorf("gamma's re-pin request was lost: %+v", p)
	}

	// A request the pass already saw (and acted on) is not brought back.
	done := before.Clone()
	done.Peer("alpha").Repin = true
	acted := done.Clone()
	acted.Peer("alpha").Repin = false
	acted.KeepRequests(done, done)
	if acted.Lookup("alpha").Repin {
		t.Error("a request the pass acted on came back")
	}
}

// TestAStoreCutShortIsRefused cuts an encoded store at every line break
// and in the middle of every line, as a crash during a write that is not
// atomic would: no prefix of a store parses, so none can stand for the
// store with peers or keys missing.
func TestAStoreCutShortIsRefused(t *testing.T) {
	const file = "/var/lib/gitpeer/alpha/pins.yaml"
	data := encode(t, store())
	var cuts []int
	start := 0
	for i, c := range data[:len(data)-1] {
		if c == '\n' {
			cuts = append(cuts, (start+i)/2, i+1) // mid-line, and after the line
			start = i + 1
		}
	}
	for _, n := range append(cuts, 0, 1, len(pins.Header), len(data)-len(pins.Trailer)) {
		s, err := pins.Parse(file, data[:n])
		if !errors.Is(err, pins.ErrMalformed) || !strings.HasPrefix(err.Error(), file+": ") {
			t.Fatalf("a store cut at byte %d of %d: %v (store %+v), want ErrMalformed naming the file", n, len(data), err, s)
		}
		if n > len(pins.Header) && !strings.Contains(err.Error(), "cut short") {
			t.Errorf("a store cut at byte %d: %q does not say it was cut short", n, err)
		}
	}
	// Whole, it parses, with or without its last line break, and so does
	// one an editor saved with trailing blank lines.
	for _, whole := range [][]byte{data, data[:len(data)-1], append(bytes.Clone(data), "\n\n"...)} {
		if _, err := pins.Parse(file, whole); err != nil {
			t.Errorf("a whole store: %v", err)
		}
	}
}

// TestAStoreWithoutHeaderIsReadAsItIs: a store written by hand, or before
// stores had a header and a trailer, still loads.
func TestAStoreWithoutHeaderIsReadAsItIs(t *testing.T) {
	data := encode(t, store())
	legacy := bytes.TrimSuffix(bytes.TrimPrefix(data, []byte(pins.Header)), []byte(pins.Trailer+"\n"))
	s, err := pins.Parse("pins.yaml", legacy)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, s); !bytes.Equal(got, data) {
		t.Errorf("a store without header reads differently:\n%s\nwant\n%s", got, data)
	}
}

// TestEncodeRefusesAValueOutOfItsBounds: the store never holds, and so
// never saves, a value a peer's cluster.yaml could not carry.
func TestEncodeRefusesAValueOutOfItsBounds(t *testing.T) {
	cases := []struct {
		name, field string
		damage      func(p *pins.Peer)
	}{
		{"an API server longer than MaxAPIServerLength", "apiServer", func(p *pins.Peer) {
			p.APIServer = "https://beta.example/" + strings.Repeat("a", pins.MaxAPIServerLength)
		}},
		{"an API server that is not https", "apiServer", func(p *pins.Peer) { p.APIServer = "http://beta.example" }},
		{"a CA larger than MaxCASize", "ca", func(p *pins.Peer) {
			for len(p.CA) <= pins.MaxCASize {
				p.CA += betaCA
			}
		}},
		{"a CA that is not PEM certificates", "ca", func(p *pins.Peer) { p.CA = "not a certificate" }},
		{"a key that does not parse", "publicKey", func(p *pins.Peer) { p.PublicKey = "k" }},
		{"a key larger than MaxPublicKeySize", "publicKey", func(p *pins.Peer) { p.PublicKey = strings.Repeat("k", pins.MaxPublicKeySize+1) }},
		{"a key whose fingerprint is another", "publicKey", func(p *pins.Peer) { p.PublicKey = otherKey.pem }},
		{"a fingerprint that is not sha256:<hex>", "fingerprint", func(p *pins.Peer) { p.Fingerprint = "md5:00" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := store()
			tc.damage(s.Peer("beta"))
			data, err := s.Encode()
			if !errors.Is(err, pins.ErrDamaged) {
				t.Fatalf("Encode: %v (%d bytes), want ErrDamaged", err, len(data))
			}
			assertSays(t, err.Error(), "peers.beta."+tc.field)
		})
	}
}

// TestADamagedPinIsDroppedNamedAndNeverTrustedAnew: a store an earlier
// version wrote with a huge CA, or an API server that is not a URL, for
// one peer loads: that peer's damaged values are dropped and Damaged says
// which (a reader refuses the peer until an admin re-pins it), the other
// peers are as they were, and the store encodes and reads back the same.
func TestADamagedPinIsDroppedNamedAndNeverTrustedAnew(t *testing.T) {
	good := store()
	g := good.Peer("gamma")
	g.Repin, g.Fingerprint, g.PublicKey = false, otherKey.fingerprint, otherKey.pem
	data := encode(t, good)
	huge := strings.Repeat(betaCA, pins.MaxCASize/len(betaCA)+1)
	damaged := strings.Replace(string(data), "apiServer: https://beta.example:6443", "apiServer: ftp://beta.example", 1)
	damaged = strings.Replace(damaged, "ca: |\n", "ca: |\n"+indent(huge, "      "), 1)
	if damaged == string(data) || len(damaged) < pins.MaxCASize {
		t.Fatal("the test did not damage the store")
	}
	s, err := pins.Parse("pins.yaml", []byte(damaged))
	if err != nil {
		t.Fatalf("a store with one damaged peer: %v", err)
	}
	b := s.Lookup("beta")
	if b.Damaged == "" || b.APIServer != "" || b.CA != "" {
		t.Fatalf("beta's damaged pin: damaged %q, apiServer %q, %d bytes of CA", b.Damaged, b.APIServer, len(b.CA))
	}
	assertSays(t, b.Damaged, "apiServer", "ca", "more than")
	if b.Fingerprint != betaKey.fingerprint || b.PublicKey != betaKey.pem || b.Seen("clusters/beta") != 7 {
		t.Errorf("beta's sound values were dropped: %+v", b)
	}
	if b.Pinned() != true {
		t.Error("beta's key is no longer pinned: a damaged pin must not read as a missing one")
	}
	if got := s.Lookup("gamma"); got.Damaged != "" || got.PublicKey != otherKey.pem {
		t.Errorf("gamma was touched: %+v", got)
	}
	enc := encode(t, s)
	back, err := pins.Parse("pins.yaml", enc)
	if err != nil {
		t.Fatal(err)
	}
	if again := encode(t, back); !bytes.Equal(again, enc) {
		t.Fatalf("a repaired store reads back differently:\n%s\nwant\n%s", again, enc)
	}
	msg := pins.DamagedMessage("alpha", "beta", b.Damaged)
	assertSays(t, msg, "gitpeer trust --cluster alpha --peer beta --fingerprint", b.Damaged)
}

// TestAStoreAboveMaxStoreSizeIsRefusedWithAFix: a store larger than any
// gitpeer writes is refused before it is decoded, naming the file and what
// to do.
func TestAStoreAboveMaxStoreSizeIsRefusedWithAFix(t *testing.T) {
	data := append(encode(t, store()), make([]byte, pins.MaxStoreSize)...)
	_, err := pins.Parse("/var/lib/gitpeer/alpha/pins.yaml", data)
	if !errors.Is(err, pins.ErrMalformed) {
		t.Fatalf("error = %v, want ErrMalformed", err)
	}
	assertSays(t, err.Error(), "/var/lib/gitpeer/alpha/pins.yaml: larger than", "restore it from a backup")
}

func assertSays(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%q does not say %q", s, w)
		}
	}
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}

// TestARepinRequestIsNotDamage: while an admin's re-pin is pending,
// Fingerprint is the key asked for next and PublicKey the one pinned
// before; the store saves and loads that as it is.
func TestARepinRequestIsNotDamage(t *testing.T) {
	s := store()
	b := s.Peer("beta")
	b.Repin, b.Fingerprint = true, otherKey.fingerprint
	back, err := pins.Parse("pins.yaml", encode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Lookup("beta"); got.Damaged != "" || got.PublicKey != betaKey.pem || got.Fingerprint != otherKey.fingerprint || !got.Repin {
		t.Fatalf("beta's pending re-pin: %+v", got)
	}
}
