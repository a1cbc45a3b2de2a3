package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInitPrintsTheFingerprintSSHKeygenPrints is the admin checking the
// commit-signing key Flux will trust: init prints its SSH fingerprint as
// ssh-keygen -lf prints it, and the key on a line of its own, which
// ssh-keygen -lf reads to that same fingerprint.
func TestInitPrintsTheFingerprintSSHKeygenPrints(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git(t, root, "init", "-q", work)
	code, _, stderr := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
		"--state-dir", filepath.Join(root, "state"), "--repo", work)
	if code != 0 {
		t.Fatalf("init: %d\n%s", code, stderr)
	}
	fp := regexp.MustCompile(`(?m)^commit-signing key fingerprint \(as ssh-keygen -lf prints it\): (SHA256:[A-Za-z0-9+/]{43})$`).FindStringSubmatch(stderr)
	key := regexp.MustCompile(`(?m)^commit-signing key \(Flux GitRepository.spec.verify, Secret key alpha.sshpub\):\n(ssh-ed25519 \S+ gitpeer-alpha)\nwrote `).FindStringSubmatch(stderr)
	if fp == nil || key == nil {
		t.Fatalf("init does not print the SSH fingerprint, or the key on a line of its own followed by the next:\n%s", stderr)
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skipf("ssh-keygen is not installed: %v", err)
	}
	file := filepath.Join(root, "alpha.sshpub")
	if err := os.WriteFile(file, []byte(key[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ssh-keygen", "-lf", file).Output()
	if f := strings.Fields(string(out)); err != nil || len(f) < 2 || f[1] != fp[1] {
		t.Errorf("ssh-keygen -lf prints %q (%v), init printed %s", out, err, fp[1])
	}
}
