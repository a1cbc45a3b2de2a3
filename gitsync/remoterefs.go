package gitsync

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// RemoteRefs reads, without fetching, where the remote's refs that a Sync
// reads point: Branch and, when set, Applied.Branch, by full ref name
// ("refs/heads/main"), a hex hash, or "" for a ref the remote does not
// have. It costs one ref advertisement (git ls-remote: one HTTP request or
// SSH session, no objects) and shares no state with a Sync running at the
// same time: credentials are asked of Options.Credentials afresh.
//
// A host that refuses for its rate limit (HTTP 429, or 503 with
// Retry-After) is a *RateLimitError saying how long it asked to wait.
func (r *Repo) RemoteRefs(ctx context.Context) (map[string]string, error) {
	var auth transport.AuthMethod
	var ca []byte
	if r.opts.Credentials != nil {
		var err error
		if auth, ca, err = r.opts.Credentials.Transport(); err != nil {
			return nil, fmt.Errorf("credentials for %s: %w", r.opts.URL, err)
		}
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{r.opts.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, CABundle: ca})
	out := map[string]string{}
	for _, name := range r.watchedRefs() {
		out[name.String()] = ""
	}
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return out, nil
	case err != nil:
		if rl := rateLimited(err); rl != nil {
			return nil, rl
		}
		if r.opts.Credentials != nil {
			err = r.opts.Credentials.Explain(err)
		}
		return nil, fmt.Errorf("list the refs of %s: %w", r.opts.URL, err)
	}
	for _, ref := range refs {
		if _, ok := out[ref.Name().String()]; ok && ref.Type() == plumbing.HashReference {
			out[ref.Name().String()] = ref.Hash().String()
		}
	}
	return out, nil
}

// Unseen returns the names of refs (as RemoteRefs returns them) whose hash
// is not the one this Repo last fetched or pushed for that ref: a commit a
// Sync has not seen yet. A Repo that has not seen a ref at all takes it to
// be absent.
func (r *Repo) Unseen(refs map[string]string) []string {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	var out []string
	for _, name := range r.watchedRefs() {
		h, ok := refs[name.String()]
		if ok && h != r.seen.refs[name.String()] {
			out = append(out, name.String())
		}
	}
	return out
}

// watchedRefs are the remote refs a Sync reads whose moves call for a new
// one: the shared branch (a peer's step, a spec change) and the applied
// branch (a writer who moved it, which a Sync restores). The push branch
// is left out: a merge of a proposal moves the shared branch.
func (r *Repo) watchedRefs() []plumbing.ReferenceName {
	names := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(r.opts.Branch)}
	if r.opts.Applied.Branch != "" {
		names = append(names, plumbing.NewBranchReferenceName(r.opts.Applied.Branch))
	}
	return names
}

// seenRefs is where the remote's refs pointed when this Repo last fetched
// or pushed them, by full ref name: what Unseen compares with.
type seenRefs struct {
	mu   sync.Mutex
	refs map[string]string
}

// see records that branch (a short name) points at h on the remote (zero:
// absent).
func (s *seenRefs) see(branch string, h plumbing.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == nil {
		s.refs = map[string]string{}
	}
	v := ""
	if !h.IsZero() {
		v = h.String()
	}
	s.refs[plumbing.NewBranchReferenceName(branch).String()] = v
}

// seeTracking records the watched refs as the clone's remote-tracking refs
// hold them after a fetch.
func (r *Repo) seeTracking() {
	for _, name := range r.watchedRefs() {
		b := name.Short()
		h := plumbing.ZeroHash
		if ref, err := r.repo.Reference(plumbing.NewRemoteReferenceName("origin", b), true); err == nil {
			h = ref.Hash()
		}
		r.seen.see(b, h)
	}
}

// RateLimitError is a host's refusal because of its rate limit (HTTP 429,
// or 503 with a Retry-After header).
type RateLimitError struct {
	// URL is the remote's; Status the HTTP status code.
	URL    string
	Status int
	// RetryAfter is the wait the host asked for (Retry-After, in seconds
	// or as an HTTP date), 0 when it named none.
	RetryAfter time.Duration
	err        error
}

func (e *RateLimitError) Error() string {
	msg := fmt.Sprintf("%s refused the request for its rate limit (HTTP %d)", e.URL, e.Status)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", asking to retry after %s", e.RetryAfter)
	}
	return msg
}

func (e *RateLimitError) Unwrap() error { return e.err }

// rateLimited is err as a *RateLimitError when the host refused for its
// rate limit, else nil. go-git wraps an unexpected HTTP status as a
// plumbing.UnexpectedError around a githttp.Err, with no Unwrap.
func rateLimited(err error) *RateLimitError {
	var ue *plumbing.UnexpectedError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var he *githttp.Err
	if !errors.As(err, &he) || he.Response == nil {
		return nil
	}
	res := he.Response
	after := retryAfter(res.Header.Get("Retry-After"), time.Now())
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
	case res.StatusCode == http.StatusServiceUnavailable && after > 0:
	default:
		return nil
	}
	url := ""
	if res.Request != nil && res.Request.URL != nil {
		u := *res.Request.URL
		u.User, u.RawQuery = nil, ""
		url = u.String()
	}
	return &RateLimitError{URL: url, Status: res.StatusCode, RetryAfter: after, err: he}
}

// retryAfter parses a Retry-After header (RFC 9110 10.2.3: seconds, or an
// HTTP date) as a wait from now; 0 when absent, invalid or past.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(0, time.Duration(s)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}
