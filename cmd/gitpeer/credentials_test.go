package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestPeeringOverSSHAndHTTPSWithCredentials is the handshake between two
// clusters whose reconcilers reach the repo over real transports: alpha
// over ssh:// (sshd, an encrypted deploy key, strict known_hosts), beta over
// https:// (git-http-backend behind TLS with a private CA, basic auth, then
// a bearer token after a rotation). Failures name their cause, and no
// secret is in any output, state dir or checkout.
func TestPeeringOverSSHAndHTTPSWithCredentials(t *testing.T) {
	const (
		password   = "pw-0b7d31c5-do-not-leak"
		token      = "tok-e2c94a10-do-not-leak"
		passphrase = "kp-8f05a6d3-do-not-leak"
	)
	root, _, _ := peeringRepo(t, spec)
	deploy := testgit.NewKey(t, "alpha-deploy", passphrase)
	sshd := testgit.StartSSHD(t, root, deploy)
	https := testgit.StartHTTPS(t, root, testgit.HTTPAuth{Username: "beta-bot", Password: password, Token: token})
	sshURL, httpsURL := sshd.URL("remote.git"), https.URL("remote.git")

	creds := t.TempDir()
	alphaCreds, betaCreds := filepath.Join(creds, "alpha"), filepath.Join(creds, "beta")
	testgit.WriteFiles(t, alphaCreds, map[string][]byte{
		gitauth.IdentityFile: deploy.PEM, gitauth.PasswordFile: []byte(passphrase), gitauth.KnownHostsFile: sshd.KnownHosts})
	testgit.WriteFiles(t, betaCreds, map[string][]byte{
		gitauth.UsernameFile: []byte("beta-bot"), gitauth.PasswordFile: []byte(password), gitauth.CAFile: https.CACert})

	var output bytes.Buffer // everything gitpeer printed
	reconcile := func(id string, extra ...string) (int, string, string) {
		t.Helper()
		url, dir := sshURL, alphaCreds
		if id == "beta" {
			url, dir = httpsURL, betaCreds
		}
		args := append([]string{"reconcile", "--once", "--cluster", id, "--repo", url, "--git-credentials", dir,
			"--state-dir", filepath.Join(root, "state", id)}, extra...)
		code, out, stderr := gitpeer(t, args...)
		output.WriteString(out + stderr)
		return code, out, stderr
	}

	for i, id := range []string{"beta", "alpha", "beta", "alpha", "beta", "alpha"} {
		if i == 4 {
			// beta's Secret is rotated to a bearer token between passes.
			for _, f := range []string{gitauth.UsernameFile, gitauth.PasswordFile} {
				if err := os.Remove(filepath.Join(betaCreds, f)); err != nil {
					t.Fatal(err)
				}
			}
			testgit.WriteFiles(t, betaCreds, map[string][]byte{gitauth.BearerTokenFile: []byte(token)})
		}
		code, out, stderr := reconcile(id)
		if code != 0 {
			t.Fatalf("pass %d (%s): %d %s", i+1, id, code, stderr)
		}
		if i >= 4 && !strings.Contains(out, id+": up to date") {
			t.Errorf("pass %d (%s) after convergence: %s", i+1, id, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "state", "alpha", "kubeconfigs", "beta.kubeconfig")); err != nil {
		t.Fatalf("the handshake did not complete: %v", err)
	}
	for id, url := range map[string]string{"alpha": sshURL, "beta": httpsURL} {
		if got := git(t, filepath.Join(root, "state", id, "checkout"), "remote", "get-url", "--all", "origin"); strings.TrimSpace(got) != url {
			t.Errorf("%s's origin = %q, want %q", id, got, url)
		}
	}

	t.Run("a stranger's host key is refused", func(t *testing.T) {
		stranger := testgit.NewKey(t, "", "")
		line := strings.Fields(string(sshd.KnownHosts))[0] + " " + stranger.AuthorizedKey + "\n"
		saved, _ := os.ReadFile(filepath.Join(alphaCreds, gitauth.KnownHostsFile))
		testgit.WriteFiles(t, alphaCreds, map[string][]byte{gitauth.KnownHostsFile: []byte(line)})
		defer testgit.WriteFiles(t, alphaCreds, map[string][]byte{gitauth.KnownHostsFile: saved})
		code, _, stderr := reconcile("alpha")
		want := "host key of " + sshd.Addr + " does not match known_hosts in " + alphaCreds
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want it to say %q", code, stderr, want)
		}
	})

	t.Run("a wrong password is refused", func(t *testing.T) {
		dir := filepath.Join(creds, "wrong")
		testgit.WriteFiles(t, dir, map[string][]byte{
			gitauth.UsernameFile: []byte("beta-bot"), gitauth.PasswordFile: []byte("not-the-password"), gitauth.CAFile: https.CACert})
		code, _, stderr := reconcile("beta", "--git-credentials", dir)
		want := "authentication refused by " + strings.TrimPrefix(https.Base, "https://") + ": check username/password or bearerToken in " + dir
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want it to say %q", code, stderr, want)
		}
	})

	t.Run("ssh without known_hosts is refused, naming the file", func(t *testing.T) {
		dir := filepath.Join(creds, "no-known-hosts")
		testgit.WriteFiles(t, dir, map[string][]byte{gitauth.IdentityFile: deploy.PEM, gitauth.PasswordFile: []byte(passphrase)})
		code, _, stderr := reconcile("alpha", "--git-credentials", dir)
		want := "no " + filepath.Join(dir, "known_hosts") + ": refusing to connect to " + sshd.Addr
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want it to say %q", code, stderr, want)
		}
	})

	t.Run("a URL with a token is refused without echoing it", func(t *testing.T) {
		url := strings.Replace(httpsURL, "https://", "https://x-access-token:"+token+"@", 1)
		code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", url,
			"--state-dir", filepath.Join(root, "state", "beta"))
		output.WriteString(stderr)
		if code != 1 || !strings.Contains(stderr, "URL holds credentials") || !strings.Contains(stderr, "--git-credentials DIR") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	// The scan: no secret in anything gitpeer printed or wrote.
	leaks := testgit.NewLeaks(deploy.PEM, password, token, passphrase)
	if what := leaks.Find(output.Bytes()); what != "" {
		t.Errorf("%s in gitpeer's output:\n%s", what, output.String())
	}
	if !strings.Contains(output.String(), "up to date") {
		t.Error("the scan saw no output")
	}
	files := leaks.ScanDirs(t, filepath.Join(root, "state"), filepath.Join(root, "remote.git"))
	if files < 20 {
		t.Errorf("the scan read only %d files", files)
	}
}

