package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/test/e2eharness"
)

// sliceGVR is Liqo's ResourceSlice (resourceslices.authentication.liqo.io).
var sliceGVR = schema.GroupVersionResource{Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"}

// TestRealClusterAConsumerCannotGrowAGrantedSliceThroughItsStatus: Liqo's
// chart gives a consumer's control-plane user every verb on
// resourceslices/status in its tenant namespace, and the provider's Liqo
// sizes the consumer's offloading Quota (and, replicated back, its
// VirtualNode) from a slice's status.resources. beta grants alpha slice web
// (cpu 1 of the default class). On a real kube-apiserver holding what
// beta's applied branch holds for alpha (tenant namespace, RoleBinding,
// admission policy and binding) and Liqo's ResourceSlice CRD, alpha's user
// creates web as its crd-replicator would, and beta's Liqo
// (admission.LiqoControllerManager) writes the status beta's answer gives.
// Then alpha's user writes the status itself: cpu 64 / memory 512Gi / pods
// 1k, a resource never granted, the same through the main resource, and
// Accepted conditions and a certificate on a slice the spec no longer
// grants. Every write that grants more than the spec is refused with the
// policy's message; lowering is admitted; the status Liqo wrote is what
// stays.
//
// It needs a kube-apiserver (GITPEER_TEST_KUBECONFIG: an admin kubeconfig,
// as for the kubernetes backend's TestRealCluster; make e2e runs it) and
// Liqo's chart (LIQO_CHART, default the e2e cache's, make e2e-liqo-tools).
func TestRealClusterAConsumerCannotGrowAGrantedSliceThroughItsStatus(t *testing.T) {
	admin, ctx := realAPIServer(t)
	w := settled(t, grantsSpec)
	applied := layout.AppliedBranch("beta")
	ns := liqo.TenantNamespace("alpha")
	dyn := dynamic.NewForConfigOrDie(admin)
	installSliceCRD(ctx, t, dyn)

	// A slice the spec no longer grants (revoked since; its Denied status
	// by beta's Liqo): in the cluster before the policy that refuses it.
	for _, o := range appliedObjects(t, w, applied, "clusters/beta/liqo/alpha", render.KindNamespace) {
		apply(ctx, t, dyn, o)
	}
	t.Cleanup(func() { _ = deleteObj(dyn, gvrOf("Namespace"), "", ns) })
	stale := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authentication.liqo.io/v1beta1", "kind": "ResourceSlice",
		"metadata": map[string]any{"name": "stale", "namespace": ns},
		"spec":     map[string]any{"consumerClusterID": "alpha", "class": "default", "resources": map[string]any{"cpu": "1"}},
	}}
	created, err := dyn.Resource(sliceGVR).Namespace(ns).Create(ctx, stale, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	denied := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": "Denied", "reason": "ResourceSlice" + typ + "Denied"}
	}
	created.Object["status"] = map[string]any{"conditions": []any{denied("Authentication"), denied("Resources")}}
	if _, err := dyn.Resource(sliceGVR).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// What beta applies for alpha: its RoleBinding (to Liqo's
	// remote-controlplane ClusterRole, as Liqo's chart installs it), the
	// admission policy and its binding. And RBAC for beta's Liqo, as the
	// chart gives its controller-manager.
	apply(ctx, t, dyn, toUnstructured(t, liqo.RemoteControlPlaneClusterRole()))
	for _, kind := range []string{render.KindRoleBinding, render.KindValidatingAdmissionPolicy, render.KindValidatingAdmissionPolicyBinding} {
		for _, o := range appliedObjects(t, w, applied, "clusters/beta/liqo/alpha", kind) {
			apply(ctx, t, dyn, o)
			if kind != render.KindRoleBinding {
				t.Cleanup(func() { _ = deleteObj(dyn, gvrOf(kind), "", o.GetName()) })
			}
		}
	}
	liqoSA := strings.Split(admission.LiqoControllerManager, ":")
	apply(ctx, t, dyn, yamlObject(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gitpeer-attack-liqo-slice-status}
rules:
- apiGroups: [authentication.liqo.io]
  resources: [resourceslices, resourceslices/status]
  verbs: [get, list, watch, update, patch]
`))
	apply(ctx, t, dyn, yamlObject(t, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: gitpeer-attack-liqo-slice-status}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gitpeer-attack-liqo-slice-status}
subjects: [{kind: ServiceAccount, name: %s, namespace: %s}]
`, liqoSA[3], liqoSA[2])))

	alpha := dynamic.NewForConfigOrDie(as(admin, "alpha", "liqo.io"))
	beta := dynamic.NewForConfigOrDie(as(admin, admission.LiqoControllerManager, "system:serviceaccounts", "system:serviceaccounts:"+liqoSA[2]))
	slices := func(c *dynamic.DynamicClient) dynamic.ResourceInterface { return c.Resource(sliceGVR).Namespace(ns) }
	const policy = "ValidatingAdmissionPolicy 'gitpeer-resourceslices-alpha'"

	// The policy is in force once it refuses what it must (it reaches the
	// API server's admission within a second or so).
	probe := answerSlice(t, w, "web", ns)
	probe.SetName("not-granted")
	waitFor(ctx, t, func() error {
		_, err := slices(alpha).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), policy) {
			return fmt.Errorf("policy not in force yet: %v", err)
		}
		return nil
	})
	if _, err := slices(alpha).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil ||
		!strings.Contains(err.Error(), "ResourceSlice not-granted is not granted to alpha by the reviewed peering spec (granted: pool, web)") {
		t.Errorf("a slice the spec does not grant: want the policy's message, got %v", err)
	}
	// Writes of the main resource that leave the spec alone are not the
	// policy's business, even on a slice the spec no longer grants: Liqo
	// adds and removes its finalizers and labels so.
	if _, err := slices(beta).Patch(ctx, "stale", types.MergePatchType, []byte(`{"metadata":{"labels":{"gitpeer.io/attack":"x"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("beta's Liqo labels the slice the spec no longer grants: %v", err)
	}

	// alpha's crd-replicator creates web; beta's Liqo answers it.
	web := answerSlice(t, w, "web", ns)
	honest := web.Object["status"]
	waitFor(ctx, t, func() error { // alpha's RBAC is in force
		_, err := slices(alpha).Create(ctx, web.DeepCopy(), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("alpha's user cannot create the granted slice: %w", err)
		}
		return nil
	})
	waitFor(ctx, t, func() error { // beta's Liqo's RBAC is in force
		cur, err := slices(beta).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Object["status"] = honest
		_, err = slices(beta).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	resources := func(name string) string {
		cur, err := slices(beta).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, _, _ := unstructured.NestedMap(cur.Object, "status", "resources")
		data, _ := json.Marshal(r)
		return string(data)
	}
	written := resources("web")
	if !strings.Contains(written, `"cpu":"1"`) || !strings.Contains(written, `"pods":"110"`) {
		t.Fatalf("beta's Liqo wrote status.resources %s, want beta's answer (cpu 1, pods 110, ...)", written)
	}

	statusPatch := func(name, patch string, sub ...string) error {
		_, err := slices(alpha).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, sub...)
		return err
	}
	const grown = `"ResourceSlice web: status.resources may not grant more than the reviewed peering spec grants alpha for it (cpu 1, ephemeral-storage 20Gi, memory 8Gi, pods 110) nor raise what the status held; only beta's Liqo (system:serviceaccount:liqo:liqo-controller-manager) writes a slice's status beyond that"`
	for _, tc := range []struct{ what, name, patch, want string }{
		{"cpu 64, memory 512Gi, pods 1k on web", "web", `{"status":{"resources":{"cpu":"64","memory":"512Gi","pods":"1k"}}}`, grown},
		{"cpu 2 on web (granted 1)", "web", `{"status":{"resources":{"cpu":"2"}}}`, grown},
		{"a GPU web was never granted", "web", `{"status":{"resources":{"nvidia.com/gpu":"1"}}}`, grown},
		{"cpu written as an integer above the grant", "web", `{"status":{"resources":{"cpu":64}}}`, grown},
		{"Resources Accepted on the slice the spec no longer grants", "stale",
			`{"status":{"conditions":[{"type":"Resources","status":"Accepted"}]}}`, "status.conditions may not accept a slice the reviewed peering spec does not grant alpha (granted: pool, web)"},
		{"a certificate on the slice the spec no longer grants", "stale",
			`{"status":{"authParams":{"apiServer":"https://beta.example:6443","signedCRT":"Zm9v"}}}`, "status.authParams may not be set on a slice the reviewed peering spec does not grant alpha"},
		{"resources on the slice the spec no longer grants", "stale", `{"status":{"resources":{"cpu":"1"}}}`,
			"ResourceSlice stale: status.resources may not grant more than the reviewed peering spec grants alpha for it (nothing)"},
	} {
		err := statusPatch(tc.name, tc.patch, "status")
		switch {
		case err == nil:
			t.Errorf("%s: admitted; status.resources now %s", tc.what, resources(tc.name))
		case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			t.Errorf("%s: %v, want the policy's refusal", tc.what, err)
		case !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), strings.Trim(tc.want, `"`)):
			t.Errorf("%s: refused with\n%v\nwant %s's message\n%s", tc.what, err, policy, tc.want)
		}
	}
	if got := resources("web"); got != written {
		t.Errorf("web's status.resources %s after the refused writes, want beta's Liqo's %s", got, written)
	}

	// Through the main resource the API server keeps the status as it was
	// (Liqo's CRD has the status subresource).
	if err := statusPatch("web", `{"status":{"resources":{"cpu":"64"}}}`); err != nil {
		t.Errorf("a status patch of the main resource (which the API server ignores): %v", err)
	}
	if got := resources("web"); got != written {
		t.Errorf("a status written through the main resource changed status.resources to %s", got)
	}

	// Taking away is no grant: alpha's user may lower what web holds, and
	// beta's Liqo writes its status again, whatever it holds.
	if err := statusPatch("web", `{"status":{"resources":{"cpu":"500m"}}}`, "status"); err != nil {
		t.Errorf("lowering web's cpu to 500m: %v", err)
	}
	cur, err := slices(beta).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Object["status"] = honest
	if err := unstructured.SetNestedField(cur.Object, "2k", "status", "resources", "pods"); err != nil {
		t.Fatal(err)
	}
	if _, err := slices(beta).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Errorf("beta's Liqo cannot write web's status: %v", err)
	}
}

