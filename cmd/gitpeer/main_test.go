package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// gitpeer runs the CLI in-process and returns its exit code and output.
func gitpeer(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// git is testgit.Git: the git CLI in dir, its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testgit.Git(t, dir, args...)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const spec = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`

// peeringRepo is a bare remote and a working clone holding specSrc and both
// clusters' published identities (state dirs under root/state/<id>),
// committed and pushed: where an admin is after the first pull request.
func peeringRepo(t *testing.T, specSrc string) (root, remote, work string) {
	t.Helper()
	root = t.TempDir()
	remote = filepath.Join(root, "remote.git")
	work = filepath.Join(root, "work")
	git(t, root, "init", "--bare", "--initial-branch=main", remote)
	git(t, root, "clone", remote, work)
	write(t, filepath.Join(work, "peering.cue"), specSrc)
	for _, id := range []string{"alpha", "beta"} {
		code, _, stderr := gitpeer(t, "init", "--cluster", id, "--api-server", "https://"+id+".example:6443",
			"--state-dir", filepath.Join(root, "state", id), "--repo", work)
		if code != 0 {
			t.Fatalf("init %s: %d %s", id, code, stderr)
		}
		if !strings.Contains(stderr, "public key fingerprint: sha256:") {
			t.Errorf("init does not print the fingerprint: %s", stderr)
		}
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-m", "peer alpha with beta")
	git(t, work, "push", "origin", "main")
	return root, remote, work
}

// TestPeeringByHandWithTheCLI is what an admin does: init both clusters into
// a working tree, push it, then run each reconciler once in turn.
func TestPeeringByHandWithTheCLI(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	if code, out, _ := gitpeer(t, "validate", work); code != 0 || !strings.Contains(out, "valid (2 clusters, 1 peerings)") {
		t.Fatalf("validate: %d %s", code, out)
	}

	for i, id := range []string{"beta", "alpha", "beta", "alpha", "beta", "alpha"} {
		code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id))
		if code != 0 {
			t.Fatalf("pass %d (%s): %d %s", i+1, id, code, stderr)
		}
		if i >= 4 && !strings.Contains(out, id+": up to date") {
			t.Errorf("pass %d (%s) after convergence: %s", i+1, id, out)
		}
	}
	kc := filepath.Join(root, "state", "alpha", "kubeconfigs", "beta.kubeconfig")
	if _, err := os.Stat(kc); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}

	git(t, work, "pull", "--ff-only")
	code, out, _ := gitpeer(t, "status", work, "-o", "json")
	if code != 0 {
		t.Fatalf("status: %d", code)
	}
	var list struct {
		APIVersion, Kind string
		Items            []struct {
			Consumer, Provider, Step string
			Ready                    bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	if peerings := list.Items; list.APIVersion != "gitpeer.io/v1alpha1" || list.Kind != "PeeringStatusList" ||
		len(peerings) != 1 || !peerings[0].Ready || peerings[0].Step != "Ready" {
		t.Fatalf("status: %+v", list)
	}
	if code, out, _ := gitpeer(t, "status", work); code != 0 || !strings.Contains(out, "alpha     beta      Ready  true   -") {
		t.Fatalf("status table: %d\n%s", code, out)
	}
	if code, out, _ := gitpeer(t, "verify", work); code != 0 {
		t.Fatalf("verify of a good repo: %d\n%s", code, out)
	}

	// A tampered commit: verify names file and field, exits 1. (verify
	// reads the committed tree, as the reconcilers do: the tampering is
	// committed, then undone.)
	tenant := filepath.Join(work, "clusters/beta/inbox/alpha/tenant.yaml")
	data, _ := os.ReadFile(tenant)
	tampered := strings.Replace(string(data), "signature: ", "signature: AAAA", 1)
	write(t, tenant, tampered)
	git(t, work, "commit", "-qam", "tamper")
	code, out, _ = gitpeer(t, "verify", work)
	if code != 1 || !strings.Contains(out, "clusters/beta/inbox/alpha/tenant.yaml: spec.signature: ") ||
		!strings.Contains(out, "clusters/alpha/inbox/beta/identity.yaml: issued without a valid Tenant") {
		t.Fatalf("verify of a tampered tenant: %d\n%s", code, out)
	}
	git(t, work, "reset", "-q", "--hard", "HEAD~1")
	key, _ := os.ReadFile(filepath.Join(root, "state", "beta", "cluster.key"))
	write(t, filepath.Join(work, "clusters/beta/liqo/alpha/oops.yaml"), string(key))
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "oops")
	if code, out, _ := gitpeer(t, "verify", work); code != 1 || !strings.Contains(out, "clusters/beta/liqo/alpha/oops.yaml: ") {
		t.Fatalf("verify of a leaked key: %d\n%s", code, out)
	}
	git(t, work, "reset", "-q", "--hard", "HEAD~1")

	// A commit claiming to be alpha's reconciler that edits beta's tree is an
	// unsigned change: verify names it with its commit, trailer or not.
	status := filepath.Join(work, "clusters/beta/status.yaml")
	data, _ = os.ReadFile(status)
	write(t, status, string(data)+"# edited\n")
	git(t, work, "commit", "-qam", "alpha: update status\n\nGitpeer-Cluster: alpha\n")
	forged := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	code, out, _ = gitpeer(t, "verify", work)
	if code != 1 || !strings.Contains(out, "clusters/beta/status.yaml: ") || !strings.Contains(out, "(UnsignedChange, commit "+forged[:12]+")") {
		t.Fatalf("verify of a forged commit to beta's tree: %d\n%s", code, out)
	}
}

