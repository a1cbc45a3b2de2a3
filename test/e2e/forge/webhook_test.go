//go:build e2e

package forge

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// captureEnv names a directory: when set, TestGiteaPushWebhookStartsAPass
// writes the push event Gitea delivered (gitea-push-captured.json and
// gitea-push-captured.headers.json) there, for the daemon's unit tests
// (internal/controller/daemon/testdata/webhook).
const captureEnv = "GITPEER_CAPTURE_WEBHOOK_DIR"

// webhookSecret is the secret of the test's webhooks; the captured
// payload's signature in the daemon's testdata is made with it.
const webhookSecret = "gitpeer-e2e-webhook-secret"

// delivery is one request a Gitea webhook made.
type delivery struct {
	header http.Header
	body   []byte
}

// TestGiteaPushWebhookStartsAPass: a daemon that neither polls nor ticks
// (--poll-interval 0, --interval 1h) runs a pass within seconds of a
// person's push to main, because Gitea's own push webhook, signed with the
// webhook's secret, asked for one.
func TestGiteaPushWebhookStartsAPass(t *testing.T) {
	g := startGitea(t)
	gp := gitpeerBin(t)
	root := t.TempDir()

	repoURL, work := g.seedPeering(t, gp, root)
	state := func(id string) string { return stateDir(root, id) }

	creds := g.credentials(t, root)
	secretFile := filepath.Join(root, "webhook-secret")
	if err := os.WriteFile(secretFile, []byte(webhookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A second webhook, to a receiver in this test, keeps what Gitea sends.
	var mu sync.Mutex
	var seen []delivery
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, delivery{r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer capture.Close()

	hookAddr, metricsAddr, healthAddr := testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t)
	for _, url := range []string{"http://" + hookAddr + "/hook", capture.URL + "/hook"} {
		hook := map[string]any{"type": "gitea", "active": true, "events": []string{"push"}, "branch_filter": "main",
			"config": map[string]string{"url": url, "content_type": "json", "secret": webhookSecret}}
		if code := g.api(t, "POST", "/repos/gitpeer/peering/hooks", hook, nil); code != http.StatusCreated {
			t.Fatalf("create the webhook to %s: %d", url, code)
		}
	}

	logFile := filepath.Join(root, "daemon.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	d := exec.Command(gp, "reconcile", "--cluster", "alpha", "--repo", repoURL, "--state-dir", state("alpha"),
		"--git-credentials", creds, "--interval", "1h", "--poll-interval", "0",
		"--webhook-addr", hookAddr, "--webhook-secret-file", secretFile,
		"--metrics-addr", metricsAddr, "--health-addr", healthAddr, "--log-encoding", "json")
	d.Stdout, d.Stderr = lf, lf
	d.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = d.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = d.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = d.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("daemon log:\n%s\ngitea:\n%s", b, g.tail())
		}
	})
	metric := func(series string) float64 {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(string(body))
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	waitFor := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !ok() {
			select {
			case <-exited:
				t.Fatalf("the daemon exited while waiting for %s", what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in %s", what, within)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	head := func() string {
		out := g.git(t, root, "ls-remote", repoURL, "refs/heads/main")
		sha, _, _ := strings.Cut(out, "\t")
		return sha
	}
	// The first pass runs at start; its commit is pushed to main, and
	// Gitea's webhook for that push may start one more.
	waitFor("first committed pass", 2*time.Minute, func() bool { return metric(`gitpeer_passes_total{result="committed"}`) >= 1 })

	// A person's push: gamma joins and asks alpha for a peering, so alpha,
	// its provider, has a nonce to send in its next pass.
	g.git(t, work, "pull", "--quiet", "--ff-only", repoURL, "main")
	if out, err := exec.Command(gp, "init", "--cluster", "gamma", "--api-server", "https://gamma.example:6443",
		"--state-dir", state("gamma"), "--repo", work).CombinedOutput(); err != nil {
		t.Fatalf("gitpeer init gamma: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(`clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma", provider: "alpha"}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	g.git(t, work, "add", "-A")
	g.git(t, work, "commit", "--quiet", "-m", "peer gamma with alpha")
	pushed := time.Now()
	g.git(t, work, "push", "--quiet", repoURL, "main")
	person := g.git(t, work, "rev-parse", "HEAD")

	// Only the webhook can start that pass: its commit lands on top of the
	// person's within seconds.
	var tip string
	waitFor("commit by alpha on top of "+person[:12], 30*time.Second, func() bool {
		if tip = head(); tip == person {
			return false
		}
		g.git(t, work, "fetch", "--quiet", repoURL, "main")
		return testgit.Command(work, "merge-base", "--is-ancestor", person, tip).Run() == nil
	})
	took := time.Since(pushed)
	t.Logf("push to main -> Gitea webhook -> pass -> commit %s on main: %s", tip[:12], took.Round(10*time.Millisecond))
	if n := metric(`gitpeer_wakeups_total{source="webhook"}`); n < 1 {
		t.Errorf("gitpeer_wakeups_total{source=\"webhook\"} = %v, want at least 1", n)
	}
	if n := metric(`gitpeer_wakeups_total{source="poll"}`); n != 0 {
		t.Errorf("gitpeer_wakeups_total{source=\"poll\"} = %v with --poll-interval 0", n)
	}
	if subject := g.git(t, work, "log", "-1", "--format=%s", tip); !strings.HasPrefix(subject, "alpha: ") {
		t.Errorf("main's tip %s is %q, not alpha's commit", tip[:12], subject)
	}
	logs, _ := os.ReadFile(logFile)
	if !regexp.MustCompile(`"msg":"webhook push".*"host":"gitea".*"ref":"refs/heads/main".*"after":"` + person + `"`).Match(logs) {
		t.Errorf("the daemon's log has no `webhook push` line for the person's commit %s", person[:12])
	}

	// What Gitea sent for the person's push, as the receiver saw it.
	var real *delivery
	waitFor("delivery to the test's receiver", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range seen {
			if bytes.Contains(seen[i].body, []byte(`"after": "`+person+`"`)) || bytes.Contains(seen[i].body, []byte(`"after":"`+person+`"`)) {
				real = &seen[i]
				return true
			}
		}
		return false
	})
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write(real.body)
	if got, want := real.header.Get("X-Gitea-Signature"), hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("X-Gitea-Signature %q, want the body's HMAC-SHA256 %q", got, want)
	}
	if e := real.header.Get("X-Gitea-Event"); e != "push" {
		t.Errorf("X-Gitea-Event %q, want push", e)
	}
	if dir := os.Getenv(captureEnv); dir != "" {
		writeCapture(t, dir, real)
	}
}

// writeCapture writes d's body and the headers a receiver reads (those of
// Gitea, GitHub and Gogs it sends, and the content type) into dir.
func writeCapture(t *testing.T, dir string, d *delivery) {
	t.Helper()
	hdr := map[string]string{}
	var names []string
	for name := range d.header {
		l := strings.ToLower(name)
		if strings.HasPrefix(l, "x-") || l == "content-type" || l == "user-agent" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		hdr[name] = d.header.Get(name)
	}
	hb, err := json.MarshalIndent(hdr, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"gitea-push-captured.json": d.body, "gitea-push-captured.headers.json": append(hb, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote the delivery to %s", dir)
}