// realAPIServer is the admin config of GITPEER_TEST_KUBECONFIG's cluster,
// and a context bounded for the test; the test is skipped without one.
func realAPIServer(t *testing.T) (*rest.Config, context.Context) {
	t.Helper()
	path := os.Getenv("GITPEER_TEST_KUBECONFIG")
	if path == "" {
		t.Skip("GITPEER_TEST_KUBECONFIG is not set (make e2e sets it)")
	}
	admin, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return admin, ctx
}

// as is admin impersonating user in groups (and system:authenticated).
func as(admin *rest.Config, user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(admin)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	return c
}

// installSliceCRD applies Liqo's ResourceSlice CRD from its chart and waits
// until it is served.
func installSliceCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	chart := e2eharness.Env("LIQO_CHART", filepath.Join(e2eharness.CacheDir(), "liqo-chart"))
	data, err := os.ReadFile(filepath.Join(chart, "charts", "liqo-crds", "crds", "authentication.liqo.io_resourceslices.yaml"))
	if err != nil {
		t.Fatalf("Liqo's ResourceSlice CRD: %v (make e2e-liqo-tools puts Liqo's chart in the e2e cache; or set LIQO_CHART)", err)
	}
	apply(ctx, t, dyn, yamlObject(t, string(data)))
	waitFor(ctx, t, func() error {
		_, err := dyn.Resource(sliceGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// appliedObjects are the objects of kind under dir on rev.
func appliedObjects(t *testing.T, w *world, rev, dir, kind string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range w.listTree(rev, dir) {
		if !strings.HasPrefix(path.Base(f), strings.ToLower(kind)+"-") {
			continue
		}
		data, ok := w.showAt(rev, f)
		if !ok {
			t.Fatalf("%s: no %s", rev, f)
		}
		out = append(out, yamlObject(t, string(data)))
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no %s under %s", rev, kind, dir)
	}
	return out
}

// answerSlice is beta's answer to alpha's request for slice name (spec and
// status), in namespace ns, as Liqo's crd-replicator would create it there.
func answerSlice(t *testing.T, w *world, name, ns string) *unstructured.Unstructured {
	t.Helper()
	file := layout.InboxPath("alpha", "beta", artifact.SliceAnswerFile(name))
	rs, err := artifact.DecodeSlice(file, w.mustShow(file))
	if err != nil {
		t.Fatal(err)
	}
	if c := rs.Status.Conditions; len(c) == 0 || c[len(c)-1].Status != authv1beta1.ResourceSliceConditionAccepted {
		t.Fatalf("%s does not grant %s: %+v", file, name, rs.Status)
	}
	rs.Namespace = ns
	return toUnstructured(t, rs)
}

func toUnstructured(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}

func yamlObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// gvrOf maps the kinds this file applies to their resources.
func gvrOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "Namespace":
		return schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	case "ClusterRole", "ClusterRoleBinding", "RoleBinding":
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	case "ValidatingAdmissionPolicy":
		return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	case "ValidatingAdmissionPolicyBinding":
		return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	case "CustomResourceDefinition":
		return schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	}
	panic("attack: no resource for kind " + kind)
}

// apply applies o server-side as the test's field manager.
func apply(ctx context.Context, t *testing.T, dyn dynamic.Interface, o *unstructured.Unstructured) {
	t.Helper()
	var ri dynamic.ResourceInterface = dyn.Resource(gvrOf(o.GetKind()))
	if o.GetNamespace() != "" {
		ri = dyn.Resource(gvrOf(o.GetKind())).Namespace(o.GetNamespace())
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "gitpeer-attack", Force: true}); err != nil {
		t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func deleteObj(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ns != "" {
		return dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	return dyn.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{})
}

// waitFor polls cond until it holds; the test fails with its last error
// when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, cond func() error) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(err)
		case <-tick.C:
		}
	}
}
