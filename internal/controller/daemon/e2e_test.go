//go:build e2e

package daemon

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// leaseEvents lists the Events about a Lease as kubectl describe finds
// them: by the involved object's kind, namespace, name and UID.
func leaseEvents(ctx context.Context, t *testing.T, ns, name string) ([]corev1.Event, *coordinationv1.Lease) {
	t.Helper()
	lease, err := coordinationv1client.NewForConfigOrDie(cp.admin).Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease %s/%s: %v", ns, name, err)
	}
	sel := fields.Set{
		"involvedObject.kind": "Lease", "involvedObject.name": name, "involvedObject.uid": string(lease.UID),
	}.AsSelector().String()
	list, err := corev1client.NewForConfigOrDie(cp.admin).Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items, lease
}

func TestE2EEventsAboutTheLeaseCarryTheConditionReasons(t *testing.T) {
	ctx := context.Background()
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
	// As ServiceAccount gitpeer-system/gitpeer: manifests/rbac must allow it.
	rec, stop, err := NewEventRecorder(corev1client.NewForConfigOrDie(cp.sa), log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	events := &KubeEvents{Leases: coordinationv1client.NewForConfigOrDie(cp.sa), Namespace: "liqo", Name: LeaseName("alpha"), Recorder: rec, Log: log}

	peerings := []layout.PeeringStatus{
		peeringStatus("beta", "alpha", layout.RoleProvider, layout.StepPending, metav1.ConditionFalse, "KeyChanged", "cluster beta's key changed without a rotation statement", true),
		peeringStatus("alpha", "gamma", layout.RoleConsumer, layout.StepTenantSent, metav1.ConditionFalse, "SignatureVerificationFailed", "identity of gamma: signature does not verify", true),
		peeringStatus("delta", "alpha", layout.RoleProvider, layout.StepNonceSent, metav1.ConditionFalse, "InvalidCSR", "tenant of delta: CSR subject is not delta", true),
		peeringStatus("epsilon", "alpha", layout.RoleProvider, layout.StepIdentityIssued, metav1.ConditionTrue, "IdentityIssued", "identity issued to epsilon", false),
	}
	p := &passes{script: []outcomeFunc{
		func(context.Context) (*runner.Result, error) { return withPeerings("c0ffee", peerings...), nil },
		func(context.Context) (*runner.Result, error) { return &runner.Result{}, pushConflict },
		func(context.Context) (*runner.Result, error) { return withPeerings("", peerings...), nil },
	}}
	d := &Daemon{Cluster: "alpha", Interval: 50 * time.Millisecond, Events: events, Log: log}
	runUntil(t, d, p, func() bool { return p.count() >= 4 })

	want := map[string]string{
		"KeyChanged": corev1.EventTypeWarning, "SignatureVerificationFailed": corev1.EventTypeWarning,
		"InvalidCSR": corev1.EventTypeWarning, "IdentityIssued": corev1.EventTypeNormal,
		"PushRejected": corev1.EventTypeWarning, "ReconciliationSucceeded": corev1.EventTypeNormal,
	}
	var got []corev1.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ = leaseEvents(ctx, t, "liqo", LeaseName("alpha"))
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	byReason := map[string]corev1.Event{}
	for _, e := range got {
		byReason[e.Reason] = e
	}
	for reason, typ := range want {
		e, ok := byReason[reason]
		switch {
		case !ok:
			t.Errorf("no %s event about the Lease (got %d events)", reason, len(got))
		case e.Type != typ || e.Source.Component != "gitpeer" || e.Count != 1:
			t.Errorf("%s: type %s, source %q, count %d; want %s from gitpeer, once", reason, e.Type, e.Source.Component, e.Count, typ)
		}
	}
	if e := byReason["KeyChanged"]; e.Message != "beta → alpha (provider, Pending): cluster beta's key changed without a rotation statement" ||
		e.Annotations[AnnotationConsumer] != "beta" || e.Annotations[AnnotationRevision] != "c0ffee" {
		t.Errorf("KeyChanged event: message %q, annotations %v", e.Message, e.Annotations)
	}

	// What an admin reads.
	out, err := cp.kube(ctx, "describe", "lease", LeaseName("alpha"), "-n", "liqo")
	if err != nil {
		t.Fatal(err)
	}
	for reason := range want {
		if !strings.Contains(out, reason) {
			t.Errorf("kubectl describe lease does not show %s:\n%s", reason, out)
		}
	}
}

// e2eReplica is an in-process daemon replica with leader election as the
// ServiceAccount, over a script shared with the other replicas.
type e2eReplica struct {
	d       *Daemon
	m       *Metrics
	passes  atomic.Int32
	cancel  context.CancelFunc
	done    chan error
	running atomic.Bool
}

func (r *e2eReplica) leading() bool { return testutil.ToFloat64(r.m.leader) == 1 }

// passLog records when passes start, to check none starts while no
// replica may hold the Lease.
type passLog struct {
	mu     sync.Mutex
	starts []time.Time
}

func (l *passLog) add(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, t)
}

