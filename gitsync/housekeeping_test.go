package gitsync

import (
	"fmt"
	"strings"
	"testing"
)

// A clone past the loose-object limit is repacked into one pack after a
// pass lands, stays a valid repository for the git CLI, and later passes
// work on it.
func TestSyncRepacksAClonePastItsLimits(t *testing.T) {
	defer func(l, p int) { maxLooseObjects, maxPacks = l, p }(maxLooseObjects, maxPacks)
	maxLooseObjects, maxPacks = 20, 50

	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	repacked := false
	for i := range 8 {
		mustSync(t, r, writes(fmt.Sprintf("pass %d\n", i), map[string]string{
			fmt.Sprintf("clusters/cl-a/f%d.yaml", i): fmt.Sprintf("n: %d\n", i),
		}))
		h, err := r.Housekeeping()
		if err != nil {
			t.Fatalf("pass %d: housekeeping: %v", i, err)
		}
		if h.Repacked {
			repacked = true
			if loose := countObjects(t, r.dir)["count"]; loose != "0" {
				t.Errorf("pass %d: %s loose objects left after the repack", i, loose)
			}
			if packs := countObjects(t, r.dir)["packs"]; packs != "1" {
				t.Errorf("pass %d: %s packs after the repack, want 1", i, packs)
			}
		}
	}
	if !repacked {
		t.Fatal("the clone was never repacked past 20 loose objects")
	}
	runGit(t, r.dir, "fsck", "--strict", "--no-dangling")
	if got := runGit(t, r.dir, "rev-parse", "HEAD"); got != runGit(t, bare, "rev-parse", "main") {
		t.Errorf("clone HEAD %s, remote main %s", got, runGit(t, bare, "rev-parse", "main"))
	}
	assertClean(t, r.dir)
}

// countObjects is git count-objects -v of dir, by key.
func countObjects(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(runGit(t, dir, "count-objects", "-v"), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			out[k] = v
		}
	}
	return out
}
