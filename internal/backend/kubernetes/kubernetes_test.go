package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testCA is the CA of the fake signer; its certificate is the CA bundle.
func testCA(t *testing.T) *handshake.CA {
	t.Helper()
	ca, _, err := handshake.NewCA("test-cluster-ca", testNow.Add(-time.Hour), 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// newClientset is a fake clientset that fills metadata.name from
// generateName on create, as the API server does.
func newClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	var n atomic.Int64
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetName() == "" && o.GetGenerateName() != "" {
			o.SetName(fmt.Sprintf("%s%05d", o.GetGenerateName(), n.Add(1)))
		}
		return false, nil, nil
	})
	return cs
}

func testOptions(ca *handshake.CA) Options {
	return Options{
		ClusterID:  "alpha",
		APIServer:  "https://alpha.example:6443",
		CABundle:   ca.CertPEM,
		CSRTimeout: 5 * time.Second,
		Now:        func() time.Time { return testNow },
	}
}

func initBackend(t *testing.T, cs *fake.Clientset, opts Options) (*Backend, bool) {
	t.Helper()
	b, created, err := InitWithClients(context.Background(), opts, cs.CoreV1(), cs.CertificatesV1())
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	return b, created
}

// writes are the create, update, patch and delete actions of cs on resource.
func writes(cs *fake.Clientset, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a)
		}
	}
	return out
}

func getSecret(t *testing.T, cs *fake.Clientset, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysSecret(priv, pub []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KeysSecretName, Namespace: DefaultLiqoNamespace},
		Data:       map[string][]byte{PrivateKeyKey: priv, PublicKeyKey: pub},
	}
}

func TestInitCreatesKeysInLiqosFormat(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, created := initBackend(t, cs, testOptions(ca))
	if !created {
		t.Fatal("init on an empty cluster reports nothing created")
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "liqo", metav1.GetOptions{}); err != nil {
		t.Fatalf("liqo namespace not created: %v", err)
	}
	if got := b.CreatedNamespace(); got != "liqo" {
		t.Errorf("CreatedNamespace() = %q, want liqo: init must be able to say it made Liqo's namespace", got)
	}
	if again, created := initBackend(t, cs, testOptions(ca)); created || again.CreatedNamespace() != "" {
		t.Errorf("a second init reports something created (namespace %q)", again.CreatedNamespace())
	}
	s := getSecret(t, cs, "liqo", "authentication-keys")
	if len(s.Labels) != 0 || len(s.Annotations) != 0 || len(s.Data) != 2 {
		t.Fatalf("keys secret is not Liqo's shape (no labels, privateKey and publicKey): %+v", s.ObjectMeta)
	}
	if !bytes.HasPrefix(s.Data["privateKey"], []byte("-----BEGIN "+"PRIVATE KEY-----\n")) ||
		!bytes.HasPrefix(s.Data["publicKey"], []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Fatalf("keys are not PEM PKCS#8 / PKIX:\n%s\n%s", s.Data["privateKey"], s.Data["publicKey"])
	}
	key, err := handshake.ParsePrivateKey(s.Data["privateKey"])
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := handshake.ParsePublicKey(s.Data["publicKey"])
	if err != nil {
		t.Fatal(err)
	}
	fpKey, _ := handshake.Fingerprint(key.Public())
	fpPub, _ := handshake.Fingerprint(pub)
	fpBackend, _ := handshake.Fingerprint(b.Signer().Public())
	if fpKey != fpPub || fpKey != fpBackend {
		t.Fatalf("fingerprints differ: privateKey %s, publicKey %s, backend %s", fpKey, fpPub, fpBackend)
	}
	if n := getSecret(t, cs, "liqo", "gitpeer-nonce-secret").Data["secret"]; len(n) != 32 {
		t.Fatalf("nonce secret holds %d bytes, want 32", len(n))
	}
	nonce, _ := b.Nonce("beta", 1)
	if err := handshake.CheckNonce(nonce); err != nil {
		t.Fatal(err)
	}

	// Open and init again: the same key, the same nonces, nothing written.
	cs.ClearActions()
	b2, err := NewWithClients(context.Background(), testOptions(ca), cs.CoreV1(), cs.CertificatesV1())
	if err != nil {
		t.Fatal(err)
	}
	b3, created := initBackend(t, cs, testOptions(ca))
	if created {
		t.Error("second init reports something created")
	}
	for _, other := range []*Backend{b2, b3} {
		fp, _ := handshake.Fingerprint(other.Signer().Public())
		n, _ := other.Nonce("beta", 1)
		if fp != fpBackend || n != nonce {
			t.Errorf("reopened backend differs: %s %s", fp, n)
		}
	}
	if w := append(writes(cs, "secrets"), writes(cs, "namespaces")...); len(w) != 0 {
		t.Errorf("reopening wrote: %v", w)
	}
}

