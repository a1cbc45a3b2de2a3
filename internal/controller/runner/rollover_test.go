package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// seesFlux is a file backend that can see a cluster's Flux, as the
// kubernetes backend does (backend.FluxTruster): trusted says whether
// Flux's verify Secret holds the key asked for.
type seesFlux struct {
	*file.Backend
	trusted bool
	asked   []string
}

func (s *seesFlux) FluxTrusts(_ context.Context, want []byte) (bool, string, error) {
	s.asked = append(s.asked, string(want))
	if s.trusted {
		return true, "Flux's verify Secret holds it", nil
	}
	return false, "Flux has not applied the head that announces it", nil
}

var _ backend.FluxTruster = (*seesFlux)(nil)

// TestASwitchWaitsForTheAnnouncementAndForFlux: a staged key is promoted
// only once it has been announced for KeyRolloverWait and the cluster's
// Flux trusts it, whichever comes last; until then each pass says what it
// waits for and signs with the key in force.
func TestASwitchWaitsForTheAnnouncementAndForFlux(t *testing.T) {
	r, _ := newRunner(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	b := &seesFlux{Backend: r.Backend.(*file.Backend)}
	opts, err := Signed(gitsync.Options{URL: r.Repo.Dir() + "/../remote.git", Dir: r.Repo.Dir()}, b, "")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	run := &Runner{Repo: repo, Backend: b, Now: func() time.Time { return now }, KeyRolloverWait: time.Minute}
	old, _ := handshake.Fingerprint(b.Signer().Public())
	next, err := b.StageKey(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := handshake.Fingerprint(next.Signer.Public())
	pass := func(waitFor string) {
		t.Helper()
		res, err := run.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.KeyRollover, waitFor) {
			t.Fatalf("the pass says %q, want %q", res.KeyRollover, waitFor)
		}
	}
	pass("an applied tree that announces it is pushed")
	b.trusted = true
	pass("after it was announced (--key-rollover-wait)") // Flux trusts it, but not a minute yet
	now = now.Add(time.Minute)
	b.trusted = false
	pass("Flux has not applied the head that announces it")
	if fp, _ := handshake.Fingerprint(b.Signer().Public()); fp != old {
		t.Fatal("the key switched before Flux trusted the new one")
	}
	if len(b.asked) != 1 || !strings.HasPrefix(b.asked[0], "ssh-ed25519 ") {
		t.Errorf("Flux was asked %q, want the staged key's authorized_keys line once", b.asked)
	}
	b.trusted = true
	pass("key rollover: " + want + " replaces " + old)
	if fp, _ := handshake.Fingerprint(b.Signer().Public()); fp != want {
		t.Fatalf("the backend signs with %s, want the promoted %s", fp, want)
	}
}
