package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	authnv1 "k8s.io/api/authentication/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	certv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// TestRealCluster runs the backend against a real kube-apiserver and
// kube-controller-manager (GITPEER_TEST_KUBECONFIG: an admin kubeconfig, e.g.
// hack/start-cluster.sh's admin.kubeconfig), as the ServiceAccount of
// manifests/rbac (impersonated), so the RBAC is proven sufficient too:
// Init, SignCSR of a consumer's ControlPlane CSR (the certificate chains to
// CABundle), and a kubeconfig Secret that authenticates to the cluster.
// Everything lives in fresh namespaces and is deleted afterwards.
func TestRealCluster(t *testing.T) {
	admin, ctx, suffix := realCluster(t)
	var (
		name     = "gitpeer-it-" + suffix
		liqoNS   = name // a fresh "Liqo namespace": no cluster ID ConfigMap, no keys
		self     = "it-self-" + suffix
		provider = "it-provider-" + suffix
		saUser   = "system:serviceaccount:gitpeer-system:" + name
	)
	core := corev1client.NewForConfigOrDie(admin)
	rbac := rbacv1client.NewForConfigOrDie(admin)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		for _, ns := range []string{liqoNS, liqo.TenantNamespace(provider)} {
			_ = core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	})

	// manifests/rbac, renamed for this run and bound to a ServiceAccount of
	// its own (impersonation needs no ServiceAccount object).
	m := loadRBAC(t)
	sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "gitpeer-system"}}
	cr, crb, role, rb := m.ClusterRole, m.ClusterRoleBinding, m.Role, m.RoleBinding
	cr.Name, crb.Name, crb.RoleRef.Name, crb.Subjects = name, name, name, sa
	role.Namespace, rb.Namespace, rb.Subjects = liqoNS, liqoNS, sa
	if _, err := rbac.ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Role lives in the Liqo namespace, so that namespace exists first
	// (Init creating a missing one is covered by the tenant namespace that
	// StoreKubeconfig creates below).
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.Roles(liqoNS).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(liqoNS).Create(ctx, &rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	as := rest.CopyConfig(admin)
	as.Impersonate = rest.ImpersonationConfig{UserName: saUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:gitpeer-system", "system:authenticated"}}
	opts := Options{Config: as, LiqoNamespace: liqoNS, ClusterID: self}

	// RBAC reaches the authorizer's cache within a moment: retry Forbidden.
	var b *Backend
	var created bool
	var err error
	for {
		b, created, err = Init(ctx, opts)
		if !apierrors.IsForbidden(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("init as %s: %v", saUser, err)
	}
	if !created || b.ClusterID() != self {
		t.Fatalf("init: created %v, cluster ID %q", created, b.ClusterID())
	}
	b2, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	fp1, _ := handshake.Fingerprint(b.Signer().Public())
	fp2, _ := handshake.Fingerprint(b2.Signer().Public())
	if fp1 != fp2 {
		t.Fatal("New reads another key than Init wrote")
	}

	// A consumer's ControlPlane CSR, signed by kube-controller-manager.
	consumer, _ := handshake.GenerateKey()
	consumerID := "it-consumer-" + suffix
	csrPEM, err := handshake.ControlPlaneCSR(consumer, consumerID)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := b.SignCSR(ctx, csrPEM, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, _ := handshake.MarshalPublicKey(consumer.Public())
	_, pubDER, _ := handshake.ParsePublicKey(pubPEM)
	if err := handshake.VerifyClientCertificate(cert, b.CABundle(), pubDER, consumerID, "liqo.io", time.Now()); err != nil {
		t.Fatalf("issued certificate does not chain to the CA bundle: %v", err)
	}
	certs := certv1client.NewForConfigOrDie(admin)
	left, err := certs.CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: CSRLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(left.Items, func(c certv1.CertificateSigningRequest) bool { return string(c.Spec.Request) == string(csrPEM) }) {
		t.Error("the CSR object was not deleted")
	}

	// The kubeconfig Secret of an Identity issued to this cluster (its own key
	// signed by the cluster itself) authenticates to the API server.
	ownCSR, _ := handshake.ControlPlaneCSR(b.Signer(), self)
	ownCert, err := b.SignCSR(ctx, ownCSR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id := liqo.ControlPlaneIdentity(self, provider, authv1beta1.AuthParams{APIServer: admin.Host, CA: b.CABundle(), SignedCRT: ownCert})
	where, err := b.StoreKubeconfig(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.StoreKubeconfig(ctx, id); err != nil {
		t.Fatal(err)
	}
	s, err := core.Secrets(id.Namespace).Get(ctx, liqo.KubeconfigSecretName(id.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	kc, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	review, err := authnv1client.NewForConfigOrDie(kc).SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the stored kubeconfig does not authenticate: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != self || !slices.Contains(u.Groups, "liqo.io") {
		t.Fatalf("the stored kubeconfig authenticates as %+v, want %s in group liqo.io", u, self)
	}
	if err := b.RemoveKubeconfig(ctx, provider); err != nil {
		t.Fatal(err)
	}
}

// realCluster is the admin config of the throwaway cluster
// GITPEER_TEST_KUBECONFIG names (hack/backend-real.sh starts one in make
// e2e), a context that ends with the test (2 minutes at most), and a
// random suffix for the names of what the test creates; the test is
// skipped without it.
func realCluster(t *testing.T) (*rest.Config, context.Context, string) {
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
	raw := make([]byte, 4)
	_, _ = rand.Read(raw)
	return admin, ctx, hex.EncodeToString(raw)
}
