//go:build unix && !e2e

// Not with -tags e2e: the e2e TestMain stops its control plane on SIGTERM.

package daemon

import (
	"context"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSIGTERMAbandonsTheRunningPassAndStops is what a Pod's termination
// does: main's signal.NotifyContext ends the context on SIGTERM.
func TestSIGTERMAbandonsTheRunningPassAndStops(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	m, _ := NewMetrics("test")
	started := make(chan struct{}, 1)
	p := &passes{script: []outcomeFunc{blockUntilDone(started)}}
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, Metrics: m, Pass: p.pass}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-started
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not stop Run")
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues(ResultAbandoned)); got != 1 || p.count() != 1 {
		t.Errorf("abandoned %v of %d passes, want the one running", got, p.count())
	}
}
