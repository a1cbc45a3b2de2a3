//go:build e2e

// Package forge reviews a peering as pull requests on a real Gitea: the
// server hack/build-gitea.sh builds (make e2e-gitea-tools), on loopback
// over HTTPS with a certificate from a CA the test makes, sqlite in a temp
// dir. The reconcilers run as `gitpeer reconcile --push-branch
// --open-pull-request --forge gitea` against it, and the test checks
// through Gitea's API and the git CLI what a reviewer would see. No
// Kubernetes: the clusters use the file backend. webhook_test.go has
// Gitea's push webhook start a `gitpeer reconcile` daemon's pass.
//
// Run with `make e2e`, or `go test -tags e2e -count=1 -v ./e2e/forge/` with
// GITEA_BIN and GITEA_STATIC (default: the e2e cache's bin/gitea and
// gitea-static) and optionally GITPEER_E2E_BIN.
package forge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// gitea is a Gitea server the test started, with an admin's API token.
type gitea struct {
	url    string // https://127.0.0.1:port, no trailing slash
	caFile string
	ca     []byte
	user   string
	token  string
	client *http.Client
	log    string // its log file
}

// startGitea runs `gitea migrate`, `gitea admin user create --admin
// --access-token` and `gitea web` in a temp dir; the server is stopped (by
// its PID) when the test ends.
func startGitea(t *testing.T) *gitea {
	t.Helper()
	bin := e2eharness.Env("GITEA_BIN", filepath.Join(e2eharness.CacheDir(), "bin", "gitea"))
	static := e2eharness.Env("GITEA_STATIC", filepath.Join(e2eharness.CacheDir(), "gitea-static"))
	for _, p := range []string{bin, filepath.Join(static, "templates")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make e2e-gitea-tools` (builds Gitea from the Go module proxy)", err)
		}
	}
	dir := t.TempDir()
	for _, d := range []string{"custom/conf", "data", "repos", "log", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ca, certFile, keyFile := testgit.ServerCertificate(t, dir)
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testgit.FreeLoopbackAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	conf := filepath.Join(dir, "custom", "conf", "app.ini")
	ini := fmt.Sprintf(`APP_NAME = gitpeer e2e
RUN_MODE = prod
RUN_USER = %[1]s
WORK_PATH = %[2]s

[server]
PROTOCOL = https
HTTP_ADDR = %[3]s
HTTP_PORT = %[4]s
ROOT_URL = https://%[3]s:%[4]s/
CERT_FILE = %[5]s
KEY_FILE = %[6]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[7]s
APP_DATA_PATH = %[2]s/data

[database]
DB_TYPE = sqlite3
PATH = %[2]s/data/gitea.db

[repository]
ROOT = %[2]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[8]s

[service]
DISABLE_REGISTRATION = true

[oauth2]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[mailer]
ENABLED = false

[webhook]
; the webhook test's receivers listen on loopback, which Gitea refuses by default
ALLOWED_HOST_LIST = loopback

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[log]
MODE = file
LEVEL = Info
ROOT_PATH = %[2]s/log
`, me.Username, dir, host, port, certFile, keyFile, static, hex.EncodeToString(secret))
	if err := os.WriteFile(conf, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "GITEA_WORK_DIR="+dir,
		"GITEA_CUSTOM="+filepath.Join(dir, "custom"))
	if os.Getuid() == 0 {
		env = append(env, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true") // CI and this machine run tests as root
	}
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(args, "--config", conf)...)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gitea %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("migrate")
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	out := run("admin", "user", "create", "--username", "gitpeer", "--email", "gitpeer@example.org", "--admin",
		"--password", hex.EncodeToString(pw), "--must-change-password=false",
		"--access-token", "--access-token-name", "e2e", "--access-token-scopes", "all")
	m := regexp.MustCompile(`Access token was successfully created\.\.\. ([0-9a-f]{40})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("gitea admin user create printed no token:\n%s", out)
	}

	web := exec.Command(bin, "web", "--config", conf)
	web.Env, web.Dir = env, dir
	web.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logFile := filepath.Join(dir, "log", "web.out")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	web.Stdout, web.Stderr = f, f
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = web.Wait(); f.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = web.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = web.Process.Kill()
			<-exited
		}
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	g := &gitea{url: "https://" + addr, caFile: caFile, ca: ca, user: "gitpeer", token: m[1], log: logFile,
		client: &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := g.client.Get(g.url + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("gitea web exited:\n%s", g.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea web not ready in 90s (%v):\n%s", err, g.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return g
}

// tail is the end of the server's output, for failures.
func (g *gitea) tail() string {
	b, _ := os.ReadFile(g.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// api calls Gitea's API v1 as the admin; out, when not nil, receives the
// JSON answer. It returns the status.
func (g *gitea) api(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.url+"/api/v1"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+g.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// pull is the part of Gitea's pull request JSON the test reads.
type pull struct {
	Number int64  `json:"number"`
	URL    string `json:"html_url"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	Head   struct {
		Ref string `json:"ref"`
		Sha string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (g *gitea) openPulls(t *testing.T) []pull {
	t.Helper()
	var prs []pull
	if code := g.api(t, "GET", "/repos/gitpeer/peering/pulls?state=open&limit=50", nil, &prs); code != http.StatusOK {
		t.Fatalf("list pull requests: %d", code)
	}
	return prs
}

func (g *gitea) pull(t *testing.T, n int64) pull {
	t.Helper()
	var pr pull
	if code := g.api(t, "GET", fmt.Sprintf("/repos/gitpeer/peering/pulls/%d", n), nil, &pr); code != http.StatusOK {
		t.Fatalf("get pull request %d: %d", n, code)
	}
	return pr
}

// onlyPull is the one open pull request, which must go from head to main.
func (g *gitea) onlyPull(t *testing.T, head string) pull {
	t.Helper()
	prs := g.openPulls(t)
	if len(prs) != 1 {
		t.Fatalf("%d open pull requests, want exactly 1: %+v", len(prs), prs)
	}
	if pr := prs[0]; pr.Head.Ref != head || pr.Base.Ref != "main" {
		t.Fatalf("pull request #%d goes from %s to %s, want %s to main", pr.Number, pr.Head.Ref, pr.Base.Ref, head)
	}
	return prs[0]
}

// stateDir is where a test keeps cluster id's file backend under root.
func stateDir(root, id string) string { return filepath.Join(root, "state", id) }

// seedPeering makes the repo as admins do: a repo "peering" on g, the spec
// peering alpha with beta, gitpeer init of both (state under
// stateDir(root, id)), committed in root/work and pushed to main. It
// returns the repo's URL and the work tree.
func (g *gitea) seedPeering(t *testing.T, gp, root string) (repoURL, work string) {
	t.Helper()
	if code := g.api(t, "POST", "/user/repos", map[string]any{"name": "peering", "default_branch": "main", "private": true}, nil); code != http.StatusCreated {
		t.Fatalf("create repo: %d", code)
	}
	repoURL = g.url + "/gitpeer/peering.git"
	work = filepath.Join(root, "work")
	g.git(t, root, "init", "--quiet", "--initial-branch=main", work)
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alpha", "beta"} {
		if out, err := exec.Command(gp, "init", "--cluster", id, "--api-server", "https://"+id+".example:6443",
			"--state-dir", stateDir(root, id), "--repo", work).CombinedOutput(); err != nil {
			t.Fatalf("gitpeer init %s: %v\n%s", id, err, out)
		}
	}
	g.git(t, work, "add", "-A")
	g.git(t, work, "commit", "--quiet", "-m", "peer alpha with beta")
	g.git(t, work, "push", "--quiet", repoURL, "main")
	return repoURL, work
}

// credentials writes the reconcilers' Git credentials under root/creds, as
// Flux's Git Secret keys: the token as the password, and g's CA.
func (g *gitea) credentials(t *testing.T, root string) string {
	t.Helper()
	creds := filepath.Join(root, "creds")
	if err := os.MkdirAll(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"username": g.user, "password": g.token, "ca.crt": string(g.ca)} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return creds
}

// git runs the git CLI in dir, trusting the server's CA and sending the
// admin's token.
func (g *gitea) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(g.user + ":" + g.token))
	cmd := testgit.Command(dir, append([]string{"-c", "http.extraHeader=Authorization: Basic " + auth}, args...)...)
	// GIT_SSL_CAINFO, not http.sslCAInfo: an environment that sets the
	// variable (CI images do) overrides the config.
	cmd.Env = append(cmd.Env, "GIT_SSL_CAINFO="+g.caFile, "GIT_AUTHOR_NAME=Ann Reviewer", "GIT_AUTHOR_EMAIL=ann@example.org",
		"GIT_COMMITTER_NAME=Ann Reviewer", "GIT_COMMITTER_EMAIL=ann@example.org", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitpeerBin is GITPEER_E2E_BIN (make e2e builds bin/gitpeer), else a
// build of ./cmd/gitpeer.
func gitpeerBin(t *testing.T) string {
	t.Helper()
	bin, err := e2eharness.GitpeerBinary(context.Background(), filepath.Join("..", "..", ".."), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

const spec = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`

// TestReviewBranchesArePullRequestsOnGitea: each reconciler's proposal is
// exactly one pull request, opened, updated when the proposal changes, left
// alone when a person commits on its branch; merged with each of Gitea's
// merge styles, the next pass reads the merged main.
func TestReviewBranchesArePullRequestsOnGitea(t *testing.T) {
	g := startGitea(t)
	gp := gitpeerBin(t)
	root := t.TempDir()

	repoURL, work := g.seedPeering(t, gp, root)
	state := func(id string) string { return stateDir(root, id) }
	// Gitea marks a repo no longer empty in a queue after the push, and
	// answers its pull-request API with 404 until then.
	deadline := time.Now().Add(time.Minute)
	for {
		var repo struct {
			Empty bool `json:"empty"`
		}
		if g.api(t, "GET", "/repos/gitpeer/peering", nil, &repo) == http.StatusOK && !repo.Empty {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Gitea still says the repo is empty a minute after the push")
		}
		time.Sleep(100 * time.Millisecond)
	}

	creds := g.credentials(t, root)
	reconcile := func(t *testing.T, id string, extraEnv ...string) (code int, stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, gp, "reconcile", "--once", "--cluster", id, "--repo", repoURL,
			"--state-dir", state(id), "--git-credentials", creds, "--push-branch", "gitpeer/{cluster}",
			"--open-pull-request", "--forge", "gitea", "--forge-url", g.url)
		cmd.Env = append(os.Environ(), "GITPEER_FORGE_TOKEN=")
		cmd.Env = append(cmd.Env, extraEnv...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if err != nil && cmd.ProcessState == nil {
			t.Fatalf("reconcile %s: %v", id, err)
		}
		return cmd.ProcessState.ExitCode(), o.String(), e.String()
	}
	mustReconcile := func(t *testing.T, id string) string {
		t.Helper()
		code, out, stderr := reconcile(t, id)
		if code != 0 {
			t.Fatalf("reconcile %s: exit %d\n%s\n%s", id, code, out, stderr)
		}
		return out
	}
	branchHead := func(t *testing.T, branch string) string {
		t.Helper()
		out := g.git(t, root, "ls-remote", repoURL, "refs/heads/"+branch)
		sha, _, _ := strings.Cut(out, "\t")
		return sha
	}
	prLine := func(t *testing.T, out string, actions ...string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^  pull request: (` + regexp.QuoteMeta(g.url) + `/gitpeer/peering/pulls/\d+) \((\w+)\)$`).FindStringSubmatch(out)
		if m == nil || !slices.Contains(actions, m[2]) {
			t.Fatalf("reconcile printed no `pull request: URL (%s)` line:\n%s", strings.Join(actions, "|"), out)
		}
		return m[1]
	}

	t.Run("a token the host refuses fails the pass after the push, saying so", func(t *testing.T) {
		code, out, stderr := reconcile(t, "alpha", "GITPEER_FORGE_TOKEN=0000000000000000000000000000000000000000")
		if code == 0 {
			t.Fatalf("exit 0 with a bad token:\n%s", out)
		}
		if !strings.Contains(out, "alpha: proposed") || !strings.Contains(out, "on branch gitpeer/alpha") {
			t.Errorf("the pushed branch is not reported:\n%s", out)
		}
		for _, want := range []string{"branch gitpeer/alpha is pushed, its pull request is not", "--open-pull-request: gitea: list pull requests: 401 Unauthorized",
			"the host refused the token from $GITPEER_FORGE_TOKEN"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if prs := g.openPulls(t); len(prs) != 0 {
			t.Errorf("%d pull requests opened with a bad token", len(prs))
		}
	})

	t.Run("an API URL with no Gitea behind it is a 404 naming the flags", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, gp, "reconcile", "--once", "--cluster", "alpha", "--repo", repoURL,
			"--state-dir", state("alpha"), "--git-credentials", creds, "--push-branch", "gitpeer/{cluster}",
			"--open-pull-request", "--forge", "gitea", "--forge-url", g.url+"/nothing").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "404 Not Found") || !strings.Contains(string(out), "check --repo, --forge and --forge-url") {
			t.Fatalf("%v:\n%s", err, out)
		}
	})

	var first pull
	t.Run("the first proposal opens one pull request", func(t *testing.T) {
		out := mustReconcile(t, "alpha")
		url := prLine(t, out, "opened")
		first = g.onlyPull(t, "gitpeer/alpha")
		if url != first.URL {
			t.Errorf("printed %s, Gitea says %s", url, first.URL)
		}
		head := branchHead(t, "gitpeer/alpha")
		if first.Head.Sha != head || first.Title != "alpha: update status" ||
			!strings.Contains(first.Body, "<!-- gitpeer:proposal -->") || !strings.Contains(first.Body, head[:12]) ||
			!strings.Contains(first.Body, "`clusters/alpha/status.yaml`") {
			t.Errorf("pull request %+v\nwant head %s, the commit's subject as title, its files in the body", first, head)
		}
		// The same proposal again, a second later (its manifests would be
		// signed with a later sequence, its conditions dated anew): the
		// branch and its pull request are left alone.
		time.Sleep(1100 * time.Millisecond)
		if again := mustReconcile(t, "alpha"); prLine(t, again, "unchanged") != first.URL {
			t.Error("the same proposal went to another pull request")
		}
		if head := branchHead(t, "gitpeer/alpha"); head != first.Head.Sha {
			t.Errorf("the same proposal was rebuilt: gitpeer/alpha %s, was %s", head, first.Head.Sha)
		}
		first = g.onlyPull(t, "gitpeer/alpha")
		if head := branchHead(t, "gitpeer/alpha"); first.Head.Sha != head || !strings.Contains(first.Body, head[:12]) {
			t.Errorf("pull request %+v does not name the branch's head %s", first, head)
		}
	})

	t.Run("a changed spec updates the same pull request", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(strings.Replace(spec, `provider: "beta"}`,
			`provider: "beta", slices: [{name: "small", resources: {cpu: "1", memory: "1Gi"}}]}`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		g.git(t, work, "commit", "--quiet", "-am", "alpha asks beta for a slice")
		g.git(t, work, "push", "--quiet", repoURL, "main")
		out := mustReconcile(t, "alpha")
		if prLine(t, out, "updated") != first.URL {
			t.Fatalf("updated another pull request than %s:\n%s", first.URL, out)
		}
		pr := g.onlyPull(t, "gitpeer/alpha")
		head := branchHead(t, "gitpeer/alpha")
		if pr.Number != first.Number || pr.Head.Sha != head || !strings.Contains(pr.Body, head[:12]) || strings.Contains(pr.Body, first.Head.Sha[:12]) {
			t.Errorf("pull request %+v: want #%d on %s, its body naming the new commit only", pr, first.Number, head)
		}
		first = pr
	})

	t.Run("a person's commit on the branch stops the pass and leaves the pull request alone", func(t *testing.T) {
		clone := filepath.Join(root, "ann")
		g.git(t, root, "clone", "--quiet", "--branch", "gitpeer/alpha", repoURL, clone)
		if err := os.WriteFile(filepath.Join(clone, "NOTE.md"), []byte("Ann was here\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		g.git(t, clone, "add", "NOTE.md")
		g.git(t, clone, "commit", "--quiet", "-m", "a reviewer's note")
		g.git(t, clone, "push", "--quiet", "origin", "gitpeer/alpha")
		human := g.git(t, clone, "rev-parse", "HEAD")

		code, out, stderr := reconcile(t, "alpha")
		if code == 0 {
			t.Fatalf("exit 0 over a person's commit:\n%s", out)
		}
		if want := "branch gitpeer/alpha has commit " + human[:12] + " by Ann Reviewer <ann@example.org> that gitpeer did not make"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
		if strings.Contains(out, "pull request:") {
			t.Errorf("the pull request was touched:\n%s", out)
		}
		pr := g.onlyPull(t, "gitpeer/alpha")
		if pr.Number != first.Number || pr.Title != first.Title || pr.Body != first.Body || branchHead(t, "gitpeer/alpha") != human {
			t.Errorf("pull request %+v changed, or the branch moved off %s", pr, human)
		}
		// Ann takes her commit back.
		g.git(t, clone, "push", "--quiet", "--force", "origin", first.Head.Sha+":refs/heads/gitpeer/alpha")
		if out := mustReconcile(t, "alpha"); prLine(t, out, "unchanged") != first.URL {
			t.Errorf("after the reset:\n%s", out)
		}
	})

	// Each merge style, as Gitea does it, with what happens to the signed
	// proposal; then the next pass of the proposer reads the merged main.
	merge := func(t *testing.T, id, style string) (proposed, tip string) {
		t.Helper()
		branch := "gitpeer/" + id
		pr := g.onlyPull(t, branch)
		proposed = branchHead(t, branch)
		// Gitea checks a pushed pull request's mergeability in the
		// background and refuses to merge (405) until it has.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			code := g.api(t, "POST", fmt.Sprintf("/repos/gitpeer/peering/pulls/%d/merge", pr.Number), map[string]any{"Do": style}, nil)
			if code == http.StatusOK {
				break
			}
			if code != http.StatusMethodNotAllowed || time.Now().After(deadline) {
				t.Fatalf("merge #%d with %s: %d", pr.Number, style, code)
			}
		}
		if !g.pull(t, pr.Number).Merged {
			t.Fatalf("#%d not merged", pr.Number)
		}
		g.git(t, work, "pull", "--quiet", "--ff-only", repoURL, "main")
		tip = g.git(t, work, "rev-parse", "HEAD")

		out := mustReconcile(t, id)
		if !strings.Contains(out, id+": up to date; deleted branch "+branch+": nothing left to propose") {
			t.Errorf("the pass after the %s merge:\n%s", style, out)
		}
		if prs := g.openPulls(t); len(prs) != 0 {
			t.Errorf("open pull requests after the merge and the pass: %+v", prs)
		}
		return proposed, tip
	}
	signed := func(t *testing.T, commit string) bool {
		t.Helper()
		return strings.Contains(g.git(t, work, "cat-file", "commit", commit), "\ngpgsig -----BEGIN SSH SIGNATURE-----")
	}

	t.Run("merge commit: the signed proposal is the merge's second parent", func(t *testing.T) {
		proposed, tip := merge(t, "alpha", "merge")
		if parent := g.git(t, work, "rev-parse", tip+"^2"); parent != proposed {
			t.Errorf("main^2 = %s, want the proposal %s", parent, proposed)
		}
		if !signed(t, proposed) {
			t.Error("the proposal is not signed")
		}
		if signed(t, tip) {
			t.Error("Gitea signed its merge commit, with no signing key configured")
		}
	})

	t.Run("squash: a new commit by Gitea, the proposal is not on main", func(t *testing.T) {
		out := mustReconcile(t, "beta")
		prLine(t, out, "opened")
		proposed, tip := merge(t, "beta", "squash")
		if tip == proposed || signed(t, tip) {
			t.Errorf("main's tip %s after a squash: want a new unsigned commit, not the proposal %s", tip, proposed)
		}
		if err := testgit.Command(work, "merge-base", "--is-ancestor", proposed, tip).Run(); err == nil {
			t.Error("the squashed proposal is on main")
		}
	})

	for _, style := range []string{"rebase", "fast-forward-only"} {
		id := map[string]string{"rebase": "alpha", "fast-forward-only": "beta"}[style]
		t.Run(style+": the proposal, already on main's tip, lands as it is, signature included", func(t *testing.T) {
			out := mustReconcile(t, id)
			prLine(t, out, "opened")
			proposed, tip := merge(t, id, style)
			if tip != proposed || !signed(t, tip) {
				t.Errorf("main's tip %s after a %s merge: want the signed proposal %s itself", tip, style, proposed)
			}
		})
	}
}