func TestExistingKeysAreReusedByteForByte(t *testing.T) {
	key, _ := handshake.GenerateKey()
	priv, _ := handshake.MarshalPrivateKey(key)
	pub, _ := handshake.MarshalPublicKey(key.Public())
	cs := newClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo"}},
		keysSecret(priv, pub),
	)
	b, created := initBackend(t, cs, testOptions(testCA(t)))
	if !created {
		t.Error("init that created the nonce secret reports nothing created")
	}
	for _, a := range writes(cs, "secrets") {
		if a.GetVerb() != "create" || a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).Name != NonceSecretName {
			t.Errorf("unexpected write: %v", a)
		}
	}
	if w := writes(cs, "namespaces"); len(w) != 0 {
		t.Errorf("existing namespace re-created: %v", w)
	}
	s := getSecret(t, cs, "liqo", "authentication-keys")
	if !bytes.Equal(s.Data["privateKey"], priv) || !bytes.Equal(s.Data["publicKey"], pub) {
		t.Fatal("keys secret changed")
	}
	if !bytes.Equal(b.keyPEM, priv) {
		t.Fatal("backend does not use the stored private key bytes")
	}
	want, _ := handshake.Fingerprint(key.Public())
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.Fingerprint != want || info.PublicKey != string(pub) {
		t.Fatalf("cluster info: %s, want %s", info.Fingerprint, want)
	}
}

func TestMalformedKeysSecretIsRefusedNotReplaced(t *testing.T) {
	key, _ := handshake.GenerateKey()
	priv, _ := handshake.MarshalPrivateKey(key)
	pub, _ := handshake.MarshalPublicKey(key.Public())
	other, _ := handshake.GenerateKey()
	otherPub, _ := handshake.MarshalPublicKey(other.Public())
	cases := []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"garbage private key", keysSecret([]byte("not a key"), pub), "secret liqo/authentication-keys: key privateKey: private key: "},
		{"no private key", keysSecret(nil, pub), "secret liqo/authentication-keys: key privateKey is missing"},
		{"no public key", keysSecret(priv, nil), "secret liqo/authentication-keys: key publicKey is missing"},
		{"garbage public key", keysSecret(priv, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")), "secret liqo/authentication-keys: key publicKey: public key: "},
		{"mismatched halves", keysSecret(priv, otherPub), "secret liqo/authentication-keys: key publicKey is not the public key of key privateKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.secret.Data[PrivateKeyKey] == nil {
				delete(tc.secret.Data, PrivateKeyKey)
			}
			if tc.secret.Data[PublicKeyKey] == nil {
				delete(tc.secret.Data, PublicKeyKey)
			}
			cs := newClientset(tc.secret)
			_, _, err := InitWithClients(context.Background(), testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if w := writes(cs, "secrets"); len(w) != 0 {
				t.Fatalf("a malformed keys secret led to writes: %v", w)
			}
		})
	}
}

