package kubernetes

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// TestPinSourceRealCluster pins a real API server's GitRepository and
// Application (GITPEER_TEST_KUBECONFIG, as TestRealCluster; the CRDs of
// manifests/flux/testdata/crds and manifests/argocd/testdata/crds
// installed when absent) as a ServiceAccount bound to the Roles
// gitpeer-flux of manifests/rbac and gitpeer-argocd of
// manifests/rbac/argocd alone, named for the cluster as
// manifests/deploy/cluster-id names them: the Roles are proven sufficient
// and no wider (no other source may be patched), spec.ref.commit is owned
// by field manager gitpeer alone, and whatever applies the GitRepository
// without that field (as kustomize-controller applies manifests/flux's,
// server-side and forced) leaves it alone. kustomize-controller itself is
// run in make e2e (test/e2e, TestFluxAppliesOnlyWhatEachReconcilerSigned).
func TestPinSourceRealCluster(t *testing.T) {
	admin, ctx, suffix := realCluster(t)
	var (
		id     = "it-pin-" + suffix
		name   = "gitpeer-it-pin-" + suffix
		saUser = "system:serviceaccount:gitpeer-system:" + name
		other  = "gitpeer-it-other-" + suffix // a source of the cluster's that is not gitpeer's
	)
	core := corev1client.NewForConfigOrDie(admin)
	rbac := rbacv1client.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	repos := dyn.Resource(GitRepositoryResource).Namespace(FluxNamespace)
	apps := dyn.Resource(ArgoApplicationResource).Namespace(ArgoNamespace)
	installCRD(ctx, t, dyn, "../../../manifests/flux/testdata/crds/source.toolkit.fluxcd.io_gitrepositories.yaml", GitRepositoryResource)
	installCRD(ctx, t, dyn, "../../../manifests/argocd/testdata/crds/application-crd.yaml", ArgoApplicationResource)
	installCRD(ctx, t, dyn, "../../../manifests/flux/testdata/crds/kustomize.toolkit.fluxcd.io_kustomizations.yaml", KustomizationResource)
	kusts := dyn.Resource(KustomizationResource).Namespace(FluxNamespace)

	m := loadRBAC(t).ForCluster(id)
	sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "gitpeer-system"}}
	fluxRole, fluxRB := m.FluxRole, m.FluxRoleBinding
	argoRole := loadArgoRole(t, id)
	argoRB := rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ArgoNamespace},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}
	for _, o := range []struct {
		role *rbacv1.Role
		rb   *rbacv1.RoleBinding
	}{{&fluxRole, &fluxRB}, {&argoRole, &argoRB}} {
		ns := o.role.Namespace
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		o.role.Name, o.role.ResourceVersion = name, ""
		o.rb.Name, o.rb.RoleRef.Name, o.rb.Subjects, o.rb.ResourceVersion = name, name, sa, ""
		if _, err := rbac.Roles(ns).Create(ctx, o.role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.RoleBindings(ns).Create(ctx, o.rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, ns := range []string{FluxNamespace, ArgoNamespace} {
			_ = rbac.RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
			_ = rbac.Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}
		_ = repos.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{})
		_ = repos.Delete(ctx, other, metav1.DeleteOptions{})
		_ = apps.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{})
		_ = kusts.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{})
	})

	impersonate := func(user string) (*Backend, dynamic.Interface) {
		as := rest.CopyConfig(admin)
		as.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:gitpeer-system", "system:authenticated"}}
		return &Backend{opts: Options{Config: as}, core: corev1client.NewForConfigOrDie(as), clusterID: id}, dynamic.NewForConfigOrDie(as)
	}
	b, asSA := impersonate(saUser)
	bare, _ := impersonate(saUser + "-bare")
	// RBAC reaches the authorizer's cache within a moment: wait for it.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.PinSource(ctx, sealOld)
		return !apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Fatalf("the Roles %s are not in force: %v", name, err)
	}

	// applyAs applies obj server-side and forced as manager, as
	// kustomize-controller applies what it builds.
	applyAs := func(t *testing.T, manager string, obj *unstructured.Unstructured) {
		t.Helper()
		force := true
		data, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		r := dyn.Resource(GitRepositoryResource).Namespace(obj.GetNamespace())
		switch obj.GetKind() {
		case "Application":
			r = dyn.Resource(ArgoApplicationResource).Namespace(obj.GetNamespace())
		case "Kustomization":
			r = kusts
		}
		if _, err := r.Patch(ctx, obj.GetName(), "application/apply-patch+yaml", data, metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(t *testing.T, r dynamic.ResourceInterface) *unstructured.Unstructured {
		t.Helper()
		obj, err := r.Get(ctx, "gitpeer-"+id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	commitOf := func(t *testing.T) string {
		t.Helper()
		c, _, _ := unstructured.NestedString(get(t, repos).Object, "spec", "ref", "commit")
		return c
	}
	// The GitRepository as manifests/flux makes it, applied as Flux applies
	// it.
	manifest := fluxRepo(id, FluxVerifySecretName)
	const applier = "kustomize-controller"

	t.Run("no source: nothing pinned", func(t *testing.T) {
		if where, err := b.PinSource(ctx, sealOld); where != "" || err != nil {
			t.Fatalf("PinSource: %q, %v", where, err)
		}
	})
	t.Run("the GitRepository is pinned, branch and verify kept, field manager gitpeer owning spec.ref.commit and the reconcile request alone", func(t *testing.T) {
		applyAs(t, applier, manifest)
		applyAs(t, applier, fluxKustomization(id))
		b.opts.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) }
		where, err := b.PinSource(ctx, sealOld)
		if err != nil || where != "GitRepository flux-system/gitpeer-"+id {
			t.Fatalf("PinSource: %q, %v", where, err)
		}
		obj := get(t, repos)
		for path, want := range map[string]string{"spec.ref.commit": sealOld, "spec.ref.branch": "gitpeer/applied/" + id, "spec.verify.mode": "HEAD", "spec.verify.secretRef.name": FluxVerifySecretName, "spec.url": "ssh://git@github.com/example-org/peering.git"} {
			if got, _, _ := unstructured.NestedString(obj.Object, strings.Split(path, ".")...); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
		owned := ownedBy(obj, SourcePinFieldManager)
		if owned != `{"f:metadata":{"f:annotations":{"f:reconcile.fluxcd.io/requestedAt":{}}},"f:spec":{"f:ref":{"f:commit":{}}}}` {
			t.Errorf("field manager %s owns %s, want spec.ref.commit and the reconcile request alone", SourcePinFieldManager, owned)
		}
		const token = "2026-01-02T03:04:05.000000006Z"
		if got := obj.GetAnnotations()[FluxReconcileAnnotation]; got != token {
			t.Errorf("GitRepository %s = %q, want %q", FluxReconcileAnnotation, got, token)
		}
		k, err := kusts.Get(ctx, "gitpeer-"+id, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.GetAnnotations()[FluxReconcileAnnotation]; got != token {
			t.Errorf("Kustomization %s = %q, want %q", FluxReconcileAnnotation, got, token)
		}
	})
	t.Run("after flux reconcile took the request annotation, the next seal still pins and requests", func(t *testing.T) {
		// What `flux reconcile source git` sends: a merge patch by manager flux.
		patch := []byte(`{"metadata":{"annotations":{"` + FluxReconcileAnnotation + `":"by-hand"}}}`)
		if _, err := repos.Patch(ctx, "gitpeer-"+id, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "flux"}); err != nil {
			t.Fatal(err)
		}
		b.opts.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC) }
		if _, err := b.PinSource(ctx, sealNew); err != nil {
			t.Fatalf("PinSource after flux reconcile: %v", err)
		}
		obj := get(t, repos)
		if c, _, _ := unstructured.NestedString(obj.Object, "spec", "ref", "commit"); c != sealNew || obj.GetAnnotations()[FluxReconcileAnnotation] != "2026-01-02T03:04:06Z" {
			t.Fatalf("spec.ref.commit %q, annotation %q", c, obj.GetAnnotations()[FluxReconcileAnnotation])
		}
		// Back to the older seal for the subtests below.
		if _, err := b.PinSource(ctx, sealOld); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the applier applying manifests/flux's GitRepository again leaves the pin", func(t *testing.T) {
		applyAs(t, applier, manifest)
		if c := commitOf(t); c != sealOld {
			t.Fatalf("spec.ref.commit %q after %s applied the GitRepository, want %s", c, applier, sealOld)
		}
		if owned := ownedBy(get(t, repos), applier); strings.Contains(owned, "f:commit") {
			t.Errorf("%s owns spec.ref.commit: %s", applier, owned)
		}
	})
	t.Run("a source pinned to the seal already is only read", func(t *testing.T) {
		rv := get(t, repos).GetResourceVersion()
		if _, err := b.PinSource(ctx, sealOld); err != nil {
			t.Fatal(err)
		}
		if got := get(t, repos).GetResourceVersion(); got != rv {
			t.Errorf("resourceVersion %s after PinSource, was %s: a write", got, rv)
		}
	})
	t.Run("a newer seal moves the pin", func(t *testing.T) {
		if _, err := b.PinSource(ctx, sealNew); err != nil {
			t.Fatal(err)
		}
		if c := commitOf(t); c != sealNew {
			t.Fatalf("spec.ref.commit %q, want %s", c, sealNew)
		}
	})
	t.Run("the Role grants this GitRepository alone: another source may not be patched", func(t *testing.T) {
		o := fluxRepo(id, "")
		o.SetName(other)
		applyAs(t, applier, o)
		patch := []byte(`{"spec":{"ref":{"commit":"` + sealOld + `"}}}`)
		_, err := asSA.Resource(GitRepositoryResource).Namespace(FluxNamespace).Patch(ctx, other, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: SourcePinFieldManager})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("patch of GitRepository %s as the ServiceAccount: %v, want Forbidden", other, err)
		}
	})
	t.Run("without the Role: Forbidden, naming the rule", func(t *testing.T) {
		_, err := bare.PinSource(ctx, sealOld)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "gitpeer needs get and patch on gitrepositories.source.toolkit.fluxcd.io named gitpeer-"+id+" in flux-system: Role gitpeer-flux of manifests/rbac") {
			t.Fatalf("PinSource without the Role: %v", err)
		}
	})
	t.Run("an applier that sets spec.ref.commit too is named, not fought", func(t *testing.T) {
		withCommit := manifest.DeepCopy()
		_ = unstructured.SetNestedField(withCommit.Object, sealOld, "spec", "ref", "commit")
		applyAs(t, applier, withCommit)
		_, err := b.PinSource(ctx, sealNew)
		if err == nil || !strings.Contains(err.Error(), applier) || !strings.Contains(err.Error(), "is its only writer") {
			t.Fatalf("PinSource against %s's spec.ref.commit: %v, want a conflict naming it", applier, err)
		}
		if c := commitOf(t); c != sealOld {
			t.Fatalf("spec.ref.commit %q, want the applier's %s (no force)", c, sealOld)
		}
		// The applier drops the field: gitpeer pins again.
		applyAs(t, applier, manifest)
		if _, err := b.PinSource(ctx, sealNew); err != nil {
			t.Fatal(err)
		}
		if c := commitOf(t); c != sealNew {
			t.Fatalf("spec.ref.commit %q, want %s", c, sealNew)
		}
	})
	t.Run("without a GitRepository, the Application's targetRevision", func(t *testing.T) {
		if err := repos.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		app := argoApp(id)
		app.SetUID("")
		applyAs(t, "argocd-application-controller", app)
		where, err := b.PinSource(ctx, sealNew)
		if err != nil || where != "Application argocd/gitpeer-"+id {
			t.Fatalf("PinSource: %q, %v", where, err)
		}
		obj := get(t, apps)
		for path, want := range map[string]string{"spec.source.targetRevision": sealNew, "spec.source.path": "clusters/" + id, "spec.project": "gitpeer-" + id} {
			if got, _, _ := unstructured.NestedString(obj.Object, strings.Split(path, ".")...); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
		if owned := ownedBy(obj, SourcePinFieldManager); owned != `{"f:metadata":{"f:annotations":{"f:argocd.argoproj.io/refresh":{}}},"f:spec":{"f:source":{"f:targetRevision":{}}}}` {
			t.Errorf("field manager %s owns %s, want spec.source.targetRevision and the refresh request alone", SourcePinFieldManager, owned)
		}
		if got := obj.GetAnnotations()[ArgoRefreshAnnotation]; got != "normal" {
			t.Errorf("Application %s = %q, want normal", ArgoRefreshAnnotation, got)
		}
		if owned := ownedBy(obj, "argocd-application-controller"); strings.Contains(owned, "f:targetRevision") {
			t.Errorf("the applier still owns targetRevision: %s", owned)
		}
		// An app of apps with RespectIgnoreDifferences applies the live
		// value of the field it ignores: the pin stays, and the next seal
		// moves it.
		live := argoApp(id)
		live.SetUID("")
		_ = unstructured.SetNestedField(live.Object, sealNew, "spec", "source", "targetRevision")
		applyAs(t, "argocd-application-controller", live)
		if _, err := b.PinSource(ctx, sealOld); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(get(t, apps).Object, "spec", "source", "targetRevision"); got != sealOld {
			t.Fatalf("targetRevision %q, want the next seal %s", got, sealOld)
		}
	})
}

// ownedBy is the fieldsV1 JSON of manager's Apply entry in obj's
// managedFields ("" when it has none).
func ownedBy(obj *unstructured.Unstructured, manager string) string {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.FieldsV1 != nil {
			return string(f.FieldsV1.Raw)
		}
	}
	return ""
}

// installCRD creates the CRD of file unless the API server has it, deleting
// it when the test ends, and waits until gvr is served.
func installCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, file string, gvr schema.GroupVersionResource) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: obj}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	// A CRD another test deleted may still be going: wait until it is gone.
	var err2 error
	if werr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		err2 = err
		return err != nil || cur.GetDeletionTimestamp() == nil, nil
	}); werr != nil {
		t.Fatalf("CRD %s still being deleted: %v", crd.GetName(), werr)
	}
	if err := err2; apierrors.IsNotFound(err) {
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	} else if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("%s not served: %v", gvr.GroupResource(), err)
	}
}