func TestBadInputExitsNonZeroWithAClearError(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "bad", "peering.cue"), `clusters: [{id: "Alpha"}]`+"\n")
	write(t, filepath.Join(root, "short", "peering.cue"), `clusters: [{id: "alpha"}, {id: "beta", provider: {certificateLifetime: "90s"}}]`+"\n")
	write(t, filepath.Join(root, "loose", "state", "config.yaml"), "clusterID: alpha\napiServer: https://a\n")
	if err := os.Chmod(filepath.Join(root, "loose", "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		output string
	}{
		{"invalid spec", []string{"validate", filepath.Join(root, "bad")}, 1, "peering.cue:1:17: clusters[0].id: "},
		{"missing spec", []string{"validate", root}, 1, "peering.cue"},
		{"bad cluster ID", []string{"init", "--cluster", "Bad_ID", "--api-server", "https://x", "--state-dir", filepath.Join(root, "s")}, 1, "--cluster: \"Bad_ID\" is not a DNS-1123 label"},
		{"too long cluster ID", []string{"init", "--cluster", strings.Repeat("a", 52), "--api-server", "https://x", "--state-dir", filepath.Join(root, "s")}, 1, "at most 51"},
		{"plain http API server", []string{"init", "--cluster", "a", "--api-server", "http://x", "--state-dir", filepath.Join(root, "s")}, 1, "--api-server: \"http://x\" is not an https URL"},
		{"missing state dir", []string{"reconcile", "--once", "--cluster", "a", "--repo", root, "--state-dir", filepath.Join(root, "nope")}, 1, "not initialized (run gitpeer init)"},
		{"state dir others can read", []string{"reconcile", "--once", "--cluster", "alpha", "--repo", root, "--state-dir", filepath.Join(root, "loose", "state")}, 1, "want 0700"},
		{"unknown output format", []string{"status", root, "-o", "xml"}, 2, `-o: "xml" is not one of table, json, yaml, mermaid`},
		{"missing API server", []string{"init", "--cluster", "a", "--state-dir", filepath.Join(root, "s")}, 1, "--api-server is required with --backend file"},
		{"file backend without a state dir", []string{"init", "--cluster", "a", "--api-server", "https://x"}, 1, "--state-dir is required with --backend file"},
		{"certificate lifetime in the spec too short to renew", []string{"validate", filepath.Join(root, "short")}, 1, `peering.cue:1:72: clusters[1].provider.certificateLifetime: "90s" is shorter than 10m`},
		{"certificate lifetime flag too short to renew", []string{"reconcile", "--once", "--cluster", "a", "--repo", root, "--state-dir", filepath.Join(root, "s"), "--certificate-lifetime", "90s"}, 1, "--certificate-lifetime 1m30s is shorter than 10m0s"},
		{"negative key rollover wait", []string{"reconcile", "--once", "--cluster", "a", "--repo", root, "--state-dir", filepath.Join(root, "s"), "--key-rollover-wait", "-5m"}, 1, "--key-rollover-wait must not be negative, got -5m0s"},
		{"rotate-key to a plain-HTTP API server", []string{"rotate-key", "--cluster", "a", "--state-dir", filepath.Join(root, "s"), "--api-server", "http://a.example:6443"}, 1, "--api-server: "},
		{"plan's certificate lifetime too short to renew", []string{"plan", "--cluster", "a", "--state-dir", filepath.Join(root, "s"), "--certificate-lifetime", "9m", root}, 2, "--certificate-lifetime 9m0s is shorter than 10m0s"},
		{"unknown signing format for init", []string{"init", "--cluster", "a", "--api-server", "https://x", "--state-dir", filepath.Join(root, "s"), "--signing-format", "gpg"}, 1, `--signing-format: signing format "gpg" is not one of: ssh, openpgp`},
		{"unknown allowed-signers format", []string{"allowed-signers", root, "--format", "x509"}, 1, `--format: signing format "x509" is not one of: ssh, openpgp`},
		{"unknown signing format for plan", []string{"plan", "--cluster", "a", "--state-dir", filepath.Join(root, "s"), "--signing-format", "pgp", root}, 2, `--signing-format: signing format "pgp" is not one of: ssh, openpgp`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.output) {
				t.Fatalf("exit %d, want %d; output:\n%s%s\nwant it to contain %q", code, tc.code, stdout, stderr, tc.output)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "s")); !os.IsNotExist(err) {
		t.Errorf("a refused init left %s behind", filepath.Join(root, "s"))
	}
}