func TestNewWithoutInitSaysToRunInit(t *testing.T) {
	cs := newClientset()
	_, err := NewWithClients(context.Background(), testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
	if !errors.Is(err, ErrNotInitialized) || !strings.Contains(err.Error(), "secret liqo/authentication-keys: not initialized (run gitpeer init --backend kubernetes)") {
		t.Fatalf("got %v", err)
	}
	if len(writes(cs, "secrets"))+len(writes(cs, "namespaces")) != 0 {
		t.Fatal("New wrote to the cluster")
	}
	// Keys from Liqo, but no nonce secret yet.
	key, _ := handshake.GenerateKey()
	priv, _ := handshake.MarshalPrivateKey(key)
	pub, _ := handshake.MarshalPublicKey(key.Public())
	cs = newClientset(keysSecret(priv, pub))
	_, err = NewWithClients(context.Background(), testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
	if !errors.Is(err, ErrNotInitialized) || !strings.Contains(err.Error(), "secret liqo/gitpeer-nonce-secret") {
		t.Fatalf("got %v", err)
	}
}

func TestNonceSecretTooShortIsRefused(t *testing.T) {
	cs := newClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: NonceSecretName, Namespace: "liqo"},
		Data:       map[string][]byte{"secret": []byte("short")},
	})
	_, _, err := InitWithClients(context.Background(), testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
	if err == nil || !strings.Contains(err.Error(), "secret liqo/gitpeer-nonce-secret: key secret holds 5 bytes, want at least 32") {
		t.Fatalf("got %v", err)
	}
}

func clusterIDConfigMap(name, id string, labelled bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo"},
		Data:       map[string]string{"CLUSTER_ID": id},
	}
	if labelled {
		cm.Labels = map[string]string{"app.kubernetes.io/name": "clusterid-configmap"}
	}
	return cm
}

func TestClusterID(t *testing.T) {
	uuid := "0f3e2a1c-7b4d-4e5f-9a8b-1c2d3e4f5a6b"
	cases := []struct {
		name    string
		objs    []runtime.Object
		flag    string
		want    string
		wantErr string
	}{
		{"from the configmap, by label", []runtime.Object{clusterIDConfigMap("liqo-clusterid-configmap-renamed", uuid, true)}, "", uuid, ""},
		{"from the configmap, by name", []runtime.Object{clusterIDConfigMap("liqo-clusterid-configmap", "beta", false)}, "", "beta", ""},
		{"configmap and flag agree", []runtime.Object{clusterIDConfigMap("liqo-clusterid-configmap", "beta", true)}, "beta", "beta", ""},
		{"from the flag", nil, "alpha", "alpha", ""},
		{"mismatch", []runtime.Object{clusterIDConfigMap("liqo-clusterid-configmap", "beta", true)}, "alpha",
			"", `cluster ID: "alpha" was given (--cluster) but Liqo's configmap liqo/liqo-clusterid-configmap key CLUSTER_ID says "beta"`},
		{"none", nil, "", "", "cluster ID: Liqo's configmap liqo/liqo-clusterid-configmap does not exist (Liqo not installed in namespace liqo?) and no cluster ID was given (--cluster)"},
		{"configmap without the key", []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Namespace: "liqo"}}}, "alpha",
			"", "cluster ID: configmap liqo/liqo-clusterid-configmap key CLUSTER_ID is missing or empty"},
		{"two labelled configmaps", []runtime.Object{clusterIDConfigMap("a", "x", true), clusterIDConfigMap("b", "y", true)}, "",
			"", "cluster ID: 2 configmaps labelled app.kubernetes.io/name=clusterid-configmap in namespace liqo, want one"},
		{"invalid ID in the configmap", []runtime.Object{clusterIDConfigMap("liqo-clusterid-configmap", "Not_An_ID", true)}, "",
			"", `cluster ID: configmap liqo/liqo-clusterid-configmap key CLUSTER_ID: "Not_An_ID" is not a DNS-1123 label`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newClientset(tc.objs...)
			opts := testOptions(testCA(t))
			opts.ClusterID = tc.flag
			b, _, err := InitWithClients(context.Background(), opts, cs.CoreV1(), cs.CertificatesV1())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				if len(writes(cs, "secrets")) != 0 {
					t.Fatal("init wrote keys despite an unresolved cluster ID")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.ClusterID() != tc.want {
				t.Fatalf("cluster ID %q, want %q", b.ClusterID(), tc.want)
			}
		})
	}
}

