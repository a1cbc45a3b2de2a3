package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/testgit"
)

func TestDaemonFlagsAreChecked(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := filepath.Join(root, "state", "alpha")
	base := []string{"reconcile", "--cluster", "alpha", "--repo", remote, "--state-dir", state}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"leader election needs the kubernetes backend", []string{"--leader-elect"}, "--leader-elect needs --backend kubernetes"},
		{"a lease namespace needs the kubernetes backend", []string{"--lease-namespace", "x"}, "--lease-namespace needs --backend kubernetes"},
		{"daemon flags do not apply to --once", []string{"--once", "--metrics-addr", ":0"}, "--metrics-addr does not apply to --once"},
		{"log flags do not apply to --once", []string{"--once", "--log-level", "debug"}, "--log-level does not apply to --once"},
		{"an unknown log encoding", []string{"--log-encoding", "xml"}, `--log-encoding: "xml" is not one of: json, console`},
		{"a metrics address without a port", []string{"--metrics-addr", "notaport"}, `--metrics-addr: "notaport" is not host:port`},
		{"a health address without a port", []string{"--health-addr", "localhost"}, `--health-addr: "localhost" is not host:port`},
		{"an unknown log level", []string{"--log-level", "verbose"}, `--log-level: "verbose" is not one of`},
		{"a zero interval", []string{"--interval", "0s"}, "--interval must be positive"},
		{"a poll interval under a second", []string{"--poll-interval", "100ms"}, "--poll-interval must be 0 (off) or 1s at least"},
		{"a poll interval with --once", []string{"--once", "--poll-interval", "10s"}, "--poll-interval does not apply to --once"},
		{"a webhook without a secret", []string{"--webhook-addr", "127.0.0.1:0"}, "--webhook-addr needs a secret: $GITPEER_WEBHOOK_SECRET is empty"},
		{"a webhook secret file without the webhook", []string{"--webhook-secret-file", "x"}, "--webhook-secret-file needs --webhook-addr"},
		{"an unknown signing format", []string{"--signing-format", "gpg"}, `--signing-format: signing format "gpg" is not one of: ssh, openpgp`},
		{"an unknown signing format with --once", []string{"--once", "--signing-format", "x509"}, `--signing-format: signing format "x509" is not one of: ssh, openpgp`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := gitpeer(t, append(base, c.args...)...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr, c.want)
			}
		})
	}
}

// TestReconcileRunsAsADaemon runs `gitpeer reconcile` without --once, scrapes
// its metrics and probes, and stops it as SIGTERM does (its context ends).
func TestReconcileRunsAsADaemon(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	metricsAddr, healthAddr := testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"reconcile", "--cluster", "alpha", "--repo", remote,
			"--state-dir", filepath.Join(root, "state", "alpha"), "--interval", "50ms",
			"--metrics-addr", metricsAddr, "--health-addr", healthAddr, "--log-level", "error"}, io.Discard, io.Discard)
	}()
	scrape := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	passes := regexp.MustCompile(`(?m)^gitpeer_passes_total\{result="(committed|unchanged)"\} ([1-9]\d*)$`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := scrape("http://" + metricsAddr + "/metrics")
		if code == http.StatusOK && len(passes.FindAllString(body, -1)) == 2 {
			break // alpha committed its first pass, then found nothing to do
		}
		if time.Now().After(deadline) {
			t.Fatalf("no committed and unchanged passes in /metrics: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := scrape("http://" + healthAddr + "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d %s", code, body)
	}
	if code, body := scrape("http://" + healthAddr + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d %s", code, body)
	}
	_, body := scrape("http://" + metricsAddr + "/metrics")
	if !strings.Contains(body, `gitpeer_peering_step{consumer="alpha",provider="beta",role="consumer",step="Pending"} 1`) {
		t.Errorf("alpha's peering is not Pending in /metrics:\n%s", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the context ended, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reconcile did not stop")
	}
}

// TestReconcileRunsAPassOnAVerifiedWebhook runs the daemon with an hour's
// interval and no polling: a Gitea push event signed with the secret of
// --webhook-secret-file runs a pass at once; an unsigned one is refused
// and runs none. A secret rotated in the file is taken up at the next
// request.
func TestReconcileRunsAPassOnAVerifiedWebhook(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	metricsAddr, hookAddr := testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t)
	secretFile := filepath.Join(root, "webhook-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret-hook\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"reconcile", "--cluster", "alpha", "--repo", remote,
			"--state-dir", filepath.Join(root, "state", "alpha"), "--interval", "1h", "--poll-interval", "0",
			"--metrics-addr", metricsAddr, "--webhook-addr", hookAddr, "--webhook-secret-file", secretFile, "--log-level", "error"}, io.Discard, io.Discard)
	}()
	passes := func() int {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		n := 0
		for _, m := range regexp.MustCompile(`(?m)^gitpeer_passes_total\{result="\w+"\} (\d+)$`).FindAllStringSubmatch(string(body), -1) {
			k, _ := strconv.Atoi(m[1])
			n += k
		}
		return n
	}
	waitPasses := func(want int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for passes() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d passes, want %d", passes(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPasses(1)
	body := []byte(`{"ref":"refs/heads/main","after":"` + strings.Repeat("a", 40) + `"}`)
	send := func(sig string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+hookAddr+"/hook", bytes.NewReader(body))
		req.Header.Set("X-Gitea-Event", "push")
		if sig != "" {
			req.Header.Set("X-Gitea-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sign := func(secret string) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hex.EncodeToString(mac.Sum(nil))
	}
	if code := send(""); code != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", code)
	}
	if code := send(sign("s3cret-hook")); code != http.StatusAccepted {
		t.Fatalf("signed: %d, want 202", code)
	}
	waitPasses(2)
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `gitpeer_wakeups_total{source="webhook"} 1`) {
		t.Errorf("want one webhook wake-up (the signed event alone):\n%s", metrics)
	}

	// The secret is rotated in place, as the kubelet updates a mounted
	// Secret: the old one is refused from then on, the new one accepted,
	// with no restart.
	if err := os.WriteFile(secretFile, []byte("rotated-hook\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := send(sign("s3cret-hook")); code != http.StatusForbidden {
		t.Errorf("signed with the secret before the rotation: %d, want 403", code)
	}
	if code := send(sign("rotated-hook")); code != http.StatusAccepted {
		t.Fatalf("signed with the rotated secret: %d, want 202", code)
	}
	waitPasses(3)
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}
