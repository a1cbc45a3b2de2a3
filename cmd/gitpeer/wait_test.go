package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// pollClock is a fake clock that tells the test each time wait starts
// waiting for its next poll, so the test acts (a reconciler's pass) and
// then steps the clock: no real time passes.
type pollClock struct {
	*testingclock.FakeClock
	waiting chan time.Duration
}

func (c pollClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.waiting <- d
	return t
}

// startWait runs gitpeer wait with args on a fake clock and returns that
// clock and a channel with its exit code, stdout and stderr.
func startWait(t *testing.T, args ...string) (pollClock, <-chan [3]any) {
	t.Helper()
	clk := pollClock{testingclock.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)), make(chan time.Duration)}
	prev := waitClock
	waitClock = clk
	t.Cleanup(func() { waitClock = prev })
	done := make(chan [3]any, 1)
	go func() {
		var out, errw bytes.Buffer
		code := run(context.Background(), append([]string{"wait"}, args...), &out, &errw)
		done <- [3]any{code, out.String(), errw.String()}
	}()
	return clk, done
}

// TestWaitUntilAPeeringIsReady: gitpeer wait on the remote returns once
// the reconcilers' fourth pass has made the peering Ready on both sides,
// and not before: it clones the remote anew at each poll.
func TestWaitUntilAPeeringIsReady(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	t.Setenv("TMPDIR", t.TempDir()) // where clones go
	clk, done := startWait(t, remote, "--for=condition=Ready", "--peering", "alpha/beta", "--timeout", "10m", "--interval", "10s")
	start := clk.Now()
	for i, id := range []string{"beta", "alpha", "beta", "alpha"} {
		select {
		case d := <-clk.waiting:
			if d != 10*time.Second {
				t.Fatalf("poll %d after %s, want --interval 10s", i+1, d)
			}
		case r := <-done:
			t.Fatalf("wait returned before pass %d (%s): %v", i+1, id, r)
		}
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatal(stderr)
		}
		clk.Step(10 * time.Second)
	}
	r := <-done
	if code, out := r[0].(int), r[1].(string); code != 0 || out != "peering alpha/beta condition met\n" {
		t.Fatalf("wait: exit %d\n%s%s", code, out, r[2])
	}
	if waited := clk.Since(start); waited != 40*time.Second {
		t.Errorf("waited %s of the clock, want 4 polls of 10s", waited)
	}
}

// TestWaitTimesOutNamingWhatIsNotReady: when the timeout passes first,
// wait exits 1 and says which peering is not Ready, its step and the
// message of the side that has to act; with --timeout 0 it reads once.
func TestWaitTimesOutNamingWhatIsNotReady(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")); code != 0 {
		t.Fatal(stderr)
	}
	git(t, work, "pull", "-q", "--ff-only")
	clk, done := startWait(t, work, "--cluster", "alpha", "--timeout", "25s", "--interval", "10s")
	var polls []time.Duration
	var r [3]any
wait:
	for {
		select {
		case d := <-clk.waiting:
			polls = append(polls, d)
			clk.Step(d)
		case r = <-done:
			break wait
		}
	}
	code, out, stderr := r[0].(int), r[1].(string), r[2].(string)
	// Who must act next, and what, then what the sides report.
	want := "gitpeer: timed out after 25s waiting for condition Ready\npeering alpha/beta is not Ready: step NonceSent, Reconciling: run alpha's reconciler: it answers beta's nonce with its Tenant; beta: "
	if code != 1 || out != "" || !strings.HasPrefix(stderr, want) {
		t.Fatalf("exit %d\n%s%s\nwant exit 1 and stderr starting %q", code, out, stderr, want)
	}
	if got := len(polls); got != 3 || polls[2] != 5*time.Second {
		t.Errorf("waited %v between polls, want 10s, 10s and the 5s left", polls)
	}

	if code, out, stderr := gitpeer(t, "wait", work, "--timeout", "0"); code != 1 || out != "" || !strings.Contains(stderr, "timed out after 0s") {
		t.Errorf("--timeout 0: exit %d\n%s%s", code, out, stderr)
	}
}

