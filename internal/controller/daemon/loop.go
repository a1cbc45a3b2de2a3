package daemon

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/reasons"
)

// Pass outcomes, the values of gitpeer_passes_total's result label.
const (
	// ResultCommitted: the pass pushed a commit.
	ResultCommitted = "committed"
	// ResultProposed: the pass's change is on the review branch
	// (reconcile --push-branch), pushed now or still open from before.
	ResultProposed = "proposed"
	// ResultWithdrawn: the pass had nothing left to propose and deleted
	// the review branch.
	ResultWithdrawn = "withdrawn"
	// ResultUnchanged: the pass had nothing to change.
	ResultUnchanged = "unchanged"
	// ResultFailed: the pass failed; it is retried at the next tick, or
	// sooner when it failed because every push was rejected
	// (Daemon.RetryBase).
	ResultFailed = "failed"
	// ResultAbandoned: the context ended during the pass (shutdown, lost
	// lease) and the pass stopped where it was.
	ResultAbandoned = "abandoned"
)

// publishTimeout bounds the publication of a pass's events, which may
// outlive the pass's context.
const publishTimeout = 10 * time.Second

// DefaultRetryBase is the default Daemon.RetryBase.
const DefaultRetryBase = time.Second

// loop runs a pass at once, then at every tick, trigger or Wake, until ctx ends;
// after a pass whose every push was rejected, sooner (retryAfter). It
// never starts a pass once ctx is done, even if a tick is also ready.
func (d *Daemon) loop(ctx context.Context) {
	t := d.Clock.NewTicker(d.Interval)
	defer t.Stop()
	rejected := 0 // passes in a row that gave up pushing
	for ctx.Err() == nil {
		var retry <-chan time.Time // nil: never ready
		var timer clock.Timer
		if wait := d.pass(ctx, &rejected); wait > 0 {
			timer = d.Clock.NewTimer(wait)
			retry = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-retry:
		case <-d.Trigger: // nil: never ready
		case <-d.wakeChan():
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// retryAfter is the wait before the pass that follows the rejected-th pass
// in a row that gave up pushing: RetryBase doubled per further one, with
// equal jitter (so that the clusters that lost the same burst do not come
// back together), never beyond Interval.
func (d *Daemon) retryAfter(rejected int) time.Duration {
	base := d.RetryBase
	if base <= 0 {
		base = DefaultRetryBase
	}
	wait := d.Interval
	if rejected < 30 {
		wait = min(base<<(rejected-1), d.Interval)
	}
	return wait/2 + rand.N(wait/2+1)
}

// pass runs one pass and reports it: one log line, the metrics, and the
// events of what changed. It counts the passes in a row that gave up
// pushing in rejected, and returns how soon to pass again after one, or
// after a push re-applied on a new tip (0: at the next tick).
func (d *Daemon) pass(ctx context.Context, rejected *int) time.Duration {
	start := d.Clock.Now()
	res, err := d.Pass(ctx)
	elapsed := d.Clock.Since(start)

	result := outcome(ctx, res, err)
	lost := result == ResultFailed && errors.Is(err, gitsync.ErrPushConflict)
	var retry time.Duration
	if lost {
		*rejected++
		retry = d.retryAfter(*rejected)
	} else if result != ResultAbandoned {
		*rejected = 0
	}
	d.Metrics.observePass(result, lost, res, elapsed, start.Add(elapsed))
	d.recordStatus(result, lost, *rejected, res, err, start, start.Add(elapsed), retry)
	log := d.Log.WithValues("duration", elapsed.Round(time.Millisecond).String())
	if res != nil && res.Attempts > 0 {
		log = log.WithValues("attempts", res.Attempts, "retries", res.Attempts-1)
	}
	switch result {
	case ResultAbandoned:
		log.Info("pass abandoned", "cause", context.Cause(ctx).Error())
		return 0 // nothing it saw is reliable, and nothing is left to publish it with
	case ResultFailed:
		if lost {
			log = log.WithValues("reason", reasons.PushRejected, "retryIn", retry.Round(time.Millisecond).String())
		}
		log.Error(err, "pass failed")
	case ResultCommitted:
		if d.Poller != nil {
			// A step landed: the peer's answer is due in seconds.
			d.Poller.Hurry()
		}
		if res.Attempts > 1 {
			// The push was re-applied on commits the pass never computed
			// on (a peer's nonce, say), which no poll will call new: the
			// next pass answers them in a second, jittered as after a
			// rejected push, so that the daemons rebased in one burst do
			// not all race again together.
			d.Metrics.observeWake(WakeRebased)
			retry = d.retryAfter(1)
		}
		if res.PushBranch == "" {
			log.Info("pushed", "commit", res.Commit, "steps", res.Steps, "files", len(res.Files))
			break
		}
		// A review branch with --review-scope applied: the handshake part
		// went to the shared branch unreviewed, the rest (if any) to the
		// review branch.
		log.Info("pushed", "commit", res.Commit, "steps", res.Steps, "files", len(res.CommitFiles), "review", "none: handshake artifacts only")
		if res.Proposed != "" {
			d.logProposed(log, res)
		}
	case ResultProposed:
		d.logProposed(log, res)
	case ResultWithdrawn:
		log.Info("withdrawn", "branch", res.PushBranch, "reason", "nothing left to propose")
	default:
		log.V(1).Info("up to date")
	}
	events := d.tracker.observe(res, err)
	for _, e := range events {
		d.Log.Info("event", "type", e.Type, "reason", e.Reason, "message", e.Message)
	}
	if res != nil && res.Output != nil {
		d.Metrics.setPeerings(res.Output.Status, res.Output.Certificates)
	}
	if d.Events != nil && len(events) > 0 {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
		defer cancel()
		d.Events.Publish(pctx, events)
	}
	return retry
}

// outcome classifies a pass: an error once ctx has ended is an abandoned
// pass, not a failed one.
func outcome(ctx context.Context, res *runner.Result, err error) string {
	switch {
	case err != nil && ctx.Err() != nil:
		return ResultAbandoned
	case err != nil:
		return ResultFailed
	case res != nil && res.Commit != "":
		return ResultCommitted
	case res != nil && res.Proposed != "":
		return ResultProposed
	case res != nil && res.Withdrawn:
		return ResultWithdrawn
	}
	return ResultUnchanged
}

// recordStatus sets Status to the outcome of a pass that ran from start to
// end; rejected counts the passes in a row that gave up pushing, retry is
// how soon the next one runs after such a pass. An abandoned pass leaves
// the status as it was: it says nothing about the repo.
func (d *Daemon) recordStatus(result string, lost bool, rejected int, res *runner.Result, err error, start, end time.Time, retry time.Duration) {
	if result == ResultAbandoned {
		return
	}
	ps := PassStatus{Cluster: d.Cluster, Result: result, Started: start.UTC(), Ended: end.UTC()}
	if res != nil {
		ps.Attempts, ps.Commit = res.Attempts, res.Commit
		ps.Stuck, ps.KeyRollover = res.Stuck, res.KeyRollover
	}
	if err != nil {
		if d.failingSince.IsZero() {
			d.failingSince = start
		}
		ps.Reason, ps.Message, ps.FailingSince = reasons.ReconciliationFailed, truncate(err.Error()), d.failingSince.UTC()
		if errors.Is(err, runner.ErrDuplicateReconciler) {
			ps.Reason = reasons.DuplicateReconciler
		}
	} else {
		d.failingSince, d.lastSuccess = time.Time{}, end
	}
	if lost {
		ps.Reason, ps.RejectedInARow, ps.RetryAt = reasons.PushRejected, rejected, end.Add(retry).UTC()
	}
	if !d.lastSuccess.IsZero() {
		ps.LastSuccess = d.lastSuccess.UTC()
	}
	if err := d.Status.set(ps); err != nil {
		d.Log.Error(err, "recording the pass's status", "file", d.Status.File)
	}
}

// logProposed logs the proposal res made or left as it was.
func (d *Daemon) logProposed(log logr.Logger, res *runner.Result) {
	kv := []any{"branch", res.PushBranch, "commit", res.Proposed, "steps", res.Steps, "files", len(res.Files)}
	if d.Compare != nil {
		kv = append(kv, "compare", d.Compare())
	}
	if res.Attempts > 0 {
		log.Info("proposed", kv...)
	} else {
		log.V(1).Info("proposal unchanged", kv...) // an open review, as it was
	}
}
