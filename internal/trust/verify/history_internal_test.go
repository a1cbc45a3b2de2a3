package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// learnedChanges, the pruned diff of the commits before Base, finds of
// each commit exactly the changes the full diff finds that a commit not
// judged reads: cluster.yaml of each cluster, and the manifests of the
// sequenced directories; through merges, a root commit, files replaced by
// directories and back, deletions.
func TestLearnedChangesAreTheFullDiffsThatCommitReads(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		testgit.Git(t, dir, args...)
	}
	// write applies files, path then content ("": delete), in order, and
	// commits.
	write := func(files ...string) {
		t.Helper()
		for i := 0; i+1 < len(files); i += 2 {
			p, content := files[i], files[i+1]
			f := filepath.Join(dir, filepath.FromSlash(p))
			if content == "" {
				if err := os.RemoveAll(f); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", "step")
	}
	git("init", "-q", "-b", "main")
	write(
		"peering.cue", "x",
		"docs/readme", "x",
		"clusters/a/cluster.yaml", "a1",
		"clusters/a/manifest.yaml", "m1",
		"clusters/a/liqo/b/x.yaml", "x1",
		"clusters/a/inbox/b/manifest.yaml", "ib1",
		"clusters/a/inbox/b/nonce.yaml", "n1",
		"clusters/b/cluster.yaml", "b1",
		"clusters/b/manifest.yaml", "bm1",
		"clusters/b/inbox/a/manifest.yaml", "ia1",
		"clusters/b/inbox/c/manifest.yaml", "ic1",
		"clusters/b/inbox/manifest.yaml", "odd",
		"clusters/b/inbox/a/sub/manifest.yaml", "deep",
	)
	write(
		"clusters/a/inbox/b/manifest.yaml", "ib2",
		"clusters/b/cluster.yaml", "b2",
		"clusters/a/liqo/b/x.yaml", "x2",
		"clusters/b/inbox/c/manifest.yaml", "ic2",
	)
	git("checkout", "-q", "-b", "side")
	write("clusters/a/cluster.yaml", "a2", "clusters/b/inbox/a/manifest.yaml", "ia2")
	git("checkout", "-q", "main")
	write(
		"clusters/b/cluster.yaml", "",
		"clusters/b/cluster.yaml/x", "a directory now",
		"clusters/a/inbox/b/manifest.yaml", "",
		"clusters/c/cluster.yaml", "c1",
		"clusters/a/manifest.yaml", "m2",
	)
	git("merge", "-q", "--no-ff", "-m", "merge", "side")
	write(
		"clusters/b/cluster.yaml", "",
		"clusters/b/cluster.yaml", "b3",
		"clusters/a/inbox", "",
		"clusters/c/inbox", "a file",
		"clusters/a/inbox/b/x.yaml", "x",
	)
	write("clusters", "")
	write("clusters", "a file where the clusters were")
	write("clusters", "", "clusters/a/cluster.yaml", "a3", "clusters/a/inbox/b/manifest.yaml", "ib3")

	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0 // commits with changes to compare
	for _, sequenced := range []map[string]bool{
		{"clusters/a": true, "clusters/a/inbox/b": true, "clusters/b/inbox/a": true},
		{"clusters/b/inbox/c": true, "clusters/b": true},
		{},
	} {
		h := &history{repo: repo, trees: newTreeCache(), sequenced: sequenced}
		order, err := h.walk(head.Hash())
		if err != nil {
			t.Fatal(err)
		}
		if len(order) < 8 {
			t.Fatalf("%d commits", len(order))
		}
		for _, n := range order {
			all, err := h.nodeChanges(n)
			if err != nil {
				t.Fatal(err)
			}
			var want []change
			for _, ch := range all {
				w, d, ok := dirmanifest.Scope(ch.path)
				if ok && (ch.path == layout.ClusterPath(w, layout.ClusterFile) && d == layout.ClusterPath(w) || ch.path == d+"/"+dirmanifest.FileName && sequenced[d]) {
					want = append(want, ch)
				}
			}
			got, err := h.learnedChanges(n)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) > 0 {
				compared++
			}
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Errorf("sequenced %v, commit %s: learned %+v, the full diff's %+v", sequenced, n.c.Hash, got, want)
			}
		}
	}
	if compared < 12 {
		t.Fatalf("only %d commits had changes to compare", compared)
	}
}
