package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childrenOf are the processes whose parent is ppid, zombies excluded.
func childrenOf(ppid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(ppid) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestSIGTERMStopsTheEvaluationAtOnce is the filed attack: a spec that
// keeps CUE busy must not keep gitpeer from stopping.
func TestSIGTERMStopsTheEvaluationAtOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), bomb)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(exe, "validate", dir, "--spec-timeout", "10m")
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

	var evaluator int
	for deadline := time.Now().Add(30 * time.Second); evaluator == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("gitpeer started no evaluator")
		}
		if pids := childrenOf(cmd.Process.Pid); len(pids) > 0 {
			evaluator = pids[0]
		}
	}
	time.Sleep(time.Second) // well into the spec
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err = <-done:
		done <- err // for the deferred cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("gitpeer still running 20s after SIGTERM")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("gitpeer exited %s after SIGTERM, want at once", took)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if want := filepath.Join(dir, "peering.cue") + ": evaluation interrupted: context canceled"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not say %q", stderr.String(), want)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(evaluator)); err == nil {
		t.Errorf("evaluator %d outlived gitpeer", evaluator)
	}
}
