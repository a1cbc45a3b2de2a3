package kubernetes

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Two seals, older and newer.
const (
	sealOld = "1111111111111111111111111111111111111111"
	sealNew = "2222222222222222222222222222222222222222"
)

// argoApp is Application argocd/gitpeer-<id> as manifests/argocd/application
// makes it.
func argoApp(id string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   map[string]any{"name": "gitpeer-" + id, "namespace": ArgoNamespace, "uid": "app-uid"},
		"spec": map[string]any{
			"project": "gitpeer-" + id,
			"source": map[string]any{
				"repoURL":        "ssh://git@github.com/example-org/peering.git",
				"targetRevision": "gitpeer/applied/" + id,
				"path":           "clusters/" + id,
			},
			"destination": map[string]any{"name": "in-cluster", "namespace": "liqo-tenant-" + id},
		},
	}}
}

// fluxKustomization is Kustomization flux-system/gitpeer-<id> as
// manifests/flux makes it (the fields PinSource may touch).
func fluxKustomization(id string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": "gitpeer-" + id, "namespace": FluxNamespace},
		"spec":       map[string]any{"interval": "10m", "prune": true, "path": "./clusters/" + id, "sourceRef": map[string]any{"kind": "GitRepository", "name": "gitpeer-" + id}},
	}}
}

// annotation is the annotation name of obj name of gvr in ns.
func annotation(t *testing.T, dyn *dynfake.FakeDynamicClient, gvr schema.GroupVersionResource, ns, name, key string) string {
	t.Helper()
	obj, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()[key]
}

// pinnedRepo is fluxRepo (verifying with gitpeer-signing) with
// spec.ref.commit set to commit.
func pinnedRepo(id, commit string) *unstructured.Unstructured {
	r := fluxRepo(id, FluxVerifySecretName)
	r.SetUID("repo-uid")
	if commit != "" {
		_ = unstructured.SetNestedField(r.Object, commit, "spec", "ref", "commit")
	}
	return r
}

// newSourceDynamic is a fake dynamic client knowing GitRepositories and
// Applications; server-side applies are merged as JSON merge patches (the
// real API server's field ownership is proven by
// TestPinSourceRealCluster).
func newSourceDynamic(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		GitRepositoryResource:   "GitRepositoryList",
		ArgoApplicationResource: "ApplicationList",
		KustomizationResource:   "KustomizationList",
	}, objs...)
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := mergeApply(dyn, p)
		return true, obj, dyn.Tracker().Patch(a.GetResource(), obj, a.GetNamespace())
	})
	return dyn
}

// mergeApply is the object p's apply patch makes of the tracked one.
func mergeApply(dyn *dynfake.FakeDynamicClient, p k8stesting.PatchAction) runtime.Object {
	cur, err := dyn.Tracker().Get(p.GetResource(), p.GetNamespace(), p.GetName())
	if err != nil {
		panic(err)
	}
	obj := cur.(*unstructured.Unstructured).DeepCopy()
	var patch unstructured.Unstructured
	if err := patch.UnmarshalJSON(p.GetPatch()); err != nil {
		panic(err)
	}
	merge(obj.Object, patch.Object)
	return obj
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if m, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, m)
				continue
			}
		}
		dst[k] = v
	}
}

// writesOf are the requests of dyn other than get.
func writesOf(dyn *dynfake.FakeDynamicClient) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "get" {
			out = append(out, a)
		}
	}
	return out
}

func pinBackend(t *testing.T, dyn *dynfake.FakeDynamicClient) *Backend {
	t.Helper()
	opts := testOptions(testCA(t))
	opts.Dynamic = dyn
	b, _ := initBackend(t, newClientset(), opts)
	return b
}

func field(t *testing.T, dyn *dynfake.FakeDynamicClient, gvr schema.GroupVersionResource, ns, name string, path ...string) string {
	t.Helper()
	obj, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(obj.Object, path...)
	return v
}

