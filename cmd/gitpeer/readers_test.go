package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
)

// TestEveryReaderReadsTheCommittedBytes is the attack of a repo writer on
// the review tools: a commit withdraws alpha's peering with beta, and its
// .gitattributes runs a smudge filter (configured in the checkout, as a CI
// job or a reviewer's Git may have one) that puts the peering back in
// every checkout of peering.cue, and eol=crlf plus ident on clusters/**.
// Reading the checkout, validate, status, plan and verify would all show a
// repo where nothing changed, while the reconcilers withdraw the peering.
// Each reads the committed bytes instead, the ones the reconciler reads,
// and verify names the attribute rules.
func TestEveryReaderReadsTheCommittedBytes(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")
	if code, out, _ := gitpeer(t, "status", work); code != 0 || !strings.Contains(out, "alpha     beta      Ready  true") {
		t.Fatalf("not Ready before the attack: %d\n%s", code, out)
	}

	write(t, filepath.Join(work, ".gitattributes"), "peering.cue filter=review\nclusters/** eol=crlf ident\n")
	write(t, filepath.Join(work, "peering.cue"), "clusters: [{id: \"alpha\"}, {id: \"beta\"}]\npeerings: [\n//KEEP {consumer: \"alpha\", provider: \"beta\"},\n]\n")
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "tidy up")
	git(t, work, "config", "filter.review.smudge", "sed s,//KEEP,,")
	git(t, work, "config", "filter.review.clean", "cat")
	for _, p := range []string{"peering.cue", "clusters"} {
		if err := os.RemoveAll(filepath.Join(work, p)); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, "checkout", "--", ".")
	// The checkout shows the peering and CRLF files: else the test proves
	// nothing.
	if data, _ := os.ReadFile(filepath.Join(work, "peering.cue")); strings.Contains(string(data), "//KEEP") {
		t.Fatalf("the smudge filter did not run:\n%s", data)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "clusters/beta/cluster.yaml")); !strings.Contains(string(data), "\r\n") {
		t.Fatalf("eol=crlf did not apply:\n%q", data)
	}

	code, out, stderr := gitpeer(t, "validate", work)
	if code != 0 || !strings.Contains(out, "valid (2 clusters, 0 peerings)") || !strings.Contains(out, " at HEAD (") {
		t.Errorf("validate reads what the reconcilers do not: %d\n%s%s", code, out, stderr)
	}
	// The checkout's spec is not what was read: said, not hidden.
	if !strings.Contains(stderr, "peering.cue in the worktree is not the one committed at HEAD") {
		t.Errorf("validate does not say the worktree's spec differs:\n%s", stderr)
	}

	code, out, stderr = gitpeer(t, "status", work, "-o", "json")
	if code != 0 || strings.Contains(out, `"provider": "beta"`) {
		t.Errorf("status shows the peering the commit withdrew: %d\n%s%s", code, out, stderr)
	}

	state := func(id string) string { return filepath.Join(root, "state", id) }
	code, out, stderr = gitpeer(t, "plan", "--cluster", "beta", work, "--state-dir", state("beta"))
	const withdrawal = "deleted file mode 100644\n--- a/clusters/alpha/inbox/beta/nonce.yaml\n+++ /dev/null\n"
	if code != 1 || !strings.Contains(out, withdrawal) {
		t.Errorf("plan does not show the withdrawal the pass will make: %d\n%s%s", code, out, stderr)
	}

	code, out, stderr = gitpeer(t, "verify", "-o", "json", work)
	var list struct{ Items []verify.Finding }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("verify: %d %v\n%s%s", code, err, out, stderr)
	}
	findings := list.Items
	var lines []string
	for _, f := range findings {
		// The CRLF checkout would be an UnsignedChange in every writer's
		// directory: verify reads the signed bytes.
		if f.File != ".gitattributes" || f.Reason != reasons.AttributesRewrite {
			t.Errorf("verify finds what is not in the commit: %s", f)
			continue
		}
		lines = append(lines, f.Field)
	}
	if code != 1 || !slices.Equal(lines, []string{"line 1", "line 2"}) {
		t.Errorf("verify does not name both rules: %d\n%s%s", code, out, stderr)
	}

	// --ref reads another commit; one that does not resolve is named.
	if code, out, _ := gitpeer(t, "validate", "--ref", "HEAD~1", work); code != 0 || !strings.Contains(out, "valid (2 clusters, 1 peerings)") || !strings.Contains(out, " at HEAD~1 (") {
		t.Errorf("validate --ref HEAD~1: %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"validate", "--ref", "no-such-ref", work},
		{"verify", "--ref", "no-such-ref", work},
		{"status", "--ref", "no-such-ref", work},
		{"codeowners", "--ref", "no-such-ref", work},
		{"allowed-signers", "--ref", "no-such-ref", work},
		{"plan", "--cluster", "beta", "--state-dir", state("beta"), "--ref", "no-such-ref", work},
	} {
		if code, out, stderr := gitpeer(t, args...); code == 0 || !strings.Contains(out+stderr, `"no-such-ref"`) {
			t.Errorf("%s: %d, the revision is not named:\n%s%s", args[0], code, out, stderr)
		}
	}
	plain := t.TempDir()
	write(t, filepath.Join(plain, "peering.cue"), spec)
	if code, out, stderr := gitpeer(t, "validate", "--ref", "main", plain); code == 0 || !strings.Contains(out+stderr, "not a Git repository") {
		t.Errorf("--ref on a plain directory: %d\n%s%s", code, out, stderr)
	}

	// The reconciler reads what plan showed: it withdraws the nonce.
	git(t, work, "push", "-q", "origin", "main")
	reconcileAll(t, root, remote, "beta")
	if out := git(t, remote, "ls-tree", "-r", "--name-only", "main", "clusters/alpha/inbox/beta/"); strings.Contains(out, "nonce.yaml") {
		t.Errorf("beta kept the nonce of the withdrawn peering:\n%s", out)
	}
}

