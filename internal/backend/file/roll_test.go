package file_test

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

var _ backend.KeyRoller = (*file.Backend)(nil)

func fp(t *testing.T, k crypto.Signer) string {
	t.Helper()
	f, err := handshake.Fingerprint(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func reopen(t *testing.T, dir string) *file.Backend {
	t.Helper()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return b
}

// TestStageKeyIsIdempotentAndChangesNothingInForce: rotate-key stages a
// key (cluster.key.next and its sidecar, 0600) that Next returns, to this
// backend and to one opened later; running it again returns the same key;
// asking for another API server than the staged one is an error naming
// both. Until promotion the cluster signs and publishes as before.
func TestStageKeyIsIdempotentAndChangesNothingInForce(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	before := readAll(t, dir)
	oldFP := fp(t, b.Signer())

	next, err := b.StageKey(ctx, "https://alpha.new.example:6443")
	if err != nil {
		t.Fatal(err)
	}
	if next.APIServer != "https://alpha.new.example:6443" || !next.Announced.IsZero() || fp(t, next.Signer) == oldFP {
		t.Fatalf("staged %+v", next)
	}
	for _, name := range []string{file.NextKeyFile, file.NextKeyMetaFile} {
		if m := mode(t, filepath.Join(dir, name)); m != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", name, m)
		}
	}
	for name, data := range before {
		if !bytes.Equal(readFile(t, filepath.Join(dir, name)), data) {
			t.Errorf("staging changed %s", name)
		}
	}
	if fp(t, b.Signer()) != oldFP {
		t.Fatal("staging changed the key the backend signs with")
	}
	if info, _ := b.ClusterInfo(); info.Fingerprint != oldFP || info.APIServer != "https://alpha.example:6443" {
		t.Fatalf("staging changed what the cluster publishes: %s %s", info.Fingerprint, info.APIServer)
	}

	for _, bb := range []*file.Backend{b, reopen(t, dir)} {
		got, err := bb.Next(ctx)
		if err != nil || got == nil {
			t.Fatalf("Next: %+v, %v", got, err)
		}
		if fp(t, got.Signer) != fp(t, next.Signer) || got.APIServer != next.APIServer || !got.Announced.IsZero() {
			t.Fatalf("Next returned %+v, want the staged key", got)
		}
		again, err := bb.StageKey(ctx, "https://alpha.new.example:6443")
		if err != nil || fp(t, again.Signer) != fp(t, next.Signer) {
			t.Fatalf("StageKey again: %v, or another key", err)
		}
	}
	for asked, want := range map[string]string{
		"":                             `a key is staged already with API server "https://alpha.new.example:6443", not unchanged`,
		"https://alpha.other.dev:6443": `a key is staged already with API server "https://alpha.new.example:6443", not "https://alpha.other.dev:6443"`,
		"http://alpha.new.example":     `api server: "http://alpha.new.example" is not an https URL`,
	} {
		if _, err := b.StageKey(ctx, asked); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("StageKey(%q): %v, want %q", asked, err, want)
		}
	}
	if got, _ := b.Next(ctx); got == nil || fp(t, got.Signer) != fp(t, next.Signer) {
		t.Fatal("a refused StageKey changed the staged key")
	}

	// Staged without an API server: asking for one is an error too.
	dir2 := filepath.Join(t.TempDir(), "beta")
	b2 := initState(t, dir2, "beta")
	if _, err := b2.StageKey(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.StageKey(ctx, "https://beta.new.example:6443"); err == nil || !strings.Contains(err.Error(), `with API server unchanged, not "https://beta.new.example:6443"`) {
		t.Errorf("StageKey with an API server over one staged without: %v", err)
	}
}

// TestNothingStaged: a fresh state dir has no next key (Next is nil) and
// no previous key; announcing or promoting is an error saying nothing is
// staged.
func TestNothingStaged(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	if next, err := b.Next(ctx); next != nil || err != nil {
		t.Fatalf("Next: %+v, %v; want nil, nil", next, err)
	}
	if _, err := b.PromoteNextKey(ctx); !errors.Is(err, backend.ErrNoNextKey) {
		t.Errorf("PromoteNextKey: %v, want ErrNoNextKey", err)
	}
	if err := b.MarkAnnounced(ctx, now); !errors.Is(err, backend.ErrNoNextKey) {
		t.Errorf("MarkAnnounced: %v, want ErrNoNextKey", err)
	}
	_, err := b.PreviousKey(ctx)
	if !errors.Is(err, backend.ErrNoPreviousKey) || !strings.Contains(err.Error(), filepath.Join(dir, file.PreviousKeyFile)) {
		t.Errorf("PreviousKey: %v, want ErrNoPreviousKey naming the file", err)
	}
	if exists(filepath.Join(dir, file.NextKeyFile)) || exists(filepath.Join(dir, file.NextKeyMetaFile)) {
		t.Error("a failed call wrote a staged key")
	}
}

// TestMarkAnnouncedKeepsTheFirstTime: the announcement time is recorded
// once (in UTC, to the nanosecond); a later pass does not move it, so the
// file backend's --key-rollover-wait counts from the first announcement.
func TestMarkAnnouncedKeepsTheFirstTime(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	if _, err := b.StageKey(ctx, ""); err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 11, 22, 13, 0, 0, 500, time.FixedZone("CET", 3600))
	if err := b.MarkAnnounced(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := b.MarkAnnounced(ctx, first.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, bb := range []*file.Backend{b, reopen(t, dir)} {
		next, err := bb.Next(ctx)
		if err != nil || next == nil || !next.Announced.Equal(first) {
			t.Fatalf("Next: %+v, %v; want announced at %s", next, err, first)
		}
	}
	if !strings.Contains(string(readFile(t, filepath.Join(dir, file.NextKeyMetaFile))), "announced: \"2026-11-22T12:00:00.0000005Z\"") {
		t.Errorf("%s:\n%s", file.NextKeyMetaFile, readFile(t, filepath.Join(dir, file.NextKeyMetaFile)))
	}
	if err := b.MarkAnnounced(ctx, time.Time{}); err == nil {
		t.Error("MarkAnnounced accepted the zero time")
	}
}

// TestPromoteNextKeySwapsTheKeys: promotion puts the staged key in force
// (Signer, cluster.key, ClusterInfo, a reopened backend) with the staged API
// server, keeps the old key byte for byte as cluster.key.previous (what
// PreviousKey returns), returns it, and leaves nothing staged. A second
// rollover without an API server keeps the first one's.
func TestPromoteNextKeySwapsTheKeys(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	oldPEM := readFile(t, filepath.Join(dir, file.KeyFile))
	oldFP := fp(t, b.Signer())
	next, err := b.StageKey(ctx, "https://alpha.new.example:6443")
	if err != nil {
		t.Fatal(err)
	}
	nextPEM := readFile(t, filepath.Join(dir, file.NextKeyFile))
	newFP := fp(t, next.Signer)

	old, err := b.PromoteNextKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fp(t, old) != oldFP {
		t.Fatal("PromoteNextKey did not return the key it replaced")
	}
	checkPromoted(t, b, dir, oldPEM, nextPEM, "https://alpha.new.example:6443")
	if _, err := b.PromoteNextKey(ctx); !errors.Is(err, backend.ErrNoNextKey) {
		t.Fatalf("PromoteNextKey twice: %v, want ErrNoNextKey", err)
	}

	if _, err := b.StageKey(ctx, ""); err != nil {
		t.Fatal(err)
	}
	third := readFile(t, filepath.Join(dir, file.NextKeyFile))
	if old, err = b.PromoteNextKey(ctx); err != nil || fp(t, old) != newFP {
		t.Fatalf("second promotion: %v", err)
	}
	checkPromoted(t, b, dir, nextPEM, third, "https://alpha.new.example:6443")
}

// checkPromoted checks the state dir dir (and b) after a promotion from
// oldPEM to newPEM with API server apiServer.
func checkPromoted(t *testing.T, b *file.Backend, dir string, oldPEM, newPEM []byte, apiServer string) {
	t.Helper()
	ctx := context.Background()
	if !bytes.Equal(readFile(t, filepath.Join(dir, file.KeyFile)), newPEM) {
		t.Error("cluster.key is not the staged key byte for byte")
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, file.PreviousKeyFile)), oldPEM) {
		t.Error("cluster.key.previous is not the replaced key byte for byte")
	}
	if m := mode(t, filepath.Join(dir, file.PreviousKeyFile)); m != 0o600 {
		t.Errorf("cluster.key.previous has mode %04o", m)
	}
	for _, name := range []string{file.NextKeyFile, file.NextKeyMetaFile} {
		if exists(filepath.Join(dir, name)) {
			t.Errorf("%s is still there", name)
		}
	}
	newKey, err := handshake.ParsePrivateKey(newPEM)
	if err != nil {
		t.Fatal(err)
	}
	oldKey, err := handshake.ParsePrivateKey(oldPEM)
	if err != nil {
		t.Fatal(err)
	}
	for name, bb := range map[string]*file.Backend{"the promoting backend": b, "a reopened backend": reopen(t, dir)} {
		if fp(t, bb.Signer()) != fp(t, newKey) {
			t.Errorf("%s signs with the old key", name)
		}
		info, err := bb.ClusterInfo()
		if err != nil || info.Fingerprint != fp(t, newKey) || info.APIServer != apiServer {
			t.Errorf("%s publishes %+v (%v), want the new key and %s", name, info, err, apiServer)
		}
		if next, err := bb.Next(ctx); next != nil || err != nil {
			t.Errorf("%s: Next after promotion: %+v, %v", name, next, err)
		}
		if prev, err := bb.PreviousKey(ctx); err != nil || fp(t, prev) != fp(t, oldKey) {
			t.Errorf("%s: PreviousKey: %v, or not the replaced key", name, err)
		}
	}
}

