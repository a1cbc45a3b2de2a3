package demo_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// git is testgit.Git in the current directory (args name the repo with
// -C): its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	return testgit.Git(t, "", args...)
}

// TestTwoClustersPeerThroughARealRepo is the end-to-end run: a bare repo on
// disk, two file backends, go-git writing and the git CLI reading.
func TestTwoClustersPeerThroughARealRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	remote := filepath.Join(dir, "remote.git")

	// The history: seed, two publications, then exactly four handshake passes.
	subjects := strings.Split(strings.TrimSpace(git(t, "-C", remote, "log", "--reverse", "--format=%s")), "\n")
	want := []string{
		"seed: peering spec from examples/two-clusters",
		"beta: publish cluster identity",
		"alpha: publish cluster identity",
		"beta: send nonce to alpha",
		"alpha: send tenant to beta",
		"beta: issue identity to alpha; accept tenant of alpha",
		"alpha: accept identity of beta",
	}
	if strings.Join(subjects, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(subjects, "\n"), strings.Join(want, "\n"))
	}
	git(t, "-C", remote, "fsck", "--strict", "--no-dangling")
	if merges := git(t, "-C", remote, "rev-list", "--merges", "main"); merges != "" {
		t.Errorf("history has merges: %s", merges)
	}
	stat := git(t, "-C", remote, "log", "--stat", "-1", "--format=%an%n%B", "HEAD~3")
	for _, s := range []string{"gitpeer (beta)", "Gitpeer-Cluster: beta", "Gitpeer-Step: send nonce to alpha", "clusters/alpha/inbox/beta/nonce.yaml"} {
		if !strings.Contains(stat, s) {
			t.Errorf("nonce commit lacks %q:\n%s", s, stat)
		}
	}

	// Invariant 1: no blob of any commit holds private material.
	findings, err := guard.ScanHistory(remote)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) > 0 {
		t.Fatalf("private material in history: %+v", findings)
	}
	for _, marker := range []string{"PRIVATE KEY", "client-key"} {
		if out := git(t, "-C", remote, "log", "-p", "--all", "-S", marker); out != "" {
			t.Errorf("git log -S %q finds:\n%s", marker, out)
		}
	}

	// Both sides Ready; the consumer's kubeconfig is Liqo's and outside Git.
	for _, p := range rep.Peerings {
		if !p.Ready || p.Step != layout.StepReady {
			t.Errorf("%s → %s: %s ready=%t", p.Consumer, p.Provider, p.Step, p.Ready)
		}
	}
	kc := rep.Kubeconfigs["alpha/beta"]
	if !strings.HasPrefix(kc, filepath.Join(dir, "state", "alpha")) {
		t.Fatalf("kubeconfig at %q, want under state/alpha", kc)
	}
	if fi, err := os.Stat(kc); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %s: %v %v", kc, fi, err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts["default-context"]
	if cfg.CurrentContext != "default-context" || ctx == nil || ctx.Cluster != "beta" || ctx.AuthInfo != "controlplane-beta" || ctx.Namespace != "liqo-tenant-alpha" {
		t.Fatalf("kubeconfig context %+v (current %q)", ctx, cfg.CurrentContext)
	}
	if u := cfg.AuthInfos["controlplane-beta"]; u == nil || len(u.ClientKeyData) == 0 || len(u.ClientCertificateData) == 0 {
		t.Fatalf("kubeconfig user %+v", u)
	}
	if c := cfg.Clusters["beta"]; c == nil || c.Server != "https://beta.gitpeer.test:6443" {
		t.Fatalf("kubeconfig cluster %+v", c)
	}

	// State directories are private.
	for _, id := range []string{"alpha", "beta"} {
		fi, err := os.Stat(filepath.Join(dir, "state", id))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("state/%s: %v %v", id, fi, err)
		}
	}

	// Any further pass makes no commit.
	head := git(t, "-C", remote, "rev-parse", "main")
	for _, c := range rep.Clusters {
		res, err := c.Runner.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Commit != "" {
			t.Fatalf("extra pass of %s committed %s: %v", c.ID, res.Message, res.Files)
		}
	}
	if git(t, "-C", remote, "rev-parse", "main") != head {
		t.Fatal("remote moved after convergence")
	}
}

func TestDemoRefusesANonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := demo.Run(context.Background(), demo.Options{Dir: dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err = %v", err)
	}
}

func TestDemoRefusesAnUnknownExample(t *testing.T) {
	_, err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Example: "nope"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `unknown example "nope"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestThreeClustersWithSlicesAndADenial(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir, Example: "three-clusters"}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if len(rep.Peerings) != 3 {
		t.Fatalf("%d peerings", len(rep.Peerings))
	}
	slices := map[string]string{}
	for _, p := range rep.Peerings {
		// Every handshake is done; delta → gamma is not Ready while gamma
		// denies bigbatch.
		if want := p.Consumer != "delta"; !p.Peered || p.Ready != want {
			t.Errorf("%s → %s: peered %t, ready %t; want peered, ready %t", p.Consumer, p.Provider, p.Peered, p.Ready, want)
		}
		for _, s := range p.Slices {
			slices[p.Consumer+"/"+p.Provider+"/"+s.Name] = s.Resources + " " + s.Message
		}
	}
	want := map[string]string{
		"alpha/beta/web":       "Accepted",
		"alpha/gamma/training": "Accepted",
		"delta/gamma/batch":    "Accepted",
		"delta/gamma/bigbatch": "Denied cpu: requested 32 exceeds the cap 8 of class default",
	}
	for k, v := range want {
		if !strings.HasPrefix(slices[k], v) {
			t.Errorf("slice %s: %q, want %q", k, slices[k], v)
		}
	}
	if !strings.Contains(out.String(), "ResourceSliceResourcesDenied: cpu: requested 32 exceeds the cap 8") {
		t.Errorf("the demo does not print the denial's reason:\n%s", out.String())
	}
	if len(rep.Kubeconfigs) != 3 {
		t.Errorf("kubeconfigs %v", rep.Kubeconfigs)
	}
	git(t, "-C", filepath.Join(dir, "remote.git"), "fsck", "--strict")
	findings, err := guard.ScanHistory(filepath.Join(dir, "remote.git"))
	if err != nil || len(findings) > 0 {
		t.Fatalf("history scan: %v %+v", err, findings)
	}
}

// TestDemoSignsWithOpenPGP: with SigningFormat openpgp every commit of the
// reconcilers carries an OpenPGP signature (the demo checks each against
// its cluster), and the command the demo prints to show them runs, with
// real gpg, and finds them good.
func TestDemoSignsWithOpenPGP(t *testing.T) {
	testgit.GPG(t)
	// Short: the GnuPG home the printed command makes holds gpg-agent's
	// socket, whose path must fit a sockaddr_un.
	dir, err := os.MkdirTemp("", "demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd := exec.Command("gpgconf", "--kill", "all")
		cmd.Env = append(os.Environ(), "GNUPGHOME="+filepath.Join(dir, "gnupg"))
		_ = cmd.Run()
		_ = os.RemoveAll(dir)
	})
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir, SigningFormat: commitsig.FormatOpenPGP}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	_, show, ok := strings.Cut(out.String(), "their signatures:")
	if !ok {
		t.Fatalf("the demo prints no command for the signatures:\n%s", out.String())
	}
	show, _, _ = strings.Cut(strings.TrimSpace(show), "\n")
	cmd := exec.Command("sh", "-c", show)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", show, err, log)
	}
	for _, c := range rep.Clusters {
		if n := strings.Count(string(log), `Good signature from "gitpeer cluster `+c.ID+`"`); n == 0 {
			t.Errorf("%s shows no good signature of %s:\n%s", show, c.ID, log)
		}
	}
	if strings.Contains(string(log), "BAD signature") {
		t.Errorf("%s shows a bad signature:\n%s", show, log)
	}
}
