package gitsync

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lockHelperEnv makes this test binary a process that takes the lock of the
// checkout it names, reports on stdout, and holds the lock until its stdin
// closes (see TestMain).
const lockHelperEnv = "GITSYNC_TEST_LOCK_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		os.Exit(lockHelper(dir, os.Getenv(lockHelperEnv+"_WAIT") != ""))
	}
	os.Exit(m.Run())
}

func lockHelper(dir string, wait bool) int {
	l, err := LockCheckout(context.Background(), dir, wait, func(e *LockedError) { fmt.Printf("waiting: %v\n", e) })
	if err != nil {
		fmt.Printf("refused: %v\n", err)
		return 3
	}
	fmt.Printf("locked %d\n", os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Unlock(); err != nil {
		fmt.Printf("unlock: %v\n", err)
		return 1
	}
	return 0
}

// lockProcess is another process running lockHelper.
type lockProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has exited
	err   error         // its exit, once done
}

// wait returns the process's exit error once it has exited.
func (p *lockProcess) wait() error {
	<-p.done
	return p.err
}

func startLockProcess(t *testing.T, dir string, wait bool) *lockProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	if wait {
		cmd.Env = append(cmd.Env, lockHelperEnv+"_WAIT=1")
	}
	p := &lockProcess{cmd: cmd, lines: make(chan string, 10), done: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return p
}

func (p *lockProcess) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("the lock process ended without a word")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("the lock process said nothing within 20s")
	}
	return ""
}

// TestCheckoutLockBetweenProcesses runs real processes on one checkout: the
// second is refused with the holder's PID, a waiting one gets the lock when
// the holder lets go, and a holder that dies leaves no stale lock.
func TestCheckoutLockBetweenProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "checkout")

	holder := startLockProcess(t, dir, false)
	got := holder.line(t)
	var pid int
	if _, err := fmt.Sscanf(got, "locked %d", &pid); err != nil || pid != holder.cmd.Process.Pid {
		t.Fatalf("holder says %q (pid %d)", got, holder.cmd.Process.Pid)
	}

	// Another process is refused, naming the holder.
	second := startLockProcess(t, dir, false)
	want := fmt.Sprintf("refused: checkout %s is in use by process %d (started ", dir, pid)
	if got := second.line(t); !strings.HasPrefix(got, want) {
		t.Errorf("second process says %q, want %q...", got, want)
	}
	if err := second.wait(); err == nil {
		t.Error("the refused process exited 0")
	}

	// So is this one, with the holder's start time.
	_, err := LockCheckout(context.Background(), dir, false, nil)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != pid || time.Since(locked.Started) > time.Minute || locked.Dir != dir {
		t.Fatalf("LockCheckout while held = %v (%+v)", err, locked)
	}
	// Waiting ends with the context.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := LockCheckout(ctx, dir, true, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting past the deadline = %v", err)
	}

	// A waiting process gets the lock once the holder lets go.
	waiter := startLockProcess(t, dir, true)
	if got := waiter.line(t); !strings.HasPrefix(got, fmt.Sprintf("waiting: checkout %s is in use by process %d", dir, pid)) {
		t.Errorf("waiter says %q", got)
	}
	holder.stdin.Close()
	if err := holder.wait(); err != nil {
		t.Errorf("holder: %v", err)
	}
	if got := waiter.line(t); got != fmt.Sprintf("locked %d", waiter.cmd.Process.Pid) {
		t.Errorf("waiter says %q after the holder let go", got)
	}

	// A killed holder leaves nothing stale.
	if err := waiter.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = waiter.wait()
	l, err := LockCheckout(context.Background(), dir, false, nil)
	if err != nil {
		t.Fatalf("lock after the holder was killed: %v", err)
	}
	data, _ := os.ReadFile(dir + ".lock")
	if !strings.HasPrefix(string(data), fmt.Sprintf("pid %d\nstarted ", os.Getpid())) {
		t.Errorf("lock file = %q", data)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