// signer answers approved CSRs the way kube-controller-manager does, with
// ca, or runs decide to set other conditions. It returns once it watches.
func signer(t *testing.T, cs *fake.Clientset, decide func(*certv1.CertificateSigningRequest) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cs.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				csr, ok := ev.Object.(*certv1.CertificateSigningRequest)
				if !ok || ev.Type == "DELETED" || len(csr.Status.Certificate) > 0 {
					continue
				}
				if decide(csr) {
					_, _ = cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
				}
			}
		}
	}()
}

func approved(csr *certv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func signWith(t *testing.T, ca *handshake.CA) func(*certv1.CertificateSigningRequest) bool {
	return func(csr *certv1.CertificateSigningRequest) bool {
		if !approved(csr) {
			return false
		}
		cert, err := ca.SignCSR(csr.Spec.Request, testNow, time.Duration(*csr.Spec.ExpirationSeconds)*time.Second)
		if err != nil {
			t.Errorf("fake signer: %v", err)
			return false
		}
		csr.Status.Certificate = cert
		return true
	}
}

func csrActions(cs *fake.Clientset, verb string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "certificatesigningrequests" && a.GetVerb() == verb {
			out = append(out, a)
		}
	}
	return out
}

func TestSignCSRApprovesAndReturnsTheSignersCertificate(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	signer(t, cs, signWith(t, ca))

	consumer, _ := handshake.GenerateKey()
	csrPEM, err := handshake.ControlPlaneCSR(consumer, "beta")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := b.SignCSR(context.Background(), csrPEM, 90*time.Minute+300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	_, pubDER, _ := handshake.ParsePublicKey(mustPub(t, consumer.Public()))
	if err := handshake.VerifyClientCertificate(cert, b.CABundle(), pubDER, "beta", "liqo.io", testNow); err != nil {
		t.Fatal(err)
	}

	creates := csrActions(cs, "create")
	if len(creates) != 1 {
		t.Fatalf("%d CSR creates", len(creates))
	}
	csr := creates[0].(k8stesting.CreateAction).GetObject().(*certv1.CertificateSigningRequest)
	if csr.GenerateName != "gitpeer-" || csr.Labels["gitpeer.io/csr"] != "true" ||
		csr.Spec.SignerName != "kubernetes.io/kube-apiserver-client" || !bytes.Equal(csr.Spec.Request, csrPEM) {
		t.Fatalf("CSR: %+v", csr)
	}
	if got := *csr.Spec.ExpirationSeconds; got != 5401 {
		t.Errorf("expirationSeconds %d, want 5401 (the lifetime, rounded up)", got)
	}
	wantUsages := []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageClientAuth}
	if fmt.Sprint(csr.Spec.Usages) != fmt.Sprint(wantUsages) {
		t.Errorf("usages %v, want %v", csr.Spec.Usages, wantUsages)
	}
	var approval *certv1.CertificateSigningRequest
	for _, a := range csrActions(cs, "update") {
		if a.GetSubresource() == "approval" {
			approval = a.(k8stesting.UpdateAction).GetObject().(*certv1.CertificateSigningRequest)
		}
	}
	if approval == nil || len(approval.Status.Conditions) != 1 {
		t.Fatal("CSR not approved through the approval subresource")
	}
	if c := approval.Status.Conditions[0]; c.Type != certv1.CertificateApproved || c.Status != corev1.ConditionTrue ||
		c.Reason != "GitpeerApproval" || !strings.Contains(c.Message, "gitpeer verified the Tenant") {
		t.Errorf("approval condition: %+v", c)
	}
	if d := csrActions(cs, "delete"); len(d) != 1 || d[0].(k8stesting.DeleteAction).GetName() != approval.Name {
		t.Errorf("CSR %s not deleted afterwards: %v", approval.Name, d)
	}
	if l, _ := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d CSRs left behind", len(l.Items))
	}
}

