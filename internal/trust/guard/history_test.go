package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// runGit runs the real git CLI in dir: testgit.Git, a fixed identity.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testgit.Git(t, dir, args...)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commitAt(t *testing.T, dir, date, msg string) string {
	t.Helper()
	runGit(t, dir, "add", "-A")
	c := testgit.Command(dir, "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", msg, "--date", date)
	c.Env = append(c.Env, "GIT_COMMITTER_DATE="+date)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	return runGit(t, dir, "rev-parse", "HEAD")
}

func TestScanHistory(t *testing.T) {
	m := keys(t)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")

	write(t, dir, "clusters/cl-a/cluster.yaml", "publicKey: |\n"+indent(m.publicKey, "  ")+"\n")
	clean := commitAt(t, dir, "2024-01-01T00:00:00Z", "init")

	write(t, dir, "clusters/cl-a/liqo/keys.yaml", "kind: Secret\ndata:\n  privateKey: "+b64(m.edPKCS8)+"\n")
	leak := commitAt(t, dir, "2024-01-02T00:00:00Z", "oops")

	// The key is removed again, and the same blob is re-added elsewhere
	// later: one blob, one finding, attributed to where it first appeared.
	runGit(t, dir, "rm", "-q", "clusters/cl-a/liqo/keys.yaml")
	commitAt(t, dir, "2024-01-03T00:00:00Z", "remove key")
	write(t, dir, "backup/keys.yaml", "kind: Secret\ndata:\n  privateKey: "+b64(m.edPKCS8)+"\n")
	commitAt(t, dir, "2024-01-04T00:00:00Z", "again")
	runGit(t, dir, "rm", "-q", "backup/keys.yaml")
	commitAt(t, dir, "2024-01-05T00:00:00Z", "remove again")

	// A side branch, only reachable from its ref, and an annotated tag.
	runGit(t, dir, "checkout", "-q", "-b", "side", clean)
	write(t, dir, "clusters/cl-b/identity.yaml", "spec:\n  authParams:\n    awsConfig:\n      awsSecretAccessKey: abc123\n")
	aws := commitAt(t, dir, "2024-01-06T00:00:00Z", "aws")
	runGit(t, dir, "checkout", "-q", "main")
	runGit(t, dir, "tag", "-a", "-m", "v1", "v1", "side")
	runGit(t, dir, "branch", "-q", "-D", "side") // now only the tag reaches it

	bare := filepath.Join(t.TempDir(), "bare.git")
	runGit(t, dir, "clone", "-q", "--bare", dir, bare)

	for name, d := range map[string]string{"worktree": dir, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			got, err := ScanHistory(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("ScanHistory = %v, want 2 findings", got)
			}
			if got[0].Commit != leak || got[0].Path != "clusters/cl-a/liqo/keys.yaml" || !strings.Contains(got[0].Reason, "PRIVATE KEY") {
				t.Errorf("finding 0 = %v, want %s clusters/cl-a/liqo/keys.yaml", got[0], leak)
			}
			if got[1].Commit != aws || got[1].Path != "clusters/cl-b/identity.yaml" || !strings.Contains(got[1].Reason, "AWS") {
				t.Errorf("finding 1 = %v, want %s clusters/cl-b/identity.yaml", got[1], aws)
			}
		})
	}
}

func TestScanHistoryClean(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	got, err := ScanHistory(dir) // no commits at all
	if err != nil || len(got) != 0 {
		t.Fatalf("ScanHistory(empty) = %v, %v", got, err)
	}
	write(t, dir, "a.yaml", "a: b\n")
	commitAt(t, dir, "2024-01-01T00:00:00Z", "a")
	got, err = ScanHistory(dir)
	if err != nil || len(got) != 0 {
		t.Fatalf("ScanHistory(clean) = %v, %v", got, err)
	}
	if _, err := ScanHistory(t.TempDir()); err == nil {
		t.Fatal("ScanHistory of a directory that is not a repository succeeded")
	}
}

// TestScanHistoryOfALinkedWorktree: a checkout made by git worktree add
// keeps its objects in the main repository; the scan must still see them.
func TestScanHistoryOfALinkedWorktree(t *testing.T) {
	m := keys(t)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "docs/key.pem", string(m.edPKCS8))
	leak := commitAt(t, dir, "2024-01-01T00:00:00Z", "leak")
	wt := filepath.Join(t.TempDir(), "wt")
	runGit(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	findings, err := ScanHistory(wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || findings[0].Commit != leak || findings[0].Path != "docs/key.pem" {
		t.Fatalf("findings in a linked worktree: %v", findings)
	}
}
