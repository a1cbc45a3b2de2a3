package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
)

// StuckAfter is how long a tenant namespace may be terminating before
// Stuck reports it. Liqo's controllers release their finalizers within
// seconds when they run; minutes mean one of them is not running.
const StuckAfter = 5 * time.Minute

var _ backend.StuckReporter = (*Backend)(nil)

// Stuck implements backend.StuckReporter: the tenant namespaces (Liqo's
// label liqo.io/tenant-namespace) whose deletion started more than
// StuckAfter before now, sorted by name, each with what the namespace
// controller reports still holds it (its NamespaceContentRemaining and
// NamespaceFinalizersRemaining conditions name the resources and the
// finalizers) and what to do. Revoking a peering prunes its tenant
// namespace, and Liqo's finalizers (Tenant, ResourceSlice, NamespaceMap)
// hold it until Liqo's controller-manager removes them: a namespace stuck
// here means it is not running. Errors are the API server's (the RBAC of
// manifests/rbac grants list on namespaces).
func (b *Backend) Stuck(ctx context.Context, now time.Time) ([]backend.Stuck, error) {
	list, err := b.core.Namespaces().List(ctx, metav1.ListOptions{LabelSelector: liqo.LabelTenantNamespace})
	if err != nil {
		return nil, fmt.Errorf("list tenant namespaces (label %s): %w", liqo.LabelTenantNamespace, err)
	}
	var out []backend.Stuck
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil || now.Sub(ns.DeletionTimestamp.Time) < StuckAfter {
			continue
		}
		out = append(out, backend.Stuck{
			Object:  "namespace/" + ns.Name,
			Since:   ns.DeletionTimestamp.UTC(),
			Message: stuckMessage(&ns, now),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object < out[j].Object })
	return out, nil
}

// stuckMessage says for how long ns has been terminating, what holds it and
// what to do about it.
func stuckMessage(ns *corev1.Namespace, now time.Time) string {
	var held []string
	for _, c := range ns.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining:
			held = append(held, c.Message)
		}
	}
	what := "the namespace controller has not said what holds it"
	if len(held) > 0 {
		what = strings.Join(held, "; ")
	}
	return fmt.Sprintf("tenant namespace %s has been terminating for %s: %s. Liqo's controllers remove their finalizers when they run: check that liqo-controller-manager runs; "+
		"if Liqo is gone for good, remove them by hand: kubectl -n %s get tenants,resourceslices,namespacemaps -o name | xargs -r kubectl -n %s patch --type merge -p '{\"metadata\":{\"finalizers\":null}}'",
		ns.Name, now.Sub(ns.DeletionTimestamp.Time).Round(time.Second), what, ns.Name, ns.Name)
}