func mustPub(t *testing.T, pub any) []byte {
	t.Helper()
	p, err := handshake.MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSignCSRExpirationSecondsIsAtLeastTheAPIMinimum(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	signer(t, cs, signWith(t, ca))
	consumer, _ := handshake.GenerateKey()
	csrPEM, _ := handshake.ControlPlaneCSR(consumer, "beta")
	for lifetime, want := range map[time.Duration]int32{time.Minute: 600, 24 * time.Hour: 86400} {
		cs.ClearActions()
		if _, err := b.SignCSR(context.Background(), csrPEM, lifetime); err != nil {
			t.Fatal(err)
		}
		csr := csrActions(cs, "create")[0].(k8stesting.CreateAction).GetObject().(*certv1.CertificateSigningRequest)
		if got := *csr.Spec.ExpirationSeconds; got != want {
			t.Errorf("lifetime %s: expirationSeconds %d, want %d", lifetime, got, want)
		}
	}
	if _, err := b.SignCSR(context.Background(), csrPEM, 0); err == nil {
		t.Error("a zero lifetime is accepted")
	}
}

func TestSignCSRWithoutASignerTimesOutClearly(t *testing.T) {
	cs := newClientset()
	opts := testOptions(testCA(t))
	opts.CSRTimeout = 300 * time.Millisecond
	b, _ := initBackend(t, cs, opts)
	consumer, _ := handshake.GenerateKey()
	csrPEM, _ := handshake.ControlPlaneCSR(consumer, "beta")
	start := time.Now()
	_, err := b.SignCSR(context.Background(), csrPEM, time.Hour)
	want := "no signer issued certificatesigningrequest gitpeer-00001 within 300ms: is kube-controller-manager running with --cluster-signing-cert-file/--cluster-signing-key-file?"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout of 300ms took %s", d)
	}
	if d := csrActions(cs, "delete"); len(d) != 1 {
		t.Errorf("timed-out CSR not deleted: %v", d)
	}
}

func TestSignCSRCancelledContext(t *testing.T) {
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(testCA(t)))
	consumer, _ := handshake.GenerateKey()
	csrPEM, _ := handshake.ControlPlaneCSR(consumer, "beta")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := b.SignCSR(ctx, csrPEM, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if d := csrActions(cs, "delete"); len(d) != 1 {
		t.Errorf("CSR not deleted after cancellation: %v", d)
	}
}

func TestSignCSRDeniedOrFailedNamesTheReason(t *testing.T) {
	for _, typ := range []certv1.RequestConditionType{certv1.CertificateDenied, certv1.CertificateFailed} {
		t.Run(string(typ), func(t *testing.T) {
			cs := newClientset()
			b, _ := initBackend(t, cs, testOptions(testCA(t)))
			signer(t, cs, func(csr *certv1.CertificateSigningRequest) bool {
				if !approved(csr) {
					return false
				}
				csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
					Type: typ, Status: corev1.ConditionTrue, Reason: "PolicyRefused", Message: "not on my watch",
				})
				return true
			})
			consumer, _ := handshake.GenerateKey()
			csrPEM, _ := handshake.ControlPlaneCSR(consumer, "beta")
			_, err := b.SignCSR(context.Background(), csrPEM, time.Hour)
			verb := map[certv1.RequestConditionType]string{certv1.CertificateDenied: "denied", certv1.CertificateFailed: "failed"}[typ]
			want := "certificatesigningrequest gitpeer-00001 " + verb + ": PolicyRefused: not on my watch"
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %s", err, want)
			}
		})
	}
}