// TestAPromotionCutShortIsCompleted stops a promotion after each of its
// writes (made here directly, as the crash left them): the state dir opens
// with one whole key in force, and PromoteNextKey (returning the replaced
// key) or Next (returning nil once the staged key is in force) run again
// completes the promotion to the same end state as one run through.
func TestAPromotionCutShortIsCompleted(t *testing.T) {
	const newAPI = "https://alpha.new.example:6443"
	type files struct {
		dir             string
		oldPEM, nextPEM []byte
	}
	steps := []struct {
		name    string
		crash   func(t *testing.T, f files)
		inForce string // "old" or "new": the key Open loads after the crash
	}{
		{"before any write", func(*testing.T, files) {}, "old"},
		{"after writing cluster.key.previous", func(t *testing.T, f files) {
			write(t, filepath.Join(f.dir, file.PreviousKeyFile), string(f.oldPEM))
		}, "old"},
		{"after writing cluster.key", func(t *testing.T, f files) {
			write(t, filepath.Join(f.dir, file.PreviousKeyFile), string(f.oldPEM))
			write(t, filepath.Join(f.dir, file.KeyFile), string(f.nextPEM))
		}, "new"},
		{"after writing config.yaml", func(t *testing.T, f files) {
			write(t, filepath.Join(f.dir, file.PreviousKeyFile), string(f.oldPEM))
			write(t, filepath.Join(f.dir, file.KeyFile), string(f.nextPEM))
			write(t, filepath.Join(f.dir, file.ConfigFile), "clusterID: alpha\napiServer: "+newAPI+"\n")
		}, "new"},
	}
	for _, step := range steps {
		for _, resume := range []string{"PromoteNextKey", "Next"} {
			t.Run(step.name+", then "+resume, func(t *testing.T) {
				ctx := context.Background()
				dir := filepath.Join(t.TempDir(), "alpha")
				b := initState(t, dir, "alpha")
				if _, err := b.StageKey(ctx, newAPI); err != nil {
					t.Fatal(err)
				}
				f := files{dir, readFile(t, filepath.Join(dir, file.KeyFile)), readFile(t, filepath.Join(dir, file.NextKeyFile))}
				step.crash(t, f)

				b = reopen(t, dir)
				want := map[string][]byte{"old": f.oldPEM, "new": f.nextPEM}[step.inForce]
				wantKey, _ := handshake.ParsePrivateKey(want)
				if fp(t, b.Signer()) != fp(t, wantKey) {
					t.Fatalf("after the crash the backend signs with another key than the %s one", step.inForce)
				}
				switch resume {
				case "PromoteNextKey":
					old, err := b.PromoteNextKey(ctx)
					if err != nil {
						t.Fatal(err)
					}
					oldKey, _ := handshake.ParsePrivateKey(f.oldPEM)
					if fp(t, old) != fp(t, oldKey) {
						t.Fatal("PromoteNextKey run again did not return the replaced key")
					}
				case "Next":
					next, err := b.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if step.inForce == "old" {
						// Not promoted yet: still staged, as it was.
						if next == nil || fp(t, next.Signer) == fp(t, b.Signer()) {
							t.Fatalf("Next: %+v, want the staged key", next)
						}
						if _, err := b.PromoteNextKey(ctx); err != nil {
							t.Fatal(err)
						}
					} else if next != nil {
						t.Fatalf("Next returned %+v for a key in force, want nil", next)
					}
				}
				checkPromoted(t, b, dir, f.oldPEM, f.nextPEM, newAPI)
			})
		}
	}

	// Stopped after removing cluster.key.next: the promotion is done but
	// for the sidecar, which Next removes; nothing is staged any more.
	t.Run("after removing cluster.key.next", func(t *testing.T) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "alpha")
		b := initState(t, dir, "alpha")
		if _, err := b.StageKey(ctx, newAPI); err != nil {
			t.Fatal(err)
		}
		oldPEM := readFile(t, filepath.Join(dir, file.KeyFile))
		nextPEM := readFile(t, filepath.Join(dir, file.NextKeyFile))
		write(t, filepath.Join(dir, file.PreviousKeyFile), string(oldPEM))
		write(t, filepath.Join(dir, file.KeyFile), string(nextPEM))
		write(t, filepath.Join(dir, file.ConfigFile), "clusterID: alpha\napiServer: "+newAPI+"\n")
		remove(t, filepath.Join(dir, file.NextKeyFile))
		b = reopen(t, dir)
		if _, err := b.PromoteNextKey(ctx); !errors.Is(err, backend.ErrNoNextKey) {
			t.Fatalf("PromoteNextKey: %v, want ErrNoNextKey", err)
		}
		checkPromoted(t, b, dir, oldPEM, nextPEM, newAPI)
	})
}