func (l *passLog) startedBetween(from, to time.Time) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, s := range l.starts {
		if !s.Before(from) && s.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

func TestE2ETwoDaemonsOneLeaderFailover(t *testing.T) {
	ctx := context.Background()
	const cluster = "beta"
	leases := coordinationv1client.NewForConfigOrDie(cp.sa)
	shared := &passes{}
	var long, longStarted atomic.Bool // passes run until abandoned; one did start
	starts := &passLog{}
	shared.script = []outcomeFunc{func(ctx context.Context) (*runner.Result, error) {
		starts.add(time.Now())
		d := 50 * time.Millisecond
		if long.Load() {
			d = time.Minute
			longStarted.Store(true)
		}
		select {
		case <-time.After(d):
			return &runner.Result{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	newReplica := func(id string) *e2eReplica {
		m, _ := NewMetrics("e2e")
		r := &e2eReplica{m: m, done: make(chan error, 1)}
		r.d = &Daemon{Cluster: cluster, Interval: 100 * time.Millisecond, Metrics: m,
			Log: funcr.New(func(p, a string) { t.Log(id, p, a) }, funcr.Options{}),
			Leader: &LeaderElection{Leases: leases, Namespace: "liqo", Name: LeaseName(cluster), Identity: id,
				LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond, ReleaseOnCancel: true},
			Pass: func(ctx context.Context) (*runner.Result, error) {
				r.passes.Add(1)
				r.running.Store(true)
				defer r.running.Store(false)
				return shared.pass(ctx)
			}}
		rctx, cancel := context.WithCancel(ctx)
		r.cancel = cancel
		go func() { r.done <- r.d.Run(rctx) }()
		t.Cleanup(cancel)
		return r
	}
	a, b := newReplica("replica-a"), newReplica("replica-b")
	holder := func() string {
		l, err := coordinationv1client.NewForConfigOrDie(cp.admin).Leases("liqo").Get(ctx, LeaseName(cluster), metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	t.Run("one replica leads and runs the passes, the other stands by", func(t *testing.T) {
		eventually(t, "a replica leads", func() bool { return a.leading() || b.leading() })
		leader, standby := a, b
		if b.leading() {
			leader, standby = b, a
		}
		if h := holder(); h != leader.d.Leader.Identity {
			t.Fatalf("the Lease is held by %q, not the leading replica %q", h, leader.d.Leader.Identity)
		}
		eventually(t, "the leader runs passes", func() bool { return leader.passes.Load() >= 3 })
		time.Sleep(1500 * time.Millisecond)
		if n := standby.passes.Load(); n != 0 || standby.leading() {
			t.Fatalf("the standby ran %d passes", n)
		}
	})

	t.Run("a leader that loses its Lease abandons its pass and runs none until it holds the Lease again", func(t *testing.T) {
		leader := a
		if b.leading() {
			leader = b
		}
		long.Store(true)
		eventually(t, "a long pass runs in the leader", longStarted.Load)
		// Another holder takes the Lease, as after a network partition.
		l, err := coordinationv1client.NewForConfigOrDie(cp.admin).Leases("liqo").Get(ctx, LeaseName(cluster), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = ptr("intruder"), ptr(int32(4)), &now, &now
		if _, err := coordinationv1client.NewForConfigOrDie(cp.admin).Leases("liqo").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stolen := time.Now()
		eventually(t, "the leader gives up", func() bool { return !leader.leading() })
		lost := time.Since(stolen)
		if lost > 6*time.Second {
			t.Errorf("the leader noticed after %s, want within the renew deadline (3s) and a retry", lost)
		}
		if leader.running.Load() || testutil.ToFloat64(leader.m.passes.WithLabelValues(ResultAbandoned)) != 1 {
			t.Errorf("the running pass was not abandoned")
		}
		long.Store(false)
		// The intruder's Lease lasts 4s from its renewal: no pass before.
		eventually(t, "a replica leads again", func() bool { return a.leading() || b.leading() })
		if early := starts.startedBetween(stolen, stolen.Add(3500*time.Millisecond)); len(early) > 0 {
			t.Errorf("%d passes started while the intruder held the Lease", len(early))
		}
		if h := holder(); h != "replica-a" && h != "replica-b" {
			t.Errorf("holder %q", h)
		}
	})

	t.Run("when the leader stops, it releases the Lease and the other takes over at once", func(t *testing.T) {
		leader, standby := a, b
		if b.leading() {
			leader, standby = b, a
		}
		before := standby.passes.Load()
		stopped := time.Now()
		leader.cancel()
		select {
		case err := <-leader.done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the leader did not stop")
		}
		eventually(t, "the standby leads", standby.leading)
		if took := time.Since(stopped); took > 3*time.Second {
			t.Errorf("takeover took %s, want less than the lease duration: the Lease was released", took)
		}
		eventually(t, "the new leader runs passes", func() bool { return standby.passes.Load() > before })
		standby.cancel()
		<-standby.done
	})
	if shared.overlaps != 0 {
		t.Errorf("%d passes overlapped", shared.overlaps)
	}
}