// testIdentity is the Identity alpha holds for provider beta.
func testIdentity(t *testing.T, ca *handshake.CA, b *Backend) *authv1beta1.Identity {
	t.Helper()
	csrPEM, err := handshake.ControlPlaneCSR(b.Signer(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.SignCSR(csrPEM, testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return liqo.ControlPlaneIdentity("alpha", "beta", authv1beta1.AuthParams{
		APIServer: "https://beta.example:6443", CA: ca.CertPEM, SignedCRT: cert,
	})
}

func TestStoreKubeconfigWritesLiqosSecret(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	id := testIdentity(t, ca, b)
	cs.ClearActions()

	where, err := b.StoreKubeconfig(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if where != "secret/liqo-tenant-beta/kubeconfig-controlplane-beta" {
		t.Fatalf("where = %q", where)
	}
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), "liqo-tenant-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("tenant namespace not created: %v", err)
	}
	if fmt.Sprint(ns.Labels) != fmt.Sprint(liqo.Namespace("beta").Labels) {
		t.Errorf("tenant namespace labels %v", ns.Labels)
	}
	s := getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta")
	wantLabels := map[string]string{"liqo.io/remote-cluster-id": "beta", "liqo.io/identity-type": "ControlPlane"}
	wantAnnotations := map[string]string{"liqo.io/remote-tenant-namespace": "liqo-tenant-alpha"}
	if fmt.Sprint(s.Labels) != fmt.Sprint(wantLabels) || fmt.Sprint(s.Annotations) != fmt.Sprint(wantAnnotations) {
		t.Fatalf("labels %v annotations %v", s.Labels, s.Annotations)
	}
	if len(s.Data) != 1 || s.Data["kubeconfig"] == nil {
		t.Fatalf("data keys: %v", s.Data)
	}
	want, _ := liqo.Kubeconfig(id, b.keyPEM)
	if !bytes.Equal(s.Data["kubeconfig"], want) {
		t.Fatal("kubeconfig is not liqo.Kubeconfig's")
	}
	cfg, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if cfg.CurrentContext != "default-context" || ctx == nil || ctx.Cluster != "beta" || ctx.AuthInfo != "controlplane-beta" || ctx.Namespace != "liqo-tenant-alpha" {
		t.Fatalf("context %q: %+v", cfg.CurrentContext, ctx)
	}
	if c := cfg.Clusters["beta"]; c == nil || c.Server != "https://beta.example:6443" || !bytes.Equal(c.CertificateAuthorityData, ca.CertPEM) {
		t.Fatalf("cluster: %+v", c)
	}
	u := cfg.AuthInfos["controlplane-beta"]
	stored := getSecret(t, cs, "liqo", "authentication-keys").Data["privateKey"]
	if u == nil || !bytes.Equal(u.ClientKeyData, stored) || !bytes.Equal(u.ClientCertificateData, id.Spec.AuthParams.SignedCRT) {
		t.Fatal("user is not the signed certificate with the authentication-keys private key")
	}
	if _, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"]); err != nil {
		t.Fatal(err)
	}

	// Unchanged: no write at all.
	cs.ClearActions()
	if _, err := b.StoreKubeconfig(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if w := append(writes(cs, "secrets"), writes(cs, "namespaces")...); len(w) != 0 {
		t.Fatalf("unchanged kubeconfig written again: %v", w)
	}

	// Someone added an owner (not a controller) and marks of their own; a
	// renewed certificate updates the kubeconfig and keeps them.
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "authentication.liqo.io/v1beta1", Kind: "Identity", Name: id.Name, UID: "u1"}}
	s.Labels["other"] = "kept"
	if _, err := cs.CoreV1().Secrets(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StoreKubeconfig(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	renewed := id.DeepCopy()
	csrPEM, _ := handshake.ControlPlaneCSR(b.Signer(), "alpha")
	renewed.Spec.AuthParams.SignedCRT, _ = ca.SignCSR(csrPEM, testNow.Add(time.Minute), time.Hour)
	cs.ClearActions()
	if _, err := b.StoreKubeconfig(context.Background(), renewed); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs, "secrets"); len(w) != 1 || w[0].GetVerb() != "update" {
		t.Fatalf("renewed certificate: writes %v, want one update", w)
	}
	s = getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta")
	want, _ = liqo.Kubeconfig(renewed, b.keyPEM)
	if !bytes.Equal(s.Data["kubeconfig"], want) || s.Labels["other"] != "kept" || len(s.OwnerReferences) != 1 || s.Labels["liqo.io/identity-type"] != "ControlPlane" {
		t.Fatalf("after update: %+v", s.ObjectMeta)
	}
}

// TestLiqosIdentityControllerIsTheKubeconfigsOnlyWriter: once Liqo's identity
// controller controls the Secret (controllerutil.SetControllerReference to
// the Identity) and wrote the certificate its renewer obtained, gitpeer
// neither writes its own certificate back nor deletes the Secret at
// revocation: one writer, no turns.
func TestLiqosIdentityControllerIsTheKubeconfigsOnlyWriter(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	id := testIdentity(t, ca, b)
	if _, err := b.StoreKubeconfig(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// Liqo's renewer obtained a certificate of its own; its identity
	// controller wrote it and took control of the Secret.
	liqos := id.DeepCopy()
	csrPEM, _ := handshake.ControlPlaneCSR(b.Signer(), "alpha")
	liqos.Spec.AuthParams.SignedCRT, _ = ca.SignCSR(csrPEM, testNow.Add(2*time.Minute), time.Hour)
	liqoKubeconfig, _ := liqo.Kubeconfig(liqos, b.keyPEM)
	s := getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta")
	yes := true
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "authentication.liqo.io/v1beta1", Kind: "Identity", Name: id.Name, UID: "u1", Controller: &yes, BlockOwnerDeletion: &yes}}
	s.Data["kubeconfig"] = liqoKubeconfig
	if _, err := cs.CoreV1().Secrets(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	cs.ClearActions()
	where, err := b.StoreKubeconfig(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if where != "secret/liqo-tenant-beta/kubeconfig-controlplane-beta (kept by Liqo's identity controller)" {
		t.Errorf("where = %q", where)
	}
	if err := b.RemoveKubeconfig(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs, "secrets"); len(w) != 0 {
		t.Fatalf("gitpeer wrote a Secret Liqo controls: %v", w)
	}
	if got := getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta"); !bytes.Equal(got.Data["kubeconfig"], liqoKubeconfig) {
		t.Fatal("Liqo's kubeconfig was replaced")
	}

	// Another kind's controller is not Liqo's identity controller.
	s = getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta")
	s.OwnerReferences[0].Kind = "ConfigMap"
	s.OwnerReferences[0].APIVersion = "v1"
	if _, err := cs.CoreV1().Secrets(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if where, err := b.StoreKubeconfig(context.Background(), id); err != nil || strings.Contains(where, "Liqo") {
		t.Fatalf("where %q, %v", where, err)
	}
	if got := getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta"); bytes.Equal(got.Data["kubeconfig"], liqoKubeconfig) {
		t.Fatal("a Secret no Identity controls kept a kubeconfig gitpeer did not write")
	}
}

func TestRemoveKubeconfig(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	if _, err := b.StoreKubeconfig(context.Background(), testIdentity(t, ca, b)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second time there is nothing to delete
		if err := b.RemoveKubeconfig(context.Background(), "beta"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Secrets("liqo-tenant-beta").Get(context.Background(), "kubeconfig-controlplane-beta", metav1.GetOptions{}); err == nil {
		t.Fatal("kubeconfig secret still there")
	}
}

func TestStoreKubeconfigRefusesIncompleteIdentities(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	id := testIdentity(t, ca, b)
	noNS := id.DeepCopy()
	noNS.Namespace = ""
	noCert := id.DeepCopy()
	noCert.Spec.AuthParams.SignedCRT = nil
	for name, tc := range map[string]struct {
		id   *authv1beta1.Identity
		want string
	}{
		"nil":          {nil, "nil identity"},
		"no namespace": {noNS, "identity controlplane-beta: metadata.namespace is empty"},
		"no cert":      {noCert, "identity controlplane-beta: authParams lack apiServer or signedCRT"},
	} {
		if _, err := b.StoreKubeconfig(context.Background(), tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestClusterInfoAndCABundleDefaults(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := handshake.Fingerprint(b.Signer().Public())
	if info.APIVersion != layout.APIVersion || info.Kind != layout.ClusterKind || info.ClusterID != "alpha" ||
		info.Fingerprint != fp || info.APIServer != "https://alpha.example:6443" || info.CA != string(ca.CertPEM) ||
		!strings.HasPrefix(info.PublicKey, "-----BEGIN PUBLIC KEY-----\n") {
		t.Fatalf("cluster info: %+v", info)
	}
	data, err := info.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := layout.ParseClusterInfo("cluster.yaml", "alpha", data); err != nil {
		t.Fatal(err)
	}
}

func TestAPIServerAndCABundleFromTheRestConfig(t *testing.T) {
	ca := testCA(t)
	caFile := t.TempDir() + "/ca.crt"
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		opts    Options
		wantErr string
	}{
		"CA data":      {Options{Config: &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM}}}, ""},
		"CA file":      {Options{Config: &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}}, ""},
		"no CA":        {Options{Config: &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}}, "no CA bundle: the kubeconfig has no certificate authority"},
		"missing file": {Options{Config: &rest.Config{Host: "https://x", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile + ".nope"}}}, "ca.crt.nope: no such file"},
		"not PEM":      {Options{Config: &rest.Config{Host: "https://x"}, CABundle: []byte("nope")}, "CA bundle from the CA bundle override holds no PEM certificate"},
		"nil config":   {Options{}, "no CA bundle"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := newClientset()
			tc.opts.ClusterID = "alpha"
			b, _, err := InitWithClients(context.Background(), tc.opts, cs.CoreV1(), cs.CertificatesV1())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.APIServer() != "https://10.0.0.1:6443" || !bytes.Equal(b.CABundle(), ca.CertPEM) {
				t.Fatalf("api server %q, CA %q", b.APIServer(), b.CABundle())
			}
		})
	}
	if _, err := New(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "no rest config") {
		t.Fatalf("New without a config: %v", err)
	}
}