// gitpeerProcess is gitpeer run as a process of its own (this test binary,
// see TestMain), its stdout read line by line.
type gitpeerProcess struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *testgit.SyncBuffer
	done   chan struct{}
	err    error
}

func startGitpeer(t *testing.T, args ...string) *gitpeerProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &gitpeerProcess{cmd: exec.Command(exe, args...), lines: make(chan string, 100), stderr: &testgit.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
		close(p.lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitFor returns the first stdout line containing s.
func (p *gitpeerProcess) waitFor(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				<-p.done
				t.Fatalf("gitpeer exited (%v) before saying %q:\n%s", p.err, s, p.stderr)
			}
			if strings.Contains(line, s) {
				return line
			}
		case <-timeout:
			t.Fatalf("gitpeer did not say %q within 2m:\n%s", s, p.stderr)
		}
	}
}

// TestTwoReconcilersOnOneCheckout runs real processes on one state dir: a
// daemon holds the checkout for its lifetime, a second reconcile is refused
// naming it, and one with --wait runs its pass once the daemon stops.
func TestTwoReconcilersOnOneCheckout(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "beta")
	args := []string{"reconcile", "--cluster", "beta", "--repo", remote, "--state-dir", state}

	daemon := startGitpeer(t, append(args, "--interval", "1h")...)
	// The daemon logs JSON on stderr: its first pass is a "pushed" line.
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(daemon.stderr.String(), `"msg":"pushed"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not push within 2m: %s", daemon.stderr)
		}
		select {
		case <-daemon.done:
			t.Fatalf("the daemon exited (%v): %s", daemon.err, daemon.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}

	code, _, stderr := gitpeer(t, append(args, "--once")...)
	want := fmt.Sprintf("checkout %s is in use by process %d (started ", filepath.Join(state, "checkout"), daemon.cmd.Process.Pid)
	// What to do: --wait for a --once run, never behind a daemon.
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "; use --wait to wait for a reconcile --once to finish (at most --wait-timeout, 10m0s); "+
		"a reconcile daemon holds its checkout for its whole life: stop it, or give this run a checkout of its own (--checkout DIR)") {
		t.Fatalf("a second reconcile: exit %d, stderr %q; want it to say %q", code, stderr, want)
	}

	waiter := startGitpeer(t, append(args, "--once", "--wait")...)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(waiter.stderr.String(), "waiting: "+want[:len(want)-len(" (started ")]) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter does not say it waits: %q", waiter.stderr)
		}
		select {
		case <-waiter.done:
			t.Fatalf("the waiter exited (%v) while the daemon ran: %s", waiter.err, waiter.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}

	if err := daemon.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-daemon.done
	if daemon.err != nil {
		t.Errorf("daemon after SIGTERM: %v\n%s", daemon.err, daemon.stderr)
	}
	waiter.waitFor(t, "beta: ")
	<-waiter.done
	if waiter.err != nil {
		t.Errorf("waiter: %v\n%s", waiter.err, waiter.stderr)
	}

	// Two passes started together with --wait both run, one after the other.
	alpha := []string{"reconcile", "--once", "--wait", "--cluster", "alpha", "--repo", remote, "--state-dir", filepath.Join(root, "state", "alpha")}
	first, second := startGitpeer(t, alpha...), startGitpeer(t, alpha...)
	for _, p := range []*gitpeerProcess{first, second} {
		p.waitFor(t, "alpha: ")
		<-p.done
		if p.err != nil {
			t.Errorf("a pass started together with another: %v\n%s", p.err, p.stderr)
		}
	}
}

// TestInitPrintsAGitRepositoryWithoutCredentials: the printed Flux source
// names the credentials Secret, and never carries a token found in the
// working tree's origin URL; a --repo-url with one is refused.
func TestInitPrintsAGitRepositoryWithoutCredentials(t *testing.T) {
	const token = "tok-3d9c0b7e-do-not-leak"
	work := t.TempDir()
	git(t, work, "init", "--quiet", "--initial-branch=main", ".")
	git(t, work, "remote", "add", "origin", "https://x-access-token:"+token+"@git.example.com/org/peering.git")
	code, out, stderr := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
		"--state-dir", filepath.Join(t.TempDir(), "alpha"), "--repo", work, "--git-secret", "peering-git")
	if code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	if strings.Contains(out+stderr, token) {
		t.Errorf("init printed the origin's token:\n%s%s", out, stderr)
	}
	for _, want := range []string{"url: https://git.example.com/org/peering.git", "secretRef:\n    name: peering-git"} {
		if !strings.Contains(out, want) {
			t.Errorf("the GitRepository does not say %q:\n%s", want, out)
		}
	}

	code, out, stderr = gitpeer(t, "init", "--cluster", "beta", "--api-server", "https://beta.example:6443",
		"--state-dir", filepath.Join(t.TempDir(), "beta"), "--repo-url", "https://"+token+"@git.example.com/org/peering.git")
	if code != 1 || !strings.Contains(stderr, "--repo-url: URL holds credentials") || strings.Contains(out+stderr, token) {
		t.Errorf("init with a token in --repo-url: %d\n%s%s", code, out, stderr)
	}
}