func TestPinSource(t *testing.T) {
	for _, c := range []struct {
		name     string
		objs     []runtime.Object
		where    string
		applies  int // server-side applies made
		requests int // merge patches of the Kustomization
	}{
		{"an unpinned GitRepository is pinned", []runtime.Object{pinnedRepo("alpha", "")}, "GitRepository flux-system/gitpeer-alpha", 1, 1},
		{"a GitRepository on an older seal moves to the newest", []runtime.Object{pinnedRepo("alpha", sealOld), fluxKustomization("alpha")}, "GitRepository flux-system/gitpeer-alpha", 1, 1},
		{"a GitRepository on the seal already is only read", []runtime.Object{pinnedRepo("alpha", sealNew), fluxKustomization("alpha")}, "GitRepository flux-system/gitpeer-alpha", 0, 0},
		{"the GitRepository first, the Application left alone", []runtime.Object{pinnedRepo("alpha", ""), argoApp("alpha")}, "GitRepository flux-system/gitpeer-alpha", 1, 1},
		{"without a GitRepository, the Application", []runtime.Object{argoApp("alpha")}, "Application argocd/gitpeer-alpha", 1, 0},
		{"another cluster's sources are not this cluster's", []runtime.Object{pinnedRepo("beta", ""), argoApp("beta"), fluxKustomization("beta")}, "", 0, 0},
		{"no source at all", nil, "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dyn := newSourceDynamic(c.objs...)
			b := pinBackend(t, dyn)
			token := b.opts.Now().UTC().Format(time.RFC3339Nano)
			where, err := b.PinSource(context.Background(), sealNew)
			if err != nil || where != c.where {
				t.Fatalf("PinSource: %q, %v; want %q", where, err, c.where)
			}
			var applies, requests []k8stesting.Action
			for _, a := range writesOf(dyn) {
				if a.GetResource() == KustomizationResource {
					requests = append(requests, a)
				} else {
					applies = append(applies, a)
				}
			}
			if len(applies) != c.applies || len(requests) != c.requests {
				t.Fatalf("%d applies and %d Kustomization patches, want %d and %d: %v", len(applies), len(requests), c.applies, c.requests, writesOf(dyn))
			}
			for _, a := range requests {
				p := a.(k8stesting.PatchAction)
				want := `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"` + token + `"}}}`
				if p.GetPatchType() != types.MergePatchType || p.GetName() != "gitpeer-alpha" || string(p.GetPatch()) != want {
					t.Errorf("Kustomization %s patch %s %s, want gitpeer-alpha merge patch %s", p.GetName(), p.GetPatchType(), p.GetPatch(), want)
				}
			}
			if slices.ContainsFunc(c.objs, func(o runtime.Object) bool {
				return o.(*unstructured.Unstructured).GetName() == "gitpeer-alpha" && o.GetObjectKind().GroupVersionKind().Kind == "Kustomization"
			}) && c.requests > 0 {
				if got := annotation(t, dyn, KustomizationResource, FluxNamespace, "gitpeer-alpha", FluxReconcileAnnotation); got != token {
					t.Errorf("Kustomization %s = %q, want %q", FluxReconcileAnnotation, got, token)
				}
			}
			for _, a := range applies {
				p := a.(k8stesting.PatchAction)
				if p.GetPatchType() != types.ApplyPatchType || a.GetVerb() != "patch" {
					t.Errorf("write %s %s, want a server-side apply", a.GetVerb(), p.GetPatchType())
				}
				// The GitRepository's spec.ref.commit is gitpeer's alone;
				// the Application's targetRevision is taken from its applier.
				opts := a.(k8stesting.PatchActionImpl).PatchOptions
				force := a.GetResource() == ArgoApplicationResource
				if opts.FieldManager != SourcePinFieldManager || (opts.Force != nil && *opts.Force) != force {
					t.Errorf("apply as %q, force %v; want %q, force %v", opts.FieldManager, opts.Force, SourcePinFieldManager, force)
				}
				// Only what names the object and the pinned field: the
				// manager owns nothing else.
				var patch unstructured.Unstructured
				if err := patch.UnmarshalJSON(p.GetPatch()); err != nil {
					t.Fatal(err)
				}
				spec, _, _ := unstructured.NestedMap(patch.Object, "spec")
				if len(spec) != 1 || (spec["ref"] == nil && spec["source"] == nil) {
					t.Errorf("apply patch spec %v, want the pinned field alone", spec)
				}
				if len(spec) == 1 {
					for _, v := range spec {
						if m, _ := v.(map[string]any); len(m) != 1 {
							t.Errorf("apply patch spec %v, want the pinned field alone", spec)
						}
					}
				}
				if patch.GetUID() == "" {
					t.Errorf("apply patch without the UID read: %s", p.GetPatch())
				}
				// And the engine's request to act now, in the same apply.
				wantAnn := map[string]string{FluxReconcileAnnotation: token}
				if a.GetResource() == ArgoApplicationResource {
					wantAnn = map[string]string{ArgoRefreshAnnotation: "normal"}
				}
				if !maps.Equal(patch.GetAnnotations(), wantAnn) {
					t.Errorf("apply patch annotations %v, want %v", patch.GetAnnotations(), wantAnn)
				}
			}
			switch {
			case strings.HasPrefix(c.where, "GitRepository"):
				for path, want := range map[string]string{"spec.ref.commit": sealNew, "spec.ref.branch": "gitpeer/applied/alpha", "spec.verify.mode": "HEAD", "spec.verify.secretRef.name": FluxVerifySecretName} {
					if got := field(t, dyn, GitRepositoryResource, FluxNamespace, "gitpeer-alpha", strings.Split(path, ".")...); got != want {
						t.Errorf("GitRepository %s = %q, want %q", path, got, want)
					}
				}
			case strings.HasPrefix(c.where, "Application"):
				for path, want := range map[string]string{"spec.source.targetRevision": sealNew, "spec.source.path": "clusters/alpha"} {
					if got := field(t, dyn, ArgoApplicationResource, ArgoNamespace, "gitpeer-alpha", strings.Split(path, ".")...); got != want {
						t.Errorf("Application %s = %q, want %q", path, got, want)
					}
				}
			}
		})
	}
}

func TestPinSourceRefuses(t *testing.T) {
	forbid := func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "gitpeer-alpha", errors.New("RBAC: access denied"))
	}
	conflict := func(a k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kustomize-controller"`, Field: ".spec.ref.commit"}},
			`Apply failed with 1 conflict: conflict with "kustomize-controller": .spec.ref.commit`)
		return true, nil, err
	}
	multi := argoApp("alpha")
	unstructured.RemoveNestedField(multi.Object, "spec", "source")
	_ = unstructured.SetNestedSlice(multi.Object, []any{map[string]any{"repoURL": "x", "targetRevision": "main"}}, "spec", "sources")
	for _, c := range []struct {
		name    string
		commit  string
		objs    []runtime.Object
		reactor func(*dynfake.FakeDynamicClient)
		want    []string
	}{
		{name: "not a commit hash", commit: "gitpeer/applied/alpha", objs: []runtime.Object{pinnedRepo("alpha", "")},
			want: []string{`"gitpeer/applied/alpha" is not a commit hash`}},
		{name: "an abbreviated hash", commit: sealNew[:12], objs: []runtime.Object{pinnedRepo("alpha", "")},
			want: []string{"is not a commit hash"}},
		{name: "the GitRepository may not be read", commit: sealNew, objs: []runtime.Object{pinnedRepo("alpha", "")},
			reactor: func(d *dynfake.FakeDynamicClient) { d.PrependReactor("get", "gitrepositories", forbid) },
			want:    []string{"gitpeer needs get and patch on gitrepositories.source.toolkit.fluxcd.io named gitpeer-alpha in flux-system: Role gitpeer-flux of manifests/rbac"}},
		{name: "the GitRepository may not be patched", commit: sealNew, objs: []runtime.Object{pinnedRepo("alpha", "")},
			reactor: func(d *dynfake.FakeDynamicClient) { d.PrependReactor("patch", "gitrepositories", forbid) },
			want:    []string{"pin GitRepository flux-system/gitpeer-alpha to " + sealNew, "gitpeer needs get and patch on gitrepositories.source.toolkit.fluxcd.io named gitpeer-alpha in flux-system"}},
		{name: "the Application may not be patched", commit: sealNew, objs: []runtime.Object{argoApp("alpha")},
			reactor: func(d *dynfake.FakeDynamicClient) { d.PrependReactor("patch", "applications", forbid) },
			want:    []string{"gitpeer needs get and patch on applications.argoproj.io named gitpeer-alpha in argocd: Role gitpeer-argocd of manifests/rbac/argocd"}},
		{name: "another manager owns spec.ref.commit", commit: sealNew, objs: []runtime.Object{pinnedRepo("alpha", sealOld)},
			reactor: func(d *dynfake.FakeDynamicClient) { d.PrependReactor("patch", "gitrepositories", conflict) },
			want:    []string{`conflict with "kustomize-controller"`, "spec.ref.commit has another writer", "gitpeer (field manager gitpeer) is its only writer"}},
		{name: "the Kustomization may not be patched", commit: sealNew, objs: []runtime.Object{pinnedRepo("alpha", ""), fluxKustomization("alpha")},
			reactor: func(d *dynfake.FakeDynamicClient) { d.PrependReactor("patch", "kustomizations", forbid) },
			want:    []string{"request a reconcile of Kustomization flux-system/gitpeer-alpha", "gitpeer needs patch on kustomizations.kustomize.toolkit.fluxcd.io named gitpeer-alpha in flux-system: Role gitpeer-flux of manifests/rbac"}},
		{name: "an Application of several sources", commit: sealNew, objs: []runtime.Object{multi},
			want: []string{"Application argocd/gitpeer-alpha has spec.sources"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dyn := newSourceDynamic(c.objs...)
			if c.reactor != nil {
				c.reactor(dyn)
			}
			b := pinBackend(t, dyn)
			where, err := b.PinSource(context.Background(), c.commit)
			if err == nil || where != "" {
				t.Fatalf("PinSource: %q, %v; want an error", where, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestPinSourceTakesBackTheReconcileRequest: `flux reconcile source git`
// (a merge patch) takes the annotation from field manager gitpeer, and the
// next pin's apply conflicts on it alone: it is a request token, so the
// pin applies again forced; a conflict on the pinned field is never
// forced (TestPinSourceRefuses).
func TestPinSourceTakesBackTheReconcileRequest(t *testing.T) {
	dyn := newSourceDynamic(pinnedRepo("alpha", sealOld))
	var forced []bool
	dyn.PrependReactor("patch", "gitrepositories", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.PatchActionImpl).PatchOptions
		forced = append(forced, opts.Force != nil && *opts.Force)
		if opts.Force != nil && *opts.Force {
			return false, nil, nil
		}
		return true, nil, apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
			Message: `conflict with "flux" using source.toolkit.fluxcd.io/v1`, Field: ".metadata.annotations." + FluxReconcileAnnotation}},
			`Apply failed with 1 conflict: conflict with "flux": .metadata.annotations.`+FluxReconcileAnnotation)
	})
	b := pinBackend(t, dyn)
	if _, err := b.PinSource(context.Background(), sealNew); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(forced, []bool{false, true}) {
		t.Errorf("applies forced %v, want an unforced one, then a forced one", forced)
	}
	if got := field(t, dyn, GitRepositoryResource, FluxNamespace, "gitpeer-alpha", "spec", "ref", "commit"); got != sealNew {
		t.Errorf("spec.ref.commit %q, want %s", got, sealNew)
	}
}
