//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/crashpoint"
)

// TestSIGTERMEndsAReconcileOnceMidPass: a `reconcile --once` process whose
// push hangs in the host (a pre-receive hook that never answers, as a
// stalled host or a hook stuck on its own network call) still exits
// within seconds of SIGTERM, as a CronJob's or a Pod's termination sends
// it, and the next pass converges.
func TestSIGTERMEndsAReconcileOnceMidPass(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	hook := filepath.Join(remote, "hooks", "pre-receive")
	entered := filepath.Join(root, "hook-entered")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch '"+entered+"'\nexec sleep 120\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")}
	took, stderr, err := sigtermOnce(t, args, nil, "its push reached the hook", "pushed", func() bool {
		_, err := os.Stat(entered)
		return err == nil
	})
	if took > 8*time.Second {
		t.Errorf("gitpeer exited %s after SIGTERM, want within seconds", took)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("exit: %v, want a failure\n%s", err, stderr)
	}

	// The host lets pushes through again: the next pass lands.
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := gitpeer(t, args...); code != 0 {
		t.Fatalf("the pass after the SIGTERM: exit %d\n%s%s", code, out, stderr)
	}
}

// TestSIGTERMEndsAReconcileOnceWhateverItDoes: a pass stuck in a call
// deaf to its context (crashpoint's GITPEER_HANG_AT, after its commit and
// before its push) still ends its process within seconds of SIGTERM, with
// 143 and a line that says so; the next pass converges.
func TestSIGTERMEndsAReconcileOnceWhateverItDoes(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	args := []string{"reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")}
	// The commit is made once the clone's main moves past the remote's.
	checkout := filepath.Join(root, "state", "beta", "checkout")
	took, stderr, err := sigtermOnce(t, args, []string{crashpoint.HangEnv + "=" + string(crashpoint.Committed)}, "it committed", "committed", func() bool {
		local := revParse(checkout, "refs/heads/main")
		return local != "" && local != revParse(remote, "refs/heads/main")
	})
	if took > stopGrace+3*time.Second {
		t.Errorf("gitpeer exited %s after SIGTERM, want within %s", took, stopGrace)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != stopExitCode || !strings.Contains(stderr, "did not end within 10s of the signal") {
		t.Errorf("exit: %v, want %d and the reason\n%s", err, stopExitCode, stderr)
	}
	if code, out, stderr := gitpeer(t, args...); code != 0 {
		t.Fatalf("the pass after the SIGTERM: exit %d\n%s%s", code, out, stderr)
	}
}

// sigtermOnce runs gitpeer with args (and env besides the environment) as
// a process, waits up to a minute until ready holds (failing the test, in
// before's and never's words, if the process ends first or ready never
// holds), sends it SIGTERM and returns how long after the signal it ended,
// its stderr and how it ended. A process still running 30 s after the
// signal fails the test.
func sigtermOnce(t *testing.T, args, env []string, before, never string, ready func() bool) (took time.Duration, stderr string, exit error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	for deadline := time.Now().Add(time.Minute); !ready(); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the pass ended before %s: %v\n%s", before, err, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pass never %s", never)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case exit = <-done:
		done <- exit // for the deferred cleanup
	case <-time.After(30 * time.Second):
		t.Fatalf("gitpeer still running 30s after SIGTERM\n%s", errOut.String())
	}
	return time.Since(start), errOut.String(), exit
}
