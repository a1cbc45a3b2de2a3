package attack

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// fluxSecret is alpha's verify Secret, the one its Flux trusts keys from.
var fluxSecret = layout.ClusterPath("alpha", fluxtrust.Dir, fluxtrust.SecretFile)

// malloryKey is a key of the attacker's, written as gitpeer writes alpha's
// staged key (next) or its key in force.
func malloryKey(t *testing.T, next bool) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	line, err := fluxtrust.SSHKey("alpha", pub, next)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// TestAKeyPlantedInFluxsTrustNeverReachesFlux: a repo writer adds a key of
// theirs to alpha's verify Secret, as if alpha were rolling over to it.
// The applied branch never carries it (the manifest does not list that
// content), verify names the change, and alpha's next pass writes the
// Secret back.
func TestAKeyPlantedInFluxsTrustNeverReachesFlux(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	planted := malloryKey(t, true)
	w.forbid("alpha", fluxSecret, planted)
	w.attack("mallory <mallory@example.com>", "alpha: roll over", func(a *writer) {
		a.edit(fluxSecret, "stringData:\n", "stringData:\n  alpha-next.sshpub: "+planted+"\n")
	})
	mustFind(t, w.verify(), fluxSecret, reasons.UnsignedChange, "")
	w.pass("alpha")
	w.pass("beta")
	if data := w.mustShow(fluxSecret); strings.Contains(string(data), planted) {
		t.Fatalf("alpha's pass left the planted key in its verify Secret:\n%s", data)
	}
}

// TestALeakedKeyThatRetargetsFluxIsNamed: whoever holds alpha's key (a
// leaked credential) signs into alpha's tree a verify Secret that trusts
// their own key in place of alpha's. verify names it FluxTrustMismatch
// (Flux would apply what that key signs), and alpha's next pass puts its
// own key back.
func TestALeakedKeyThatRetargetsFluxIsNamed(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	own, err := fluxtrust.SSHKey("alpha", w.clusters["alpha"].key(), false)
	if err != nil {
		t.Fatal(err)
	}
	_, mallory, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := fluxtrust.Of("alpha", mallory, nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := string(keys.SSH)
	files, err := fluxtrust.Files("alpha", keys)
	if err != nil {
		t.Fatal(err)
	}
	w.attack("mallory <mallory@example.com>", "alpha: trust another key", func(a *writer) {
		a.write(fluxSecret, files[fluxtrust.Dir+"/"+fluxtrust.SecretFile])
		a.resign(w.clusters["alpha"].b.Signer(), "alpha", layout.ClusterPath("alpha"))
	})
	mustFind(t, w.verify(), fluxSecret, reasons.FluxTrustMismatch, "")
	w.pass("alpha")
	k, err := fluxtrust.Parse(fluxSecret, "alpha", w.mustShow(fluxSecret))
	if err != nil || string(k.SSH) != string(own) || k.NextSSH != nil {
		t.Fatalf("after alpha's pass its verify Secret trusts %q and %q (%v), want alpha's key alone", k.SSH, k.NextSSH, err)
	}
	if data := string(w.mustShow(fluxSecret)); strings.Contains(data, foreign) {
		t.Fatalf("after alpha's pass its verify Secret is:\n%s", data)
	}
}

// TestTheSwitchNeverVouchesForAnEditedClusterYAML: alpha rolls its key
// over, and before the switch a repo writer changes the API server its
// cluster.yaml publishes. The switch would sign a rotation statement over
// that cluster.yaml: it never does. alpha publishes its cluster.yaml from
// its backend instead (the new key, its own API server, a statement by the
// key it replaces), so beta never pins the writer's API server.
func TestTheSwitchNeverVouchesForAnEditedClusterYAML(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := settled(t, twoSpec)
	alpha := w.clusters["alpha"]
	next, err := alpha.b.StageKey(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	w.pass("alpha") // announced
	file := layout.ClusterPath("alpha", layout.ClusterFile)
	w.attack("mallory <mallory@example.com>", "alpha moved", func(a *writer) {
		a.edit(file, "apiServer: https://", "apiServer: https://mallory.example.com/")
	})
	w.clock.Advance(runner.DefaultKeyRolloverWait)
	alpha.keys = append(alpha.keys, next.Signer.Public())
	res := w.pass("alpha")
	assertContains(t, "alpha's rollover", res.KeyRollover, "replaces", "this pass publishes cluster.yaml with the rotation statement")
	want, _ := handshake.Fingerprint(next.Signer.Public())
	info, err := layout.ParseClusterInfo(file, "alpha", w.mustShow(file))
	if err != nil {
		t.Fatal(err)
	}
	if info.Fingerprint != want || info.Rotation == nil || strings.Contains(info.APIServer, "mallory") {
		t.Fatalf("after the switch alpha publishes %s at %s (statement %v), want %s at its own API server with a statement", info.Fingerprint, info.APIServer, info.Rotation != nil, want)
	}
	w.pass("beta")
	if strings.Contains(string(w.mustShow(layout.ClusterPath("beta", layout.StatusFile))), "mallory.example.com") {
		t.Fatal("beta took up the writer's API server")
	}
	w.converge()
	w.mustBeReady("alpha", "beta")
}
