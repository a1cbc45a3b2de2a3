package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// processStart approximates when this process started: package variables
// are initialised before main runs.
var processStart = time.Now()

// lockPoll is how often a waiting LockCheckout tries again.
const lockPoll = 100 * time.Millisecond

// CheckoutLock is an exclusive lock on a clone among the processes
// of one machine, held from LockCheckout until Unlock or the end of the
// process (the kernel releases it then, so a crash leaves no stale lock).
type CheckoutLock struct {
	f    *os.File
	path string
}

// LockedError is returned by LockCheckout when another process holds the
// lock and wait is false.
type LockedError struct {
	// Dir is the clone.
	Dir string
	// PID and Started are what the holder wrote into the lock file: its
	// process ID and start time (zero when it had not written them yet).
	PID     int
	Started time.Time
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("checkout %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("checkout %s is in use by process %d (started %s)", e.Dir, e.PID, e.Started.Format(time.RFC3339))
}

// LockPath is the lock file of the clone dir: dir's path with
// ".lock" appended, next to the clone rather than in it (the clone's
// content belongs to Git, and the lock must outlive re-cloning).
func LockPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs + ".lock", nil
}

// LockCheckout takes the lock of the clone dir (LockPath; the file
// and its directory are created as needed, and never removed) and writes
// this process's ID and start time into it. When another process holds it,
// LockCheckout returns a *LockedError naming that process, or with wait
// waits until the lock is free or ctx ends. The lock is advisory: it keeps
// out every gitpeer that takes it, which is every reconcile.
//
// notify, when not nil, is called once with the holder's *LockedError
// before waiting.
func LockCheckout(ctx context.Context, dir string, wait bool, notify func(*LockedError)) (*CheckoutLock, error) {
	path, err := LockPath(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	abs := strings.TrimSuffix(path, ".lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	notified := false
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", abs, err)
		}
		if ok {
			break
		}
		held := readLock(path, abs)
		if !wait {
			f.Close()
			return nil, held
		}
		if notify != nil && !notified {
			notify(held)
			notified = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the lock of %s: %w: %w", abs, held, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	l := &CheckoutLock{f: f, path: path}
	info := fmt.Sprintf("pid %d\nstarted %s\n", os.Getpid(), processStart.UTC().Format(time.RFC3339Nano))
	if err := f.Truncate(0); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	if _, err := f.WriteAt([]byte(info), 0); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	return l, nil
}

// Unlock releases the lock. The file stays: removing it would let two
// processes lock two different files of the same name.
func (l *CheckoutLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing releases the flock
	l.f = nil
	return err
}

// readLock parses what the holder of the lock file path wrote.
func readLock(path, dir string) *LockedError {
	e := &LockedError{Dir: dir}
	data, err := os.ReadFile(path)
	if err != nil {
		return e
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			e.PID, _ = strconv.Atoi(v)
		case "started":
			e.Started, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	if e.PID <= 0 {
		e.PID = 0
	}
	return e
}

// errLockUnsupported is returned where the platform has no flock.
var errLockUnsupported = errors.New("locking a checkout is not supported on this platform")
