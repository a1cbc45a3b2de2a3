package gitsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAMissingBranchIsAnErrorWhenItMustExist: with BranchMustExist, Open and
// Sync of a branch the remote lacks fail with a *BranchNotFoundError naming
// the branch, the URL and the remote's branches (its own first, at most
// five), and leave the clone as it was; without it, a missing branch is
// still started with a root commit.
func TestAMissingBranchIsAnErrorWhenItMustExist(t *testing.T) {
	bare := newBare(t)
	ctx := context.Background()

	opts := testOptions(t, bare, "typo")
	opts.Branch, opts.BranchMustExist = "nosuch", true
	_, err := Open(ctx, opts)
	var nf *BranchNotFoundError
	if !errors.As(err, &nf) || !nf.Empty {
		t.Fatalf("Open of an empty remote = %v, want a *BranchNotFoundError saying it is empty", err)
	}
	if want := `branch "nosuch" does not exist on ` + bare + `: the remote has no branches yet`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	// Six more branches: the error lists the plain ones first, five in all.
	seeder := openRepo(t, bare, "seeder")
	mustSync(t, seeder, writes("seed", map[string]string{"peering.cue": "clusters: []\n"}))
	for _, b := range []string{"gitpeer/applied/alpha", "gitpeer/applied/beta", "release", "a/b/c", "zeta", "peering-v2"} {
		runGit(t, bare, "branch", b, "main")
	}
	_, err = Open(ctx, opts)
	want := `branch "nosuch" does not exist on ` + bare + ` (its branches: main, peering-v2, release, zeta, a/b/c, and 2 more)`
	if !errors.As(err, &nf) || nf.Empty || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}

	// A clone in use: a Sync with the typo fails before touching it.
	opts.Dir = seeder.Dir()
	opts.Branch = "main"
	r, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	head := r.Head()
	runGit(t, bare, "branch", "-m", "main", "trunk")
	if _, err := r.SyncTree(ctx, writes("lost", map[string]string{"x": "y"})); !errors.As(err, &nf) || nf.Branch != "main" {
		t.Fatalf("Sync after main was renamed = %v, want a *BranchNotFoundError for main", err)
	}
	if r.Head() != head || !atHead(r.Dir(), "peering.cue") {
		t.Errorf("the failed Sync changed the clone: head %s (was %s), peering.cue there: %v", r.Head(), head, atHead(r.Dir(), "peering.cue"))
	}
	assertClean(t, r.Dir())
	if got := runGit(t, bare, "branch", "--list", "main"); got != "" {
		t.Errorf("the failed Sync created main again: %s", got)
	}

	// Opened again on the right branch, the same clone follows it.
	opts.Branch = "trunk"
	r, err = Open(ctx, opts)
	if err != nil {
		t.Fatalf("Open on the right branch: %v", err)
	}
	if r.Head() != head {
		t.Errorf("head %s, want trunk's %s", r.Head(), head)
	}
	if got := runGit(t, r.Dir(), "config", "--get-all", "remote.origin.fetch"); got != fmt.Sprintf("+refs/heads/%[1]s:refs/remotes/origin/%[1]s", "trunk") {
		t.Errorf("the clone fetches %q", got)
	}

	// Without BranchMustExist a new branch starts with a root commit.
	opts.Branch, opts.BranchMustExist = "fresh", false
	r, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, writes("start", map[string]string{"peering.cue": "clusters: []\n"}))
	if n := runGit(t, bare, "rev-list", "--count", "fresh"); strings.TrimSpace(n) != "1" {
		t.Errorf("fresh has %s commits, want 1", n)
	}
	fsck(t, bare)
}
