package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFetchedIsCalledOnceTheTipIsFetched(t *testing.T) {
	r, _ := newRunner(t)
	calls := 0
	r.Fetched = func() { calls++ }
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Fetched called %d times in a pass with one push attempt, want 1", calls)
	}
}

func TestAFailedPushStillReportsItsAttempts(t *testing.T) {
	r, tip := newRunner(t)
	before := tip()
	// The remote's pre-receive hook refuses every push: not a moved tip, so
	// the first attempt is the last.
	hook := filepath.Join(filepath.Dir(r.Repo.Dir()), "remote.git", "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refused by policy >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := r.Pass(context.Background())
	if err == nil || !strings.Contains(err.Error(), "push") {
		t.Fatalf("Pass: %v, want a push error", err)
	}
	if res == nil || res.Attempts != 1 || res.Commit != "" {
		t.Fatalf("result %+v, want 1 attempt and no commit", res)
	}
	if tip() != before {
		t.Error("the remote moved")
	}
}
