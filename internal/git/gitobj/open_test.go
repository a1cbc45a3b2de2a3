package gitobj

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestOpenCommitTreeReadsTheCommitNotTheCheckout: a checkout whose
// .gitattributes runs ident, eol=crlf and a smudge filter configured in
// the checkout holds other bytes than the commit; OpenCommitTree reads the
// commit's, at HEAD or at any revision, and names a revision that does not
// resolve.
func TestOpenCommitTreeReadsTheCommitNotTheCheckout(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "work")
	testgit.Git(t, filepath.Dir(dir), "init", "--quiet", "--initial-branch=main", dir)
	committed := "id: $Id$\nname: alpha\n"
	testgit.WriteFiles(t, dir, map[string][]byte{
		".gitattributes": []byte("peering.cue ident\nclusters/** filter=evil eol=crlf\n"),
		"peering.cue":    []byte(committed),
	})
	if err := os.MkdirAll(filepath.Join(dir, "clusters/alpha"), 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.WriteFiles(t, filepath.Join(dir, "clusters/alpha"), map[string][]byte{"cluster.yaml": []byte(committed)})
	testgit.Git(t, dir, "add", "-A")
	testgit.Git(t, dir, "commit", "--quiet", "-m", "one")
	first := testgit.Git(t, dir, "rev-parse", "HEAD")
	testgit.Git(t, dir, "tag", "v1")
	// The filter is configured in the checkout only, as a CI job's could
	// be; a fresh checkout runs it and ident.
	testgit.Git(t, dir, "config", "filter.evil.smudge", "sed s/alpha/mallory/")
	testgit.Git(t, dir, "config", "filter.evil.clean", "cat")
	for _, p := range []string{"peering.cue", "clusters/alpha/cluster.yaml"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	testgit.Git(t, dir, "checkout", "--", ".")
	onDisk, err := os.ReadFile(filepath.Join(dir, "clusters/alpha/cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(onDisk), "mallory") || !strings.Contains(string(onDisk), "\r\n") {
		t.Fatalf("the checkout was not rewritten, the test proves nothing: %q", onDisk)
	}
	if spec, _ := os.ReadFile(filepath.Join(dir, "peering.cue")); !strings.Contains(string(spec), "$Id: ") {
		t.Fatalf("ident did not run, the test proves nothing: %q", spec)
	}

	for _, rev := range []string{"", "HEAD", "main", "v1", first} {
		tree, err := OpenCommitTree(dir, rev)
		if err != nil {
			t.Fatalf("%q: %v", rev, err)
		}
		for _, p := range []string{"peering.cue", "clusters/alpha/cluster.yaml"} {
			got, err := fs.ReadFile(tree, p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != committed {
				t.Errorf("%q: %s reads %q, the commit holds %q", rev, p, got, committed)
			}
		}
		if tree.Commit != first {
			t.Errorf("%q: commit %s, want %s", rev, tree.Commit, first)
		}
		tree.Close()
	}

	// verify reads a tree on many goroutines: go-git's pack readers are
	// not shared safely unless OpenCommitTree serializes them.
	testgit.Git(t, dir, "gc", "--quiet")
	tree, err := OpenCommitTree(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for _, p := range []string{"peering.cue", "clusters/alpha/cluster.yaml", ".gitattributes"} {
					if _, err := fs.ReadFile(tree, p); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	tree.Close()

	_, err = OpenCommitTree(dir, "no-such-branch")
	if err == nil || !strings.Contains(err.Error(), `"no-such-branch"`) {
		t.Errorf("an unknown revision: %v", err)
	}
	if _, err := OpenCommitTree(filepath.Join(dir, "clusters"), ""); !errors.Is(err, git.ErrRepositoryNotExists) {
		t.Errorf("a directory inside the checkout: %v", err)
	}
	if ok, err := IsRepository(filepath.Join(dir, "clusters")); ok || err != nil {
		t.Errorf("IsRepository(inside) = %v, %v", ok, err)
	}
	if ok, err := IsRepository(dir); !ok || err != nil {
		t.Errorf("IsRepository(checkout) = %v, %v", ok, err)
	}

	empty := filepath.Join(t.TempDir(), "empty")
	testgit.Git(t, filepath.Dir(empty), "init", "--quiet", "--initial-branch=main", empty)
	if _, err := OpenCommitTree(empty, ""); !errors.Is(err, ErrNoCommit) {
		t.Errorf("a repository without commits: %v", err)
	}
}
