package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
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

	waitFor := func(n int, d time.Duration) { t.Helper(); waitForPoll(t, clk, src, n, d) }
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

// TestAPushMakesThePollsBriskForAWhile: after Hurry (a pass pushed a
// step) the refs are read every second (±10%) for DefaultBriskFor, then
// every Interval again; a failed poll ends the brisk polls and backs off
// from Interval, and a push during that backoff does not shorten it.
func TestAPushMakesThePollsBriskForAWhile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &refScript{}
	clk := testingclock.NewFakeClock(time.Now())
	m, _ := NewMetrics("test")
	p := &Poller{Refs: src}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, clk, logr.Discard(), m, func(string) { t.Error("woken with nothing new") })
	}()
	defer func() { cancel(); <-done }()

	waitFor := func(n int, d time.Duration) { t.Helper(); waitForPoll(t, clk, src, n, d) }
	// hurry calls Hurry and waits until the poller took it (a new timer).
	hurry := func() {
		t.Helper()
		eventually(t, "the poller waits", func() bool { return clk.HasWaiters() })
		waits := p.waits.Load()
		p.Hurry()
		eventually(t, "the poller took the hurry", func() bool { return p.waits.Load() > waits })
	}

	waitFor(1, DefaultPollInterval)
	hurry()
	n := 1
	// 15s of polls about a second apart: at least 13 (each up to 1.1s).
	start := clk.Now()
	for clk.Since(start) < DefaultBriskFor-DefaultBriskInterval-DefaultBriskInterval/10 {
		n++
		waitFor(n, DefaultBriskInterval)
	}
	if n-1 < 13 {
		t.Fatalf("%d brisk polls in %s, want 13 at least", n-1, DefaultBriskFor)
	}
	// The window is over within one more brisk poll; then the interval.
	eventually(t, "the poller waits", func() bool { return clk.HasWaiters() })
	clk.Step(DefaultBriskInterval + DefaultBriskInterval/10 + time.Millisecond)
	eventually(t, "the poller waits", func() bool { return clk.HasWaiters() })
	n = src.count() + 1
	waitFor(n, DefaultPollInterval)

	// A failure ends the brisk polls: the backoff starts from Interval,
	// and a push meanwhile does not cut it short.
	hurry()
	n++
	src.mu.Lock()
	src.errs = []error{errors.New("connection refused")}
	src.mu.Unlock()
	waitFor(n, DefaultBriskInterval) // fails
	hurry()
	n++
	waitFor(n, 2*DefaultPollInterval) // the backoff, whole
	n++
	waitFor(n, DefaultPollInterval) // back to the interval, not brisk
}

// TestAPassThatPushedPollsForTheAnswerWithinASecond: the daemon hurries
// its poller after a pass that pushed, so the refs are read about a second
// later, not an interval later; after a pass that changed nothing, an
// interval later.
func TestAPassThatPushedPollsForTheAnswerWithinASecond(t *testing.T) {
	for _, pushed := range []bool{true, false} {
		t.Run(fmt.Sprintf("pushed=%v", pushed), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src := &refScript{}
			var passes atomic.Int32
			pass := func(context.Context) (*runner.Result, error) {
				defer passes.Add(1)
				res := &runner.Result{}
				if pushed {
					res.Commit = "0123456789abcdef0123456789abcdef01234567"
				}
				return res, nil
			}
			clk := testingclock.NewFakeClock(time.Now())
			m, _ := NewMetrics("test")
			p := &Poller{Refs: src}
			d := &Daemon{Cluster: "alpha", Pass: pass, Interval: time.Hour, Clock: clk, Metrics: m, Poller: p}
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			defer func() { cancel(); <-done }()
			// The first pass ran and the poller set its wait after it
			// (the hurry is taken before a timer is set again).
			eventually(t, "the first pass ran", func() bool { return passes.Load() == 1 && clk.Waiters() == 2 })
			if pushed {
				eventually(t, "the poller took the hurry", func() bool { return p.waits.Load() >= 2 })
			}
			clk.Step(DefaultBriskInterval + DefaultBriskInterval/10 + time.Millisecond)
			if pushed {
				eventually(t, "a poll about a second after the push", func() bool { return src.count() == 1 })
				return
			}
			eventually(t, "the poller waits", func() bool { return clk.Waiters() == 2 })
			if src.count() != 0 {
				t.Fatalf("polled %d time(s) a second after a pass that pushed nothing, want 0", src.count())
			}
			clk.Step(DefaultPollInterval)
			eventually(t, "a poll an interval later", func() bool { return src.count() == 1 })
		})
	}
}

// TestAPushReappliedOnAPeersCommitStartsAnotherPassInASecond: a pass
// whose push was rejected and re-applied on a new tip (Attempts 2) never
// computed on the commits it landed on, a peer's step perhaps, and no poll
// will call them new (the clone has them): the daemon runs another pass
// RetryBase (1s, jittered: 0.5-1s) later, without waiting for a tick or a
// poll. A push that landed first time starts none.
func TestAPushReappliedOnAPeersCommitStartsAnotherPassInASecond(t *testing.T) {
	for _, attempts := range []int{2, 1} {
		t.Run(fmt.Sprintf("attempts=%d", attempts), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var passes atomic.Int32
			pass := func(context.Context) (*runner.Result, error) {
				defer passes.Add(1)
				res := &runner.Result{}
				if passes.Load() == 0 {
					res.Commit, res.Attempts = "0123456789abcdef0123456789abcdef01234567", attempts
				}
				return res, nil
			}
			clk := testingclock.NewFakeClock(time.Now())
			m, _ := NewMetrics("test")
			d := &Daemon{Cluster: "alpha", Pass: pass, Interval: time.Hour, Clock: clk, Metrics: m, Poller: &Poller{Refs: &refScript{}}}
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			defer func() { cancel(); <-done }()
			// The ticker and the poller's timer; after a rebased push, the
			// retry's timer too.
			eventually(t, "the first pass ran, the daemon waits", func() bool { return passes.Load() == 1 && clk.Waiters() == 1+attempts })
			if got := testutil.ToFloat64(m.wakeups.WithLabelValues(WakeRebased)); got != float64(attempts-1) {
				t.Errorf("gitpeer_wakeups_total{source=rebased} = %v, want %v", got, attempts-1)
			}
			clk.Step(DefaultRetryBase/2 - time.Millisecond)
			eventually(t, "the daemon waits", func() bool { return clk.Waiters() == 1+attempts })
			if passes.Load() != 1 {
				t.Fatalf("a second pass less than %s after the push", DefaultRetryBase/2)
			}
			clk.Step(DefaultRetryBase / 2)
			want := int32(attempts) // 2 passes after a rebased push, 1 otherwise
			eventually(t, "the passes ran, the daemon waits", func() bool { return passes.Load() == want && clk.Waiters() == 2 })
		})
	}
}

// waitForPoll steps clk by d less its 10% jitter and says that poll n of
// src has not run, then by the rest of the ±10% window and says that it
// did: poll n comes d after the last one, not sooner.
func waitForPoll(t *testing.T, clk *testingclock.FakeClock, src *refScript, n int, d time.Duration) {
	t.Helper()
	eventually(t, "the poller waits", func() bool { return clk.HasWaiters() && src.count() == n-1 })
	clk.Step(d - d/10 - time.Millisecond)
	if src.count() != n-1 || !clk.HasWaiters() {
		t.Fatalf("poll %d ran before %s", n, d-d/10)
	}
	clk.Step(d/5 + 2*time.Millisecond)
	eventually(t, "poll ran", func() bool { return src.count() == n })
}
