package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestInitGuardsAgainstOrdinaryMistakes: init refuses a --repo that is not a
// working tree, says when it keeps an old API server (and how to change
// it), and says when it is about to publish a new key over a published one.
func TestInitGuardsAgainstOrdinaryMistakes(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "alpha")
	initArgs := func(repo string, extra ...string) []string {
		return append([]string{"init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443", "--state-dir", state, "--repo", repo}, extra...)
	}

	plain := filepath.Join(root, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, repo, want string }{
		{"a plain directory", plain, "--repo " + plain + " is not the root of a Git working tree (no .git there): init writes clusters/<id>/ into a clone of the peering repo"},
		{"a bare repository", remote, "--repo " + remote + " is a bare repository (no working tree): init writes clusters/<id>/ into a working tree for you to commit; clone it (git clone " + remote + " peering)"},
		{"a URL", "ssh://git@git.example.com/platform/peering.git", "is a URL: init writes files into a working tree for you to commit; clone the peering repo"},
		{"an scp-like address", "git@git.example.com:platform/peering.git", "is a URL"},
		{"a subdirectory of a clone", filepath.Join(work, "clusters"), "is not the root of a Git working tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := gitpeer(t, initArgs(tc.repo)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("init --repo %s: exit %d, want an error saying %q:\n%s", tc.repo, code, tc.want, stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(plain); len(entries) != 0 {
		t.Errorf("init wrote into a directory it refused: %v", entries)
	}

	// Another --api-server on existing state: kept, and said, with the command that changes it.
	args := initArgs(work)
	args[4] = "https://alpha.new.example:6443"
	code, _, stderr := gitpeer(t, args...)
	if code != 0 || !strings.Contains(stderr, "warning: the state for alpha keeps its API server https://alpha.example:6443; --api-server https://alpha.new.example:6443 is ignored") ||
		!strings.Contains(stderr, "run gitpeer rotate-key --api-server https://alpha.new.example:6443") {
		t.Errorf("init does not say it keeps the old API server: %d\n%s", code, stderr)
	}
	if code, _, stderr := gitpeer(t, initArgs(work)...); code != 0 || strings.Contains(stderr, "warning:") {
		t.Errorf("init with the same API server warns: %d\n%s", code, stderr)
	}

	// Another backend's key over a published cluster.yaml: said before it is committed.
	other := filepath.Join(root, "state", "other")
	code, _, stderr = gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443", "--state-dir", other, "--repo", work)
	if code != 0 || !strings.Contains(stderr, "warning: clusters/alpha/cluster.yaml published key sha256:") ||
		!strings.Contains(stderr, "every peer refuses it (KeyChanged) until its admin re-pins it") ||
		!strings.Contains(stderr, "do not commit it: git -C "+work+" checkout -- clusters/alpha") {
		t.Errorf("init does not warn that it replaces a published key: %d\n%s", code, stderr)
	}
}

// TestAnSSHURLWithoutCredentialsSaysWhatToPass: with no --git-credentials
// and no ssh agent, the error names the flag and the files it needs, not
// go-git's "SSH agent requested but SSH_AUTH_SOCK not-specified".
func TestAnSSHURLWithoutCredentialsSaysWhatToPass(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("HOME", t.TempDir())
	url := "ssh://git@127.0.0.1:1/platform/peering.git"
	code, _, stderr := gitpeer(t, "status", url)
	want := url + " is an SSH URL and no --git-credentials were given (nor is an ssh agent running): pass --git-credentials DIR, DIR holding the keys of Flux's Git Secret: " +
		"the private key of a deploy key with write access as DIR/identity and 127.0.0.1:1's host key as DIR/known_hosts (ssh-keyscan -p 1 127.0.0.1 > DIR/known_hosts"
	if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "SSH_AUTH_SOCK not-specified") {
		t.Errorf("exit %d, want an error saying\n%s\ngot:\n%s", code, want, stderr)
	}
}

// TestAnUnknownFileInTheCredentialsDirectoryIsNamed: a key stored under a
// name gitpeer does not read is named in a warning, with the names it reads.
func TestAnUnknownFileInTheCredentialsDirectoryIsNamed(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"id_ed25519", "known_hosts", "identity.pub", "..data"} {
		write(t, filepath.Join(dir, name), "x\n")
	}
	root, remote, _ := peeringRepo(t, spec)
	want := "warning: --git-credentials " + dir + ": ignoring id_ed25519: gitpeer reads only the keys of Flux's Git Secret: identity, password, known_hosts, username, bearerToken, ca.crt (identity.pub is ignored)"
	// status of a URL (a file:// one: the credentials apply to none, but are read as for any).
	_, _, stderr := gitpeer(t, "status", "file://"+remote, "--git-credentials", dir)
	if !strings.Contains(stderr, want) {
		t.Errorf("status does not name the unknown file:\n%s\nwant %q", stderr, want)
	}
	_, _, stderr = gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", "file://"+remote, "--git-credentials", dir,
		"--state-dir", filepath.Join(root, "state", "alpha"))
	if !strings.Contains(stderr, want) {
		t.Errorf("reconcile does not name the unknown file:\n%s\nwant %q", stderr, want)
	}
	if strings.Contains(stderr, "..data") || strings.Contains(stderr, "ignoring identity.pub") {
		t.Errorf("a mounted Secret's ..data or Flux's identity.pub is named:\n%s", stderr)
	}
}

