package daemon

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
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
	// WakeRebased: the last pass's push landed on commits the pass had
	// not computed on (it was rejected, then re-applied on the new tip).
	// The clone has seen them, so no poll would say they are new; a peer's
	// step among them is answered by the pass this starts, RetryBase
	// (jittered) after the push.
	WakeRebased = "rebased"
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
	// DefaultBriskInterval is the time between two polls for a while after
	// a pass pushed (Poller.Hurry): a peer's answer to the step is noticed
	// within about that long of landing, not a whole Interval later.
	DefaultBriskInterval = time.Second
	// DefaultBriskFor is how long the polls stay brisk after a push: enough
	// for a peer to notice the step (its own poll) and answer it (a pass
	// of a second or a few on a loaded machine). A push costs that many
	// ref listings more; the handshake's hand-offs are what it speeds up.
	DefaultBriskFor = 15 * time.Second
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
// own schedule, not by every poll. After a pass pushed (Hurry), when a
// peer's answer is due, it polls every BriskInterval for BriskFor. After a
// failed poll it waits twice as long as before (from Interval, at most
// MaxBackoff), and after a rate limit at least what the host asked for
// (Retry-After); a failed poll ends the brisk polls, and a push during
// the backoff does not shorten it.
type Poller struct {
	// Refs is what is polled.
	Refs RefSource
	// Interval is the time between two polls; default DefaultPollInterval.
	Interval time.Duration
	// MaxBackoff bounds the wait after failed polls; default
	// DefaultPollMaxBackoff.
	MaxBackoff time.Duration
	// BriskInterval is the time between two polls for BriskFor after
	// Hurry (never longer than Interval); default DefaultBriskInterval.
	BriskInterval time.Duration
	// BriskFor is how long the polls stay brisk after Hurry; default
	// DefaultBriskFor, negative never.
	BriskFor time.Duration

	// hurry holds at most one pending Hurry; made once, by hurryChan.
	hurryOnce sync.Once
	hurry     chan struct{}
	// waits counts the waits run began (a timer set): tests step a fake
	// clock once the wait that follows a Hurry is set.
	waits atomic.Int64
}

// Hurry says that a pass just pushed a step, so a peer's answer is due:
// the polls are brisk (BriskInterval) for the next BriskFor. It never
// blocks, and may be called from any goroutine, before run too.
func (p *Poller) Hurry() {
	select {
	case p.hurryChan() <- struct{}{}:
	default: // one is pending already
	}
}

// hurryChan is the channel of Hurry, made on first use.
func (p *Poller) hurryChan() chan struct{} {
	p.hurryOnce.Do(func() { p.hurry = make(chan struct{}, 1) })
	return p.hurry
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
	brisk, briskFor := min(p.BriskInterval, interval), p.BriskFor
	if p.BriskInterval <= 0 {
		brisk = min(DefaultBriskInterval, interval)
	}
	if briskFor == 0 {
		briskFor = DefaultBriskFor
	}
	var (
		woken      map[string]string // the refs the last wake was for
		failures   int               // failed polls in a row
		briskUntil time.Time         // polls are brisk until then
		due        = clk.Now().Add(jitter(interval))
	)
	for {
		t := clk.NewTimer(due.Sub(clk.Now()))
		p.waits.Add(1)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.hurryChan():
			t.Stop()
			if failures == 0 && briskFor > 0 {
				briskUntil = clk.Now().Add(briskFor)
				if soon := clk.Now().Add(jitter(brisk)); soon.Before(due) {
					due = soon
				}
			}
			continue
		case <-t.C():
		}
		refs, err := p.Refs.RemoteRefs(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			briskUntil = time.Time{}
			failures++
			wait := jitter(min(interval<<min(failures, 20), maxBackoff))
			result := PollFailed
			var rl *gitsync.RateLimitError
			if errors.As(err, &rl) {
				// Never sooner than the host asked.
				result = PollRateLimited
				wait = max(wait, rl.RetryAfter+rand.N(rl.RetryAfter/10+1))
			}
			due = clk.Now().Add(wait)
			m.observePoll(result)
			log.Error(err, "reading the remote's refs failed", "reason", result, "failures", failures, "retryIn", wait.Round(time.Millisecond).String())
			continue
		}
		if failures > 0 {
			log.Info("reading the remote's refs again", "after", failures)
			failures = 0
		}
		due = clk.Now().Add(jitter(interval))
		if clk.Now().Before(briskUntil) {
			due = clk.Now().Add(jitter(brisk))
		}
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
