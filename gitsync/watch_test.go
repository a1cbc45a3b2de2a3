package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
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
