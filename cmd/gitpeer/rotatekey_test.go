package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRotateKeyCommandOfTheDeployDocs runs the rotate-key line of
// docs/deploy.md ("Rotating the cluster key") against a checkout where the
// cluster has published nothing: the flags are accepted, and before any
// API call it says what to publish first. The kubernetes backend refuses
// the file backend's --state-dir.
func TestRotateKeyCommandOfTheDeployDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Rotating the cluster key\n")
	var line string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "gitpeer rotate-key ") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatal("docs/deploy.md shows no gitpeer rotate-key line under Rotating the cluster key")
	}
	work := t.TempDir()
	args := strings.Fields(strings.ReplaceAll(line, "~/peering", work))[1:]
	code, _, stderr := gitpeer(t, args...)
	if code == 0 || !strings.Contains(stderr, "clusters/alpha/cluster.yaml") || !strings.Contains(stderr, "gitpeer init --backend kubernetes") {
		t.Fatalf("%s on an empty checkout: %d %s", line, code, stderr)
	}
	code, _, stderr = gitpeer(t, append(args, "--state-dir", work)...)
	if code == 0 || !strings.Contains(stderr, "--state-dir does not apply to --backend kubernetes") {
		t.Fatalf("with --state-dir: %d %s", code, stderr)
	}
}

// TestRotateKeyReadsABareRepo is an admin passing the bare repository
// every reader takes: rotate-key reads the published cluster.yaml at its
// HEAD, stages the key, and says where to watch the rollover: the
// reconciler's output and the daemon's status, not gitpeer status.
func TestRotateKeyReadsABareRepo(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "alpha")
	code, _, stderr := gitpeer(t, "rotate-key", "--cluster", "alpha", "--state-dir", state, "--repo", remote)
	if code != 0 || !strings.Contains(stderr, "alpha: staged key sha256:") ||
		!strings.Contains(stderr, `Each pass of gitpeer reconcile prints where the rollover stands ("key rollover …"), as does the daemon's /status and status file (keyRollover)`) {
		t.Fatalf("rotate-key --repo <bare repo>: exit %d\n%s", code, stderr)
	}
	// Another cluster's state is refused against the bare repo too.
	code, _, stderr = gitpeer(t, "rotate-key", "--cluster", "beta", "--state-dir", state, "--repo", remote)
	if code == 0 {
		t.Fatalf("rotate-key with alpha's state for beta: exit 0\n%s", stderr)
	}
	code, out, _ := gitpeer(t, "rotate-key", "--help")
	if code != 0 || strings.Contains(out, "'gitpeer status' say") || !strings.Contains(out, "Each pass of 'gitpeer reconcile' prints where the rollover stands") {
		t.Errorf("rotate-key --help does not say what shows the rollover:\n%s", out)
	}
}
