package demo_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// withSlices asks beta (Liqo's default class, cpu capped at 4) for a slice
// it grants, one over the cap and one of a class it does not offer.
const withSlices = `{consumer: "alpha", provider: "beta", slices: [
	{name: "pool", resources: {cpu: "2", memory: "4Gi"}},
	{name: "huge", resources: {cpu: "16"}},
	{name: "gpu", class: "gpu", resources: {cpu: "1"}},
]}`

// TestSlicesRideTheHandshakeThroughARealRepo: the consumer sends its slice
// requests with its Tenant and the provider answers them with its Identity,
// so a peering with slices is Ready, every slice decided and the granted one
// rendered, after the handshake's four passes of alternating clusters; a
// later change of the slices is answered once the consumer requests it as
// the spec says (beta first denies the request it holds, which the spec no
// longer lists so).
func TestSlicesRideTheHandshakeThroughARealRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	rep, err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Now: clk.Now,
		Files: map[string][]byte{"peering.cue": []byte(lifecycleSpec(withSlices))}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	human := filepath.Join(t.TempDir(), "human")
	git(t, "clone", "-q", rep.Remote, human)
	l := &lifecycle{t: t, rep: rep, clock: clk, human: human}

	// The history as the git CLI reads it: seed, two publications, then
	// the four passes, each carrying its share of the slices.
	log := strings.Split(strings.TrimSpace(git(t, "-C", rep.Remote, "log", "--reverse", "--format=%s")), "\n")
	want := []string{
		"seed: peering spec from examples/two-clusters",
		"beta: publish cluster identity",
		"alpha: publish cluster identity",
		"beta: send nonce to alpha",
		"alpha: send tenant to beta; request slice gpu from beta and 2 more",
		"beta: issue identity to alpha; answer slice gpu of alpha and 3 more",
		"alpha: accept identity of beta; accept slice pool of beta",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	// A subject past Git's 72 characters names the first steps; the body
	// lists them all, and the trailers follow.
	full := git(t, "-C", rep.Remote, "log", "-1", "--format=%B", "--grep=^beta: issue identity", "main")
	wantFull := `beta: issue identity to alpha; answer slice gpu of alpha and 3 more

- issue identity to alpha
- answer slice gpu of alpha
- answer slice huge of alpha
- answer slice pool of alpha
- accept tenant of alpha

Gitpeer-Cluster: beta
Gitpeer-Step: issue identity to alpha
Gitpeer-Step: answer slice gpu of alpha
Gitpeer-Step: answer slice huge of alpha
Gitpeer-Step: answer slice pool of alpha
Gitpeer-Step: accept tenant of alpha`
	if strings.TrimSpace(full) != wantFull {
		t.Errorf("beta's message:\n%s\nwant:\n%s", full, wantFull)
	}
	// The handshake is done; the peering is not Ready while the spec
	// lists slices the provider denies (status and wait say which).
	for _, p := range rep.Peerings {
		if !p.Peered || p.Ready || p.Step != layout.StepReady {
			t.Errorf("%s → %s after four passes: %s peered=%t ready=%t; want peered, not ready (slices denied)", p.Consumer, p.Provider, p.Step, p.Peered, p.Ready)
		}
	}
	// Each denial with its reason, on both sides, within the same passes.
	denials := map[string]string{
		"huge": "cpu: requested 16 exceeds the cap 4 of class default",
		"gpu":  `class "gpu" is not offered (offered: default)`,
	}
	for _, cluster := range []string{"alpha", "beta"} {
		slices := map[string]layout.SliceStatus{}
		for _, s := range l.peering(cluster).Slices {
			slices[s.Name] = s
		}
		if s := slices["pool"]; s.Authentication != "Accepted" || s.Resources != "Accepted" {
			t.Errorf("%s: pool %+v", cluster, s)
		}
		for name, why := range denials {
			if s := slices[name]; s.Resources != "Denied" || s.Reason != liqo.ReasonSliceResourcesDenied || !strings.Contains(s.Message, why) {
				t.Errorf("%s: %s %+v, want Denied: %s", cluster, name, s, why)
			}
		}
	}
	if l.show("clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml") == "" || l.show("clusters/alpha/liqo/beta/resourceslice-huge.yaml") != "" ||
		l.show("clusters/alpha/liqo/beta/resourceslice-gpu.yaml") != "" {
		t.Errorf("rendered: %s", git(t, "-C", rep.Remote, "ls-tree", "-r", "--name-only", "main", "clusters/alpha/liqo/"))
	}
	if !strings.Contains(l.show("clusters/alpha/kustomization.yaml"), "liqo/beta/identity-resourceslice-pool.yaml") {
		t.Error("the granted slice's Identity is not in alpha's kustomization")
	}
	if got := l.converge(); len(got) != 0 {
		t.Fatalf("commits after convergence: %v", got)
	}

	t.Run("a later change is answered once requested as the spec says", func(t *testing.T) {
		l.editSpec(lifecycleSpec(strings.Replace(withSlices, `{name: "pool", resources: {cpu: "2", memory: "4Gi"}},`,
			`{name: "pool", resources: {cpu: "3", memory: "4Gi"}}, {name: "extra", resources: {pods: "10"}},`, 1)), "grow pool, add extra")
		// beta's first pass reads alpha's request for pool as it was, which
		// the spec no longer lists so: beta grants only what the spec says,
		// and denies it (SliceDiffersFromSpec). alpha's next pass requests
		// pool and extra as the spec says, and beta grants them.
		got := l.converge()
		want := []string{
			"beta: answer slice pool of alpha",
			"alpha: request slice extra from beta; request slice pool from beta",
			"beta: answer slice extra of alpha; answer slice pool of alpha",
			"alpha: accept slice extra of beta; accept slice pool of beta",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("commits after the change: %q\nwant %q", got, want)
		}
		answer, err := liqo.DecodeResourceSlice([]byte(l.show("clusters/alpha/inbox/beta/resourceslice-pool.status.yaml")))
		if err != nil {
			t.Fatal(err)
		}
		if cpu := answer.Status.Resources["cpu"]; cpu.String() != "3" {
			t.Errorf("pool granted cpu %s, want 3", cpu.String())
		}
		for _, name := range []string{"pool", "extra"} {
			if s := l.slice(name); s.Resources != "Accepted" {
				t.Errorf("%s: %+v", name, s)
			}
		}
		if l.show("clusters/alpha/liqo/beta/identity-resourceslice-extra.yaml") == "" {
			t.Error("extra is not rendered")
		}
	})
}
