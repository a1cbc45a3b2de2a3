package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/reasons"
)

// TestASecondReconcilerShowsInStatusAndEvents: a pass failing with
// runner.ErrDuplicateReconciler is reported with its own reason, in the
// status `gitpeer status` and GET /status show and in the event, and the
// message says what to do.
func TestASecondReconcilerShowsInStatusAndEvents(t *testing.T) {
	_, log := newLogs(t)
	m, _ := NewMetrics("test")
	events := &sink{}
	dup := fmt.Errorf("cluster alpha: pass: %w: commit(s) 0123456789ab on main are signed with cluster alpha's key but were not made by this reconciler, ...; stop every reconciler of alpha but one, then restart that one", runner.ErrDuplicateReconciler)
	p := &passes{script: []outcomeFunc{fail(dup)}}
	st := &Status{}
	d := &Daemon{Cluster: "alpha", Interval: 5 * time.Millisecond, Log: log, Metrics: m, Events: events, Status: st}
	runUntil(t, d, p, func() bool { return p.count() >= 2 })

	got := st.Last()
	if got.Result != ResultFailed || got.Reason != reasons.DuplicateReconciler || !strings.Contains(got.Message, "stop every reconciler of alpha but one, then restart that one") {
		t.Errorf("status %+v, want a failed pass with reason %s saying what to do", got, reasons.DuplicateReconciler)
	}
	// Every pass fails alike: one event, not one per pass.
	if got, want := events.reasons(), []string{"Warning " + reasons.DuplicateReconciler}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
