package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// signedRepo is a checkout whose only commit publishes alpha and beta, as
// gitpeer init writes them: cluster.yaml, kustomization.yaml and the
// manifest that signs them.
func signedRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git(t, root, "init", "-q", "--initial-branch=main", work)
	write(t, filepath.Join(work, "peering.cue"), spec)
	for _, id := range []string{"alpha", "beta"} {
		if code, _, stderr := gitpeer(t, "init", "--cluster", id, "--api-server", "https://"+id+".example:6443",
			"--state-dir", filepath.Join(root, "state", id), "--repo", work); code != 0 {
			t.Fatalf("init %s: %d %s", id, code, stderr)
		}
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "publish alpha and beta")
	return work
}

func TestVerifyExitsZeroOnASignedRepo(t *testing.T) {
	work := signedRepo(t)
	code, out, stderr := gitpeer(t, "verify", work)
	if code != 0 || !strings.Contains(out, "every check holds (1 peerings)") {
		t.Fatalf("verify: %d\n%s%s", code, out, stderr)
	}
	code, out, _ = gitpeer(t, "verify", "-o", "json", "--history", work)
	if want := "{\n  \"apiVersion\": \"gitpeer.io/v1alpha1\",\n  \"kind\": \"FindingList\",\n  \"items\": []\n}\n"; code != 0 || out != want {
		t.Fatalf("verify -o json --history: %d\n%s\nwant:\n%s", code, out, want)
	}
	code, out, _ = gitpeer(t, "verify", "-o", "yaml", work)
	if want := "apiVersion: gitpeer.io/v1alpha1\nitems: []\nkind: FindingList\n"; code != 0 || out != want {
		t.Fatalf("verify -o yaml: %d\n%s\nwant:\n%s", code, out, want)
	}
}

func TestVerifyJSONNamesEachFindingWithItsCommit(t *testing.T) {
	work := signedRepo(t)
	write(t, filepath.Join(work, "clusters/alpha/kustomization.yaml"), "resources:\n- ../beta/cluster.yaml\n")
	git(t, work, "commit", "-qam", "alpha: apply beta's cluster.yaml\n\nGitpeer-Cluster: alpha\n")
	commit := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))

	code, out, _ := gitpeer(t, "verify", "-o", "json", work)
	if code != 1 {
		t.Fatalf("verify -o json: exit %d\n%s", code, out)
	}
	var rawList struct {
		APIVersion, Kind string
		Items            []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &rawList); err != nil || rawList.APIVersion != "gitpeer.io/v1alpha1" || rawList.Kind != "FindingList" {
		t.Fatalf("not a FindingList: %v\n%s", err, out)
	}
	for _, f := range rawList.Items {
		if len(f) != 5 {
			t.Errorf("finding %v: want exactly file, field, reason, message, commit", f)
		}
		for _, k := range []string{"file", "field", "reason", "message", "commit"} {
			if _, ok := f[k].(string); !ok {
				t.Errorf("finding %v: %s is not a string", f, k)
			}
		}
	}
	var list struct {
		Items []struct{ File, Field, Reason, Message, Commit string }
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range list.Items {
		switch {
		case f.File == "clusters/alpha/kustomization.yaml" && f.Reason == "UnsignedChange" && f.Commit == commit:
			want["history"] = true
		case f.File == "clusters/alpha/kustomization.yaml" && f.Reason == "UnsignedChange" && f.Commit == "":
			want["tree"] = true
		case f.File == "clusters/alpha/kustomization.yaml" && f.Field == "resources[0]" && f.Reason == "OutsideReference":
			want["kustomize"] = true
		}
	}
	if len(want) != 3 {
		t.Fatalf("want the unsigned change in the tree and in %s, and the outside reference; got:\n%s", commit, out)
	}
}

func TestVerifyExitsTwoWhenItCannotCheck(t *testing.T) {
	work := signedRepo(t)
	plain := t.TempDir()
	write(t, filepath.Join(plain, "peering.cue"), spec)
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"an unknown output format", []string{"verify", "-o", "xml", work}, `-o: "xml" is not one of text, json, yaml`},
		{"an unknown flag", []string{"verify", "--nope", work}, "unknown flag: --nope"},
		{"an unknown --base", []string{"verify", "--base", "no-such-branch", work}, "--base no-such-branch"},
		{"no spec", []string{"verify", t.TempDir()}, "peering"},
		{"an invalid spec", []string{"verify", writeSpec(t, `clusters: [{id: "Alpha"}]`+"\n")}, "clusters[0].id"},
		{"--history outside a Git repository", []string{"verify", "--history", plain}, "not a Git repository"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, want 2; output:\n%s%s\nwant stderr to contain %q", code, stdout, stderr, tc.says)
			}
		})
	}
}

