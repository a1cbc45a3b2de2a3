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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")}
	var stderr bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(entered); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the pass ended before its push reached the hook: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the pass never pushed")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err = <-done:
		done <- err // for the deferred cleanup
	case <-time.After(30 * time.Second):
		t.Fatalf("gitpeer still running 30s after SIGTERM\n%s", stderr.String())
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("gitpeer exited %s after SIGTERM, want within seconds", took)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("exit: %v, want a failure\n%s", err, stderr.String())
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")}
	var stderr bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", crashpoint.HangEnv+"="+string(crashpoint.Committed))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	// The commit is made once the clone's main moves past the remote's.
	checkout := filepath.Join(root, "state", "beta", "checkout")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if local := revParse(checkout, "refs/heads/main"); local != "" && local != revParse(remote, "refs/heads/main") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the pass ended before it committed: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the pass never committed")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err = <-done:
		done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("gitpeer still running 30s after SIGTERM\n%s", stderr.String())
	}
	if took := time.Since(start); took > stopGrace+3*time.Second {
		t.Errorf("gitpeer exited %s after SIGTERM, want within %s", took, stopGrace)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != stopExitCode || !strings.Contains(stderr.String(), "did not end within 10s of the signal") {
		t.Errorf("exit: %v, want %d and the reason\n%s", err, stopExitCode, stderr.String())
	}
	if code, out, stderr := gitpeer(t, args...); code != 0 {
		t.Fatalf("the pass after the SIGTERM: exit %d\n%s%s", code, out, stderr)
	}
}
