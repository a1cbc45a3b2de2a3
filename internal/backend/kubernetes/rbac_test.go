package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/test/rbactest"
)

func loadRBAC(t *testing.T) *rbactest.Manifests {
	t.Helper()
	m, err := rbactest.Load("../../../manifests/rbac")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRBACManifestsShape(t *testing.T) {
	m := loadRBAC(t)
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "gitpeer", Namespace: "gitpeer-system"}
	if m.ServiceAccount.Name != sa.Name || m.ServiceAccount.Namespace != sa.Namespace {
		t.Errorf("service account %s/%s", m.ServiceAccount.Namespace, m.ServiceAccount.Name)
	}
	if m.Role.Namespace != DefaultLiqoNamespace || m.RoleBinding.Namespace != DefaultLiqoNamespace {
		t.Errorf("role and binding in %q and %q, want the Liqo namespace", m.Role.Namespace, m.RoleBinding.Namespace)
	}
	if m.RoleBinding.RoleRef.Name != m.Role.Name || m.RoleBinding.RoleRef.Kind != "Role" || !slices.Equal(m.RoleBinding.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("role binding: %+v", m.RoleBinding)
	}
	if m.ClusterRoleBinding.RoleRef.Name != m.ClusterRole.Name || m.ClusterRoleBinding.RoleRef.Kind != "ClusterRole" || !slices.Equal(m.ClusterRoleBinding.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("cluster role binding: %+v", m.ClusterRoleBinding)
	}
	if m.FluxRole.Namespace != FluxNamespace || m.FluxRoleBinding.Namespace != FluxNamespace ||
		m.FluxRoleBinding.RoleRef.Name != m.FluxRole.Name || m.FluxRoleBinding.RoleRef.Kind != "Role" || !slices.Equal(m.FluxRoleBinding.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("Flux role %s/%s, binding %+v", m.FluxRole.Namespace, m.FluxRole.Name, m.FluxRoleBinding)
	}
	// The cluster's own GitRepository alone, read and pinned (patch), its
	// Kustomization alone, asked to reconcile (patch), and of Secrets the verify Secret alone, read only: the Role is in Flux's
	// namespace, which holds Flux's Git credentials and the cluster's own
	// sources too.
	fluxRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, ResourceNames: []string{FluxGitRepositoryPrefix + rbactest.ClusterIDPlaceholder}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, ResourceNames: []string{FluxKustomizationPrefix + rbactest.ClusterIDPlaceholder}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{FluxVerifySecretName}, Verbs: []string{"get"}},
	}
	if fmt.Sprint(m.FluxRole.Rules) != fmt.Sprint(fluxRules) {
		t.Errorf("Flux role rules %+v, want %+v", m.FluxRole.Rules, fluxRules)
	}
	approve := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{"kubernetes.io/kube-apiserver-client"}, Verbs: []string{"approve"}}
	if !slices.ContainsFunc(m.ClusterRole.Rules, func(r rbacv1.PolicyRule) bool { return fmt.Sprint(r) == fmt.Sprint(approve) }) {
		t.Errorf("cluster role lacks %+v", approve)
	}
	for _, rules := range [][]rbacv1.PolicyRule{m.Role.Rules, m.FluxRole.Rules, m.ClusterRole.Rules} {
		for _, r := range rules {
			for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
				if s == "*" {
					t.Errorf("wildcard in %+v", r)
				}
			}
			if slices.Contains(r.Verbs, "list") && slices.Contains(r.Resources, "secrets") {
				t.Errorf("secrets may be listed: %+v", r)
			}
		}
	}
}

