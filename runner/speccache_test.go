package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/schema"
)

// TestPassEvaluatesAnUnchangedSpecOnce: passes on the same spec file reuse
// its evaluation; a commit that changes the file is evaluated afresh, and
// the pass runs on the new spec.
func TestPassEvaluatesAnUnchangedSpecOnce(t *testing.T) {
	r, _ := newRunner(t)
	calls := 0
	r.LoadSpec = func(_ context.Context, dir string) (*schema.Spec, error) {
		calls++
		spec, _, err := schema.Load(dir)
		return spec, err
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
	remote := strings.TrimSpace(runGitCmd(t, r.Repo.Dir(), "remote", "get-url", "origin"))
	work := filepath.Join(t.TempDir(), "w")
	runGitCmd(t, filepath.Dir(work), "clone", "-q", remote, work)
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte("clusters: [{id: \"alpha\"}, {id: \"beta\"}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGitCmd(t, work, "commit", "-qam", "drop the peering")
	runGitCmd(t, work, "push", "-q", "origin", "main")

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

func runGitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
