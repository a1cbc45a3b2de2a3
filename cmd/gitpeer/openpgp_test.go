package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// keyIDLine is a line of allowed-signers --format openpgp's stderr.
var keyIDLine = regexp.MustCompile(`(?m)^([a-z0-9-]+): key ID ([0-9A-F]{16}), fingerprint ([0-9A-F]{40})$`)

// openPGPKeyIDs runs allowed-signers --format openpgp on work and returns
// its keyring and, by cluster, the key ID and fingerprint it lists.
func openPGPKeyIDs(t *testing.T, work string) (string, map[string][2]string) {
	t.Helper()
	code, keyring, stderr := gitpeer(t, "allowed-signers", "--format", "openpgp", work)
	if code != 0 {
		t.Fatalf("allowed-signers --format openpgp: %d\n%s", code, stderr)
	}
	ids := map[string][2]string{}
	for _, m := range keyIDLine.FindAllStringSubmatch(stderr, -1) {
		if m[2] != m[3][24:] {
			t.Errorf("key ID %s is not the end of fingerprint %s", m[2], m[3])
		}
		ids[m[1]] = [2]string{m[2], m[3]}
	}
	return keyring, ids
}

// TestReconcilersSignWithOpenPGPForArgoCD: with --signing-format openpgp the
// reconcilers sign every commit, and their applied branches, with OpenPGP
// keys derived from their cluster keys, which GnuPG (what Argo CD runs)
// finds good once it imported what allowed-signers --format openpgp prints,
// and gitpeer verify accepts.
func TestReconcilersSignWithOpenPGPForArgoCD(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	// init says which key ID Argo CD will be told to trust.
	code, _, initOut := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
		"--state-dir", filepath.Join(root, "state", "alpha"), "--signing-format", "openpgp")
	if code != 0 || !strings.Contains(initOut, "OpenPGP commit-signing key: key ID ") || !strings.Contains(initOut, "alpha.asc: |") {
		t.Fatalf("init --signing-format openpgp: %d\n%s", code, initOut)
	}
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--signing-format", "openpgp", "--cluster", id, "--repo", remote,
			"--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatalf("reconcile %s: %d %s", id, code, stderr)
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	for _, id := range []string{"alpha", "beta"} {
		if subjects := git(t, work, "log", "--format=%s", "main"); !strings.Contains(subjects, id+": ") || !regexp.MustCompile(`(?m)^`+id+`: .*publish OpenPGP key`).MatchString(subjects) {
			t.Errorf("no commit of %s says it publishes its OpenPGP key:\n%s", id, subjects)
		}
	}
	keyring, ids := openPGPKeyIDs(t, work)
	if len(ids) != 2 || strings.Count(keyring, "-----BEGIN PGP PUBLIC KEY BLOCK-----") != 2 {
		t.Fatalf("allowed-signers --format openpgp lists %v and prints:\n%s", ids, keyring)
	}
	if !strings.Contains(initOut, "key ID "+ids["alpha"][0]+" (Argo CD: SIGNING_KEY_ID="+ids["alpha"][0]+"), fingerprint "+ids["alpha"][1]) {
		t.Errorf("init printed another key than allowed-signers lists for alpha (%v):\n%s", ids["alpha"], initOut)
	}

	g := testgit.NewGnuPG(t)
	g.Import([]byte(keyring))
	log, err := g.Git(work, "log", "--show-signature", "--format=%H %s", "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alpha", "beta"} {
		if !strings.Contains(log, `Good signature from "gitpeer cluster `+id+`"`) {
			t.Errorf("git log --show-signature shows no good signature of %s:\n%s", id, log)
		}
		ref := "origin/gitpeer/applied/" + id
		git(t, work, "fetch", "-q", "origin", "gitpeer/applied/"+id+":refs/remotes/"+ref)
		out, err := g.Git(work, "verify-commit", "-v", ref)
		if err != nil || !strings.Contains(out, `Good signature from "gitpeer cluster `+id+`"`) || !strings.Contains(out, "using EDDSA key "+ids[id][1]) {
			t.Errorf("git verify-commit %s: %v\n%s", ref, err, out)
		}
	}
	if code, out, stderr := gitpeer(t, "verify", "--history", work); code != 0 {
		t.Errorf("verify: %d\n%s%s", code, out, stderr)
	}

	// plan knows the format too: nothing to do as the reconciler signs,
	// and the removal of openpgp.asc were it to sign with SSH.
	state := filepath.Join(root, "state", "alpha")
	if code, out, stderr := gitpeer(t, "plan", "--cluster", "alpha", "--signing-format", "openpgp", "--state-dir", state, work); code != 0 {
		t.Errorf("plan --signing-format openpgp: %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := gitpeer(t, "plan", "--cluster", "alpha", "--state-dir", state, work); code != 1 || !strings.Contains(out, "--- a/clusters/alpha/openpgp.asc") {
		t.Errorf("plan with ssh: %d, want 1 and the removal of openpgp.asc:\n%s", code, out)
	}

	// Back to SSH: the next pass removes openpgp.asc and seals the applied
	// branch with an SSH signature.
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", remote,
		"--state-dir", filepath.Join(root, "state", "alpha")); code != 0 {
		t.Fatalf("reconcile alpha with ssh: %d %s", code, stderr)
	}
	git(t, work, "pull", "-q", "--ff-only")
	if subject := git(t, work, "log", "-1", "--format=%s", "main"); strings.TrimSpace(subject) != "alpha: remove openpgp.asc" {
		t.Errorf("the pass back to SSH says %q", subject)
	}
	if _, err := os.Stat(filepath.Join(work, "clusters/alpha/openpgp.asc")); !os.IsNotExist(err) {
		t.Errorf("clusters/alpha/openpgp.asc after a pass signing with SSH: %v", err)
	}
	if _, ids := openPGPKeyIDs(t, work); len(ids) != 1 {
		t.Errorf("allowed-signers --format openpgp lists %v, want beta alone", ids)
	}
}

// TestAllowedSignersRefusesASubstitutedOpenPGPKey: a repo writer puts
// alpha's (valid, self-signed) OpenPGP key where beta's belongs, so that
// whoever imports the keyring trusts alpha's commits as beta's.
// allowed-signers refuses to print anything, and verify names it.
func TestAllowedSignersRefusesASubstitutedOpenPGPKey(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	for _, id := range []string{"beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--signing-format", "openpgp", "--cluster", id, "--repo", remote,
			"--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatalf("reconcile %s: %d %s", id, code, stderr)
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	alphaKey, err := os.ReadFile(filepath.Join(work, "clusters/alpha/openpgp.asc"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "clusters/beta/openpgp.asc"), string(alphaKey))
	// allowed-signers and verify read the committed tree, as the
	// reconcilers do: the substitution is committed.
	git(t, work, "commit", "-qam", "substitute beta's OpenPGP key")

	code, out, stderr := gitpeer(t, "allowed-signers", "--format", "openpgp", work)
	if code == 0 || out != "" {
		t.Fatalf("allowed-signers printed a keyring with a substituted key: %d\n%s", code, out)
	}
	for _, want := range []string{"clusters/beta/openpgp.asc", "not the OpenPGP key derived from the cluster key"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("allowed-signers does not say %q:\n%s", want, stderr)
		}
	}
	code, out, _ = gitpeer(t, "verify", work)
	if code != 1 || !strings.Contains(out, "clusters/beta/openpgp.asc") || !strings.Contains(out, "OpenPGPKeyMismatch") {
		t.Errorf("verify: %d\n%s", code, out)
	}
}
