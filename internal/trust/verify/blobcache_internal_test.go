package verify

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// A blobCachedTree reads what its TreeFS reads, with the same errors, on
// the first read and after; a symbolic link whose target text is a cached
// file's content (the same blob) is still refused, and a submodule or a
// directory still not read.
func TestBlobCachedTreeReadsWhatTreeFSReads(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		return testgit.Git(t, dir, args...)
	}
	git("init", "-q", "-b", "main")
	files := map[string]string{
		"clusters/a/liqo/b/x.yaml": "clusters/a/cluster.yaml", // a link's target text, as content
		"clusters/a/cluster.yaml":  "key: a\n",
		"clusters/a/run.sh":        "#!/bin/sh\n",
		"clusters/b/copy.yaml":     "key: a\n",
	}
	for p, content := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "clusters/a/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// clusters/a/link -> clusters/a/cluster.yaml: the same blob as x.yaml.
	if err := os.Symlink("clusters/a/cluster.yaml", filepath.Join(dir, "clusters/a/link")); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,clusters/a/sub")
	git("commit", "-q", "-m", "tree")

	ct, err := gitobj.OpenCommitTree(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	cached := newBlobCachedTree(ct.TreeFS)
	paths := []string{"clusters/a/liqo/b/x.yaml", "clusters/a/link", "clusters/a/cluster.yaml", "clusters/b/copy.yaml",
		"clusters/a/run.sh", "clusters/a/sub", "clusters/a", "clusters/a/link/x", "clusters/missing", "/abs", ".", "clusters/a/cluster.yaml/x"}
	for round := range 3 {
		for _, p := range paths {
			want, wantErr := ct.TreeFS.ReadFile(p)
			got, err := cached.ReadFile(p)
			if !bytes.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("round %d: %s: cached %q, %v; TreeFS %q, %v", round, p, got, err, want, wantErr)
			}
			if err == nil {
				got[0] ^= 1 // the caller owns what it got
			}
		}
	}
	if _, err := cached.ReadFile("clusters/a/link"); err == nil {
		t.Fatal("a link with a cached file's blob was read")
	}
}
