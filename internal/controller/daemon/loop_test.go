package daemon

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// runUntil runs d until stop returns true after a pass, then cancels it and
// waits for Run to return.
func runUntil(t *testing.T, d *Daemon, p *passes, stop func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Pass = p.pass
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	eventually(t, "the scripted passes ran", stop)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestAnIdlePassIsOneDebugLine(t *testing.T) {
	logs, log := newLogs(t)
	p := &passes{script: []outcomeFunc{idle}}
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Log: log}
	runUntil(t, d, p, func() bool { return p.count() == 1 && len(logs.all()) > 0 })

	lines := logs.without("stopped")
	if len(lines) != 1 {
		t.Fatalf("%d lines for an idle pass, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l.msg() != "up to date" || l.level() != 1 || l["cluster"] != "alpha" || l["duration"] == nil {
		t.Errorf("idle pass line %v: want msg \"up to date\" at debug level with cluster and duration", l)
	}
}

func TestACommittedPassLogsCommitStepsAttemptsAndDuration(t *testing.T) {
	logs, log := newLogs(t)
	m, _ := NewMetrics("test")
	res := withPeerings("0123456789abcdef0123456789abcdef01234567")
	res.Steps, res.Files, res.Attempts = []string{"send tenant to beta"}, []string{"a", "b"}, 2
	p := &passes{script: []outcomeFunc{func(context.Context) (*runner.Result, error) { return res, nil }, idle}}
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Log: log, Metrics: m}
	// The push was re-applied on a new tip: a second pass at once
	// (WakeRebased), idle here.
	runUntil(t, d, p, func() bool { return p.count() == 2 && len(logs.without("stopped", "pushed")) > 0 })

	lines := logs.without("stopped", "up to date")
	if len(lines) != 1 {
		t.Fatalf("lines %v, want one", lines)
	}
	l := lines[0]
	if l.msg() != "pushed" || l.level() != 0 || l["commit"] != res.Commit || l["attempts"] != 2.0 || l["files"] != 2.0 || l["duration"] == nil {
		t.Errorf("line %v", l)
	}
	if steps, _ := l["steps"].([]any); len(steps) != 1 || steps[0] != "send tenant to beta" {
		t.Errorf("steps %v", l["steps"])
	}
	for name, want := range map[string]float64{
		"commits": testutil.ToFloat64(m.commits), "attempts": testutil.ToFloat64(m.pushAttempts),
		"retries": testutil.ToFloat64(m.pushRetries), "committed": testutil.ToFloat64(m.passes.WithLabelValues(ResultCommitted)),
	} {
		if exp := map[string]float64{"commits": 1, "attempts": 2, "retries": 1, "committed": 1}[name]; want != exp {
			t.Errorf("%s = %v, want %v", name, want, exp)
		}
	}
	if testutil.ToFloat64(m.lastSuccess) == 0 {
		t.Error("last success not recorded")
	}
	if got := testutil.ToFloat64(m.wakeups.WithLabelValues(WakeRebased)); got != 1 {
		t.Errorf("gitpeer_wakeups_total{source=rebased} = %v, want 1", got)
	}
}

