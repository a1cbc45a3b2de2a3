package daemon

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gitpeer/gitpeer/test/rbactest"
)

// TestRBACCoversExactlyWhatTheDaemonDoes runs the daemon's Kubernetes
// requests (Events about the Lease, leader election, release on shutdown)
// on a fake clientset and checks each against manifests/rbac as the RBAC
// authorizer would: every request is allowed, and every rule on the
// daemon's resources (rbactest.DaemonResources) is used. The backend's
// rules are checked by internal/backend/kubernetes/rbac_test.go.
func TestRBACCoversExactlyWhatTheDaemonDoes(t *testing.T) {
	m, err := rbactest.Load("../../../manifests/rbac")
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	const ns = "liqo" // the default --liqo-namespace, where the Role is
	ctx := context.Background()

	// Events before any replica led: the Lease is created to be about.
	rec, stop, err := NewEventRecorder(cs.CoreV1(), discard())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	events := &KubeEvents{Leases: cs.CoordinationV1(), Namespace: ns, Name: LeaseName("alpha"), Recorder: rec, Log: discard()}
	e := Event{Type: corev1.EventTypeWarning, Reason: "KeyChanged", Message: "beta → alpha (provider, Pending): key changed"}
	events.Publish(ctx, []Event{e})
	events.Publish(ctx, []Event{e}) // the same again: a patch of its count
	eventually(t, "the repeated event is patched", func() bool {
		return slices.ContainsFunc(cs.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "patch" })
	})

	// Leader election: acquire, renew, then release on shutdown.
	le := fastElection(cs, "a")
	le.Namespace = ns
	runCtx, cancel := context.WithCancel(ctx)
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- le.run(runCtx, discard(), func(ctx context.Context) {
			close(led)
			<-ctx.Done()
		})
	}()
	<-led
	time.Sleep(3 * le.RetryPeriod) // renewals
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	used := map[rbactest.Rule]bool{}
	for _, req := range rbactest.Requests(cs.Actions()) {
		if !m.Allows(req) {
			t.Errorf("manifests/rbac forbids %s %s %q in namespace %q", req.Verb, req.Resource, req.Name, req.Namespace)
		}
		used[req.Rule] = true
	}
	for _, r := range m.Granted(rbactest.IsDaemonResource) {
		if !used[r] {
			t.Errorf("manifests/rbac grants %s %s (group %q) but the daemon never does it", r.Verb, r.Resource, r.Group)
		}
	}
	if t.Failed() {
		var seen []string
		for _, req := range rbactest.Requests(cs.Actions()) {
			seen = append(seen, req.Verb+" "+req.Group+"/"+req.Resource+" "+req.Namespace+"/"+req.Name)
		}
		t.Log("requests:\n" + strings.Join(seen, "\n"))
	}
}
