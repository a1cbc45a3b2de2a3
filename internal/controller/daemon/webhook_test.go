package daemon

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const hookSecret = "hook-secret-3f9a"

// hmacHex is the hex HMAC-SHA256 of body with secret, as hosts sign.
func hmacHex(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func payload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhook", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed are the headers each host sends with body, signed with secret.
func signed(host, secret string, body []byte) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	switch host {
	case "github":
		h.Set("X-GitHub-Event", "push")
		h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, body))
	case "gitea":
		h.Set("X-Gitea-Event", "push")
		h.Set("X-Gitea-Signature", hmacHex(secret, body))
		// Gitea signs for GitHub's receivers too.
		h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, body))
	case "forgejo":
		h.Set("X-Forgejo-Event", "push")
		h.Set("X-Forgejo-Signature", hmacHex(secret, body))
	case "gitlab":
		h.Set("X-Gitlab-Event", "Push Hook")
		h.Set("X-Gitlab-Token", secret)
	}
	return h
}

// hookServer serves a Webhook watching refs/heads/main; wakes counts its
// wake-ups, lines its log lines.
func hookServer(t *testing.T) (srv *httptest.Server, wakes func() int, lines *logs) {
	lines, log := newLogs(t)
	var mu sync.Mutex
	n := 0
	h := &Webhook{Secret: []byte(hookSecret), Refs: []string{"refs/heads/main"}, Log: log, Wake: func(source string) {
		if source != WakeWebhook {
			t.Errorf("woken as %q", source)
		}
		mu.Lock()
		n++
		mu.Unlock()
	}}
	srv = httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }, lines
}