// TestAStagingCutShortStagesAnew: a crash between the sidecar and the key
// of StageKey leaves no staged key; the stale sidecar does not bind the
// next staging to its API server.
func TestAStagingCutShortStagesAnew(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "alpha")
	b := initState(t, dir, "alpha")
	if _, err := b.StageKey(ctx, "https://alpha.new.example:6443"); err != nil {
		t.Fatal(err)
	}
	remove(t, filepath.Join(dir, file.NextKeyFile))
	b = reopen(t, dir)
	if next, err := b.Next(ctx); next != nil || err != nil {
		t.Fatalf("Next: %+v, %v; want nil", next, err)
	}
	if exists(filepath.Join(dir, file.NextKeyMetaFile)) {
		t.Error("Next left the stale sidecar")
	}
	next, err := b.StageKey(ctx, "")
	if err != nil || next.APIServer != "" {
		t.Fatalf("StageKey after a staging cut short: %+v, %v", next, err)
	}
}

// TestADamagedStagedKeyIsAnErrorNamingTheFile: a staged key that is cut
// short, without its sidecar, with another key's sidecar or readable by
// others is an error naming the file and what to do, never a key silently
// staged anew; Open and the key in force are unaffected.
func TestADamagedStagedKeyIsAnErrorNamingTheFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"cluster.key.next cut in half", func(t *testing.T, dir string) {
			p := filepath.Join(dir, file.NextKeyFile)
			d := readFile(t, p)
			write(t, p, string(d[:len(d)/2]))
		}, file.NextKeyFile + ": "},
		{"sidecar missing", func(t *testing.T, dir string) {
			remove(t, filepath.Join(dir, file.NextKeyMetaFile))
		}, file.NextKeyMetaFile + ": missing, but cluster.key.next is there"},
		{"another key's sidecar", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, file.NextKeyMetaFile), "fingerprint: sha256:"+strings.Repeat("0", 64)+"\n")
		}, file.NextKeyMetaFile + ": fingerprint sha256:" + strings.Repeat("0", 64) + " is not the one of cluster.key.next"},
		{"sidecar not YAML", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, file.NextKeyMetaFile), "{{{")
		}, file.NextKeyMetaFile + ": malformed"},
		{"readable by others", func(t *testing.T, dir string) {
			chmod(t, filepath.Join(dir, file.NextKeyFile), 0o644)
		}, file.NextKeyFile + ": mode 0644 lets other users read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "alpha")
			b := initState(t, dir, "alpha")
			oldFP := fp(t, b.Signer())
			if _, err := b.StageKey(ctx, ""); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			nextBefore, _ := os.ReadFile(filepath.Join(dir, file.NextKeyFile))
			b = reopen(t, dir)
			if fp(t, b.Signer()) != oldFP {
				t.Fatal("a damaged staged key changed the key in force")
			}
			for name, call := range map[string]func() error{
				"Next":           func() error { _, err := b.Next(ctx); return err },
				"StageKey":       func() error { _, err := b.StageKey(ctx, ""); return err },
				"MarkAnnounced":  func() error { return b.MarkAnnounced(ctx, now) },
				"PromoteNextKey": func() error { _, err := b.PromoteNextKey(ctx); return err },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) {
					t.Errorf("%s: %v, want an error naming %s", name, err, filepath.Join(dir, tc.want))
				}
			}
			if fp(t, b.Signer()) != oldFP || fp(t, reopen(t, dir).Signer()) != oldFP {
				t.Fatal("a damaged staged key changed the key in force")
			}
			if after, _ := os.ReadFile(filepath.Join(dir, file.NextKeyFile)); !bytes.Equal(after, nextBefore) {
				t.Fatal("the damaged staged key was replaced")
			}
		})
	}
}
