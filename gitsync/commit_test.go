package gitsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestCommitsAreTheTreesGitBuilds: through files added, rewritten,
// deleted, directories emptied, a file replacing a directory and back, and
// an executable rewritten, each commit's tree is the one the git CLI
// builds from the same worktree (same hash), git fsck --strict finds the
// remote sound, and the clone is clean.
func TestCommitsAreTheTreesGitBuilds(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mirror := filepath.Join(t.TempDir(), "mirror")
	runGit(t, filepath.Dir(mirror), "init", "-q", mirror)
	// Deleting a directory and writing a file in its place in one change
	// is refused by validateChange: steps 3 and 5 are the two halves.
	steps := []*Change{
		{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a\n"), "clusters/x/inbox/y/n.yaml": []byte("n\n"), "top": []byte("t\n"), "clusters/b.yaml": []byte("b\n")}},
		{Writes: map[string][]byte{"clusters/x/a.yaml": []byte("a2\n"), "clusters/z/b.yaml": []byte("b\n"), "clusters/x-y": []byte("sorts between x and x/\n")}},
		{Deletes: []string{"clusters/x/inbox"}},
		{Deletes: []string{"clusters/z"}},
		{Writes: map[string][]byte{"clusters/z": []byte("a file now\n")}},
		{Deletes: []string{"clusters/z"}},
		{Writes: map[string][]byte{"clusters/z/c.yaml": []byte("a dir again\n")}},
		{Writes: map[string][]byte{"top": []byte("t2\n")}},
		{Deletes: []string{"clusters", "top"}, Writes: map[string][]byte{"only": []byte("o\n")}},
	}
	for i, ch := range steps {
		if i == 7 {
			// The git CLI makes top executable; a pass rewriting it keeps that.
			w := filepath.Join(t.TempDir(), "w")
			runGit(t, filepath.Dir(w), "clone", "-q", bare, w)
			runGit(t, w, "update-index", "--chmod=+x", "top")
			testgit.Git(t, w, "commit", "-qm", "chmod")
			runGit(t, w, "push", "-q", "origin", "HEAD:main")
		}
		ch.Message = "step"
		res, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) { return ch, nil })
		if err != nil || res.Commit == "" {
			t.Fatalf("step %d: %+v, %v", i, res, err)
		}
		// What git builds from the same files.
		runGit(t, mirror, "fetch", "-q", bare, "main")
		runGit(t, mirror, "read-tree", "--reset", "-u", "FETCH_HEAD")
		runGit(t, mirror, "add", "-A")
		if got, want := runGit(t, bare, "rev-parse", "main^{tree}"), runGit(t, mirror, "write-tree"); got != want {
			t.Errorf("step %d: tree %s, git builds %s", i, got, want)
		}
		assertClean(t, r.Dir())
	}
	if mode := runGit(t, bare, "log", "-1", "--format=", "--raw", "main~1", "--", "top"); !strings.Contains(mode, "100755 100755") {
		t.Errorf("the rewrite of an executable: %q, want it kept 100755", mode)
	}
	fsck(t, bare)
}

// TestAWriteBelowACommittedLinkIsRefused: a writer commits a link where a
// pass writes a directory; the pass's commit is refused as an invalid
// change naming the link, and nothing is pushed.
func TestAWriteBelowACommittedLinkIsRefused(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	w := filepath.Join(t.TempDir(), "w")
	runGit(t, filepath.Dir(w), "clone", "-q", bare, w)
	if err := os.Symlink("/tmp", filepath.Join(w, "clusters")); err != nil {
		t.Fatal(err)
	}
	runGit(t, w, "add", "-A")
	testgit.Git(t, w, "commit", "-qm", "link")
	runGit(t, w, "push", "-q", "origin", "HEAD:main")
	tip := runGit(t, bare, "rev-parse", "main")
	_, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		return &Change{Writes: map[string][]byte{"clusters/a/x.yaml": []byte("x\n")}, Message: "x"}, nil
	})
	if !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), "clusters/a/x.yaml: parent clusters is a symlink") {
		t.Fatalf("SyncTree = %v, want the link refused", err)
	}
	if got := runGit(t, bare, "rev-parse", "main"); got != tip {
		t.Error("the remote moved")
	}
}

// TestDeletingEveryFileCommitsTheEmptyTree: a change that removes the last
// files commits Git's empty tree, as git rm -r . && git commit does.
func TestDeletingEveryFileCommitsTheEmptyTree(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{"clusters/a/x.yaml": "x\n"}))
	res, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		return &Change{Deletes: []string{"clusters"}, Message: "teardown"}, nil
	})
	if err != nil || res.Commit == "" {
		t.Fatalf("SyncTree = %+v, %v", res, err)
	}
	if got := runGit(t, bare, "rev-parse", "main^{tree}"); got != "4b825dc642cb6eb9a060e54bf8d69288fbee4904" {
		t.Errorf("tree %s, want the empty tree", got)
	}
	fsck(t, bare)
	assertClean(t, r.Dir())
}

// TestATreeEntryNamedDotDotIsRefused: a repo writer pushes a commit whose
// tree holds an entry named "..", which the git CLI's mktree writes and a
// bare repo without fsck accepts. Nothing is written outside the clone
// (nothing is checked out at all), and a TreeFS of it refuses the entry by
// name.
func TestATreeEntryNamedDotDotIsRefused(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{"clusters/a/x.yaml": "x\n"}))
	idle := func(context.Context, *TreeFS) (*Change, error) { return nil, nil }
	if _, err := r.SyncTree(context.Background(), idle); err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(runGitInput(t, bare, "planted\n", "hash-object", "-w", "--stdin"))
	evil := strings.TrimSpace(runGitInput(t, bare, "100644 blob "+blob+"\tescaped\n", "mktree"))
	dir := strings.TrimSpace(runGitInput(t, bare, "040000 tree "+evil+"\t..\n", "mktree"))
	clusters := strings.TrimSpace(runGitInput(t, bare, "040000 tree "+dir+"\tb\n", "mktree"))
	// ".." at the root too: "../escaped" is beside the checkout, where a
	// cluster's state dir keeps its key.
	root := strings.TrimSpace(runGitInput(t, bare, "040000 tree "+evil+"\t..\n040000 tree "+clusters+"\tclusters\n", "mktree"))
	commit := strings.TrimSpace(runGitInput(t, bare, "", "-c", "user.name=m", "-c", "user.email=m@example.com", "commit-tree", root, "-p", "main", "-m", "dotdot"))
	runGit(t, bare, "update-ref", "refs/heads/main", commit)

	// Nothing is checked out: a pass that does not read there runs, and
	// writes nothing anywhere on disk.
	if _, err := r.SyncTree(context.Background(), idle); err != nil {
		t.Fatalf("an idle SyncTree on a tree with '..': %v", err)
	}
	// What a pass would read refuses the entry by name.
	tree, err := gitobj.NewTreeFS(r.repo.Storer, plumbing.NewHash(commit), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.ReadDir("clusters/b"); err == nil || !strings.Contains(err.Error(), `invalid tree entry: ".."`) {
		t.Errorf("ReadDir of a tree with '..' = %v, want the entry refused", err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(r.Dir()), "escaped"), filepath.Join(r.Dir(), "clusters", "escaped")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// runGitInput is runGit with input on git's standard input.
func runGitInput(t testing.TB, dir, input string, args ...string) string {
	t.Helper()
	cmd := testgit.Command(dir, args...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
