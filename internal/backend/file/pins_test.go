package file_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

var _ backend.PinKeeper = (*file.Backend)(nil)

// pinKey is a peer's public key as a pin store holds it: PEM and
// fingerprint (the store refuses a key that does not parse).
func pinKey(t *testing.T) (pemKey, fingerprint string) {
	t.Helper()
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	data, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	fp, err := handshake.Fingerprint(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(data), fp
}

func TestLoadPinsOnAFreshStateDirIsAnEmptyStoreForTheCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	s, err := b.LoadPins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.APIVersion != pins.APIVersion || s.Kind != pins.Kind || s.ClusterID != "alpha" || len(s.Peers) != 0 || len(s.Own) != 0 {
		t.Fatalf("fresh store %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, file.PinsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("loading wrote %s: %v", file.PinsFile, err)
	}
}

func TestSavePinsThenLoadPinsRoundTrips(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	s, err := b.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	beta := s.Peer("beta")
	beta.PublicKey, beta.Fingerprint = pinKey(t)
	beta.See("clusters/beta", 4)
	beta.Issue(1700000000, now.Add(time.Hour))
	s.Own = map[string]uint64{"clusters/alpha": 9}
	want, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SavePins(ctx, s); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file.PinsFile)
	if m := mode(t, p); m != 0o600 {
		t.Errorf("%s has mode %o, want 600", p, m)
	}
	// A new backend over the same state directory, as after a restart.
	b2, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b2.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := got.Encode(); !bytes.Equal(data, want) {
		t.Fatalf("loaded\n%s\nwant\n%s", data, want)
	}
	if !got.Lookup("beta").WasIssued(1700000000) || got.Lookup("beta").Seen("clusters/beta") != 4 {
		t.Fatalf("loaded pins lost state: %+v", got.Lookup("beta"))
	}

	// Saving again replaces the store and leaves no temporary file behind.
	got.Peer("gamma").PublicKey, _ = pinKey(t)
	if err := b2.SavePins(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, err := b.LoadPins(ctx)
	if err != nil || again.Lookup("gamma") == nil {
		t.Fatalf("second save not loaded: %+v, %v", again, err)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("%s has mode %o after a second save, want 600", p, m)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestCorruptedPinsAreAnErrorNamingTheFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"refuses an empty pins.yaml", ""},
		{"refuses a truncated pins.yaml", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\npeers:\n  beta: {fingerprint: [\n"},
		{"refuses a pins.yaml of another kind", "apiVersion: gitpeer.io/v1alpha1\nkind: Manifest\n"},
		{"refuses a pins.yaml with an unknown field", "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\ntrustAll: true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "alpha")
			b := initState(t, dir, "alpha")
			p := filepath.Join(dir, file.PinsFile)
			if err := os.WriteFile(p, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := b.LoadPins(context.Background())
			if err == nil {
				t.Fatalf("a corrupted pin store loaded as %+v", s)
			}
			if !errors.Is(err, pins.ErrMalformed) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name %s or wrap %v", err, p, pins.ErrMalformed)
			}
			if data, _ := os.ReadFile(p); string(data) != tc.data {
				t.Fatal("loading changed the corrupted file")
			}
		})
	}
	t.Run("refuses a saved pins.yaml cut short at a line break", func(t *testing.T) {
		// What a crash in the middle of a write that is not atomic leaves:
		// YAML that still parses, without the peers' keys.
		dir := filepath.Join(t.TempDir(), "alpha")
		b := initState(t, dir, "alpha")
		s := pins.New("alpha")
		s.Peer("beta").PublicKey, s.Peer("beta").Fingerprint = pinKey(t)
		ctx := context.Background()
		if err := b.SavePins(ctx, s); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, file.PinsFile)
		data, _ := os.ReadFile(p)
		cut := data[:bytes.Index(data, []byte("    fingerprint:"))]
		if err := os.WriteFile(p, cut, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := b.LoadPins(ctx)
		if err == nil {
			t.Fatalf("a pin store cut short loaded as %+v", got)
		}
		for _, want := range []string{p + ": cut short", "restore it from a backup"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("refuses a pins.yaml that cannot be read", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "alpha")
		b := initState(t, dir, "alpha")
		if err := os.Mkdir(filepath.Join(dir, file.PinsFile), 0o700); err != nil {
			t.Fatal(err)
		}
		if s, err := b.LoadPins(context.Background()); err == nil {
			t.Fatalf("an unreadable pin store loaded as %+v", s)
		}
	})
}