func TestFailedPassesAreCountedLoggedRetriedAndPublishedOnce(t *testing.T) {
	logs, log := newLogs(t)
	m, _ := NewMetrics("test")
	events := &sink{}
	boom := errors.New("cluster alpha: spec: peering.cue:3:1: bad")
	p := &passes{script: []outcomeFunc{fail(boom), fail(boom), func(context.Context) (*runner.Result, error) { return nil, pushConflict }, idle}}
	d := &Daemon{Cluster: "alpha", Interval: 5 * time.Millisecond, Log: log, Metrics: m, Events: events}
	runUntil(t, d, p, func() bool { return p.count() >= 5 })

	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultFailed)); got != 3 {
		t.Errorf("failed passes %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultUnchanged)); got < 1 {
		t.Errorf("unchanged passes %v, want the retries after the failures", got)
	}
	var errorLines int
	for _, l := range logs.all() {
		if l.msg() == "pass failed" && l.isError() {
			errorLines++
		}
	}
	if errorLines != 3 {
		t.Errorf("%d error lines, want one per failed pass", errorLines)
	}
	// The same error twice is one event; a different one is another.
	want := []string{"Warning ReconciliationFailed", "Warning PushRejected", "Normal ReconciliationSucceeded"}
	if got := events.reasons(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestPushRetriesAreCountedForARejectedPass(t *testing.T) {
	m, _ := NewMetrics("test")
	p := &passes{script: []outcomeFunc{func(context.Context) (*runner.Result, error) {
		res := &runner.Result{}
		res.Attempts = 5
		return res, pushConflict
	}, idle}}
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Metrics: m}
	runUntil(t, d, p, func() bool { return p.count() == 1 && testutil.ToFloat64(m.passes.WithLabelValues(ResultFailed)) == 1 })
	if a, r := testutil.ToFloat64(m.pushAttempts), testutil.ToFloat64(m.pushRetries); a != 5 || r != 4 {
		t.Errorf("push attempts %v, retries %v; want 5 and 4", a, r)
	}
}

func TestAPassThatLostEveryPushIsRetriedSoonNotAtTheNextTick(t *testing.T) {
	logs, log := newLogs(t)
	m, _ := NewMetrics("test")
	rejected := func(context.Context) (*runner.Result, error) {
		res := &runner.Result{}
		res.Attempts = 7
		return res, pushConflict
	}
	p := &passes{script: []outcomeFunc{rejected, rejected, idle}}
	// An hour between ticks: only the retry can run the next passes. On a
	// fake clock, the second pass runs once the first retry's RetryBase
	// (at most) has passed, and the third once twice that has.
	clk := testingclock.NewFakeClock(time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC))
	const base = 10 * time.Millisecond
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, RetryBase: base, Log: log, Metrics: m, Clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Pass = p.pass
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for n, wait := range []time.Duration{base, 2 * base} {
		// The ticker and the retry's timer.
		eventually(t, "the retry's timer", func() bool { return p.count() == n+1 && clk.Waiters() == 2 })
		clk.Step(wait)
		eventually(t, "the retry", func() bool { return p.count() == n+2 })
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if got := testutil.ToFloat64(m.rejected); got != 2 {
		t.Errorf("rejected passes %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultFailed)); got != 2 {
		t.Errorf("failed passes %v, want 2: a rejected pass is a failed one", got)
	}
	if r := testutil.ToFloat64(m.pushRetries); r != 12 {
		t.Errorf("push retries %v, want 12 (6 per pass)", r)
	}
	var failed []logLine
	for _, l := range logs.all() {
		if l.msg() == "pass failed" {
			failed = append(failed, l)
		}
	}
	if len(failed) != 2 {
		t.Fatalf("failed pass lines %v, want 2", failed)
	}
	for _, l := range failed {
		if l["reason"] != reasons.PushRejected || l["retries"] != 6.0 || l["retryIn"] == nil {
			t.Errorf("line %v: want reason PushRejected, retries 6 and when the retry runs", l)
		}
	}
}

func TestRetriesAfterRejectedPassesBackOffUpToTheInterval(t *testing.T) {
	d := &Daemon{Interval: time.Second, RetryBase: 100 * time.Millisecond}
	for n, limit := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 64: time.Second} {
		for range 20 {
			if got := d.retryAfter(n); got < limit/2 || got > limit {
				t.Errorf("retry after %d rejected passes in %s, want within [%s, %s]", n, got, limit/2, limit)
			}
		}
	}
}

func TestPassesRunOnEveryTickAndTrigger(t *testing.T) {
	t.Run("ticks", func(t *testing.T) {
		// On a fake clock, each pass runs exactly one Interval after the
		// one before: not a nanosecond earlier, and at once then.
		clk := testingclock.NewFakeClock(time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC))
		const interval = time.Minute
		var mu sync.Mutex
		var at []time.Time
		p := &passes{script: []outcomeFunc{func(context.Context) (*runner.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, clk.Now())
			return &runner.Result{}, nil
		}}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := &Daemon{Cluster: "alpha", Interval: interval, Pass: p.pass, Clock: clk}
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		start := clk.Now()
		for n := 1; n <= 3; n++ {
			eventually(t, "the next pass", func() bool { return p.count() == n })
			clk.Step(interval - time.Nanosecond)
			clk.Step(time.Nanosecond)
		}
		eventually(t, "the fourth pass", func() bool { return p.count() == 4 })
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, got := range at[:4] {
			if want := start.Add(time.Duration(i) * interval); !got.Equal(want) {
				t.Errorf("pass %d ran at %s, want %s", i+1, got, want)
			}
		}
	})
	t.Run("trigger", func(t *testing.T) {
		trigger := make(chan struct{})
		p := &passes{script: []outcomeFunc{idle}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := &Daemon{Cluster: "alpha", Interval: time.Hour, Trigger: trigger, Pass: p.pass}
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		eventually(t, "the first pass", func() bool { return p.count() == 1 })
		trigger <- struct{}{}
		eventually(t, "a pass on the trigger", func() bool { return p.count() == 2 })
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestCancelBetweenPassesStartsNoOtherPass(t *testing.T) {
	logs, log := newLogs(t)
	p := &passes{script: []outcomeFunc{idle}}
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Log: log}
	runUntil(t, d, p, func() bool { return p.count() == 1 && len(logs.all()) > 0 })
	if n := p.count(); n != 1 {
		t.Errorf("%d passes, want 1", n)
	}
	if all := logs.all(); all[len(all)-1].msg() != "stopped" {
		t.Errorf("last line %v, want stopped", all[len(all)-1])
	}
}

func TestCancelDuringAPassAbandonsIt(t *testing.T) {
	logs, log := newLogs(t)
	m, _ := NewMetrics("test")
	events := &sink{}
	started := make(chan struct{}, 1)
	p := &passes{script: []outcomeFunc{blockUntilDone(started)}}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Log: log, Metrics: m, Events: events, Pass: p.pass}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultAbandoned)); got != 1 {
		t.Errorf("abandoned passes %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultFailed)); got != 0 {
		t.Errorf("an abandoned pass counted as failed")
	}
	lines := logs.without("stopped")
	if len(lines) != 1 || lines[0].msg() != "pass abandoned" || lines[0].isError() {
		t.Errorf("lines %v, want one info line \"pass abandoned\"", lines)
	}
	if len(events.reasons()) != 0 {
		t.Errorf("an abandoned pass published %v", events.reasons())
	}
}

func TestPeeringChangesArePublishedOnce(t *testing.T) {
	events := &sink{}
	waiting := peeringStatus("alpha", "beta", layout.RoleConsumer, layout.StepTenantSent, metav1.ConditionFalse, "WaitingForIdentity", "waiting", false)
	accepted := peeringStatus("alpha", "beta", layout.RoleConsumer, layout.StepReady, metav1.ConditionTrue, "IdentityAccepted", "accepted", false)
	p := &passes{script: []outcomeFunc{
		func(context.Context) (*runner.Result, error) { return withPeerings("c1", waiting), nil },
		func(context.Context) (*runner.Result, error) { return withPeerings("", waiting), nil },
		func(context.Context) (*runner.Result, error) { return withPeerings("c2", accepted), nil },
	}}
	d := &Daemon{Cluster: "alpha", Interval: 5 * time.Millisecond, Events: events}
	runUntil(t, d, p, func() bool { return p.count() >= 4 })
	want := []string{"Normal WaitingForIdentity", "Normal IdentityAccepted"}
	if got := events.reasons(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestRunRefusesANonPositiveInterval(t *testing.T) {
	d := &Daemon{Cluster: "alpha", Pass: idle}
	if err := d.Run(context.Background()); err == nil {
		t.Fatal("Run with no interval succeeded")
	}
}
