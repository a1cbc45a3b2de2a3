package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWhatAPassWroteIsReadOnItsClone: the clone of `reconcile --once`
// holds no worktree (its directory holds .git alone), and what the pass
// wrote is read there as docs/design.md ("What the clone keeps") says:
// with git log and git show, with gitpeer status and gitpeer plan.
func TestWhatAPassWroteIsReadOnItsClone(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "beta")
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", state); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", code, stderr)
	}
	checkout := filepath.Join(state, "checkout")
	entries, err := os.ReadDir(checkout)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ".git" {
		t.Errorf("the clone holds %v, want .git alone", entries)
	}
	if log := git(t, checkout, "log", "-1", "--format=%s"); !strings.HasPrefix(log, "beta: ") {
		t.Errorf("git log in the clone: %q, want beta's commit", log)
	}
	if status := git(t, checkout, "show", "HEAD:clusters/beta/status.yaml"); !strings.Contains(status, "clusterID: beta") {
		t.Errorf("git show of beta's status in the clone:\n%s", status)
	}
	if code, out, stderr := gitpeer(t, "status", checkout); code != 0 || !strings.Contains(out, "alpha") {
		t.Errorf("status of the clone: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := gitpeer(t, "plan", "--cluster", "beta", checkout, "--state-dir", state); code != 0 {
		t.Errorf("plan of the clone right after its pass: exit %d, want 0 (nothing to do)\n%s%s", code, out, stderr)
	}
}
