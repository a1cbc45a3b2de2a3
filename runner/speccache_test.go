package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/internal/testing/testgit"
	"github.com/gitpeer/gitpeer/schema"
)

// TestPassEvaluatesAnUnchangedSpecOnce: passes on the same spec file reuse
// its evaluation; a commit that changes the file is evaluated afresh, and
// the pass runs on the new spec.
func TestPassEvaluatesAnUnchangedSpecOnce(t *testing.T) {
	r, _ := newRunner(t)
	calls := 0
	r.LoadSpec = func(_ context.Context, file string, data []byte) (*schema.Spec, error) {
		calls++
		return schema.Parse(file, data)
	}
	for range 3 {
		res, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Output.Status.Peerings); n != 1 {
			t.Fatalf("%d peerings, want the spec's one", n)
		}
	}
	if calls != 1 {
		t.Errorf("the unchanged spec was evaluated %d times, want once", calls)
	}

	// Someone drops the peering from the spec.
	remote := testgit.Git(t, r.Repo.Dir(), "remote", "get-url", "origin")
	work := filepath.Join(t.TempDir(), "w")
	testgit.Git(t, filepath.Dir(work), "clone", "-q", remote, work)
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte("clusters: [{id: \"alpha\"}, {id: \"beta\"}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, work, "commit", "-qam", "drop the peering")
	testgit.Git(t, work, "push", "-q", "origin", "main")

	res, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the changed spec was evaluated %d times in all, want twice", calls)
	}
	if n := len(res.Output.Status.Peerings); n != 0 {
		t.Errorf("%d peerings after the spec dropped the only one: the pass ran on the old spec", n)
	}
}
