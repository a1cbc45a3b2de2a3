package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/internal/rbactest"
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
	approve := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{"kubernetes.io/kube-apiserver-client"}, Verbs: []string{"approve"}}
	if !slices.ContainsFunc(m.ClusterRole.Rules, func(r rbacv1.PolicyRule) bool { return fmt.Sprint(r) == fmt.Sprint(approve) }) {
		t.Errorf("cluster role lacks %+v", approve)
	}
	for _, rules := range [][]rbacv1.PolicyRule{m.Role.Rules, m.ClusterRole.Rules} {
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
	actions := slices.Concat(cs.Actions()[:signerActions-1], cs.Actions()[signerActions:], cs2.Actions())
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