func TestWaitRefusesWhatItCannotWaitFor(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatal(stderr)
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	for _, args := range [][]string{{"--cluster", "beta"}, {"--for=condition=ready=true"}, {"--peering", "alpha/beta", "--cluster", "alpha"}} {
		if code, out, stderr := gitpeer(t, append([]string{"wait", work, "--timeout", "0"}, args...)...); code != 0 || out != "peering alpha/beta condition met\n" {
			t.Errorf("wait %v on a Ready repo: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a cluster the spec lacks", []string{"--cluster", "gamma"}, `--cluster: "gamma" is not a cluster of the spec (its clusters: alpha, beta)`},
		{"a peering the spec lacks", []string{"--peering", "beta/alpha"}, `--peering: "beta/alpha" is not a peering of the spec (its peerings, consumer/provider: alpha/beta)`},
		{"a peering not CONSUMER/PROVIDER", []string{"--peering", "alpha"}, `--peering: "alpha" is not CONSUMER/PROVIDER`},
		{"another condition", []string{"--for=condition=Stalled"}, `--for: "condition=Stalled" is not condition=Ready`},
		{"kubectl's jsonpath", []string{"--for=jsonpath={.step}=Ready"}, `--for: "jsonpath={.step}=Ready" is not condition=Ready`},
		{"a negative timeout", []string{"--timeout", "-1s"}, "--timeout -1s is negative"},
		{"no such branch", []string{"--branch", "nope"}, `branch "nope" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := work
			if tc.name == "no such branch" {
				target = remote
			}
			code, out, stderr := gitpeer(t, append([]string{"wait", target}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want 2\n%s%s\nwant %q", code, out, stderr, tc.want)
			}
		})
	}
}

// TestWaitRereadsACheckout: on a checkout, wait reads its HEAD again at each
// poll, seeing what a pull (or a reconciler's pass, in its own checkout)
// brought; a spec made invalid meanwhile is retried, and the timeout says
// why it could not read, once, not at every poll.
func TestWaitRereadsACheckout(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)

	// A spec that is not valid, committed while wait waits.
	clk, done := startWait(t, work, "--timeout", "30s", "--interval", "10s")
	select {
	case <-clk.waiting:
	case r := <-done:
		t.Fatalf("wait returned on a Pending peering: %v", r)
	}
	write(t, filepath.Join(work, "peering.cue"), spec+`peerings: [{consumer: "alpha", provider: "Gamma"}]`+"\n")
	git(t, work, "commit", "-qam", "a bad spec")
	var r [3]any
	for r == ([3]any{}) {
		clk.Step(10 * time.Second)
		select {
		case <-clk.waiting:
		case r = <-done:
		}
	}
	code, out, stderr := r[0].(int), r[1].(string), r[2].(string)
	if code != 1 || out != "" || !strings.Contains(stderr, "the last read of the repo failed: the spec is invalid:\n"+filepath.Join(work, "peering.cue")+":2:") ||
		strings.Count(stderr, "peering.cue:") != 1 {
		t.Fatalf("wait over an invalid spec: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	git(t, work, "reset", "-q", "--hard", "HEAD~1")

	clk, done = startWait(t, work, "--timeout", "1m", "--interval", "10s")
	for i, id := range []string{"beta", "alpha", "beta", "alpha"} {
		select {
		case <-clk.waiting:
		case r := <-done:
			t.Fatalf("wait returned before pass %d (%s): %v", i+1, id, r)
		}
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatal(stderr)
		}
		git(t, work, "pull", "-q", "--ff-only")
		clk.Step(10 * time.Second)
	}
	if r := <-done; r[0].(int) != 0 || r[1].(string) != "peering alpha/beta condition met\n" {
		t.Fatalf("wait on the checkout: %v", r)
	}
}