func post(t *testing.T, srv *httptest.Server, hdr http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+WebhookPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestAVerifiedPushToTheBranchWakesTheDaemon: each host's push event,
// signed as the host signs it, asks for a pass.
func TestAVerifiedPushToTheBranchWakesTheDaemon(t *testing.T) {
	for _, c := range []struct{ host, file string }{
		{"github", "github-push.json"}, {"gitlab", "gitlab-push.json"}, {"gitea", "gitea-push.json"}, {"forgejo", "gitea-push.json"},
	} {
		t.Run(c.host, func(t *testing.T) {
			srv, wakes, lines := hookServer(t)
			body := payload(t, c.file)
			code, msg := post(t, srv, signed(c.host, hookSecret, body), body)
			if code != http.StatusAccepted || wakes() != 1 {
				t.Fatalf("%d %q, %d wake-ups; want 202 and one", code, msg, wakes())
			}
			var found bool
			for _, l := range lines.all() {
				if l.msg() == "webhook push" && l["host"] == c.host && l["ref"] == "refs/heads/main" && l["after"] == "9c4f4f6a3cd8b5e0e53b9a5f1c5d2d7fe0f6c0b1" {
					found = true
				}
			}
			if !found {
				t.Errorf("no log line naming the host, ref and commit: %v", lines.all())
			}
		})
	}
}

// TestARealGiteaDeliveryWakesTheDaemon: a push event exactly as Gitea
// 1.26.0 delivered it (testdata/webhook/README.md), its body and headers
// verbatim with Gitea's own signature, wakes the daemon; the same bytes
// under another secret, or changed by one byte, do not.
func TestARealGiteaDeliveryWakesTheDaemon(t *testing.T) {
	const capturedSecret, capturedAfter = "gitpeer-e2e-webhook-secret", "d86e7e878fd20c04c677c1df3e5b783150b829b6"
	body := payload(t, "gitea-push-captured.json")
	var headers map[string]string
	if err := json.Unmarshal(payload(t, "gitea-push-captured.headers.json"), &headers); err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	for k, v := range headers {
		hdr.Set(k, v)
	}
	deliver := func(t *testing.T, secret string, body []byte) (code int, wakes int, lines *logs) {
		lines, log := newLogs(t)
		n := 0
		srv := httptest.NewServer(&Webhook{Secret: []byte(secret), Refs: []string{"refs/heads/main"}, Log: log, Wake: func(string) { n++ }})
		defer srv.Close()
		code, _ = post(t, srv, hdr.Clone(), body)
		return code, n, lines
	}
	code, wakes, lines := deliver(t, capturedSecret, body)
	if code != http.StatusAccepted || wakes != 1 {
		t.Fatalf("%d, %d wake-ups; want 202 and one", code, wakes)
	}
	var found bool
	for _, l := range lines.all() {
		found = found || l.msg() == "webhook push" && l["host"] == "gitea" && l["ref"] == "refs/heads/main" && l["after"] == capturedAfter
	}
	if !found {
		t.Errorf("no `webhook push` line for gitea, refs/heads/main, %s: %v", capturedAfter, lines.all())
	}
	if code, wakes, _ := deliver(t, hookSecret, body); code != http.StatusForbidden || wakes != 0 {
		t.Errorf("under another secret: %d, %d wake-ups; want 403 and none", code, wakes)
	}
	changed := bytes.Replace(body, []byte("peer gamma with alpha"), []byte("peer gamma with alphA"), 1)
	if bytes.Equal(changed, body) {
		t.Fatal("the captured payload lacks its commit message")
	}
	if code, wakes, _ := deliver(t, capturedSecret, changed); code != http.StatusForbidden || wakes != 0 {
		t.Errorf("a changed body: %d, %d wake-ups; want 403 and none", code, wakes)
	}
}

// TestGitHubsFormEncodedPushIsRead: GitHub's other content type puts the
// JSON in a payload field, and signs the form body.
func TestGitHubsFormEncodedPushIsRead(t *testing.T) {
	srv, wakes, _ := hookServer(t)
	body := []byte("payload=" + url.QueryEscape(string(payload(t, "github-push.json"))))
	hdr := signed("github", hookSecret, body)
	hdr.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, msg := post(t, srv, hdr, body); code != http.StatusAccepted || wakes() != 1 {
		t.Fatalf("%d %q, %d wake-ups", code, msg, wakes())
	}
}

// TestWebhookRefusals: what is not a verified push to the branch wakes
// nothing, and each refusal says why, in the answer and in one log line.
func TestWebhookRefusals(t *testing.T) {
	body := payload(t, "github-push.json")
	other := bytes.Replace(body, []byte(`"refs/heads/main"`), []byte(`"refs/heads/feature"`), 1)
	tampered := bytes.Replace(body, []byte("Peer gamma"), []byte("Peer GAMMA"), 1)
	for _, c := range []struct {
		name   string
		method string
		hdr    http.Header
		body   []byte
		code   int
		reason string
	}{
		{"no signature at all", "", http.Header{"X-GitHub-Event": {"push"}}, body, http.StatusUnauthorized, "Unsigned"},
		{"a GitHub signature with another secret", "", signed("github", "not-the-secret", body), body, http.StatusForbidden, "BadSignature"},
		{"a GitHub body changed after signing", "", signed("github", hookSecret, body), tampered, http.StatusForbidden, "BadSignature"},
		{"a GitHub signature without sha256=", "", http.Header{"X-GitHub-Event": {"push"}, "X-Hub-Signature-256": {hmacHex(hookSecret, body)}}, body, http.StatusForbidden, "BadSignature"},
		{"a Gitea signature with another secret", "", signed("gitea", "not-the-secret", body), body, http.StatusForbidden, "BadSignature"},
		{"a Gitea signature that is not hex", "", http.Header{"X-Gitea-Event": {"push"}, "X-Gitea-Signature": {"zz"}}, body, http.StatusForbidden, "BadSignature"},
		{"a GitLab token that is not the secret", "", signed("gitlab", "not-the-secret", body), body, http.StatusForbidden, "BadSignature"},
		{"a GET", http.MethodGet, signed("github", hookSecret, body), body, http.StatusMethodNotAllowed, "MethodNotAllowed"},
		{"a body over the cap", "", signed("github", hookSecret, bytes.Repeat([]byte(" "), MaxWebhookBody+1)), bytes.Repeat([]byte(" "), MaxWebhookBody+1), http.StatusRequestEntityTooLarge, "TooLarge"},
		{"a signed body that is not a push event", "", signed("github", hookSecret, []byte(`{"zen":"x"}`)), []byte(`{"zen":"x"}`), http.StatusBadRequest, "NotAPushEvent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, wakes, lines := hookServer(t)
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, srv.URL+WebhookPath, bytes.NewReader(c.body))
			req.Header = c.hdr
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != c.code || wakes() != 0 {
				t.Fatalf("%d %q, %d wake-ups; want %d and none", res.StatusCode, msg, wakes(), c.code)
			}
			var refused []logLine
			for _, l := range lines.all() {
				if l.msg() == "webhook refused" {
					refused = append(refused, l)
				}
			}
			if len(refused) != 1 || refused[0]["reason"] != c.reason || refused[0]["status"] != float64(c.code) {
				t.Errorf("log lines %v, want one refusal with reason %s", lines.all(), c.reason)
			}
			if strings.Contains(string(msg), hookSecret) {
				t.Error("the answer holds the secret")
			}
		})
	}
	t.Run("a verified push to another branch, or another event, is answered and ignored", func(t *testing.T) {
		srv, wakes, _ := hookServer(t)
		if code, _ := post(t, srv, signed("github", hookSecret, other), other); code != http.StatusOK {
			t.Errorf("push to another branch: %d, want 200", code)
		}
		hdr := signed("github", hookSecret, body)
		hdr.Set("X-GitHub-Event", "issues")
		if code, _ := post(t, srv, hdr, body); code != http.StatusOK {
			t.Errorf("another event: %d, want 200", code)
		}
		hdr.Set("X-GitHub-Event", "ping")
		if code, msg := post(t, srv, hdr, body); code != http.StatusOK || !strings.Contains(msg, "pong") {
			t.Errorf("ping: %d %q", code, msg)
		}
		if wakes() != 0 {
			t.Errorf("%d wake-ups, want none", wakes())
		}
	})
	t.Run("a receiver without a secret refuses everything", func(t *testing.T) {
		lines, log := newLogs(t)
		srv := httptest.NewServer(&Webhook{Refs: []string{"refs/heads/main"}, Log: log, Wake: func(string) { t.Error("woken") }})
		defer srv.Close()
		if code, _ := post(t, srv, signed("github", "", body), body); code != http.StatusForbidden {
			t.Errorf("%d, want 403", code)
		}
		_ = lines
	})
}

