package daemon

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// WebhookPath is where Webhook is served on --webhook-addr.
const WebhookPath = "/hook"

// MaxWebhookBody bounds the body of a push event Webhook reads (GitHub
// caps its payloads at 25 MB; a push of many commits to a spec repo is a
// few kB): a longer one is refused, 413, before it is verified.
const MaxWebhookBody = 1 << 20

// webhookReadTimeout bounds reading one request's body.
const webhookReadTimeout = 10 * time.Second

// Webhook receives a Git host's push events and wakes the daemon for a
// push to one of Refs, as Flux's notification-controller Receiver does
// for its github, gitlab and gitea types. A request is verified before
// anything of its body is read as JSON:
//
//   - GitHub: X-Hub-Signature-256, "sha256=" and the hex HMAC-SHA256 of the
//     body with Secret; event X-GitHub-Event "push" ("ping" is answered);
//   - Gitea and Forgejo: X-Gitea-Signature or X-Forgejo-Signature, the hex
//     HMAC-SHA256 of the body; event X-Gitea-Event or X-Forgejo-Event
//     "push" (they send X-Hub-Signature-256 too: theirs is read first);
//   - GitLab: X-Gitlab-Token equal to Secret (compared in constant time);
//     event X-Gitlab-Event "Push Hook".
//
// Answers: 202 when a pass was asked for; 200 for a verified event that
// asks for none (another event, another branch); 401 without any of those
// headers, 403 with a signature or token that does not match, 400 for a
// body that is not a push event, 405 for a method other than POST, 413
// for a body over MaxWebhookBody. Each refusal is one log line saying why;
// nothing of a request that fails verification is logged but its host
// kind and remote address.
type Webhook struct {
	// Secret is the shared secret of the host's webhook; empty refuses
	// every request.
	Secret []byte
	// SecretFrom, when set, is called for each request instead of using
	// Secret (a file a rotated Kubernetes Secret updates in place, read
	// again each time: no restart to take up a new secret). An error
	// refuses the request with 503.
	SecretFrom func() ([]byte, error)
	// Refs are the full ref names whose pushes wake the daemon, e.g.
	// refs/heads/main.
	Refs []string
	// Wake is called with WakeWebhook for a verified push to one of Refs
	// (Daemon.Wake).
	Wake func(source string)
	// Log receives one line per request.
	Log logr.Logger
}

// A push event as the three hosts send it: the pushed ref, full name, at
// the top level of the JSON body (GitHub, GitLab, Gitea and Forgejo
// agree on it).
type pushEvent struct {
	Ref   string `json:"ref"`
	After string `json:"after"`
}

// ServeHTTP implements http.Handler.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.Log.WithValues("remote", r.RemoteAddr)
	refuse := func(code int, reason, msg string) {
		log.Info("webhook refused", "status", code, "reason", reason, "message", msg)
		http.Error(w, msg, code)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, "MethodNotAllowed", "only POST is accepted")
		return
	}
	host, check := h.verifier(r.Header)
	if check == nil {
		refuse(http.StatusUnauthorized, "Unsigned", "no X-Hub-Signature-256, X-Gitea-Signature, X-Forgejo-Signature or X-Gitlab-Token header")
		return
	}
	log = log.WithValues("host", host)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(webhookReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refuse(http.StatusRequestEntityTooLarge, "TooLarge", fmt.Sprintf("body over %d bytes", MaxWebhookBody))
		return
	case err != nil:
		refuse(http.StatusBadRequest, "Unreadable", "reading the body: "+err.Error())
		return
	}
	secret := h.Secret
	if h.SecretFrom != nil {
		if secret, err = h.SecretFrom(); err != nil {
			refuse(http.StatusServiceUnavailable, "NoSecret", "reading this receiver's secret: "+err.Error())
			return
		}
	}
	if len(secret) == 0 {
		refuse(http.StatusForbidden, "NoSecret", "this receiver has no secret configured")
		return
	}
	if why := check(body, secret); why != "" {
		refuse(http.StatusForbidden, "BadSignature", why)
		return
	}
	event := eventName(host, r.Header)
	switch {
	case host == "github" && event == "ping":
		log.Info("webhook ping")
		fmt.Fprintln(w, "pong")
		return
	case !isPushEvent(host, event):
		log.V(1).Info("webhook ignored", "event", event)
		fmt.Fprintf(w, "ignored: event %q is not a push\n", event)
		return
	}
	ev, err := ParsePushEvent(r.Header.Get("Content-Type"), body)
	if err != nil {
		refuse(http.StatusBadRequest, "NotAPushEvent", err.Error())
		return
	}
	if !slices.Contains(h.Refs, ev.Ref) {
		log.V(1).Info("webhook ignored", "ref", ev.Ref)
		fmt.Fprintf(w, "ignored: %s is not watched\n", ev.Ref)
		return
	}
	log.Info("webhook push", "ref", ev.Ref, "after", ev.After)
	if h.Wake != nil {
		h.Wake(WakeWebhook)
	}
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintln(w, "pass requested")
}

