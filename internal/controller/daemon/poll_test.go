package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestAPeersPushStartsAPassAtTheNextPoll runs the daemon against a real
// HTTPS Git host (git http-backend) with an hour's interval: a commit
// another writer pushes starts a pass at the next poll of the refs, a few
// seconds later, and polls that find nothing new start none.
func TestAPeersPushStartsAPassAtTheNextPoll(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := t.TempDir()
	bare := filepath.Join(root, "peering.git")
	testgit.Bare(t, bare)
	const token = "poll-test-token"
	host := testgit.StartHTTPS(t, root, testgit.HTTPAuth{Token: token})
	url := host.URL("peering.git")
	creds := filepath.Join(root, "creds")
	testgit.WriteFiles(t, creds, map[string][]byte{gitauth.BearerTokenFile: []byte(token), gitauth.CAFile: host.CACert})
	src, err := gitauth.New(creds, url)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "peer")
	testgit.Git(t, "", "clone", "-q", bare, work)
	peerCommit := func(name string) {
		testgit.WriteFiles(t, work, map[string][]byte{name: []byte(name)})
		testgit.Git(t, work, "add", ".")
		testgit.Git(t, work, "commit", "-q", "-m", name)
		testgit.Git(t, work, "push", "-q", "origin", "HEAD:main")
	}
	peerCommit("peering.cue")
	repo, err := gitsync.Open(ctx, gitsync.Options{URL: url, Dir: filepath.Join(root, "checkout"), Credentials: src,
		Author: gitsync.Signature{Name: "alpha", Email: "alpha@gitpeer.example"}})
	if err != nil {
		t.Fatal(err)
	}

	var passes atomic.Int32
	pass := func(ctx context.Context) (*runner.Result, error) {
		defer passes.Add(1)
		// A pass with nothing to write: it fetches, as every pass does.
		_, err := repo.SyncTree(ctx, func(context.Context, *gitsync.TreeFS) (*gitsync.Change, error) { return &gitsync.Change{}, nil })
		return &runner.Result{}, err
	}
	clk := testingclock.NewFakeClock(time.Now())
	m, _ := NewMetrics("test")
	d := &Daemon{Cluster: "alpha", Pass: pass, Interval: time.Hour, Clock: clk, Metrics: m, Poller: &Poller{Refs: repo}}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	polls := func(result string) int { return int(testutil.ToFloat64(m.polls.WithLabelValues(result))) }
	// idle: the loop waits for its ticker, the poller for its timer.
	idle := func(what string, n int32) {
		t.Helper()
		eventually(t, what, func() bool { return passes.Load() == n && clk.Waiters() == 2 })
	}
	poll := func() { clk.Step(DefaultPollInterval + DefaultPollInterval/10) }

	idle("the first pass ran", 1)
	poll()
	eventually(t, "a poll found nothing new", func() bool { return polls(PollUnchanged) == 1 })
	idle("no pass started", 1)

	peerCommit("beta.yaml")
	poll()
	eventually(t, "a poll found the peer's commit", func() bool { return polls(PollMoved) == 1 })
	idle("the pass it started ran", 2)
	if got := testutil.ToFloat64(m.wakeups.WithLabelValues(WakePoll)); got != 1 {
		t.Errorf("gitpeer_wakeups_total{source=poll} = %v, want 1", got)
	}
	if got := repo.Head(); got != testgit.Git(t, work, "rev-parse", "HEAD") {
		t.Errorf("the woken pass left the clone at %s, not at the peer's commit", got)
	}

	poll()
	eventually(t, "the next poll found nothing new", func() bool { return polls(PollUnchanged) == 2 })
	idle("no further pass started", 2)
}

// refScript is a RefSource answering each poll with the next of its
// errors, then with no change.
type refScript struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

func (s *refScript) RemoteRefs(context.Context) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	return map[string]string{"refs/heads/main": "0123456789abcdef0123456789abcdef01234567"}, nil
}

func (s *refScript) Unseen(map[string]string) []string { return nil }

func (s *refScript) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestFailedPollsBackOffAndARateLimitIsHonoured: each failed poll doubles
// the wait (5s, 10s, 20s, ±10%), and a host's 429 with Retry-After is
// never polled again sooner than it asked; a good poll goes back to the
// interval.
func TestFailedPollsBackOffAndARateLimitIsHonoured(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	boom := errors.New("connection refused")
	src := &refScript{errs: []error{boom, boom, &gitsync.RateLimitError{Status: 429, RetryAfter: 2 * time.Minute}}}
	clk := testingclock.NewFakeClock(time.Now())
	m, _ := NewMetrics("test")
	logs, log := newLogs(t)
	p := &Poller{Refs: src}
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx, clk, log, m, func(string) { t.Error("woken with nothing new") }) }()
	defer func() { cancel(); <-done }()

	// waitFor steps the clock by min and says that no poll ran, then by
	// the rest of the ±10% window and says that poll n did.
	waitFor := func(n int, d time.Duration) {
		t.Helper()
		eventually(t, "the poller waits", func() bool { return clk.HasWaiters() && src.count() == n-1 })
		clk.Step(d - d/10 - time.Millisecond)
		if src.count() != n-1 || !clk.HasWaiters() {
			t.Fatalf("poll %d ran before %s", n, d-d/10)
		}
		clk.Step(d/5 + 2*time.Millisecond)
		eventually(t, "poll ran", func() bool { return src.count() == n })
	}
	waitFor(1, DefaultPollInterval)
	waitFor(2, 2*DefaultPollInterval) // after one failure
	waitFor(3, 4*DefaultPollInterval) // after two
	// After the rate limit: 8 × the interval, but the host asked for 2
	// minutes, and gets them at least (up to 10% more).
	eventually(t, "the poller waits", func() bool { return clk.HasWaiters() })
	clk.Step(2*time.Minute - time.Millisecond)
	if src.count() != 3 {
		t.Fatal("polled again before the host's Retry-After")
	}
	clk.Step(12*time.Second + time.Millisecond)
	eventually(t, "poll 4 ran", func() bool { return src.count() == 4 })
	waitFor(5, DefaultPollInterval) // back to the interval

	for result, want := range map[string]float64{PollFailed: 2, PollRateLimited: 1, PollUnchanged: 2} {
		if got := testutil.ToFloat64(m.polls.WithLabelValues(result)); got != want {
			t.Errorf("gitpeer_ref_polls_total{result=%s} = %v, want %v", result, got, want)
		}
	}
	var reasons []string
	for _, l := range logs.all() {
		if l.isError() {
			reasons = append(reasons, l["reason"].(string))
		}
	}
	if len(reasons) != 3 || reasons[2] != PollRateLimited {
		t.Errorf("error lines' reasons %v, want failed, failed, rate_limited", reasons)
	}
}