func TestParsePushEventReadsTheRef(t *testing.T) {
	for file, want := range map[string]string{"github-push.json": "refs/heads/main", "gitlab-push.json": "refs/heads/main", "gitea-push.json": "refs/heads/main"} {
		ev, err := ParsePushEvent("application/json", payload(t, file))
		if err != nil || ev.Ref != want || ev.After != "9c4f4f6a3cd8b5e0e53b9a5f1c5d2d7fe0f6c0b1" {
			t.Errorf("%s: %+v, %v", file, ev, err)
		}
	}
	if ev, err := ParsePushEvent("application/json", payload(t, "gitea-push-captured.json")); err != nil || ev.Ref != "refs/heads/main" || ev.After != "d86e7e878fd20c04c677c1df3e5b783150b829b6" {
		t.Errorf("gitea-push-captured.json: %+v, %v", ev, err)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"ref": 3}`, `{"ref": "main"}`, `{"ref": "refs/heads/a b"}`, `{`} {
		if ev, err := ParsePushEvent("application/json", []byte(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, ev)
		}
	}
}

// FuzzParsePushEvent: any body, under either content type, is a push event
// with a full ref name or an error, never a panic.
func FuzzParsePushEvent(f *testing.F) {
	for _, name := range []string{"github-push.json", "gitlab-push.json", "gitea-push.json", "gitea-push-captured.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "webhook", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(false, b)
		f.Add(true, []byte("payload="+url.QueryEscape(string(b))))
	}
	f.Add(false, []byte(`{"ref":"refs/heads/main"}`))
	f.Fuzz(func(t *testing.T, form bool, body []byte) {
		ct := "application/json"
		if form {
			ct = "application/x-www-form-urlencoded"
		}
		ev, err := ParsePushEvent(ct, body)
		if err == nil && (!strings.HasPrefix(ev.Ref, "refs/") || strings.ContainsAny(ev.Ref, "\x00\n\r ")) {
			t.Fatalf("accepted ref %q", ev.Ref)
		}
	})
}

// TestASecretThatCannotBeReadRefusesTheRequest: with SecretFrom, a secret
// file gone (a Secret deleted) refuses every request with 503 and wakes
// nothing, rather than verifying against an old or empty secret.
func TestASecretThatCannotBeReadRefusesTheRequest(t *testing.T) {
	_, log := newLogs(t)
	woken := 0
	h := &Webhook{Secret: []byte(hookSecret), Refs: []string{"refs/heads/main"}, Log: log, Wake: func(string) { woken++ },
		SecretFrom: func() ([]byte, error) {
			return nil, errors.New("open /etc/gitpeer/webhook/secret: no such file or directory")
		}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	body := payload(t, "gitea-push.json")
	if code, msg := post(t, srv, signed("gitea", hookSecret, body), body); code != http.StatusServiceUnavailable || woken != 0 {
		t.Fatalf("%d %q, %d wake-ups; want 503 and none", code, msg, woken)
	}
}
