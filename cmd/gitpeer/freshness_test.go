package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReconcileSaysItRestoredTheAppliedBranch is what an operator sees when
// someone pushed the cluster's applied branch back at an older seal: the
// next reconcile --once puts it back at the newest seal before its pass,
// and says so.
func TestReconcileSaysItRestoredTheAppliedBranch(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	pass := func(id string) string {
		t.Helper()
		code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id))
		if code != 0 {
			t.Fatalf("%s's pass: %d %s", id, code, stderr)
		}
		return out
	}
	pass("beta")
	first := git(t, remote, "rev-parse", "refs/heads/gitpeer/applied/beta")
	for _, id := range []string{"alpha", "beta", "alpha", "beta"} {
		pass(id)
	}
	newest := git(t, remote, "rev-parse", "refs/heads/gitpeer/applied/beta")
	if newest == first {
		t.Fatal("beta's seal did not move during the handshake")
	}
	git(t, remote, "update-ref", "refs/heads/gitpeer/applied/beta", first)

	out := pass("beta")
	if want := "beta: warning: gitpeer/applied/beta was at " + first + ", not at the newest seal: restored it"; !strings.Contains(out, want) {
		t.Errorf("reconcile's output lacks %q:\n%s", want, out)
	}
	if got := git(t, remote, "rev-parse", "refs/heads/gitpeer/applied/beta"); got != newest {
		t.Errorf("beta's applied branch is at %s after its pass, want its newest seal %s", got, newest)
	}
	if out := pass("beta"); strings.Contains(out, "warning") {
		t.Errorf("a second pass warns again:\n%s", out)
	}
}