// TestRBACCoversExactlyWhatTheBackendDoes runs every operation of the backend
// on a fake clientset and checks each request against manifests/rbac, as
// the RBAC authorizer would: every request is allowed, and every rule is used
// by some request (signers/approve is checked by the API server on the
// approval update; the real-cluster test exercises it).
func TestRBACCoversExactlyWhatTheBackendDoes(t *testing.T) {
	m := loadRBAC(t).ForCluster("alpha")
	ca := testCA(t)
	cs := newClientset()
	opts := testOptions(ca)
	opts.ClusterID = ""
	cs.Tracker().Add(clusterIDConfigMap(ClusterIDConfigMapName, "alpha", true))
	ctx := context.Background()

	cs.Tracker().Add(fluxSecret(FluxVerifySecretName, map[string]string{"alpha.sshpub": fluxCurrentKey}))
	dyn := newSourceDynamic(pinnedRepo("alpha", ""))
	opts.Dynamic = dyn

	b, _ := initBackend(t, cs, opts)
	if _, err := NewWithClients(ctx, opts, cs.CoreV1(), cs.CertificatesV1()); err != nil {
		t.Fatal(err)
	}
	signer(t, cs, signWith(t, ca))
	signerActions := len(cs.Actions()) // the fake signer's own watch is not the backend's
	csrPEM, _ := handshake.ControlPlaneCSR(b.Signer(), "alpha")
	cert, err := b.SignCSR(ctx, csrPEM, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id := testIdentity(t, ca, b)
	if _, err := b.StoreKubeconfig(ctx, id); err != nil {
		t.Fatal(err)
	}
	id.Spec.AuthParams.SignedCRT = cert
	if _, err := b.StoreKubeconfig(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveKubeconfig(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stuck(ctx, testNow); err != nil {
		t.Fatal(err)
	}
	// A key rollover: does the cluster's Flux trust the next key yet?
	if _, _, err := b.FluxTrusts(ctx, []byte(fluxNextKey)); err != nil {
		t.Fatal(err)
	}
	// A seal: the cluster's GitRepository is pinned to it.
	if where, err := b.PinSource(ctx, sealNew); err != nil || where == "" {
		t.Fatalf("PinSource: %q, %v", where, err)
	}
	for _, tok := range []string{"first", "second"} { // create, then update
		if err := b.SetToken(ctx, "beta", []byte(tok)); err != nil {
			t.Fatal(err)
		}
	}
	if tok, err := b.Token(ctx, "beta"); err != nil || string(tok) != "second" {
		t.Fatalf("token %q, %v", tok, err)
	}
	for _, fp := range []string{"sha256:" + strings.Repeat("1", 64), "sha256:" + strings.Repeat("2", 64)} { // create, then update
		st, err := b.LoadPins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Peer("beta").Fingerprint = fp
		if err := b.SavePins(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	// Two staged rollovers: gitpeer rotate-key stages the next key
	// (created), a pass reads and announces it (updated), then promotes
	// it (authentication-keys updated, the previous key's Secret created,
	// then updated by the second rollover, the staged Secret deleted); the
	// previous key is read back to sign the statement.
	for range 2 {
		if _, err := b.StageKey(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.MarkAnnounced(ctx, testNow); err != nil {
			t.Fatal(err)
		}
		if _, err := b.PromoteNextKey(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.PreviousKey(ctx); err != nil {
		t.Fatal(err)
	}
	// Init with the Liqo namespace missing: it is created (configmap kept).
	cs2 := newClientset(clusterIDConfigMap(ClusterIDConfigMapName, "alpha", false))
	initBackend(t, cs2, opts)

	used := map[rbactest.Rule]bool{}
	actions := slices.Concat(cs.Actions()[:signerActions-1], cs.Actions()[signerActions:], cs2.Actions(), dyn.Actions())
	for _, req := range rbactest.Requests(actions) {
		if !m.Allows(req) {
			t.Errorf("manifests/rbac forbids %s %s %q in namespace %q", req.Verb, req.Resource, req.Name, req.Namespace)
		}
		used[req.Rule] = true
	}
	// The rules on the daemon's resources (its Lease, its Events) are
	// checked by internal/controller/daemon/rbac_test.go.
	backendOwned := func(res string) bool { return !rbactest.IsDaemonResource(res) }
	for _, r := range m.Granted(backendOwned) {
		if !used[r] && !(r.Resource == "signers" && r.Verb == "approve") {
			t.Errorf("manifests/rbac grants %s %s (group %q) but the backend never does it", r.Verb, r.Resource, r.Group)
		}
	}
	if t.Failed() {
		var seen []string
		for _, a := range actions {
			seen = append(seen, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource()+" ns="+a.GetNamespace())
		}
		t.Log("requests:\n" + strings.Join(seen, "\n"))
	}
}

// TestRBACFluxRoleIsExactlyWhatTheBackendDoesWithFlux checks the requests
// of FluxTrusts, in each state of fluxTrustCases, and of PinSource against
// the Role in flux-system alone (the ClusterRole's secrets rule would allow
// the Secret too, but may be narrowed to tenant namespaces): every request
// is allowed by it, and each verb of each of its rules is used.
// TestFluxTrustsRealCluster and TestPinSourceRealCluster prove the same
// Role on a real API server.
func TestRBACFluxRoleIsExactlyWhatTheBackendDoesWithFlux(t *testing.T) {
	m := loadRBAC(t).ForCluster("alpha")
	used := map[string]bool{}
	for _, c := range fluxTrustCases {
		cs := newClientset()
		var objs []runtime.Object
		if c.repo != nil {
			objs = append(objs, c.repo("alpha"), fluxKustomization("alpha"))
		}
		if c.secret != nil {
			cs.Tracker().Add(c.secret("alpha"))
		}
		opts := testOptions(testCA(t))
		dyn := newSourceDynamic(objs...)
		opts.Dynamic = dyn
		b, _ := initBackend(t, cs, opts)
		cs.ClearActions()
		if _, _, err := b.FluxTrusts(context.Background(), []byte(fluxNextKey)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := b.PinSource(context.Background(), sealNew); err != nil {
			t.Fatalf("%s: PinSource: %v", c.name, err)
		}
		for _, req := range rbactest.Requests(slices.Concat(cs.Actions(), dyn.Actions())) {
			if req.Namespace == ArgoNamespace {
				continue // Role gitpeer-argocd: TestRBACArgoRoleIsExactlyWhatPinSourceDoes
			}
			if !m.AllowsInFlux(req) {
				t.Errorf("%s: Role %s/%s forbids %s %s %q in namespace %q", c.name, m.FluxRole.Namespace, m.FluxRole.Name, req.Verb, req.Resource, req.Name, req.Namespace)
			}
			for i, r := range m.FluxRole.Rules {
				if rbactest.AllowedBy(rbacv1.Role{ObjectMeta: m.FluxRole.ObjectMeta, Rules: []rbacv1.PolicyRule{r}}, req) {
					used[fmt.Sprint(i, req.Verb)] = true
				}
			}
		}
	}
	for i, r := range m.FluxRole.Rules {
		for _, v := range r.Verbs {
			if !used[fmt.Sprint(i, v)] {
				t.Errorf("Role %s/%s grants %s in %+v but the backend never does it", m.FluxRole.Namespace, m.FluxRole.Name, v, r)
			}
		}
	}
}

// loadArgoRole is the Role of manifests/rbac/argocd for cluster id.
func loadArgoRole(t *testing.T, id string) rbacv1.Role {
	t.Helper()
	r, err := rbactest.LoadRole("../../../manifests/rbac/argocd/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return rbactest.RoleForCluster(r, id)
}

// TestRBACArgoRoleIsExactlyWhatPinSourceDoes checks the requests PinSource
// makes of Argo CD's namespace against the Role gitpeer-argocd of
// manifests/rbac/argocd alone: each is allowed, each verb used, and the
// Role names the cluster's Application and nothing else.
func TestRBACArgoRoleIsExactlyWhatPinSourceDoes(t *testing.T) {
	role := loadArgoRole(t, "alpha")
	want := []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, ResourceNames: []string{"gitpeer-alpha"}, Verbs: []string{"get", "patch"}}}
	if role.Name != "gitpeer-argocd" || role.Namespace != ArgoNamespace || fmt.Sprint(role.Rules) != fmt.Sprint(want) {
		t.Fatalf("Role %s/%s rules %+v, want gitpeer-argocd in %s with %+v", role.Namespace, role.Name, role.Rules, ArgoNamespace, want)
	}
	used := map[string]bool{}
	for _, objs := range [][]runtime.Object{nil, {argoApp("alpha")}} {
		dyn := newSourceDynamic(objs...)
		b := pinBackend(t, dyn)
		if _, err := b.PinSource(context.Background(), sealNew); err != nil {
			t.Fatal(err)
		}
		for _, req := range rbactest.Requests(dyn.Actions()) {
			if req.Namespace != ArgoNamespace {
				continue
			}
			if !rbactest.AllowedBy(role, req) {
				t.Errorf("Role %s/%s forbids %s %s %q", role.Namespace, role.Name, req.Verb, req.Resource, req.Name)
			}
			used[req.Verb] = true
		}
	}
	for _, v := range role.Rules[0].Verbs {
		if !used[v] {
			t.Errorf("Role gitpeer-argocd grants %s but PinSource never does it", v)
		}
	}
}
