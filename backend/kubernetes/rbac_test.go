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

	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/internal/testing/rbactest"
)

func loadRBAC(t *testing.T) *rbactest.Manifests {
	t.Helper()
	m, err := rbactest.Load("../../manifests/rbac")
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
	// Read only, and of Secrets the verify Secret alone: the Role is in
	// Flux's namespace, which holds Flux's Git credentials too.
	fluxRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get"}},
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
	m := loadRBAC(t)
	ca := testCA(t)
	cs := newClientset()
	opts := testOptions(ca)
	opts.ClusterID = ""
	cs.Tracker().Add(clusterIDConfigMap(ClusterIDConfigMapName, "alpha", true))
	ctx := context.Background()

	cs.Tracker().Add(fluxSecret(FluxVerifySecretName, map[string]string{"alpha.sshpub": fluxCurrentKey}))
	dyn := newFluxDynamic(fluxRepo("alpha", FluxVerifySecretName))
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
	// checked by daemon/rbac_test.go.
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

// TestRBACFluxRoleIsExactlyWhatFluxTrustsReads checks the requests of
// FluxTrusts, in each state of fluxTrustCases, against the Role in
// flux-system alone (the ClusterRole's secrets rule would allow the Secret
// too, but may be narrowed to tenant namespaces): every request is allowed
// by it, and each of its rules is used. TestFluxTrustsRealCluster proves
// the same Role on a real API server.
func TestRBACFluxRoleIsExactlyWhatFluxTrustsReads(t *testing.T) {
	m := loadRBAC(t)
	used := make([]bool, len(m.FluxRole.Rules))
	for _, c := range fluxTrustCases {
		cs := newClientset()
		var objs []runtime.Object
		if c.repo != nil {
			objs = append(objs, c.repo("alpha"))
		}
		if c.secret != nil {
			cs.Tracker().Add(c.secret("alpha"))
		}
		opts := testOptions(testCA(t))
		dyn := newFluxDynamic(objs...)
		opts.Dynamic = dyn
		b, _ := initBackend(t, cs, opts)
		cs.ClearActions()
		if _, _, err := b.FluxTrusts(context.Background(), []byte(fluxNextKey)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, req := range rbactest.Requests(slices.Concat(cs.Actions(), dyn.Actions())) {
			if !m.AllowsInFlux(req) {
				t.Errorf("%s: Role %s/%s forbids %s %s %q in namespace %q", c.name, m.FluxRole.Namespace, m.FluxRole.Name, req.Verb, req.Resource, req.Name, req.Namespace)
			}
			for i, r := range m.FluxRole.Rules {
				if (&rbactest.Manifests{FluxRole: rbacv1.Role{ObjectMeta: m.FluxRole.ObjectMeta, Rules: []rbacv1.PolicyRule{r}}}).AllowsInFlux(req) {
					used[i] = true
				}
			}
		}
	}
	for i, r := range m.FluxRole.Rules {
		if !used[i] {
			t.Errorf("Role %s/%s grants %+v but FluxTrusts never uses it", m.FluxRole.Namespace, m.FluxRole.Name, r)
		}
	}
}
