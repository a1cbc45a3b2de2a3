package demo_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// update rewrites the expected trees of testdata/<example>/expected/ from
// what the code now renders: go test ./internal/demo/ -run ConvergedTree -update,
// then review the diff.
var update = flag.Bool("update", false, "rewrite testdata/*/expected/ from the converged trees")

// TestTwoClustersConvergedTree runs examples/two-clusters to convergence with
// fixed keys and a fixed clock and compares the converged tree of main, file
// by file, with testdata/two-clusters/expected/: any change to what a
// peering renders (an object, a field, a file name, a manifest) shows here
// as a diff to review.
//
// Fixed keys: testing/cryptotest.SetGlobalRandom makes every draw of
// crypto/rand deterministic for this test (since Go 1.26 the crypto
// packages ignore a caller's io.Reader and read only that global source),
// so the cluster keys, the CA keys and serials, the nonce and the CSR's key
// are the same at every run, and Ed25519 and ECDSA signatures are then
// deterministic too. The passes run in turn, so the draws come in the same
// order. Fixed clock: demo.Options.Now is the clock of every pass and
// backend.
func TestTwoClustersConvergedTree(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 20)
	now := func() time.Time { return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir, Now: now}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	expectTree(t, filepath.Join("testdata", "two-clusters", "expected"), treeFiles(t, rep.Remote, "main"))
}

// treeFiles is the tree of branch's tip in the bare repo at remote: slash
// path → content.
func treeFiles(t *testing.T, remote, branch string) map[string][]byte {
	t.Helper()
	repo, err := gitobj.Open(remote)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = tree.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		files[f.Name] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// expectTree compares got (slash path → content) with the files under the
// directory want, as fluxcd/image-automation-controller's expected-directory
// tests do: each file only in one of them and each file whose content
// differs is an error naming it, the latter with a unified diff. With
// -update it replaces want by got instead.
func expectTree(t *testing.T, want string, got map[string][]byte) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		testgit.WriteTree(t, want, got)
		return
	}
	expected := map[string][]byte{}
	err := filepath.WalkDir(want, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(want, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		expected[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	names := map[string]bool{}
	for name := range got {
		names[name] = true
	}
	for name := range expected {
		names[name] = true
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		g, inGot := got[name]
		w, inWant := expected[name]
		switch {
		case !inWant:
			t.Errorf("%s: in the converged tree, not in %s (run with -update to accept)", name, want)
		case !inGot:
			t.Errorf("%s: in %s, not in the converged tree (run with -update to accept)", name, want)
		case !bytes.Equal(g, w):
			diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: difflib.SplitLines(string(w)), B: difflib.SplitLines(string(g)),
				FromFile: "expected/" + name, ToFile: "converged/" + name, Context: 2,
			})
			t.Errorf("%s differs (run with -update to accept):\n%s", name, strings.TrimRight(diff, "\n"))
		}
	}
}
