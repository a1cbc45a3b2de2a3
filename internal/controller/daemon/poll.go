package daemon

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/gitsync"
)

// Wake-up sources, the values of gitpeer_wakeups_total's source label and
// of the "wake" log line's source key.
const (
	// WakePoll: the remote's refs, read every PollInterval, moved.
	WakePoll = "poll"
	// WakeWebhook: the Git host sent a verified push event (Webhook).
	WakeWebhook = "webhook"
	// WakeWatch: the local repository's refs changed (--watch).
	WakeWatch = "watch"
)

// Ref poll outcomes, the values of gitpeer_ref_polls_total's result label.
const (
	PollUnchanged   = "unchanged"    // every ref where the clone last saw it
	PollMoved       = "moved"        // a ref moved: a pass was started
	PollFailed      = "failed"       // the refs could not be read: backing off
	PollRateLimited = "rate_limited" // the host refused for its rate limit: backing off
)

// Defaults of Poller.
const (
	// DefaultPollInterval is how often the remote's refs are read: a peer's
	// step is noticed within about that long.
	DefaultPollInterval = 5 * time.Second
	// DefaultPollMaxBackoff bounds the wait after failed polls.
	DefaultPollMaxBackoff = 5 * time.Minute
)

// RefSource is what a Poller reads: the remote's refs, without a fetch,
// and which of them a pass has not seen yet. *gitsync.Repo implements it.
type RefSource interface {
	// RemoteRefs returns the hash of each ref a pass reads, by full ref
	// name, "" for one the remote lacks; an error a *gitsync.RateLimitError
	// when the host refused for its rate limit.
	RemoteRefs(ctx context.Context) (map[string]string, error)
	// Unseen returns the names of refs whose hash is not the one the last
	// fetch or push saw.
	Unseen(refs map[string]string) []string
}

var _ RefSource = (*gitsync.Repo)(nil)

// Poller notices new commits on the remote in seconds, cheaply: every
// Interval (with ±10% jitter, so that the daemons of a mesh do not poll
// in step) it reads the remote's refs, one ref advertisement and no
// objects, and wakes the daemon when a ref a pass reads (the shared
// branch, where a peer's step or a spec change lands; the applied branch)
// points at a commit the clone has not seen. It wakes it once per new
// state of the refs: a pass that fails on it is retried by the daemon's
// own schedule, not by every poll. After a failed poll it waits twice as
// long as before (from Interval, at most MaxBackoff), and after a rate
// limit at least what the host asked for (Retry-After).
type Poller struct {
	// Refs is what is polled.
	Refs RefSource
	// Interval is the time between two polls; default DefaultPollInterval.
	Interval time.Duration
	// MaxBackoff bounds the wait after failed polls; default
	// DefaultPollMaxBackoff.
	MaxBackoff time.Duration
}

// run polls until ctx ends, calling wake(WakePoll) when a ref moved;
// clk times it, log and m report it.
func (p *Poller) run(ctx context.Context, clk clock.Clock, log logr.Logger, m *Metrics, wake func(string)) {
	interval, maxBackoff := p.Interval, p.MaxBackoff
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultPollMaxBackoff
	}
	var (
		woken    map[string]string // the refs the last wake was for
		failures int               // failed polls in a row
		wait     = jitter(interval)
	)
	for {
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		refs, err := p.Refs.RemoteRefs(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			wait = jitter(min(interval<<min(failures, 20), maxBackoff))
			result := PollFailed
			var rl *gitsync.RateLimitError
			if errors.As(err, &rl) {
				// Never sooner than the host asked.
				result = PollRateLimited
				wait = max(wait, rl.RetryAfter+rand.N(rl.RetryAfter/10+1))
			}
			m.observePoll(result)
			log.Error(err, "reading the remote's refs failed", "reason", result, "failures", failures, "retryIn", wait.Round(time.Millisecond).String())
			continue
		}
		if failures > 0 {
			log.Info("reading the remote's refs again", "after", failures)
			failures = 0
		}
		wait = jitter(interval)
		moved := p.Refs.Unseen(refs)
		if len(moved) == 0 || maps.Equal(refs, woken) {
			m.observePoll(PollUnchanged)
			continue
		}
		woken = refs
		m.observePoll(PollMoved)
		slices.Sort(moved)
		kv := []any{"source", WakePoll, "refs", moved}
		for _, name := range moved {
			if h := refs[name]; len(h) >= 12 {
				kv = append(kv, name, h[:12])
			}
		}
		log.V(1).Info("refs moved", kv...)
		wake(WakePoll)
	}
}

// jitter is d ± 10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := d / 5
	return d - d/10 + rand.N(spread+1)
}
