package runner

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// newRunner is alpha's runner on a fresh remote whose spec peers alpha
// with beta, and a function returning the remote's tip.
func newRunner(t *testing.T) (*Runner, func() string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	root := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		return testgit.Git(t, dir, args...)
	}
	remote, work := filepath.Join(root, "remote.git"), filepath.Join(root, "work")
	git(root, "init", "-q", "--bare", "--initial-branch=main", remote)
	git(root, "clone", "-q", remote, work)
	b, _, err := file.Init(filepath.Join(root, "state"), file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	files, err := layout.PublishFiles(layout.NewTree(work), info)
	if err != nil {
		t.Fatal(err)
	}
	files["peering.cue"] = []byte("clusters: [{id: \"alpha\"}, {id: \"beta\"}]\npeerings: [{consumer: \"alpha\", provider: \"beta\"}]\n")
	testgit.WriteTree(t, work, files)
	git(work, "add", "-A")
	git(work, "commit", "-qm", "spec")
	git(work, "push", "-q", "origin", "main")
	repo, err := gitsync.Open(context.Background(), gitsync.Options{
		URL: remote, Dir: filepath.Join(root, "checkout"), Author: gitsync.Signature{Name: "alpha", Email: "alpha@gitpeer.invalid"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Repo: repo, Backend: b}, func() string { return git(remote, "rev-parse", "main") }
}

func TestPassLoadsTheSpecWithLoadSpec(t *testing.T) {
	t.Run("a refused spec fails the pass and commits nothing", func(t *testing.T) {
		r, tip := newRunner(t)
		before := tip()
		refused := errors.New("too costly")
		var loaded string
		var data []byte
		r.LoadSpec = func(_ context.Context, file string, d []byte) (*schema.Spec, error) {
			loaded, data = file, d
			return nil, refused
		}
		if _, err := r.Pass(context.Background()); !errors.Is(err, refused) {
			t.Fatalf("Pass: %v, want the loader's error", err)
		}
		// Named by its path in the repo, so that positions in errors point
		// where a user looks; the bytes are the commit's.
		if want := "peering.cue"; loaded != want {
			t.Errorf("LoadSpec was called with %q, want %q", loaded, want)
		}
		if committed := testgit.Git(t, r.Repo.Dir(), "show", "HEAD:peering.cue"); committed != strings.TrimSpace(string(data)) {
			t.Errorf("LoadSpec got %q, want the committed spec %q", data, committed)
		}
		if tip() != before {
			t.Error("a pass without a spec committed")
		}
	})
	t.Run("the pass runs on the spec LoadSpec returns", func(t *testing.T) {
		r, _ := newRunner(t)
		r.LoadSpec = func(context.Context, string, []byte) (*schema.Spec, error) {
			return &schema.Spec{Clusters: []schema.Cluster{{ID: "alpha"}}}, nil
		}
		res, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Output.Status.Peerings); n != 0 {
			t.Errorf("%d peerings, want none: the file's spec was used", n)
		}
	})
	t.Run("nil loads the spec in process", func(t *testing.T) {
		r, _ := newRunner(t)
		res, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Output.Status.Peerings); n != 1 {
			t.Errorf("%d peerings, want the file's one", n)
		}
	})
}
