package daemon

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
)

// fastElection is leader election with durations short enough for tests
// (the Lease stores whole seconds: LeaseDuration must be one at least).
func fastElection(cs *fake.Clientset, id string) *LeaderElection {
	return &LeaderElection{
		Leases: cs.CoordinationV1(), Namespace: "liqo", Name: LeaseName("alpha"), Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		ReleaseOnCancel: true,
	}
}

// replica is one daemon process: its own pass counter over a shared
// script, so that overlapping passes of two replicas are seen.
type replica struct {
	d      *Daemon
	m      *Metrics
	passes atomic.Int32
	cancel context.CancelFunc
	done   chan error
}

func startReplica(t *testing.T, cs *fake.Clientset, id string, shared *passes) *replica {
	t.Helper()
	m, _ := NewMetrics("test")
	r := &replica{m: m, done: make(chan error, 1)}
	r.d = &Daemon{Cluster: "alpha", Interval: 20 * time.Millisecond, Metrics: m, Leader: fastElection(cs, id),
		Pass: func(ctx context.Context) (*runner.Result, error) {
			r.passes.Add(1)
			return shared.pass(ctx)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.d.Run(ctx) }()
	t.Cleanup(cancel)
	return r
}

func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

func (r *replica) leading() bool { return testutil.ToFloat64(r.m.leader) == 1 }

// slowIdle is a pass that takes a while, so that overlaps would show.
func slowIdle(ctx context.Context) (*runner.Result, error) {
	select {
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &runner.Result{}, nil
}

func TestOneOfTwoReplicasRunsPassesAndTheOtherTakesOverWhenItStops(t *testing.T) {
	cs := fake.NewClientset()
	shared := &passes{script: []outcomeFunc{slowIdle}}
	a := startReplica(t, cs, "a", shared)
	b := startReplica(t, cs, "b", shared)

	eventually(t, "a replica leads", func() bool { return a.leading() || b.leading() })
	leader, standby := a, b
	if b.leading() {
		leader, standby = b, a
	}
	eventually(t, "the leader runs passes", func() bool { return leader.passes.Load() >= 3 })
	time.Sleep(300 * time.Millisecond) // three retry periods of the standby
	if standby.passes.Load() != 0 || standby.leading() {
		t.Fatalf("the standby ran %d passes", standby.passes.Load())
	}

	// The leader stops (SIGTERM): it releases the Lease after its last pass,
	// and the standby takes over without waiting for the lease to expire.
	stopped := time.Now()
	leader.stop(t)
	lease, err := cs.CoordinationV1().Leases("liqo").Get(context.Background(), "gitpeer-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" && *h != standby.d.Leader.Identity {
		t.Errorf("the stopped leader still holds the Lease: %q", *h)
	}
	eventually(t, "the standby leads", standby.leading)
	if took := time.Since(stopped); took > 2*time.Second {
		t.Errorf("takeover took %s: the Lease was not released", took)
	}
	before := standby.passes.Load()
	eventually(t, "the new leader runs passes", func() bool { return standby.passes.Load() > before })
	standby.stop(t)
	if shared.overlaps != 0 {
		t.Errorf("%d passes overlapped", shared.overlaps)
	}
}

func TestTheLivenessCheckPassesForAReplicaThatDoesNotLead(t *testing.T) {
	le := fastElection(fake.NewClientset(), "a")
	if err := le.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := le.Check(nil); err != nil {
		t.Errorf("a replica that never led: %v", err)
	}
}

func TestLeaderElectionNeedsALease(t *testing.T) {
	le := &LeaderElection{}
	d := &Daemon{Cluster: "alpha", Interval: time.Second, Pass: idle, Leader: le}
	if err := d.Run(context.Background()); err == nil {
		t.Fatal("leader election without a Lease client started")
	}
}
