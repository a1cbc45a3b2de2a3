package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
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
	dropThePeering(t, r)

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

// countingLoader is schema.Parse, counting its calls.
func countingLoader(calls *int) func(context.Context, string, []byte) (*schema.Spec, error) {
	return func(_ context.Context, file string, data []byte) (*schema.Spec, error) {
		*calls++
		return schema.Parse(file, data)
	}
}

// TestANewProcessReusesTheEvaluatedSpec: a runner with no memory of earlier
// passes (a reconcile --once process) finds the spec its predecessor
// evaluated in the clone and starts no evaluation; once the spec changes,
// it evaluates the new one and runs on it.
func TestANewProcessReusesTheEvaluatedSpec(t *testing.T) {
	first, _ := newRunner(t)
	calls := 0
	first.LoadSpec = countingLoader(&calls)
	if _, err := first.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := &Runner{Repo: first.Repo, Backend: first.Backend, LoadSpec: countingLoader(&calls)}
	res, err := next.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("the spec was evaluated %d times by two processes, want once", calls)
	}
	if n := len(res.Output.Status.Peerings); n != 1 {
		t.Fatalf("%d peerings from the kept spec, want the spec's one", n)
	}

	dropThePeering(t, next)
	third := &Runner{Repo: first.Repo, Backend: first.Backend, LoadSpec: countingLoader(&calls)}
	if res, err = third.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the changed spec: %d evaluations in all, want 2", calls)
	}
	if n := len(res.Output.Status.Peerings); n != 0 {
		t.Errorf("%d peerings after the spec dropped the only one: the kept spec of the old bytes was served", n)
	}
}

// TestAKeptSpecFileIsOnlyAHint: a spec file that is not this build's
// answer for these bytes is never served: the spec is evaluated, the pass
// runs as without the file, and the file is rewritten.
func TestAKeptSpecFileIsOnlyAHint(t *testing.T) {
	valid := func(t *testing.T, r *Runner) specFile {
		t.Helper()
		raw, err := os.ReadFile(r.Repo.CacheFile("spec"))
		if err != nil {
			t.Fatal(err)
		}
		var sf specFile
		if err := json.Unmarshal(raw, &sf); err != nil {
			t.Fatal(err)
		}
		return sf
	}
	for name, spoil := range map[string]func(t *testing.T, path string, sf specFile){
		"another build": func(t *testing.T, path string, sf specFile) {
			sf.Build = "another/build"
			writeJSON(t, path, sf)
		},
		"another spec's key, with a spec that grants more": func(t *testing.T, path string, sf specFile) {
			sf.Key = strings.Repeat("0", 64)
			sf.Spec.Peerings = append(sf.Spec.Peerings, schema.Peering{Consumer: "beta", Provider: "alpha"})
			writeJSON(t, path, sf)
		},
		"another version": func(t *testing.T, path string, sf specFile) {
			sf.Version = 2
			writeJSON(t, path, sf)
		},
		"no spec": func(t *testing.T, path string, sf specFile) {
			sf.Spec = nil
			writeJSON(t, path, sf)
		},
		"cut short": func(t *testing.T, path string, _ specFile) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, raw[:len(raw)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"a directory": func(t *testing.T, path string, _ specFile) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			first, _ := newRunner(t)
			calls := 0
			first.LoadSpec = countingLoader(&calls)
			if _, err := first.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			spoil(t, first.Repo.CacheFile("spec"), valid(t, first))
			next := &Runner{Repo: first.Repo, Backend: first.Backend, LoadSpec: countingLoader(&calls)}
			res, err := next.Pass(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if calls != 2 {
				t.Errorf("%d evaluations, want the spec evaluated again", calls)
			}
			if n := len(res.Output.Status.Peerings); n != 1 {
				t.Errorf("%d peerings, want the spec's one", n)
			}
			if name != "a directory" {
				if sf := valid(t, next); sf.Spec == nil || len(sf.Spec.Peerings) != 1 {
					t.Errorf("the kept spec after the pass: %+v, want this spec's evaluation", sf.Spec)
				}
			}
		})
	}
}

// TestARefusedSpecIsNotKept: a spec the evaluator refused leaves no kept
// answer, so the next process evaluates (and refuses) it again.
func TestARefusedSpecIsNotKept(t *testing.T) {
	r, _ := newRunner(t)
	r.LoadSpec = func(context.Context, string, []byte) (*schema.Spec, error) { return nil, errors.New("too costly") }
	if _, err := r.Pass(context.Background()); err == nil {
		t.Fatal("Pass succeeded with a refused spec")
	}
	if _, err := os.Stat(r.Repo.CacheFile("spec")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused spec left %s (%v)", r.Repo.CacheFile("spec"), err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropThePeering pushes a spec commit that drops the only peering of
// newRunner's spec, as someone editing the repo would.
func dropThePeering(t *testing.T, r *Runner) {
	t.Helper()
	remote := testgit.Git(t, r.Repo.Dir(), "remote", "get-url", "origin")
	work := filepath.Join(t.TempDir(), "w")
	testgit.Git(t, filepath.Dir(work), "clone", "-q", remote, work)
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte("clusters: [{id: \"alpha\"}, {id: \"beta\"}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, work, "commit", "-qam", "drop the peering")
	testgit.Git(t, work, "push", "-q", "origin", "main")
}
