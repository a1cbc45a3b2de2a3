package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// reconcileAll runs each cluster's reconciler once, in order.
func reconcileAll(t *testing.T, root, remote string, order ...string) {
	t.Helper()
	for _, id := range order {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatalf("reconcile %s: %d %s", id, code, stderr)
		}
	}
}

func TestReconcilersSignTheirCommitsAndKeepTheirAppliedBranch(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")

	code, signers, stderr := gitpeer(t, "allowed-signers", work)
	if code != 0 || strings.Count(signers, `namespaces="git" ssh-ed25519 `) != 2 {
		t.Fatalf("allowed-signers: %d %s %s", code, signers, stderr)
	}
	allowed := filepath.Join(root, "allowed_signers")
	write(t, allowed, signers)
	log := git(t, work, "-c", "gpg.ssh.allowedSignersFile="+allowed, "log", "--show-signature", "--format=%H %s", "main")
	for _, id := range []string{"alpha", "beta"} {
		if !strings.Contains(log, `Good "git" signature for `+id+` with ED25519 key`) {
			t.Errorf("git log --show-signature shows no good signature of %s:\n%s", id, log)
		}
	}
	// Each applied branch holds a commit its cluster signed, whose tree is
	// clusters/<id>/ as the reconciler computed it, less its inbox, and
	// nothing else.
	for _, id := range []string{"alpha", "beta"} {
		ref := "origin/gitpeer/applied/" + id
		git(t, work, "fetch", "-q", "origin", "gitpeer/applied/"+id+":refs/remotes/"+ref)
		out := git(t, work, "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", ref)
		if !strings.Contains(out, `Good "git" signature for `+id) {
			t.Errorf("%s is not signed by %s:\n%s", ref, id, out)
		}
		var want []string
		for _, f := range strings.Fields(git(t, work, "ls-tree", "-r", "--name-only", "main", "clusters/"+id)) {
			if !strings.HasPrefix(f, "clusters/"+id+"/inbox/") {
				want = append(want, f)
			}
		}
		if got := strings.Fields(git(t, work, "ls-tree", "-r", "--name-only", ref)); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s holds\n%s\nwant main's clusters/%s less its inbox:\n%s", ref, strings.Join(got, "\n"), id, strings.Join(want, "\n"))
		}
		for _, f := range want {
			if a, m := git(t, work, "rev-parse", ref+":"+f), git(t, work, "rev-parse", "main:"+f); a != m {
				t.Errorf("%s holds %s %s, main %s", ref, f, a, m)
			}
		}
	}
}

func TestInitPrintsTheFluxSourceTrustingOnlyTheClusterKey(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git(t, root, "init", "-q", work)
	git(t, work, "remote", "add", "origin", "ssh://git@git.example.org/peering.git")
	code, out, stderr := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
		"--state-dir", filepath.Join(root, "state"), "--repo", work)
	if code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	for _, want := range []string{"kind: GitRepository", "branch: gitpeer/applied/alpha", "mode: HEAD", "alpha.sshpub: ssh-ed25519 ", "url: ssh://git@git.example.org/peering.git"} {
		if !strings.Contains(out, want) {
			t.Errorf("init's Flux source lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "clusters/alpha/manifest.yaml")); err != nil {
		t.Errorf("init wrote no signed manifest: %v", err)
	}
}

func TestRotateKeyIsAcceptedAndASwapNeedsTrust(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")

	// alpha rotates its key: rotate-key stages it, alpha's reconciler
	// announces it (still signing with the old key), then switches and
	// publishes the statement; beta accepts the new key through it. Nothing
	// is committed by hand. No Flux applies here: no wait.
	code, _, stderr := gitpeer(t, "rotate-key", "--cluster", "alpha", "--state-dir", filepath.Join(root, "state", "alpha"), "--repo", work)
	if code != 0 || !strings.Contains(stderr, "alpha: staged key sha256:") {
		t.Fatalf("rotate-key: %d %s", code, stderr)
	}
	if status := git(t, work, "status", "--porcelain"); status != "" {
		t.Fatalf("rotate-key wrote into the checkout:\n%s", status)
	}
	for i, want := range []string{"signing with the current key until", "key rollover: sha256:"} {
		code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", remote, "--state-dir", filepath.Join(root, "state", "alpha"), "--key-rollover-wait", "0")
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("alpha's pass %d after rotate-key: %d, want %q in\n%s%s", i+1, code, want, out, stderr)
		}
	}
	reconcileAll(t, root, remote, "beta", "alpha", "beta", "alpha")
	git(t, work, "pull", "-q", "--ff-only")
	if code, out, _ := gitpeer(t, "status", work); code != 0 || !strings.Contains(out, "alpha     beta      Ready  true") {
		t.Fatalf("after a signed rotation: %d\n%s", code, out)
	}

	// A fresh key without a statement (alpha lost its state): KeyChanged
	// until beta's admin re-pins it.
	fresh := filepath.Join(root, "state", "alpha2")
	code, _, stderr = gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443", "--state-dir", fresh, "--repo", work)
	if code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	fp := stderr[strings.Index(stderr, "sha256:") : strings.Index(stderr, "sha256:")+71]
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "alpha lost its key")
	git(t, work, "push", "-q", "origin", "main")
	for _, id := range []string{"alpha", "beta"} {
		dir := filepath.Join(root, "state", id)
		if id == "alpha" {
			dir = fresh
		}
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", dir); code != 0 {
			t.Fatalf("reconcile %s: %d %s", id, code, stderr)
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	status, _ := os.ReadFile(filepath.Join(work, "clusters/beta/status.yaml"))
	if !strings.Contains(string(status), "KeyChanged") {
		t.Fatalf("beta accepted a new key without a statement or re-pin:\n%s", status)
	}
	code, out, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", filepath.Join(root, "state", "beta"), "--peer", "alpha", "--fingerprint", fp)
	if code != 0 || !strings.Contains(out, "only with key "+fp) {
		t.Fatalf("trust: %d %s %s", code, out, stderr)
	}
	for i := 0; i < 3; i++ {
		for _, c := range []struct{ id, dir string }{{"beta", filepath.Join(root, "state", "beta")}, {"alpha", fresh}} {
			if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", c.id, "--repo", remote, "--state-dir", c.dir); code != 0 {
				t.Fatalf("reconcile %s: %d %s", c.id, code, stderr)
			}
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	if code, out, _ := gitpeer(t, "status", work); code != 0 || !strings.Contains(out, "alpha     beta      Ready  true") {
		t.Fatalf("after re-pinning: %d\n%s", code, out)
	}
	if code, out, _ := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", filepath.Join(root, "state", "beta"), "--list"); code != 0 || !strings.Contains(out, "alpha\t"+fp) {
		t.Fatalf("trust --list: %d %s", code, out)
	}
}

