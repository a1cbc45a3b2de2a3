package gitsync

import (
	"sync"
	"time"

	utilclock "k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// skippingClock is a fake clock (k8s.io/utils/clock/testing) on which every
// wait passes at once: NewTimer steps the clock by the timer's duration, so
// the timer fires and the code waiting on it reads exactly the time it
// waited for. It records the waits. The push retries of a Sync then take
// no real time and the durations they see are exact.
type skippingClock struct {
	*testingclock.FakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func newSkippingClock() *skippingClock {
	return &skippingClock{FakeClock: testingclock.NewFakeClock(clock)}
}

func (c *skippingClock) NewTimer(d time.Duration) utilclock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	c.Step(d)
	return t
}

// Waits returns the durations of the timers made so far, in order.
func (c *skippingClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
