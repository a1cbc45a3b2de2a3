package liqo

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// RemoteControlPlaneClusterRole is the ClusterRole Liqo's chart installs as
// liqo-remote-controlplane (deployments/liqo/files/liqo-remote-controlplane-ClusterRole.yaml):
// what a consumer's control-plane user may do in its tenant namespace. Liqo's
// tenant controller finds it by the label app.kubernetes.io/name=remote-controlplane.
// Rendered only where Liqo itself is not installed.
func RemoteControlPlaneClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: clusterRoleMeta(RemoteControlPlaneCR, "remote-controlplane"),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"renews", "renews/status", "resourceslices", "resourceslices/status"}, Verbs: allVerbs},
			{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"namespacemaps", "namespacemaps/status"}, Verbs: allVerbs},
		},
	}
}

// ClusterWideClusterRole is liqo-virtual-kubelet-remote-clusterwide
// (deployments/liqo/files/liqo-virtual-kubelet-remote-clusterwide-ClusterRole.yaml):
// read access to the metrics Liqo's virtual kubelet scrapes. Rendered only
// where Liqo itself is not installed.
func ClusterWideClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: clusterRoleMeta(ClusterWideCR, "virtual-kubelet-remote-clusterwide"),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"metrics.liqo.io"}, Resources: []string{"scrape/metrics"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
}

func clusterRoleMeta(name, app string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"app.kubernetes.io/name": app, LabelManagedBy: "gitpeer"},
	}
}
