package gitsync

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestRemoteRefsSeesAPeersPushAndNotItsOwn reads the refs of a real HTTPS
// host (git http-backend, bearer token): another writer's push to the
// shared branch is unseen until a Sync fetches it; the Repo's own pushes,
// to the branch and its applied branch, never are.
func TestRemoteRefsSeesAPeersPushAndNotItsOwn(t *testing.T) {
	ctx := context.Background()
	h := startHosts(t)
	url := h.https.URL("peering.git")
	seed := testOptions(t, url, "seed")
	seed.Credentials = credOptions(t, url, h.httpsCreds(t, httpToken), "seed").Credentials
	if _, err := Seed(ctx, seed, map[string][]byte{"peering.cue": []byte("clusters: []\n")}, "seed"); err != nil {
		t.Fatal(err)
	}
	opts := appliedOptions(t, url)
	opts.Credentials = credOptions(t, url, h.httpsCreds(t, httpToken), "alpha").Credentials
	r, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	unseen := func() []string {
		t.Helper()
		refs, err := r.RemoteRefs(ctx)
		if err != nil {
			t.Fatalf("RemoteRefs: %v", err)
		}
		if _, ok := refs[appliedRef]; !ok {
			t.Fatalf("RemoteRefs %v: no %s", refs, appliedRef)
		}
		return r.Unseen(refs)
	}
	if got := unseen(); len(got) != 0 {
		t.Fatalf("right after Open: unseen %v, want none", got)
	}

	content := "v1"
	mustSync(t, r, alphaPass(&content)) // pushes main and the applied branch
	if got := unseen(); len(got) != 0 {
		t.Errorf("after its own push: unseen %v, want none", got)
	}

	// A peer's step, pushed with the git CLI to the repository the host
	// serves.
	work := filepath.Join(t.TempDir(), "peer")
	testgit.Git(t, "", "clone", "-q", filepath.Join(h.root, "peering.git"), work)
	testgit.WriteFiles(t, filepath.Join(work, "clusters", "beta"), map[string][]byte{"cluster.yaml": []byte("id: beta\n")})
	testgit.Git(t, work, "add", ".")
	testgit.Git(t, work, "commit", "-q", "-m", "beta: publish")
	testgit.Git(t, work, "push", "-q", "origin", "main")
	if got := unseen(); !slices.Equal(got, []string{"refs/heads/main"}) {
		t.Errorf("after a peer's push: unseen %v, want [refs/heads/main]", got)
	}
	mustSync(t, r, alphaPass(&content)) // fetches it; nothing to commit
	if got := unseen(); len(got) != 0 {
		t.Errorf("after the Sync that fetched it: unseen %v, want none", got)
	}

	// A writer moves the applied branch: the Sync that follows restores it.
	testgit.Git(t, work, "push", "-q", "--force", "origin", "main:"+appliedBranch)
	if got := unseen(); !slices.Equal(got, []string{appliedRef}) {
		t.Errorf("after the applied branch moved: unseen %v, want [%s]", got, appliedRef)
	}
}

// TestRemoteRefsSaysWhenTheHostRateLimits: a host answering 429 with
// Retry-After is a *RateLimitError with that wait, through go-git's own
// HTTP transport.
func TestRemoteRefsSaysWhenTheHostRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header string
		limit  bool
		want   time.Duration
	}{
		{"429 with seconds", http.StatusTooManyRequests, "30", true, 30 * time.Second},
		{"429 without Retry-After", http.StatusTooManyRequests, "", true, 0},
		{"503 with Retry-After", http.StatusServiceUnavailable, "7", true, 7 * time.Second},
		{"503 without Retry-After is an outage", http.StatusServiceUnavailable, "", false, 0},
		{"500", http.StatusInternalServerError, "30", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				http.Error(w, "slow down", tc.status)
			}))
			defer srv.Close()
			// Open would fetch: build the Repo's options alone.
			opts, err := withDefaults(testOptions(t, srv.URL+"/peering.git", "alpha"))
			if err != nil {
				t.Fatal(err)
			}
			r := &Repo{opts: opts}
			_, err = r.RemoteRefs(context.Background())
			var rl *RateLimitError
			if got := errors.As(err, &rl); got != tc.limit {
				t.Fatalf("RemoteRefs: %v; rate limit %v, want %v", err, got, tc.limit)
			}
			if rl != nil && (rl.RetryAfter != tc.want || rl.Status != tc.status) {
				t.Errorf("RateLimitError %+v, want status %d, RetryAfter %s", rl, tc.status, tc.want)
			}
		})
	}
}

func TestRetryAfterParsesSecondsAndDates(t *testing.T) {
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"120":                           2 * time.Minute,
		"-5":                            0,
		"soon":                          0,
		"Fri, 14 Mar 2025 15:10:26 GMT": time.Minute,
		"Fri, 14 Mar 2025 15:00:00 GMT": 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

// BenchmarkRemoteRefs is the cost of one poll of the refs (the daemon's
// every --poll-interval) on the HTTPS host, against a Sync that fetches
// and finds nothing new (what a pass per poll would cost instead).
func BenchmarkRemoteRefs(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	testgit.Bare(b, filepath.Join(root, "peering.git"))
	https := testgit.StartHTTPS(b, root, testgit.HTTPAuth{Token: httpToken})
	url := https.URL("peering.git")
	dir := filepath.Join(b.TempDir(), "creds")
	testgit.WriteFiles(b, dir, map[string][]byte{gitauth.BearerTokenFile: []byte(httpToken), gitauth.CAFile: https.CACert})
	src, err := gitauth.New(dir, url)
	if err != nil {
		b.Fatal(err)
	}
	opts := testOptions(b, url, "alpha")
	opts.Credentials = src
	if _, err := Seed(ctx, opts, map[string][]byte{"peering.cue": []byte("clusters: []\n")}, "seed"); err != nil {
		b.Fatal(err)
	}
	opts.Dir = filepath.Join(b.TempDir(), "alpha")
	r, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("RemoteRefs", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.RemoteRefs(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SyncNoChange", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.SyncTree(ctx, func(context.Context, *TreeFS) (*Change, error) { return &Change{}, nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
