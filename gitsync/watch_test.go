package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// expectEvents waits for exactly n signals within window, then makes sure no
// further one arrives during quiet.
func expectEvents(t *testing.T, ch <-chan struct{}, n int, window, quiet time.Duration) {
	t.Helper()
	deadline := time.After(window)
	for i := 0; i < n; i++ {
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatal("channel closed")
			}
		case <-deadline:
			t.Fatalf("got %d events, want %d", i, n)
		}
	}
	select {
	case <-ch:
		t.Fatalf("got more than %d events", n)
	case <-time.After(quiet):
	}
}

func TestWatch(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "clusters", "cl-a"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const debounce = 200 * time.Millisecond
	ch, err := Watch(ctx, root, debounce)
	if err != nil {
		t.Fatal(err)
	}

	// A burst in a new nested directory: one debounced event.
	dir := filepath.Join(root, "clusters", "cl-b", "inbox", "cl-a")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "nonce.yaml")
	if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("ab"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, ch, 1, 5*time.Second, 3*debounce)

	// The new directory is watched now: modifying the file there is seen.
	if err := os.WriteFile(file, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, ch, 1, 5*time.Second, 3*debounce)

	// An editor's atomic save (temp file, rename) is one change too.
	tmp := filepath.Join(root, "clusters", "cl-a", ".status.yaml.swp")
	if err := os.WriteFile(tmp, []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "clusters", "cl-a", "status.yaml")); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, ch, 1, 5*time.Second, 3*debounce)

	// Git's own bookkeeping is not a change.
	if err := os.WriteFile(filepath.Join(root, ".git", "objects", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "index"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, ch, 0, 0, 3*debounce)

	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("got an event after cancel, want the channel closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed after cancel")
	}
}

func TestWatchMissingRoot(t *testing.T) {
	if _, err := Watch(context.Background(), filepath.Join(t.TempDir(), "nope"), 0); err == nil {
		t.Fatal("Watch of a missing root succeeded")
	}
}

// TestWatchDebouncesOnItsClock: on a fake clock, a change is signalled
// exactly debounce after it, not a nanosecond sooner.
func TestWatchDebouncesOnItsClock(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const debounce = 200 * time.Millisecond
	clk := testingclock.NewFakeClock(clock)
	ch, err := watch(ctx, root, debounce, clk)
	if err != nil {
		t.Fatal(err)
	}
	// A new directory is one event (a file written is several, which could
	// re-arm the timer after the test stepped the clock).
	if err := os.Mkdir(filepath.Join(root, "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The event arrives from the kernel in its own time: the debounce
	// timer is armed then.
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the change armed no timer within 10s")
		}
		runtime.Gosched()
	}
	clk.Step(debounce - time.Nanosecond)
	if !clk.HasWaiters() {
		t.Fatal("the debounce timer fired before debounce had passed")
	}
	select {
	case <-ch:
		t.Fatal("signalled before debounce had passed")
	default:
	}
	clk.Step(time.Nanosecond)
	expectEvents(t, ch, 1, 10*time.Second, 0)
}