func writeSpec(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), src)
	return dir
}

// verify --base checks of the tree only what the change touched, and says
// so on stderr; --full checks the whole tree. A finding already at the base
// in a cluster the change does not touch is the full check's: the base was
// checked when it merged.
func TestVerifyBaseChecksWhatTheChangeTouchedAndFullTheWholeTree(t *testing.T) {
	work := signedRepo(t)
	write(t, filepath.Join(work, "clusters/alpha/kustomization.yaml"), "resources:\n- ../beta/cluster.yaml\n")
	git(t, work, "commit", "-qam", "alpha: apply beta's cluster.yaml")
	write(t, filepath.Join(work, "README.md"), "# peering repo\n")
	git(t, work, "add", "README.md")
	git(t, work, "commit", "-qm", "docs: a README")

	code, out, stderr := gitpeer(t, "verify", "--base", "HEAD~1", work)
	if code != 0 || !strings.Contains(out, "every check holds") ||
		!strings.Contains(stderr, "checked 0 of 2 clusters: those the commits since HEAD~1 touched (1 path changed) and those depending on them; --full checks all") {
		t.Fatalf("verify --base HEAD~1: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = gitpeer(t, "verify", "--base", "HEAD~1", "--full", work)
	if code != 1 || !strings.Contains(out, "clusters/alpha/kustomization.yaml: resources[0]") || !strings.Contains(stderr, "checked all 2 clusters: --full was given") {
		t.Fatalf("verify --base HEAD~1 --full: %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(out, "commit ") {
		t.Fatalf("verify --base HEAD~1 --full judges a commit before the base:\n%s", out)
	}
	// --full alone is a mistake, said so with what to do.
	if code, _, stderr := gitpeer(t, "verify", "--full", work); code != 2 || !strings.Contains(stderr, "--full goes with --base") {
		t.Fatalf("verify --full without --base: %d %s", code, stderr)
	}
	code, out, stderr = gitpeer(t, "verify", "--base", "HEAD~2", work)
	if code != 1 || !strings.Contains(out, "clusters/alpha/kustomization.yaml: resources[0]") || !strings.Contains(stderr, "checked 1 of 2 clusters") {
		t.Fatalf("verify --base HEAD~2: %d\n%s%s", code, out, stderr)
	}
	// A .gitattributes changes what a checkout reads of every path: the
	// whole tree is checked.
	write(t, filepath.Join(work, ".gitattributes"), "*.md text eol=lf\n")
	git(t, work, "add", ".gitattributes")
	git(t, work, "commit", "-qm", "docs: line endings")
	code, out, stderr = gitpeer(t, "verify", "--base", "HEAD~1", work)
	if code != 1 || !strings.Contains(out, "clusters/alpha/kustomization.yaml: resources[0]") ||
		!strings.Contains(stderr, "checked all 2 clusters: .gitattributes changed since HEAD~1") {
		t.Fatalf("verify --base HEAD~1 after a .gitattributes: %d\n%s%s", code, out, stderr)
	}
}

// TestVerifySaysWhenNoAppliedBranchWasChecked: a clone of main alone (as CI
// checks out) has no gitpeer/applied/<id>: verify says on stderr that no
// applied head was checked and how to fetch them, and still exits 0; with
// the branch fetched (here, a signed commit of alpha's that is no seal) it
// judges it.
func TestVerifySaysWhenNoAppliedBranchWasChecked(t *testing.T) {
	work := signedRepo(t)
	code, out, stderr := gitpeer(t, "verify", work)
	if code != 0 || !strings.Contains(stderr, "no applied head was checked") || !strings.Contains(stderr, "+refs/heads/gitpeer/applied/*:refs/remotes/origin/gitpeer/applied/*") {
		t.Fatalf("verify: %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := gitpeer(t, "verify", "--base", "HEAD", work); code != 0 || strings.Contains(stderr, "applied") {
		t.Fatalf("verify --base: %d\n%s", code, stderr)
	}
	git(t, work, "branch", "gitpeer/applied/alpha", "HEAD")
	code, out, stderr = gitpeer(t, "verify", work)
	if code != 1 || !strings.Contains(out, "gitpeer/applied/alpha: head ") || !strings.Contains(out, "(InvalidSeal, commit ") || strings.Contains(stderr, "no applied head") {
		t.Fatalf("verify with an applied branch that is no seal: %d\n%s%s", code, out, stderr)
	}
}