// TestAMistypedBranchIsNamedAndDoesNotStick: reconcile --branch with a
// branch the remote lacks fails naming the branch, the remote and the
// branches it has, on a fresh checkout and on one in use; the next run with
// the right branch works without anything deleted by hand. (Issue 12: the
// error was "no peering spec in …/checkout", and the checkout was left on the
// mistyped branch.)
func TestAMistypedBranchIsNamedAndDoesNotStick(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	git(t, work, "push", "origin", "main:peering-v2")
	reconcile := func(id, branch string) (int, string, string) {
		return gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id), "--branch", branch)
	}
	want := `--branch: branch "nosuch" does not exist on ` + remote + ` (its branches: main, peering-v2)`
	// beta's checkout is fresh; alpha's is in use when the typo comes.
	if code, _, stderr := reconcile("beta", "nosuch"); code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("fresh checkout, --branch nosuch: exit %d\n%s\nwant exit 1 and %q", code, stderr, want)
	}
	if code, out, stderr := reconcile("beta", "main"); code != 0 || !strings.Contains(out, "beta: send nonce to alpha") {
		t.Fatalf("then --branch main: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := reconcile("alpha", "main"); code != 0 || !strings.Contains(out, "alpha: send tenant to beta") {
		t.Fatalf("alpha: exit %d\n%s%s", code, out, stderr)
	}
	tip := strings.TrimSpace(git(t, remote, "rev-parse", "main"))
	if code, _, stderr := reconcile("alpha", "nosuch"); code != 1 || !strings.Contains(stderr, want[:len(want)-1]+", gitpeer/applied/alpha, gitpeer/applied/beta)") {
		t.Fatalf("checkout in use, --branch nosuch: exit %d\n%s", code, stderr)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != tip {
		t.Errorf("a failed run moved main from %s to %s", tip, got)
	}
	checkout := filepath.Join(root, "state", "alpha", "checkout")
	if head := strings.TrimSpace(git(t, checkout, "symbolic-ref", "HEAD")); head != "refs/heads/main" {
		t.Errorf("the failed run left the checkout on %s", head)
	}
	for _, id := range []string{"beta", "alpha"} {
		if code, out, stderr := reconcile(id, "main"); code != 0 || strings.Contains(out, "up to date") {
			t.Fatalf("%s after the typo: exit %d\n%s%s\nwant a pass that commits", id, code, out, stderr)
		}
	}
	if fetch := strings.TrimSpace(git(t, checkout, "config", "--get-all", "remote.origin.fetch")); fetch != "+refs/heads/main:refs/remotes/origin/main" {
		t.Errorf("the checkout fetches %q", fetch)
	}
	// status and plan read a branch the same way.
	if code, out, stderr := gitpeer(t, "status", remote, "--branch", "nosuch"); code == 0 || !strings.Contains(out+stderr, `branch "nosuch" does not exist on `+remote) {
		t.Errorf("status --branch nosuch: exit %d\n%s%s", code, out, stderr)
	}

	// A new, empty remote: the error says to push the spec first.
	empty := filepath.Join(root, "empty.git")
	git(t, root, "init", "--bare", "--initial-branch=main", empty)
	code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", empty, "--state-dir", filepath.Join(root, "state", "alpha"), "--checkout", filepath.Join(root, "empty-checkout"))
	if want := `branch "main" does not exist on ` + empty + `: the remote has no branches yet; push the peering spec to main first`; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("empty remote: exit %d\n%s\nwant %q", code, stderr, want)
	}
	// Its first push, to any branch, is then what reconcile reads.
	git(t, work, "push", empty, "main:peering")
	if code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", empty, "--state-dir", filepath.Join(root, "state", "beta"),
		"--checkout", filepath.Join(root, "empty-checkout-beta"), "--branch", "peering"); code != 0 || !strings.Contains(out, "beta: send nonce to alpha") {
		t.Fatalf("after the first push: exit %d\n%s%s", code, out, stderr)
	}
}