// TestWrongRepoArgumentsSayWhatToPass: reconcile --repo at a checkout or
// at a path with no repository, and validate or verify of a URL, each say
// what the flag or argument takes.
func TestWrongRepoArgumentsSayWhatToPass(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "alpha")
	missing := filepath.Join(root, "nope.git")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"reconcile --repo at a checkout", []string{"reconcile", "--once", "--cluster", "alpha", "--state-dir", state, "--repo", work}, 1,
			"--repo " + work + " is a checkout (a working tree): reconcile clones --repo into its own checkout and pushes to it, and Git refuses pushes to a checked-out branch; pass the URL it was cloned from: --repo " + remote},
		{"reconcile --repo at no repository", []string{"reconcile", "--once", "--cluster", "alpha", "--state-dir", state, "--repo", missing}, 1,
			"no Git repository at " + missing + " (a local path): check --repo; it takes the peering repo's URL, or the path of a bare repository on this machine"},
		{"verify of a URL", []string{"verify", "https://git.example.com/platform/peering.git"}, 2,
			"verify reads a local clone, not a URL (it checks the commits of its history, as CI does on a checkout): git clone https://git.example.com/platform/peering.git peering && gitpeer verify peering"},
		{"validate of an scp-like address", []string{"validate", "git@git.example.com:platform/peering.git"}, 1,
			"validate reads a local clone, not a URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := gitpeer(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), want it to say\n%s\ngot:\n%s%s", code, tc.code, tc.want, out, stderr)
			}
		})
	}
}

// TestStatusSaysWhatToDoForAMissingTokenAndAnUnpublishedCluster: a peering
// with policy token and no token on the consumer, and one with a cluster
// that never ran init, each say in status what the admins do.
func TestStatusSaysWhatToDoForAMissingTokenAndAnUnpublishedCluster(t *testing.T) {
	root, remote, work := peeringRepo(t, `clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta", policy: "token"}, {consumer: "gamma", provider: "beta"}]
`)
	// beta's admin generated the token; alpha's never stored it.
	if code, _, stderr := gitpeer(t, "token", "generate", "--cluster", "beta", "--peer", "alpha", "--state-dir", filepath.Join(root, "state", "beta")); code != 0 {
		t.Fatal(stderr)
	}
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")
	code, out, stderr := gitpeer(t, "status", work, "-o", "json")
	for _, want := range []string{
		"the peering's policy is token but this cluster holds no token for beta, so the Tenant carries no proof and beta refuses it (EmptyRefused): beta's admin runs gitpeer token generate --cluster beta --peer alpha and this cluster's admin stores it with gitpeer token set --cluster alpha --peer beta",
		"no token proof: alpha holds no token for beta; its admin stores the one beta's admin generated (gitpeer token generate --cluster beta --peer alpha) with gitpeer token set --cluster alpha --peer beta",
		"waiting for gamma to publish clusters/gamma/cluster.yaml: its admin runs gitpeer init --cluster gamma --repo CLONE on it and merges the commit",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%d\n%s%s", want, code, out, stderr)
		}
	}
}

// TestTrustListTakesTheClusterFromTheStateDir: the state dir knows whose
// pins it keeps; --cluster, when given, must agree with it.
func TestTrustListTakesTheClusterFromTheStateDir(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	state := filepath.Join(root, "state", "alpha")
	code, out, stderr := gitpeer(t, "trust", "--list", "--state-dir", state)
	if code != 0 || !strings.HasPrefix(out, "beta\tsha256:") || !strings.Contains(out, "\tpinned\n") {
		t.Errorf("trust --list without --cluster: %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = gitpeer(t, "trust", "--list", "--cluster", "beta", "--state-dir", state)
	if code == 0 || !strings.Contains(stderr, `--cluster is "beta" but state dir `+state+` holds cluster "alpha"`) {
		t.Errorf("trust --list with another cluster's ID: %d\n%s", code, stderr)
	}
}

// TestWaitBehindADaemonIsBoundedAndNamesTheHolder: --wait gives up after
// --wait-timeout, naming the process that holds the checkout and what to do.
func TestWaitBehindADaemonIsBoundedAndNamesTheHolder(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "alpha")
	held, err := gitsync.LockCheckout(context.Background(), filepath.Join(state, "checkout"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	code, _, stderr := gitpeer(t, "reconcile", "--once", "--wait", "--wait-timeout", "200ms", "--cluster", "alpha", "--repo", remote, "--state-dir", state)
	holder := fmt.Sprintf("checkout %s is in use by process %d (started ", filepath.Join(state, "checkout"), os.Getpid())
	for _, want := range []string{
		"gitpeer: waiting: " + holder,
		"giving up after 200ms (--wait-timeout): a reconcile daemon holds its checkout for as long as it runs",
		", still after 200ms (--wait-timeout): if it is a reconcile daemon (--watch, or the Deployment), it holds the checkout for its whole life; stop it, or give this run a checkout of its own (--checkout DIR)",
	} {
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d; stderr does not say %q:\n%s", code, want, stderr)
		}
	}
}
