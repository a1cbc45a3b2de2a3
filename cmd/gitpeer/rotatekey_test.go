package main

import (
	"os"
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