// TestTrustListShowsADamagedPin: a pin store an earlier version wrote with
// an API server that is no URL loads; trust --list names the damage, and
// trust --peer marks the peer for a re-pin.
func TestTrustListShowsADamagedPin(t *testing.T) {
	state := filepath.Join(t.TempDir(), "beta")
	if code, _, stderr := gitpeer(t, "init", "--cluster", "beta", "--api-server", "https://beta.example:6443", "--state-dir", state); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	store := "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: beta\npeers:\n  alpha:\n    apiServer: ftp://alpha.example\n"
	if err := os.WriteFile(filepath.Join(state, "pins.yaml"), []byte(store), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--list")
	if code != 0 || !strings.Contains(out, "alpha\t") || !strings.Contains(out, "damaged, not trusted until re-pinned: apiServer") {
		t.Fatalf("trust --list: %d %q %s", code, out, stderr)
	}
	if code, _, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--peer", "alpha"); code != 0 {
		t.Fatalf("trust --peer: %d %s", code, stderr)
	}
	if code, out, _ := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--list"); code != 0 || !strings.Contains(out, "re-pin at the next pass") {
		t.Fatalf("trust --list after a re-pin request: %d %q", code, out)
	}
}

// TestTrustListAsAList: trust --list -o json and -o yaml print a PinList
// (apiVersion, kind, items), each item a peer with its fingerprint, API
// server and state (Pinned, Repin, Damaged and what is damaged).
func TestTrustListAsAList(t *testing.T) {
	state := filepath.Join(t.TempDir(), "beta")
	if code, _, stderr := gitpeer(t, "init", "--cluster", "beta", "--api-server", "https://beta.example:6443", "--state-dir", state); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	fp := "sha256:" + strings.Repeat("ab", 32)
	store := "apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: beta\npeers:\n" +
		"  alpha:\n    apiServer: ftp://alpha.example\n" +
		"  gamma:\n    fingerprint: " + fp + "\n    apiServer: https://gamma.example:6443\n"
	if err := os.WriteFile(filepath.Join(state, "pins.yaml"), []byte(store), 0o600); err != nil {
		t.Fatal(err)
	}
	list := func(format string) pinList {
		t.Helper()
		code, out, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--list", "-o", format)
		var l pinList
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(out), &l)
		} else {
			err = yaml.UnmarshalStrict([]byte(out), &l)
		}
		if code != 0 || err != nil || l.APIVersion != "gitpeer.io/v1alpha1" || l.Kind != "PinList" {
			t.Fatalf("trust --list -o %s: exit %d %v\n%s%s", format, code, err, out, stderr)
		}
		return l
	}
	want := []pinItem{{Peer: "alpha", State: "Damaged", Damaged: `apiServer: "ftp://alpha.example" is not an https URL: damaged pin`}, {Peer: "gamma", Fingerprint: fp, APIServer: "https://gamma.example:6443", State: "Pinned"}}
	for _, format := range []string{"json", "yaml"} {
		if got := list(format).Items; !reflect.DeepEqual(got, want) {
			t.Errorf("-o %s: items %+v, want %+v", format, got, want)
		}
	}
	if code, _, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--peer", "alpha"); code != 0 {
		t.Fatalf("trust --peer: %d %s", code, stderr)
	}
	if got := list("json").Items; len(got) != 2 || got[0].State != "Repin" {
		t.Errorf("after trust --peer alpha: %+v, want alpha in state Repin", got)
	}
	if code, _, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--peer", "alpha", "-o", "json"); code != 1 || !strings.Contains(stderr, "-o applies to --list") {
		t.Errorf("trust --peer -o json: exit %d %s", code, stderr)
	}
	if code, _, stderr := gitpeer(t, "trust", "--cluster", "beta", "--state-dir", state, "--list", "-o", "table"); code != 1 || !strings.Contains(stderr, `-o: "table" is not one of text, json, yaml`) {
		t.Errorf("trust --list -o table: exit %d %s", code, stderr)
	}
}

type pinList struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Items      []pinItem `json:"items"`
}