// TestVerifyNamesWhatChangesWhatACheckoutSees: a .sourceignore at the root
// and in a cluster's tree, .gitmodules and a submodule entry, and
// symbolic links, committed with the git CLI, are each a finding with its
// reason.
func TestVerifyNamesWhatChangesWhatACheckoutSees(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")
	write(t, filepath.Join(work, ".sourceignore"), "clusters/alpha/kustomization.yaml\n")
	write(t, filepath.Join(work, "clusters/alpha/.sourceignore"), "kustomization.yaml\n")
	write(t, filepath.Join(work, ".gitmodules"), "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n")
	if err := os.Symlink("../peering.cue", filepath.Join(work, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cluster.yaml", filepath.Join(work, "clusters/beta/alias.yaml")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "-A")
	head := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	git(t, work, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/lib")
	git(t, work, "commit", "-qm", "helpers")

	code, out, stderr := gitpeer(t, "verify", "-o", "json", work)
	var list struct{ Items []verify.Finding }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("verify: %d %v\n%s%s", code, err, out, stderr)
	}
	findings := list.Items
	for _, want := range [][2]string{
		{".sourceignore", reasons.SourceIgnore},
		{"clusters/alpha/.sourceignore", reasons.SourceIgnore},
		{".gitmodules", reasons.Submodule},
		{"vendor/lib", reasons.Submodule},
		{"README.md", reasons.SymbolicLink},
		{"clusters/beta/alias.yaml", reasons.SymbolicLink},
	} {
		if !slices.ContainsFunc(findings, func(f verify.Finding) bool { return f.File == want[0] && f.Reason == want[1] }) {
			t.Errorf("no %s finding for %s:\n%s", want[1], want[0], out)
		}
	}
	if code != 1 {
		t.Errorf("verify exits %d, want 1", code)
	}
}
