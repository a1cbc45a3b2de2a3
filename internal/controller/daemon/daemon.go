// Package daemon runs one cluster's reconciler as a long-lived process, the
// way Flux controllers run: a pass on every tick of an interval (or as soon
// as the branch moves), structured logs through fluxcd/pkg/runtime/logger,
// Prometheus metrics, /healthz and /readyz, Kubernetes Events with the
// peerings' condition reasons, and Lease-based leader election so that two
// replicas, or the old and new Pod of a rolling update, never run two passes
// at once.
//
// The pass itself is a PassFunc (runner.Runner.Pass in production), so the
// loop, its logs, metrics and events are tested without Git or a cluster.
package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
)

// PassFunc runs one pass. On error it may still return a Result reporting
// the push attempts made, as runner.Runner.Pass does. A pass must return
// promptly once ctx is done: that is how a shutdown or a lost lease
// abandons it.
type PassFunc func(ctx context.Context) (*runner.Result, error)

// Daemon runs passes until its context ends. Only Cluster, Pass and
// Interval are required; every other field is optional.
type Daemon struct {
	// Cluster is the ID of the cluster, a key of every log line.
	Cluster string
	// Pass runs one pass.
	Pass PassFunc
	// Interval is the time between the starts of two passes. A pass that
	// takes longer delays the next tick; ticks are not queued.
	Interval time.Duration
	// Trigger runs a pass at once when it receives, e.g. gitsync.Watch's
	// channel; nil never does.
	Trigger <-chan struct{}
	// Poller, when set, reads the remote's refs every few seconds while
	// this process runs passes, and runs a pass as soon as one moved;
	// briskly for a while after a pass that pushed (Poller.Hurry).
	Poller *Poller
	// RetryBase is how soon a pass follows one that gave up pushing
	// because other writers kept moving the branch (gitsync.ErrPushConflict):
	// doubled for each such pass in a row, jittered, at most Interval;
	// default DefaultRetryBase. Such a burst (every daemon woken by the
	// same push) is usually over long before the next tick.
	RetryBase time.Duration

	// Log receives the daemon's structured logs (logr.Discard() when unset):
	// one line per pass, at debug level for a pass with nothing to do.
	Log logr.Logger
	// Metrics records passes, commits, push attempts and the peerings.
	Metrics *Metrics
	// Events publishes what an admin must see (changed peering conditions,
	// failed passes) besides the log; nil logs them only.
	Events EventSink
	// Leader, when set, makes passes run only while this process holds the
	// Lease; nil runs them unconditionally.
	Leader *LeaderElection
	// Status, when set, keeps the last pass's outcome for GET /status
	// and, with Status.File, on disk (see PassStatus).
	Status *Status
	// Compare, when set, says where to see a proposal on the review branch
	// (reconcile --push-branch): a compare URL or a git command, logged
	// with each proposal.
	Compare func() string
	// Clock gives the ticks, the retry timer and the passes' start and
	// duration; clock.RealClock{} when unset. Tests pass a
	// k8s.io/utils/clock/testing FakeClock and step it.
	Clock clock.WithTicker

	// wake holds at most one pending wake-up (Wake); made once, by
	// wakeChan.
	wakeOnce sync.Once
	wake     chan struct{}

	// tracker remembers what the last passes reported, to publish changes.
	tracker tracker
	// failingSince is when the first of the failed passes in a row
	// started, zero after a good one; lastSuccess when the last good pass
	// ended. Only the loop's goroutine uses them.
	failingSince, lastSuccess time.Time
}

// Wake runs a pass as soon as the one running (if any) ends, for the
// reason source (WakePoll, WakeWebhook, WakeWatch): a Git host's push
// event, refs that moved. Wake-ups coalesce: many while a pass runs start
// one more. It never blocks, and may be called before Run and from any
// goroutine.
func (d *Daemon) Wake(source string) {
	d.Metrics.observeWake(source)
	select {
	case d.wakeChan() <- struct{}{}:
	default: // one is pending already
	}
}

// wakeChan is the channel of Wake, made on first use.
func (d *Daemon) wakeChan() chan struct{} {
	d.wakeOnce.Do(func() { d.wake = make(chan struct{}, 1) })
	return d.wake
}

// Run runs passes until ctx ends, and returns nil then: a pass running at
// that moment is abandoned through its context (runner's passes save pins
// before pushing, and a push lands whole or not at all). It returns an error
// only for an invalid configuration or when leader election cannot start.
func (d *Daemon) Run(ctx context.Context) error {
	if d.Pass == nil {
		return fmt.Errorf("daemon: no pass")
	}
	if d.Interval <= 0 {
		return fmt.Errorf("interval must be positive, got %s", d.Interval)
	}
	if d.Log.GetSink() == nil {
		d.Log = logr.Discard()
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	d.Log = d.Log.WithValues("cluster", d.Cluster)
	lead := func(ctx context.Context) {
		d.Metrics.setLeading(true)
		defer d.Metrics.setLeading(false)
		if d.Poller != nil {
			pctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				d.Poller.run(pctx, d.Clock, d.Log.WithName("poll"), d.Metrics, d.Wake)
			}()
			defer func() { cancel(); <-done }()
		}
		d.loop(ctx)
	}
	var err error
	if d.Leader == nil {
		lead(ctx)
	} else {
		err = d.Leader.run(ctx, d.Log, lead)
	}
	d.Log.Info("stopped")
	return err
}
