package gitsync

import (
	"time"

	utilclock "k8s.io/utils/clock"
)

// ClockFunc returns the Options.Clock of a caller whose time is a function
// rather than a clock (the demo's time, a test world's, frozen or stepped by
// hand): Now is now(), Since measures from now(), and timers, tickers and
// sleeps are the real clock's. A frozen now therefore dates every commit
// alike and never lets Options.Push.Timeout run out; the backoff waits are
// still real.
func ClockFunc(now func() time.Time) utilclock.Clock { return funcClock{now: now} }

type funcClock struct {
	utilclock.RealClock
	now func() time.Time
}

func (c funcClock) Now() time.Time                  { return c.now() }
func (c funcClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }
