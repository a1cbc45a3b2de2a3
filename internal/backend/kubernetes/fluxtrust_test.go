package kubernetes

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// Two authorized_keys lines: the cluster's current key and the staged one.
const (
	fluxCurrentKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHcurrentcurrentcurrentcurrentcurrentcurr"
	fluxNextKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnextnextnextnextnextnextnextnextnextnext"
)

// fluxRepo is GitRepository flux-system/gitpeer-<id> as manifests/flux
// makes it, verifying with the Secret verifyWith ("": no spec.verify).
func fluxRepo(id, verifyWith string) *unstructured.Unstructured {
	spec := map[string]any{
		"interval": "1m",
		"url":      "ssh://git@github.com/example-org/peering.git",
		"ref":      map[string]any{"branch": "gitpeer/applied/" + id},
	}
	if verifyWith != "" {
		spec["verify"] = map[string]any{"mode": "HEAD", "secretRef": map[string]any{"name": verifyWith}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": "gitpeer-" + id, "namespace": FluxNamespace},
		"spec":       spec,
	}}
}

// fluxSecret is Secret flux-system/<name> with data.
func fluxSecret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: FluxNamespace}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// fluxTrustCase is one state of a cluster's Flux and what FluxTrusts says
// of fluxNextKey in it.
type fluxTrustCase struct {
	name   string
	repo   func(id string) *unstructured.Unstructured // nil: no GitRepository
	secret func(id string) *corev1.Secret             // nil: no Secret
	ok     bool
	why    []string // in why; <id> is the cluster ID
}

var fluxTrustCases = []fluxTrustCase{
	{
		name: "no GitRepository: another engine applies the tree",
		ok:   true, why: []string{"no Flux GitRepository flux-system/gitpeer-<id>: "},
	},
	{
		name: "GitRepository without spec.verify: Flux checks no signature",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, "") },
		ok:   true, why: []string{"GitRepository flux-system/gitpeer-<id> has no spec.verify", "any key will do"},
	},
	{
		// An overlay of before the staged rollover: secretGenerator with
		// the name hash. The Secret holds the key, but the tree can never
		// put the next one there: the switch must wait for the overlay.
		name: "verify Secret with a name hash",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, "gitpeer-signing-8t2bk7hm4f") },
		secret: func(id string) *corev1.Secret {
			return fluxSecret("gitpeer-signing-8t2bk7hm4f", map[string]string{id + ".sshpub": fluxNextKey})
		},
		why: []string{`verifies with Secret "gitpeer-signing-8t2bk7hm4f", which gitpeer does not keep`, "without a name hash", "disableNameSuffixHash: true", "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent", "docs/gitops.md"},
	},
	{
		name: "verify Secret missing",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, FluxVerifySecretName) },
		why:  []string{"secret flux-system/gitpeer-signing, which does not exist"},
	},
	{
		name: "verify Secret without the next key: Flux has not applied the announcing head",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, FluxVerifySecretName) },
		secret: func(id string) *corev1.Secret {
			return fluxSecret(FluxVerifySecretName, map[string]string{id + ".sshpub": fluxCurrentKey + "\n"})
		},
		why: []string{"secret flux-system/gitpeer-signing (of GitRepository flux-system/gitpeer-<id>) does not hold the key yet (it holds <id>.sshpub)", "Flux has not applied the head", "flux get kustomizations gitpeer-<id>"},
	},
	{
		// source-controller reads only keys ending in .sshpub or .asc.
		name: "the key under a name Flux does not read",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, FluxVerifySecretName) },
		secret: func(id string) *corev1.Secret {
			return fluxSecret(FluxVerifySecretName, map[string]string{id + ".sshpub": fluxCurrentKey, id + "-next.pub": fluxNextKey})
		},
		why: []string{"does not hold the key yet"},
	},
	{
		name: "verify Secret with the next key beside the current one",
		repo: func(id string) *unstructured.Unstructured { return fluxRepo(id, FluxVerifySecretName) },
		secret: func(id string) *corev1.Secret {
			return fluxSecret(FluxVerifySecretName, map[string]string{id + ".sshpub": fluxCurrentKey + "\n", id + "-next.sshpub": "  " + fluxNextKey + "\n"})
		},
		ok: true, why: []string{"GitRepository flux-system/gitpeer-<id> trusts the key", "key <id>-next.sshpub"},
	},
}

// check runs FluxTrusts for fluxNextKey (surrounded by white space, as a
// file holds it) and compares with the case.
func (c fluxTrustCase) check(t *testing.T, b *Backend) {
	t.Helper()
	ok, why, err := b.FluxTrusts(context.Background(), []byte(fluxNextKey+"\n"))
	if err != nil {
		t.Fatalf("FluxTrusts: %v", err)
	}
	if ok != c.ok {
		t.Errorf("ok = %v, want %v (why: %s)", ok, c.ok, why)
	}
	for _, w := range c.why {
		if w = strings.ReplaceAll(w, "<id>", b.ClusterID()); !strings.Contains(why, w) {
			t.Errorf("why lacks %q:\n%s", w, why)
		}
	}
}

// newFluxDynamic is a fake dynamic client knowing GitRepositories.
func newFluxDynamic(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GitRepositoryResource: "GitRepositoryList"}, objs...)
}

func TestFluxTrusts(t *testing.T) {
	for _, c := range fluxTrustCases {
		t.Run(c.name, func(t *testing.T) {
			ca := testCA(t)
			cs := newClientset()
			var objs []runtime.Object
			if c.repo != nil {
				objs = append(objs, c.repo("alpha"))
			}
			if c.secret != nil {
				cs.Tracker().Add(c.secret("alpha"))
			}
			opts := testOptions(ca)
			opts.Dynamic = newFluxDynamic(objs...)
			b, _ := initBackend(t, cs, opts)
			c.check(t, b)
		})
	}
}

// An empty key is a caller's mistake, never "trusted".
func TestFluxTrustsRefusesAnEmptyKey(t *testing.T) {
	opts := testOptions(testCA(t))
	opts.Dynamic = newFluxDynamic()
	b, _ := initBackend(t, newClientset(), opts)
	if ok, _, err := b.FluxTrusts(context.Background(), []byte(" \n")); err == nil || ok {
		t.Fatalf("ok %v, err %v: want an error", ok, err)
	}
}

// TestFluxTrustsRealCluster runs every case of fluxTrustCases against a
// real kube-apiserver (GITPEER_TEST_KUBECONFIG, as TestRealCluster) with
// Flux's GitRepository CRD of manifests/flux/testdata/crds installed, as a
// ServiceAccount bound to the Role gitpeer-flux of manifests/rbac alone:
// that Role is proven sufficient, and without it FluxTrusts errs naming
// the permission, unless Flux is not installed at all (checked first when
// the CRD is absent at the start). It needs a throwaway cluster:
// flux-system/gitpeer-signing must not exist.
func TestFluxTrustsRealCluster(t *testing.T) {
	admin, ctx, suffix := realCluster(t)
	var (
		id     = "it-flux-" + suffix
		name   = "gitpeer-it-flux-" + suffix
		saUser = "system:serviceaccount:gitpeer-system:" + name
	)
	core := corev1client.NewForConfigOrDie(admin)
	rbac := rbacv1client.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	repos := dyn.Resource(GitRepositoryResource).Namespace(FluxNamespace)

	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := core.Secrets(FluxNamespace).Get(ctx, FluxVerifySecretName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Skipf("%s/%s exists (%v): this test needs a throwaway cluster", FluxNamespace, FluxVerifySecretName, err)
	}
	m := loadRBAC(t).ForCluster(id)
	sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "gitpeer-system"}}
	role, rb := m.FluxRole, m.FluxRoleBinding
	role.Name, rb.Name, rb.RoleRef.Name, rb.Subjects = name, name, name, sa
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.RoleBindings(FluxNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = rbac.Roles(FluxNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = repos.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{})
		_ = core.Secrets(FluxNamespace).Delete(ctx, FluxVerifySecretName, metav1.DeleteOptions{})
		_ = core.Secrets(FluxNamespace).Delete(ctx, "gitpeer-signing-8t2bk7hm4f", metav1.DeleteOptions{})
	})

	// b runs as the ServiceAccount bound to the Role, bare as one bound to
	// nothing.
	impersonate := func(user string) *Backend {
		as := rest.CopyConfig(admin)
		as.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:gitpeer-system", "system:authenticated"}}
		return &Backend{opts: Options{Config: as}, core: corev1client.NewForConfigOrDie(as), clusterID: id}
	}
	b, bare := impersonate(saUser), impersonate(saUser+"-bare")
	if _, err := rbac.Roles(FluxNamespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(FluxNamespace).Create(ctx, &rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the authorizer's cache within a moment: wait for it.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, _, err := b.FluxTrusts(ctx, []byte(fluxNextKey))
		return !apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Fatalf("the Role %s is not in force: %v", name, err)
	}

	// Flux not installed: the API server has no such resource. Without the
	// Role (left out where flux-system does not exist), discovery tells.
	crd := loadGitRepositoryCRD(t)
	if _, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Run("CRD absent", func(t *testing.T) {
			fluxTrustCases[0].check(t, b)
		})
		t.Run("CRD absent, no Role", func(t *testing.T) {
			ok, why, err := bare.FluxTrusts(ctx, []byte(fluxNextKey))
			if err != nil || !ok || !strings.Contains(why, "no Flux GitRepository flux-system/gitpeer-"+id+": ") || !strings.Contains(why, "Flux is not installed") {
				t.Fatalf("FluxTrusts without Flux: %v, %q, %v", ok, why, err)
			}
		})
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	} else if err != nil {
		t.Fatal(err)
	}
	// Served once established: a list answers instead of NotFound.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := repos.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("GitRepository CRD not served: %v", err)
	}

	// Flux installed, the Role missing: Forbidden, the permission named.
	if _, _, err := bare.FluxTrusts(ctx, []byte(fluxNextKey)); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "get on gitrepositories.source.toolkit.fluxcd.io in flux-system") {
		t.Fatalf("FluxTrusts without the Role: %v, want Forbidden naming the permission", err)
	}

	for _, c := range fluxTrustCases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			_ = repos.Delete(ctx, "gitpeer-"+id, metav1.DeleteOptions{})
			for _, s := range []string{FluxVerifySecretName, "gitpeer-signing-8t2bk7hm4f"} {
				_ = core.Secrets(FluxNamespace).Delete(ctx, s, metav1.DeleteOptions{})
			}
			if c.repo != nil {
				if _, err := repos.Create(ctx, c.repo(id), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if c.secret != nil {
				if _, err := core.Secrets(FluxNamespace).Create(ctx, c.secret(id), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			c.check(t, b)
		})
	}
}

// loadGitRepositoryCRD is manifests/flux/testdata/crds' GitRepository CRD.
func loadGitRepositoryCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../../manifests/flux/testdata/crds/source.toolkit.fluxcd.io_gitrepositories.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// Without the Role gitpeer-flux, on a cluster whose discovery cannot be
// asked (no rest config), each Forbidden read is an error naming the
// permission missing, never a verdict.
func TestFluxTrustsNamesAMissingPermission(t *testing.T) {
	forbid := func(resource string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: a.GetResource().Group, Resource: resource}, "x", errors.New("RBAC: access denied"))
		}
	}
	for _, c := range []struct {
		name, want string
		setup      func(cs *fake.Clientset, dyn *dynfake.FakeDynamicClient)
	}{
		{"GitRepository", "gitpeer needs get on gitrepositories.source.toolkit.fluxcd.io in flux-system: Role gitpeer-flux of manifests/rbac",
			func(cs *fake.Clientset, dyn *dynfake.FakeDynamicClient) {
				dyn.PrependReactor("get", "gitrepositories", forbid("gitrepositories"))
			}},
		{"verify Secret", "gitpeer needs get on secrets named gitpeer-signing in flux-system: Role gitpeer-flux of manifests/rbac",
			func(cs *fake.Clientset, dyn *dynfake.FakeDynamicClient) {
				cs.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() != FluxNamespace {
						return false, nil, nil
					}
					return forbid("secrets")(a)
				})
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := newClientset()
			dyn := newFluxDynamic(fluxRepo("alpha", FluxVerifySecretName))
			opts := testOptions(testCA(t))
			opts.Dynamic = dyn
			b, _ := initBackend(t, cs, opts)
			c.setup(cs, dyn)
			ok, why, err := b.FluxTrusts(context.Background(), []byte(fluxNextKey))
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.want) || ok || why != "" {
				t.Fatalf("FluxTrusts: %v, %q, %v; want a Forbidden error naming %q", ok, why, err, c.want)
			}
		})
	}
}
