package daemon

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// logLine is one JSON log line of funcr: level 1 is debug (logger.DebugLevel).
type logLine map[string]any

func (l logLine) msg() string { s, _ := l["msg"].(string); return s }
func (l logLine) level() int  { v, _ := l["level"].(float64); return int(v) }
func (l logLine) isError() bool {
	_, ok := l["error"]
	return ok
}

// logs collects a logger's lines, debug included.
type logs struct {
	mu    sync.Mutex
	lines []logLine
	t     *testing.T
}

func newLogs(t *testing.T) (*logs, logr.Logger) {
	l := &logs{t: t}
	return l, funcr.NewJSON(func(obj string) {
		var line logLine
		if err := json.Unmarshal([]byte(obj), &line); err != nil {
			t.Errorf("log line is not JSON: %s", obj)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, line)
	}, funcr.Options{Verbosity: 1})
}

func (l *logs) all() []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]logLine(nil), l.lines...)
}

// without drops the lines with the given messages (e.g. "stopped").
func (l *logs) without(msgs ...string) []logLine {
	var out []logLine
next:
	for _, line := range l.all() {
		for _, m := range msgs {
			if line.msg() == m {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// sink collects published events.
type sink struct {
	mu     sync.Mutex
	events []Event
}

func (s *sink) Publish(_ context.Context, events []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
}

func (s *sink) reasons() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// passes is a scripted PassFunc: each call returns the next outcome (the
// last one repeats) and counts.
type passes struct {
	mu       sync.Mutex
	script   []outcomeFunc
	calls    int
	running  int // passes running now, for overlap checks
	overlaps int
}

type outcomeFunc func(ctx context.Context) (*runner.Result, error)

func (p *passes) pass(ctx context.Context) (*runner.Result, error) {
	p.mu.Lock()
	p.calls++
	p.running++
	if p.running > 1 {
		p.overlaps++
	}
	f := p.script[min(p.calls, len(p.script))-1]
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}()
	return f(ctx)
}

func (p *passes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func idle(context.Context) (*runner.Result, error) { return &runner.Result{}, nil }

func fail(err error) outcomeFunc {
	return func(context.Context) (*runner.Result, error) { return nil, err }
}

// blockUntilDone is a pass that runs until its context ends, as a pass
// abandoned in the middle of a fetch or push does.
func blockUntilDone(started chan<- struct{}) outcomeFunc {
	return func(ctx context.Context) (*runner.Result, error) {
		if started != nil {
			started <- struct{}{}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// withPeerings is a pass result reporting the given peerings of alpha, in
// the shape reconcile.Pass gives them.
func withPeerings(commit string, ps ...layout.PeeringStatus) *runner.Result {
	res := &runner.Result{Output: &reconcile.Output{Status: &layout.ClusterStatus{ClusterID: "alpha", Peerings: ps}}}
	res.Commit = commit
	if commit != "" {
		res.Attempts = 1
	}
	return res
}

// peeringStatus is a peering in a step with a Ready condition; stalled
// adds Stalled=True, as reconcile marks a refusal.
func peeringStatus(consumer, provider string, role layout.Role, step layout.Step, ready metav1.ConditionStatus, reason, msg string, stalled bool) layout.PeeringStatus {
	p := layout.PeeringStatus{Consumer: consumer, Provider: provider, Role: role, Step: step,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: reason, Message: msg}}}
	if stalled {
		p.Conditions = append(p.Conditions, metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	}
	return p
}

// pushConflict is the error of a pass whose every push was rejected, as
// runner wraps gitsync's.
var pushConflict = &wrapped{msg: "cluster alpha: push main to file:///repo after 5 attempts: push rejected: remote moved on every attempt", err: gitsync.ErrPushConflict}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func discard() logr.Logger { return logr.Discard() }