// verifier is the host kind of a request's headers and the check of its
// body with the receiver's secret, nil when it carries no signature or
// token gitpeer knows. A check returns why the body fails, "" when it
// passes.
func (h *Webhook) verifier(hdr http.Header) (string, func(body, secret []byte) string) {
	hexMAC := func(name, sig string, prefix string) func(body, secret []byte) string {
		return func(body, secret []byte) string {
			got, ok := strings.CutPrefix(sig, prefix)
			if !ok {
				return fmt.Sprintf("%s does not start with %q", name, prefix)
			}
			want := hmac.New(sha256.New, secret)
			want.Write(body)
			mac, err := hex.DecodeString(got)
			if err != nil || !hmac.Equal(mac, want.Sum(nil)) {
				return name + " does not match the body's HMAC-SHA256 with this receiver's secret"
			}
			return ""
		}
	}
	switch {
	case hdr.Get("X-Forgejo-Signature") != "":
		return "forgejo", hexMAC("X-Forgejo-Signature", hdr.Get("X-Forgejo-Signature"), "")
	case hdr.Get("X-Gitea-Signature") != "":
		return "gitea", hexMAC("X-Gitea-Signature", hdr.Get("X-Gitea-Signature"), "")
	case hdr.Get("X-Hub-Signature-256") != "":
		return "github", hexMAC("X-Hub-Signature-256", hdr.Get("X-Hub-Signature-256"), "sha256=")
	case hdr.Get("X-Gitlab-Token") != "":
		token := hdr.Get("X-Gitlab-Token")
		return "gitlab", func(_, secret []byte) string {
			if subtle.ConstantTimeCompare([]byte(token), secret) != 1 {
				return "X-Gitlab-Token is not this receiver's secret"
			}
			return ""
		}
	}
	return "", nil
}

// eventName is the event header of host.
func eventName(host string, hdr http.Header) string {
	switch host {
	case "github":
		return hdr.Get("X-GitHub-Event")
	case "gitlab":
		return hdr.Get("X-Gitlab-Event")
	case "forgejo":
		if e := hdr.Get("X-Forgejo-Event"); e != "" {
			return e
		}
	}
	return hdr.Get("X-Gitea-Event")
}

// isPushEvent reports whether event is host's name of a push event.
func isPushEvent(host, event string) bool {
	if host == "gitlab" {
		return event == "Push Hook"
	}
	return event == "push"
}

// ParsePushEvent reads the pushed ref (and the commit it now points at)
// from a push event's body: JSON, or for GitHub's form content type
// (application/x-www-form-urlencoded) the JSON in its payload field. It
// fails when the body is neither, or names no ref under refs/.
func ParsePushEvent(contentType string, body []byte) (PushEvent, error) {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return PushEvent{}, fmt.Errorf("push event: form body: %w", err)
		}
		body = []byte(form.Get("payload"))
	}
	var ev pushEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&ev); err != nil {
		return PushEvent{}, fmt.Errorf("push event: %w", err)
	}
	if !strings.HasPrefix(ev.Ref, "refs/") || strings.ContainsAny(ev.Ref, "\x00\n\r ") {
		return PushEvent{}, fmt.Errorf("push event: ref %q is not a full ref name (refs/heads/<branch>)", truncate(ev.Ref))
	}
	return PushEvent(ev), nil
}

// PushEvent is what ParsePushEvent reads of a push event.
type PushEvent struct {
	// Ref is the full name of the pushed ref, e.g. refs/heads/main.
	Ref string
	// After is the hash the ref points at after the push ("" when the
	// host did not say).
	After string
}