// Pins without the keys they were made with are damaged state: neither
// reconcile (New) nor init (Init) makes a new identity over them.
func TestKeysGoneBesidePinsIsDamagedNotANewIdentity(t *testing.T) {
	cs := newClientset()
	ctx := context.Background()
	pins := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PinsSecretName, Namespace: "liqo"}, Data: map[string][]byte{"pins.yaml": []byte("peers: {}\n")}}
	if _, err := cs.CoreV1().Secrets("liqo").Create(ctx, pins, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := len(writes(cs, "secrets"))
	_, err := NewWithClients(ctx, testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "secret liqo/authentication-keys is missing but secret liqo/gitpeer-pins exists") {
		t.Fatalf("New: %v", err)
	}
	_, _, err = InitWithClients(ctx, testOptions(testCA(t)), cs.CoreV1(), cs.CertificatesV1())
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "restore the keys Secret from a backup") {
		t.Fatalf("Init: %v", err)
	}
	if n := len(writes(cs, "secrets")); n != before {
		t.Fatalf("%d Secret writes after the pins: a new identity was made", n-before)
	}
}

// TestStoreKubeconfigLosesTheRaceToLiqo: Liqo's identity controller writes
// the same Secret from the Identity Flux applied. When it creates the
// Secret between the backend's Get and its Create, the backend takes the
// Secret as it now is (Liqo's, kept) instead of failing the pass.
func TestStoreKubeconfigLosesTheRaceToLiqo(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	id := testIdentity(t, ca, b)
	isController := true
	liqos := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "kubeconfig-controlplane-beta", Namespace: "liqo-tenant-beta",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind, Name: id.Name, UID: "u", Controller: &isController}},
	}, Data: map[string][]byte{"kubeconfig": []byte("liqo's")}}
	raced := false
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if raced || a.GetNamespace() != "liqo-tenant-beta" {
			return false, nil, nil
		}
		raced = true
		if err := cs.Tracker().Add(liqos); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), liqos.Name)
	})
	where, err := b.StoreKubeconfig(context.Background(), id)
	if err != nil {
		t.Fatalf("StoreKubeconfig after Liqo created the Secret: %v", err)
	}
	if !raced || !strings.Contains(where, "kept by Liqo's identity controller") {
		t.Fatalf("where = %q (raced %t), want Liqo's Secret kept", where, raced)
	}
	if s := getSecret(t, cs, "liqo-tenant-beta", "kubeconfig-controlplane-beta"); string(s.Data["kubeconfig"]) != "liqo's" {
		t.Fatalf("Liqo's Secret was overwritten: %q", s.Data["kubeconfig"])
	}
}
