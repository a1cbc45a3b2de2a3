package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// A revocation pruned two tenant namespaces. The one Liqo's finalizer has
// held for ten minutes is named with the namespace controller's words and
// the commands; the one deleted a minute ago, a namespace that is not a
// tenant namespace and a live one are not.
func TestStuckNamesTenantNamespacesHeldPastTheBound(t *testing.T) {
	ca := testCA(t)
	terminating := func(name string, since time.Duration, tenant bool, conds ...corev1.NamespaceCondition) *corev1.Namespace {
		ns := liqo.Namespace("x")
		ns.Name = name
		if !tenant {
			ns.Labels = nil
		}
		if since > 0 {
			ns.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-since)}
			ns.Finalizers = []string{"kubernetes"}
		}
		ns.Status.Conditions = conds
		return ns
	}
	held := corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
		Message: "Some content in the namespace has finalizers remaining: tenant.liqo.io/finalizer in 1 resource instances"}
	cs := newClientset(
		terminating("liqo-tenant-alpha", 10*time.Minute, true, held),
		terminating("liqo-tenant-gamma", time.Minute, true, held),
		terminating("liqo-tenant-live", 0, true),
		terminating("team-a", time.Hour, false, held),
	)
	b, _ := initBackend(t, cs, testOptions(ca))
	stuck, err := b.Stuck(context.Background(), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(stuck) != 1 || stuck[0].Object != "namespace/liqo-tenant-alpha" || !stuck[0].Since.Equal(testNow.Add(-10*time.Minute)) {
		t.Fatalf("stuck = %+v, want liqo-tenant-alpha alone", stuck)
	}
	for _, want := range []string{"terminating for 10m0s", "tenant.liqo.io/finalizer in 1 resource instances", "liqo-controller-manager", "kubectl -n liqo-tenant-alpha get tenants,resourceslices,namespacemaps"} {
		if !strings.Contains(stuck[0].Message, want) {
			t.Errorf("message lacks %q: %s", want, stuck[0].Message)
		}
	}
}
