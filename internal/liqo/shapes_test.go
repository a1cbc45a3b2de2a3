package liqo_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// resources builds a ResourceList from name, quantity pairs.
func resources(t testing.TB, kv ...string) corev1.ResourceList {
	t.Helper()
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		q, err := resource.ParseQuantity(kv[i+1])
		if err != nil {
			t.Fatal(err)
		}
		out[corev1.ResourceName(kv[i])] = q
	}
	return out
}

var params = authv1beta1.AuthParams{APIServer: "https://172.19.0.3:6443", CA: []byte("CA"), SignedCRT: []byte("CRT")}

// TestObjectsAreLiqosShapes pins every object to the YAML Liqo v1.2 forges
// (liqo-auth.md §2–§5), field for field: a renamed label or a missing field
// here is an object a real Liqo ignores or refuses.
func TestObjectsAreLiqosShapes(t *testing.T) {
	cases := []struct {
		name string
		obj  any
		want string
	}{
		{"the tenant namespace has Liqo's labels and privileged pod security", liqo.Namespace("cl-consumer"), `apiVersion: v1
kind: Namespace
metadata:
  labels:
    liqo.io/remote-cluster-id: cl-consumer
    liqo.io/tenant-namespace: "true"
    pod-security.kubernetes.io/audit: privileged
    pod-security.kubernetes.io/enforce: privileged
    pod-security.kubernetes.io/warn: privileged
  name: liqo-tenant-cl-consumer
`},
		{"the nonce secret is liqo-nonce with the nonce labels and data.nonce", liqo.NonceSecret("cl-consumer", "NONCE"), `apiVersion: v1
data:
  nonce: Tk9OQ0U=
kind: Secret
metadata:
  labels:
    liqo.io/nonce: "true"
    liqo.io/remote-cluster-id: cl-consumer
  name: liqo-nonce
  namespace: liqo-tenant-cl-consumer
type: Opaque
`},
		{"the tenant is named and labelled after the consumer", liqo.Tenant("cl-consumer", []byte("PUBKEY"), []byte("CSR"), []byte{1, 2, 3}), `apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
metadata:
  labels:
    liqo.io/remote-cluster-id: cl-consumer
  name: cl-consumer
  namespace: liqo-tenant-cl-consumer
spec:
  clusterID: cl-consumer
  csr: Q1NS
  publicKey: UFVCS0VZ
  signature: AQID
`},
		{"the control-plane identity is controlplane-<provider> with the provider-side namespace", liqo.ControlPlaneIdentity("cl-consumer", "cl-provider", params), `apiVersion: authentication.liqo.io/v1beta1
kind: Identity
metadata:
  labels:
    liqo.io/remote-cluster-id: cl-provider
  name: controlplane-cl-provider
  namespace: liqo-tenant-cl-provider
spec:
  authParams:
    apiServer: https://172.19.0.3:6443
    ca: Q0E=
    signedCRT: Q1JU
  clusterID: cl-provider
  namespace: liqo-tenant-cl-consumer
  type: ControlPlane
`},
		{"the role binding binds User <consumer> to liqo-remote-controlplane", liqo.ControlPlaneRoleBinding("cl-consumer"), `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  labels:
    app.kubernetes.io/managed-by: liqo
    liqo.io/remote-cluster-id: cl-consumer
  name: liqo-binding-liqo-remote-controlplane
  namespace: liqo-tenant-cl-consumer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: liqo-remote-controlplane
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: cl-consumer
`},
		{"the cluster role binding binds Group <consumer> to the clusterwide role", liqo.ClusterWideBinding("cl-consumer"), `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  labels:
    app.kubernetes.io/managed-by: liqo
    liqo.io/remote-cluster-id: cl-consumer
  name: liqo-binding-liqo-virtual-kubelet-remote-clusterwide-cl-consumer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: liqo-virtual-kubelet-remote-clusterwide
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: cl-consumer
`},
		{"the resource slice carries the replication labels and the virtual-node annotation",
			liqo.ResourceSlice("cl-provider", "cl-consumer", "cl-provider", "default", resources(t, "cpu", "4", "memory", "8Gi", "pods", "30"), true, []byte("CSR")), `apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  annotations:
    liqo.io/create-virtual-node: "true"
  labels:
    liqo.io/remote-cluster-id: cl-provider
    liqo.io/remoteID: cl-provider
    liqo.io/replication: "true"
  name: cl-provider
  namespace: liqo-tenant-cl-provider
spec:
  class: default
  consumerClusterID: cl-consumer
  csr: Q1NS
  providerClusterID: cl-provider
  resources:
    cpu: "4"
    memory: 8Gi
    pods: "30"
`},
		{"a slice without a virtual node has no annotation",
			liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "", nil, false, nil), `apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  labels:
    liqo.io/remote-cluster-id: cl-provider
    liqo.io/remoteID: cl-provider
    liqo.io/replication: "true"
  name: web
  namespace: liqo-tenant-cl-provider
spec:
  consumerClusterID: cl-consumer
  providerClusterID: cl-provider
`},
		{"the slice identity is resourceslice-<name> labelled with the slice", liqo.ResourceSliceIdentity("web", "cl-provider", params), `apiVersion: authentication.liqo.io/v1beta1
kind: Identity
metadata:
  labels:
    liqo.io/remote-cluster-id: cl-provider
    liqo.io/resourceslice-name: web
  name: resourceslice-web
  namespace: liqo-tenant-cl-provider
spec:
  authParams:
    apiServer: https://172.19.0.3:6443
    ca: Q0E=
    signedCRT: Q1JU
  clusterID: cl-provider
  type: ResourceSlice
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := encode(t, tc.obj); got != tc.want {
				t.Errorf("encoded:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestNamesAndLabelsAreLiqosConstants checks our names against Liqo's own
// constants (pkg/consts), not against our reading of them.
func TestNamesAndLabelsAreLiqosConstants(t *testing.T) {
	pairs := []struct{ ours, liqos string }{
		{liqo.LabelRemoteClusterID, consts.RemoteClusterID},
		{liqo.LabelTenantNamespace, consts.TenantNamespaceLabel},
		{liqo.LabelNonce, consts.NonceSecretLabelKey},
		{liqo.LabelIdentityType, consts.IdentityTypeLabelKey},
		{liqo.LabelManagedBy, consts.K8sAppManagedByKey},
		{liqo.AnnotationRemoteTenantNamespace, consts.RemoteTenantNamespaceAnnotKey},
		{liqo.LabelReplication, consts.ReplicationRequestedLabel},
		{liqo.LabelRemoteID, consts.ReplicationDestinationLabel},
		{liqo.LabelResourceSliceName, consts.ResourceSliceNameLabelKey},
		{liqo.AnnotationCreateVirtualNode, consts.CreateVirtualNodeAnnotation},
	}
	for _, p := range pairs {
		if p.ours != p.liqos {
			t.Errorf("we use %q where Liqo uses %q", p.ours, p.liqos)
		}
	}
	if got := liqo.KubeconfigSecretName(liqo.ControlPlaneIdentityName("p")); got != "kubeconfig-controlplane-p" {
		t.Errorf("kubeconfig secret name %q", got)
	}
	if got := liqo.ObjectFileName("ClusterRoleBinding", "x"); got != "clusterrolebinding-x.yaml" {
		t.Errorf("object file name %q", got)
	}
}

// TestTenantNamespaceCarriesLiqosLabels checks the namespace against the
// label set of Liqo's ForgeNamespace (pkg/tenantNamespace), spelled with
// Liqo's constants. (Running Liqo's tenant namespace manager itself would
// need github.com/pmezard/go-difflib listed in go.mod.)
func TestTenantNamespaceCarriesLiqosLabels(t *testing.T) {
	want := map[string]string{
		consts.RemoteClusterID:              "cl-consumer",
		consts.TenantNamespaceLabel:         "true",
		consts.PodSecurityAuditLevelLabel:   consts.PodSecurityLevelPrivileged,
		consts.PodSecurityEnforceLevelLabel: consts.PodSecurityLevelPrivileged,
		consts.PodSecurityWarnLevelLabel:    consts.PodSecurityLevelPrivileged,
	}
	ns := liqo.Namespace("cl-consumer")
	if !maps.Equal(ns.Labels, want) {
		t.Errorf("namespace labels %v, want %v", ns.Labels, want)
	}
	if ns.Name != "liqo-tenant-cl-consumer" || liqo.TenantNamespace("cl-consumer") != ns.Name {
		t.Errorf("namespace %s", ns.Name)
	}
	rb := liqo.ControlPlaneRoleBinding("cl-consumer")
	crb := liqo.ClusterWideBinding("cl-consumer")
	wantBinding := map[string]string{consts.K8sAppManagedByKey: consts.LiqoAppLabelValue, consts.RemoteClusterID: "cl-consumer"}
	for _, labels := range []map[string]string{rb.Labels, crb.Labels} {
		if !maps.Equal(labels, wantBinding) {
			t.Errorf("binding labels %v, want %v", labels, wantBinding)
		}
	}
	if want := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cl-consumer"}}; !reflect.DeepEqual(rb.Subjects, want) {
		t.Errorf("role binding subjects %+v, want %+v", rb.Subjects, want)
	}
	if want := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "cl-consumer"}}; !reflect.DeepEqual(crb.Subjects, want) {
		t.Errorf("cluster role binding subjects %+v, want %+v", crb.Subjects, want)
	}
}

func TestClusterRolesAreFoundByLiqosLabels(t *testing.T) {
	cases := []struct {
		role *rbacv1.ClusterRole
		name string
		app  string
	}{
		{liqo.RemoteControlPlaneClusterRole(), "liqo-remote-controlplane", "remote-controlplane"},
		{liqo.ClusterWideClusterRole(), "liqo-virtual-kubelet-remote-clusterwide", "virtual-kubelet-remote-clusterwide"},
	}
	for _, tc := range cases {
		if tc.role.Name != tc.name || tc.role.Labels["app.kubernetes.io/name"] != tc.app {
			t.Errorf("cluster role %s labelled %v, want %s with app.kubernetes.io/name=%s", tc.role.Name, tc.role.Labels, tc.name, tc.app)
		}
		if len(tc.role.Rules) == 0 {
			t.Errorf("cluster role %s grants nothing", tc.role.Name)
		}
	}
	got := encode(t, liqo.ClusterWideClusterRole())
	want := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  labels:
    app.kubernetes.io/managed-by: gitpeer
    app.kubernetes.io/name: virtual-kubelet-remote-clusterwide
  name: liqo-virtual-kubelet-remote-clusterwide
rules:
- apiGroups:
  - metrics.liqo.io
  resources:
  - scrape/metrics
  verbs:
  - get
  - list
  - watch
`
	if got != want {
		t.Errorf("clusterwide role:\n%s\nwant:\n%s", got, want)
	}
}