func TestInitKeepsKeysAndRefusesAnotherCluster(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	_, out1, _ := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://a.example", "--state-dir", state)
	code, out2, stderr := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://a.example", "--state-dir", state)
	if code != 0 || out1 != out2 || !strings.Contains(stderr, "reusing state") {
		t.Fatalf("second init: %d %s", code, stderr)
	}
	if strings.Contains(out1, "PRIVATE") {
		t.Fatal("cluster.yaml carries private material")
	}
	code, _, stderr = gitpeer(t, "init", "--cluster", "beta", "--api-server", "https://a.example", "--state-dir", state)
	if code == 0 || !strings.Contains(stderr, `holds cluster "alpha", not "beta"`) {
		t.Fatalf("init over another cluster's state: %d %s", code, stderr)
	}
	for _, f := range []string{"cluster.key", "ca.key", "nonce.secret"} {
		fi, err := os.Stat(filepath.Join(state, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
}

// TestWatchRunsAPassWhenTheBranchMoves: with --watch and an hour's interval,
// the provider answers the consumer's push at once.
func TestWatchRunsAPassWhenTheBranchMoves(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errw bytes.Buffer
		done <- run(ctx, []string{"reconcile", "--watch", "--interval", "1h", "--cluster", "beta", "--repo", remote,
			"--state-dir", filepath.Join(root, "state", "beta")}, &out, &errw)
	}()
	identity := func() bool {
		return testgit.Command(remote, "cat-file", "-e", "main:clusters/alpha/inbox/beta/identity.yaml").Run() == nil
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if ok() {
				return
			}
		}
		cancel()
		t.Fatalf("timed out waiting for %s", what)
	}
	waitFor("beta's first pass", func() bool {
		return testgit.Command(remote, "cat-file", "-e", "main:clusters/alpha/inbox/beta/nonce.yaml").Run() == nil
	})
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", remote, "--state-dir", filepath.Join(root, "state", "alpha")); code != 0 {
		t.Fatal(stderr)
	}
	waitFor("beta to answer alpha's push", identity)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("reconcile --watch exited %d", code)
	}
}

// TestTokenPolicyWithTheCLI: the provider's admin generates a token, the
// consumer's admin stores it from standard input, and the peering completes;
// the token itself never reaches Git.
func TestTokenPolicyWithTheCLI(t *testing.T) {
	root, remote, work := peeringRepo(t, strings.Replace(spec, `provider: "beta"}`, `provider: "beta", policy: "token"}`, 1))
	state := func(id string) string { return filepath.Join(root, "state", id) }

	code, token, stderr := gitpeer(t, "token", "generate", "--cluster", "beta", "--peer", "alpha", "--state-dir", state("beta"))
	if code != 0 || len(strings.TrimSpace(token)) != 64 {
		t.Fatalf("token generate: %d %q %s", code, token, stderr)
	}
	set := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	set.SetIn(strings.NewReader(token))
	set.SetArgs([]string{"token", "set", "--cluster", "alpha", "--peer", "beta", "--state-dir", state("alpha")})
	if err := set.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("token set: %v", err)
	}
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", state(id)); code != 0 {
			t.Fatal(stderr)
		}
	}
	git(t, work, "pull", "-q", "--ff-only")
	if code, out, _ := gitpeer(t, "status", work, "-o", "json"); code != 0 || !strings.Contains(out, `"ready": true`) || !strings.Contains(out, "token accepted") {
		t.Fatalf("status: %s", out)
	}
	if out := git(t, work, "log", "-p", "--all", "-S", strings.TrimSpace(token)); out != "" {
		t.Fatalf("the token is in Git:\n%s", out)
	}
}
