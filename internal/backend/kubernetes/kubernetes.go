// Package kubernetes is the kubernetes backend: one cluster's private material
// kept in the cluster itself, in Liqo's own objects, through client-go.
//
//	Secret <liqo>/authentication-keys      privateKey (PEM PKCS#8), publicKey (PEM PKIX):
//	                                       Liqo's cluster keys, shared with Liqo; replaced
//	                                       only by PromoteNextKey (a staged rollover)
//	Secret <liqo>/gitpeer-next-authentication-keys
//	                                       the same keys: the key gitpeer rotate-key staged
//	Secret <liqo>/gitpeer-previous-authentication-keys
//	                                       the same keys: the key PromoteNextKey replaced
//	Secret <liqo>/gitpeer-nonce-secret     secret: 32 random bytes nonces are derived from
//	ConfigMap <liqo>/liqo-clusterid-configmap  CLUSTER_ID: Liqo's cluster ID (read only)
//	GitRepository flux-system/gitpeer-<id>    spec.ref.commit: the newest seal (PinSource;
//	                                       FluxTrusts reads it and its verify Secret)
//	Application argocd/gitpeer-<id>        spec.source.targetRevision: the newest seal, when
//	                                       Argo CD applies the tree (PinSource)
//	Secret <tenant ns>/kubeconfig-controlplane-<provider>
//	                                       the kubeconfig Liqo's identity controller would write
//
// Client certificates are issued by the cluster's own signer
// kubernetes.io/kube-apiserver-client through certificates.k8s.io/v1
// CertificateSigningRequests, which gitpeer creates, approves and deletes, as
// Liqo's identity manager does for a Tenant
// (pkg/identityManager/certificateIdentityProvider.go).
//
// Only the typed core/v1 and certificates/v1 clients are used, not the full
// clientset, which would link every API group into the binary. The RBAC the
// backend needs is in manifests/rbac.
package kubernetes

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	certv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

// Names and keys of the objects the backend reads and writes.
const (
	// DefaultLiqoNamespace is Liqo's default namespace (liqoctl --liqo-namespace).
	DefaultLiqoNamespace = "liqo"
	// DefaultCSRTimeout bounds the wait for the signer, as Liqo's identity
	// manager waits 30s.
	DefaultCSRTimeout = 30 * time.Second

	// KeysSecretName is Liqo's Secret of cluster keys (pkg/consts
	// AuthKeysSecretName), with keys PrivateKeyKey and PublicKeyKey.
	KeysSecretName = "authentication-keys"
	PrivateKeyKey  = "privateKey"
	PublicKeyKey   = "publicKey"

	// NonceSecretName is gitpeer's Secret holding the secret nonces are
	// derived from, under key NonceSecretKey.
	NonceSecretName = "gitpeer-nonce-secret"
	NonceSecretKey  = "secret"

	// ClusterIDConfigMapName is the ConfigMap Liqo's Helm chart stores the
	// cluster ID in, under ClusterIDKey; Liqo finds it by
	// ClusterIDConfigMapSelector (pkg/consts/clusterid.go).
	ClusterIDConfigMapName     = "liqo-clusterid-configmap"
	ClusterIDKey               = "CLUSTER_ID"
	ClusterIDConfigMapSelector = "app.kubernetes.io/name=clusterid-configmap"

	// CSRLabel marks the CertificateSigningRequests gitpeer creates.
	CSRLabel = "gitpeer.io/csr"
	// CSRGenerateName prefixes their names.
	CSRGenerateName = "gitpeer-"
	// CSRApprovalReason is the reason of the Approved condition gitpeer sets.
	CSRApprovalReason = "GitpeerApproval"
	// MinCSRLifetime is the shortest expirationSeconds the API accepts.
	MinCSRLifetime = 10 * time.Minute

	nonceSecretSize = 32
)

var _ backend.Backend = (*Backend)(nil)

// Options configure the backend.
type Options struct {
	// Config reaches the cluster. It is also where APIServer and CABundle
	// default from; it may be nil when clients are injected and both are set.
	Config *rest.Config
	// LiqoNamespace is where Liqo keeps its keys and cluster ID; "liqo" if
	// empty.
	LiqoNamespace string
	// ClusterID is the cluster ID asked for (the --cluster flag); it may be
	// empty when Liqo is installed and its ConfigMap says it. When both are
	// present they must agree.
	ClusterID string
	// APIServer is the https URL consumers reach the API server at;
	// Config.Host if empty. In a Pod that is the in-cluster service address,
	// which peers cannot reach: set it whenever cluster.yaml is published.
	APIServer string
	// CABundle is the PEM bundle consumers trust; if empty, the CA data or CA
	// file of Config. That default assumes the CA that serves the API server
	// is also the CA of the kubernetes.io/kube-apiserver-client signer, as
	// with kubeadm (both /etc/kubernetes/pki/ca.crt). Where they differ (a
	// separate --cluster-signing-kube-apiserver-client-cert-file, managed
	// clusters) give a bundle holding both.
	CABundle []byte
	// CSRTimeout bounds how long SignCSR waits for the signer; 30s if zero.
	CSRTimeout time.Duration
	// Now is the clock issued certificates are checked against; time.Now if
	// nil.
	Now func() time.Time
	// Dynamic reads Flux's GitRepository for FluxTrusts and pins it, or
	// Argo CD's Application, for PinSource; a client of Config if nil
	// (e.g. a fake dynamic client in tests).
	Dynamic dynamic.Interface
}

// Backend is one cluster's private material in the cluster. It implements
// backend.Backend.
type Backend struct {
	opts      Options
	core      corev1client.CoreV1Interface
	certs     certv1client.CertificatesV1Interface
	clusterID string
	key       crypto.Signer
	keyPEM    []byte // privateKey exactly as stored: the client key of kubeconfigs, as Liqo uses it
	secret    []byte
	caBundle  []byte
	apiServer string
	created   bool // Init wrote something
	// createdNS is the Liqo namespace when this Backend created it.
	createdNS string
}

// ErrNotInitialized means the cluster holds no gitpeer state (no cluster keys
// or no nonce secret): run `gitpeer init --backend kubernetes`.
var ErrNotInitialized = errors.New("not initialized (run gitpeer init --backend kubernetes)")

// ErrDamaged means the cluster holds gitpeer state (its pins) without the
// cluster keys that state was made with: neither New nor Init goes on, so
// that no new identity is made by accident.
var ErrDamaged = errors.New("gitpeer state is damaged")

// New opens the backend of a cluster where `gitpeer init --backend
// kubernetes` ran: the cluster keys and the nonce secret must exist (else an
// error wrapping ErrNotInitialized), the cluster ID must resolve (see
// ClusterID), and a CA bundle must be known. Nothing is written.
func New(ctx context.Context, opts Options) (*Backend, error) {
	core, certs, err := clientsFor(opts.Config)
	if err != nil {
		return nil, err
	}
	return NewWithClients(ctx, opts, core, certs)
}

// Init opens the backend like New, first creating what is missing: the Liqo
// namespace, the cluster keys in Liqo's format (as Liqo's InitClusterKeys,
// pkg/liqo-controller-manager/authentication/keys.go, would) and the nonce
// secret. Existing keys are always reused, so a cluster with Liqo keeps one
// identity; a malformed keys Secret is an error, never replaced. created
// reports whether anything was written.
func Init(ctx context.Context, opts Options) (*Backend, bool, error) {
	core, certs, err := clientsFor(opts.Config)
	if err != nil {
		return nil, false, err
	}
	return InitWithClients(ctx, opts, core, certs)
}

// NewWithClients is New with the given clients, e.g. a fake clientset's
// CoreV1() and CertificatesV1().
func NewWithClients(ctx context.Context, opts Options, core corev1client.CoreV1Interface, certs certv1client.CertificatesV1Interface) (*Backend, error) {
	b, err := prepare(opts, core, certs)
	if err != nil {
		return nil, err
	}
	if err := b.load(ctx, false); err != nil {
		return nil, err
	}
	return b, nil
}

// InitWithClients is Init with the given clients.
func InitWithClients(ctx context.Context, opts Options, core corev1client.CoreV1Interface, certs certv1client.CertificatesV1Interface) (*Backend, bool, error) {
	b, err := prepare(opts, core, certs)
	if err != nil {
		return nil, false, err
	}
	if err := b.load(ctx, true); err != nil {
		return nil, false, err
	}
	return b, b.created, nil
}

// clientsFor builds the two typed clients over one HTTP client.
func clientsFor(cfg *rest.Config) (corev1client.CoreV1Interface, certv1client.CertificatesV1Interface, error) {
	if cfg == nil {
		return nil, nil, errors.New("kubernetes backend: no rest config")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gitpeer"
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	certs, err := certv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	return core, certs, nil
}

// prepare applies defaults and resolves what needs no API call: the API
// server URL and the CA bundle.
func prepare(opts Options, core corev1client.CoreV1Interface, certs certv1client.CertificatesV1Interface) (*Backend, error) {
	if core == nil || certs == nil {
		return nil, errors.New("kubernetes backend: nil client")
	}
	if opts.LiqoNamespace == "" {
		opts.LiqoNamespace = DefaultLiqoNamespace
	}
	if opts.CSRTimeout <= 0 {
		opts.CSRTimeout = DefaultCSRTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Backend{opts: opts, core: core, certs: certs, apiServer: opts.APIServer}
	if b.apiServer == "" && opts.Config != nil {
		b.apiServer = opts.Config.Host
	}
	ca, source, err := caBundle(opts)
	if err != nil {
		return nil, err
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("kubernetes backend: CA bundle from %s holds no PEM certificate", source)
	}
	b.caBundle = ca
	return b, nil
}

// caBundle is Options.CABundle, else the rest config's CA data, else its CA
// file, as Liqo's RetrieveAPIServerCA (pkg/utils/apiserver/config.go) reads
// it. It also names where the bundle came from, for errors.
func caBundle(opts Options) ([]byte, string, error) {
	switch {
	case len(opts.CABundle) > 0:
		return opts.CABundle, "the CA bundle override", nil
	case opts.Config != nil && len(opts.Config.CAData) > 0:
		return opts.Config.CAData, "the kubeconfig's certificate-authority-data", nil
	case opts.Config != nil && opts.Config.CAFile != "":
		data, err := os.ReadFile(opts.Config.CAFile)
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes backend: CA bundle: %w", err)
		}
		return data, opts.Config.CAFile, nil
	}
	return nil, "", errors.New("kubernetes backend: no CA bundle: the kubeconfig has no certificate authority (insecure-skip-tls-verify?); give one (--ca-file)")
}

// load resolves the cluster ID and reads (with create, first creates) the
// keys and the nonce secret.
func (b *Backend) load(ctx context.Context, create bool) error {
	id, err := b.resolveClusterID(ctx)
	if err != nil {
		return err
	}
	b.clusterID = id
	if err := b.loadKeys(ctx, create); err != nil {
		return err
	}
	return b.loadNonceSecret(ctx, create)
}

// ns is the Liqo namespace.
func (b *Backend) ns() string { return b.opts.LiqoNamespace }

// ref names an object of the Liqo namespace in errors.
func (b *Backend) ref(kind, name string) string { return kind + " " + b.ns() + "/" + name }

// resolveClusterID returns Liqo's cluster ID from its ConfigMap, found by
// label as Liqo finds it (pkg/utils/cluster_info.go), else by name; without
// the ConfigMap (Liqo not installed), Options.ClusterID. Both present and
// different, neither present, several ConfigMaps, or a ConfigMap without
// CLUSTER_ID are errors; so is an ID that is not a DNS-1123 label of at most
// 51 characters.
func (b *Backend) resolveClusterID(ctx context.Context) (string, error) {
	cms := b.core.ConfigMaps(b.ns())
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: ClusterIDConfigMapSelector})
	if err != nil {
		return "", fmt.Errorf("cluster ID: list configmaps %s in namespace %s: %w", ClusterIDConfigMapSelector, b.ns(), err)
	}
	var cm *corev1.ConfigMap
	switch len(list.Items) {
	case 0:
		got, err := cms.Get(ctx, ClusterIDConfigMapName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", fmt.Errorf("cluster ID: get %s: %w", b.ref("configmap", ClusterIDConfigMapName), err)
		default:
			cm = got
		}
	case 1:
		cm = &list.Items[0]
	default:
		return "", fmt.Errorf("cluster ID: %d configmaps labelled %s in namespace %s, want one", len(list.Items), ClusterIDConfigMapSelector, b.ns())
	}
	want := b.opts.ClusterID
	if cm == nil {
		if want == "" {
			return "", fmt.Errorf("cluster ID: Liqo's %s does not exist (Liqo not installed in namespace %s?) and no cluster ID was given (--cluster)", b.ref("configmap", ClusterIDConfigMapName), b.ns())
		}
		if err := layout.CheckClusterID(want); err != nil {
			return "", fmt.Errorf("cluster ID: %w", err)
		}
		return want, nil
	}
	where := b.ref("configmap", cm.Name) + " key " + ClusterIDKey
	got := cm.Data[ClusterIDKey]
	if got == "" {
		return "", fmt.Errorf("cluster ID: %s is missing or empty", where)
	}
	if err := layout.CheckClusterID(got); err != nil {
		return "", fmt.Errorf("cluster ID: %s: %w", where, err)
	}
	if want != "" && want != got {
		return "", fmt.Errorf("cluster ID: %q was given (--cluster) but Liqo's %s says %q", want, where, got)
	}
	return got, nil
}

// loadKeys reads Liqo's cluster keys; with create, it first creates them
// when missing: a new Ed25519 key, PEM PKCS#8 and PEM PKIX, in a Secret with
// no labels, as InitClusterKeys (pkg/liqo-controller-manager/authentication/
// keys.go) writes it. A Secret that exists is reused as it is.
func (b *Backend) loadKeys(ctx context.Context, create bool) error {
	secrets := b.core.Secrets(b.ns())
	s, err := secrets.Get(ctx, KeysSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Pins mean this cluster had an identity its peers trust: new keys
		// would be a key change to every one of them, not an init.
		if _, perr := secrets.Get(ctx, PinsSecretName, metav1.GetOptions{}); perr == nil {
			return fmt.Errorf("%s is missing but %s exists: %w (restore the keys Secret from a backup; to start over with a new identity, which every peer's admin must re-pin with gitpeer trust, delete %s and run gitpeer init --backend kubernetes)",
				b.ref("secret", KeysSecretName), b.ref("secret", PinsSecretName), ErrDamaged, b.ref("secret", PinsSecretName))
		}
	}
	switch {
	case apierrors.IsNotFound(err) && !create:
		return fmt.Errorf("%s: %w", b.ref("secret", KeysSecretName), ErrNotInitialized)
	case apierrors.IsNotFound(err):
		_, data, err := newKeyPair()
		if err != nil {
			return err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: KeysSecretName, Namespace: b.ns()},
			Data:       data,
		}
		if s, err = b.createOnce(ctx, s); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("get %s: %w", b.ref("secret", KeysSecretName), err)
	}
	return b.parseKeys(s)
}

// parseKeys checks the keys Secret (parseKeyPair) and makes its key the
// one the backend signs with.
func (b *Backend) parseKeys(s *corev1.Secret) error {
	key, privPEM, err := parseKeyPair(b.ref("secret", KeysSecretName), s)
	if err != nil {
		return err
	}
	b.key, b.keyPEM = key, privPEM
	return nil
}

// parseKeyPair checks a Secret in the shape of Liqo's authentication-keys,
// named where in errors: privateKey parses, publicKey parses and is
// privateKey's public half. It returns the key and privateKey as stored.
func parseKeyPair(where string, s *corev1.Secret) (crypto.Signer, []byte, error) {
	privPEM, ok := s.Data[PrivateKeyKey]
	if !ok {
		return nil, nil, fmt.Errorf("%s: key %s is missing", where, PrivateKeyKey)
	}
	key, err := handshake.ParsePrivateKey(privPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key %s: %w", where, PrivateKeyKey, err)
	}
	pubPEM, ok := s.Data[PublicKeyKey]
	if !ok {
		return nil, nil, fmt.Errorf("%s: key %s is missing", where, PublicKeyKey)
	}
	_, pubDER, err := handshake.ParsePublicKey(pubPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key %s: %w", where, PublicKeyKey, err)
	}
	ownDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key %s: %w", where, PrivateKeyKey, err)
	}
	if !bytes.Equal(ownDER, pubDER) {
		return nil, nil, fmt.Errorf("%s: key %s is not the public key of key %s", where, PublicKeyKey, PrivateKeyKey)
	}
	return key, privPEM, nil
}

// loadNonceSecret reads the nonce secret; with create, it first creates it
// with 32 bytes from crypto/rand when missing.
func (b *Backend) loadNonceSecret(ctx context.Context, create bool) error {
	where := b.ref("secret", NonceSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, NonceSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && !create:
		return fmt.Errorf("%s: %w", where, ErrNotInitialized)
	case apierrors.IsNotFound(err):
		secret := make([]byte, nonceSecretSize)
		if _, err := rand.Read(secret); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:      NonceSecretName,
				Namespace: b.ns(),
				Labels:    map[string]string{"app.kubernetes.io/managed-by": "gitpeer"},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{NonceSecretKey: secret},
		}
		if s, err = b.createOnce(ctx, s); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("get %s: %w", where, err)
	}
	secret := s.Data[NonceSecretKey]
	if len(secret) < nonceSecretSize {
		return fmt.Errorf("%s: key %s holds %d bytes, want at least %d", where, NonceSecretKey, len(secret), nonceSecretSize)
	}
	b.secret = secret
	return nil
}

// createOnce creates a Secret in the Liqo namespace (creating the namespace
// first if missing). If someone else (Liqo's controller manager, a
// concurrent init) created it meanwhile, theirs is returned: never two keys.
func (b *Backend) createOnce(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns()}}
	if err := b.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	where := b.ref("secret", s.Name)
	got, err := b.core.Secrets(b.ns()).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if got, err = b.core.Secrets(b.ns()).Get(ctx, s.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("get %s: %w", where, err)
		}
		return got, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", where, err)
	}
	b.created = true
	return got, nil
}

// CreatedNamespace is the Liqo namespace when Init created it (Liqo was
// not installed there: gitpeer put its keys Secret in a namespace of its
// own making), else "".
func (b *Backend) CreatedNamespace() string { return b.createdNS }

// ensureNamespace creates ns unless a namespace of that name exists.
func (b *Backend) ensureNamespace(ctx context.Context, ns *corev1.Namespace) error {
	_, err := b.core.Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", ns.Name, err)
	}
	_, err = b.core.Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	if err == nil && ns.Name == b.ns() {
		b.createdNS = ns.Name
	}
	b.created = true
	return nil
}

// ClusterID implements backend.Backend: Liqo's cluster ID, or the one given
// when Liqo is not installed.
func (b *Backend) ClusterID() string { return b.clusterID }

// Signer implements backend.Backend: the private key of Liqo's
// authentication-keys Secret.
func (b *Backend) Signer() crypto.Signer { return b.key }

// Nonce implements backend.Backend: handshake.DeriveNonce over the secret of
// gitpeer-nonce-secret.
func (b *Backend) Nonce(consumerID string, epoch uint64) (string, error) {
	return handshake.DeriveNonce(b.secret, consumerID, epoch), nil
}

// CABundle implements backend.Backend: Options.CABundle, or the rest
// config's CA (see Options.CABundle for the assumption this makes).
func (b *Backend) CABundle() []byte { return bytes.Clone(b.caBundle) }

// APIServer is the URL published in cluster.yaml: Options.APIServer, or the
// rest config's host.
func (b *Backend) APIServer() string { return b.apiServer }

// LiqoNamespace is the namespace of the keys, the nonce secret and Liqo's
// cluster ID.
func (b *Backend) LiqoNamespace() string { return b.ns() }

// SignCSR implements backend.Backend through the certificates.k8s.io/v1 API:
// it creates a CertificateSigningRequest for signer
// kubernetes.io/kube-apiserver-client (generateName "gitpeer-", label
// gitpeer.io/csr "true", usages digital signature, key encipherment and
// client auth as Liqo's identity manager asks, expirationSeconds = lifetime
// rounded up, at least 600 as the API requires), approves it (reason
// GitpeerApproval) and waits up to Options.CSRTimeout for the signer's
// certificate. The signer may cap the lifetime (kube-controller-manager
// --cluster-signing-duration). A Denied or Failed condition is an error naming
// the CSR and the reason; so is a signer that does not answer in time. The
// CSR object is deleted afterwards, whatever the outcome (best effort).
func (b *Backend) SignCSR(ctx context.Context, csrPEM []byte, lifetime time.Duration) ([]byte, error) {
	if lifetime <= 0 {
		return nil, fmt.Errorf("sign csr: lifetime %s is not positive", lifetime)
	}
	secs := int32(math.MaxInt32)
	if s := math.Ceil(max(lifetime, MinCSRLifetime).Seconds()); s < math.MaxInt32 {
		secs = int32(s)
	}
	csrs := b.certs.CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: CSRGenerateName,
			Labels:       map[string]string{CSRLabel: "true"},
		},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:           csrPEM,
			SignerName:        certv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: &secs,
			Usages:            []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create certificatesigningrequest: %w", err)
	}
	name := csr.Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = csrs.Delete(dctx, name, metav1.DeleteOptions{})
	}()
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type:           certv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         CSRApprovalReason,
		Message:        "gitpeer verified the Tenant's signature, CSR subject and key against the published cluster key",
		LastUpdateTime: metav1.NewTime(b.opts.Now()),
	})
	if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("approve certificatesigningrequest %s: %w", name, err)
	}
	cert, err := b.waitForCertificate(ctx, name)
	if err != nil {
		return nil, err
	}
	_, notAfter, err := handshake.CertificateValidity(cert)
	if err != nil {
		return nil, fmt.Errorf("certificatesigningrequest %s: issued certificate: %w", name, err)
	}
	if !notAfter.After(b.opts.Now()) {
		return nil, fmt.Errorf("certificatesigningrequest %s: issued certificate expired at %s", name, notAfter.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

// waitForCertificate watches CSR name until it carries a certificate or a
// Denied or Failed condition, for at most Options.CSRTimeout. A watch that
// cannot start or ends early is restarted (after a backoff); each round
// reads the object after the watch starts, so no update is missed.
func (b *Backend) waitForCertificate(ctx context.Context, name string) ([]byte, error) {
	wctx, cancel := context.WithTimeout(ctx, b.opts.CSRTimeout)
	defer cancel()
	csrs := b.certs.CertificateSigningRequests()
	timeout := func() error {
		if ctx.Err() != nil {
			return fmt.Errorf("certificatesigningrequest %s: %w", name, ctx.Err())
		}
		return fmt.Errorf("no signer issued certificatesigningrequest %s within %s: is kube-controller-manager running with --cluster-signing-cert-file/--cluster-signing-key-file?", name, b.opts.CSRTimeout)
	}
	backoff := 100 * time.Millisecond
	for {
		w, werr := csrs.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		cur, err := csrs.Get(wctx, name, metav1.GetOptions{})
		if err != nil {
			if w != nil {
				w.Stop()
			}
			if wctx.Err() != nil {
				return nil, timeout()
			}
			return nil, fmt.Errorf("get certificatesigningrequest %s: %w", name, err)
		}
		if cert, done, err := issued(cur); done {
			if w != nil {
				w.Stop()
			}
			return cert, err
		}
		if werr == nil {
			cert, done, err := consume(wctx, w, name)
			w.Stop()
			if done {
				return cert, err
			}
		}
		select {
		case <-wctx.Done():
			return nil, timeout()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// consume reads watch events of CSR name until it is decided, the watch ends
// or ctx is done (done false for the last two).
func consume(ctx context.Context, w watch.Interface, name string) ([]byte, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, true, fmt.Errorf("certificatesigningrequest %s was deleted before a certificate was issued", name)
			case watch.Added, watch.Modified:
				csr, ok := ev.Object.(*certv1.CertificateSigningRequest)
				if !ok || csr.Name != name {
					continue
				}
				if cert, done, err := issued(csr); done {
					return cert, true, err
				}
			case watch.Error:
				return nil, false, nil
			}
		}
	}
}

// issued says whether csr is decided: its certificate, or an error for a
// Denied or Failed condition.
func issued(csr *certv1.CertificateSigningRequest) ([]byte, bool, error) {
	for _, c := range csr.Status.Conditions {
		if (c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed) && c.Status != corev1.ConditionFalse {
			verb := "denied"
			if c.Type == certv1.CertificateFailed {
				verb = "failed"
			}
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return nil, true, fmt.Errorf("certificatesigningrequest %s %s: %s", csr.Name, verb, msg)
		}
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}

// StoreKubeconfig implements backend.Backend: it writes the Secret Liqo's
// identity controller writes for an Identity (forge/kubeconfig.go
// MutateKubeconfigSecret): "kubeconfig-<identity name>" in the Identity's
// namespace (the tenant namespace for the provider, created with Liqo's
// labels if missing), labels liqo.io/remote-cluster-id = provider ID and
// liqo.io/identity-type = the Identity's type, annotation
// liqo.io/remote-tenant-namespace = spec.namespace, key "kubeconfig" =
// liqo.Kubeconfig with the privateKey of authentication-keys, byte for byte
// as Liqo builds it. An existing Secret is updated only when one of those
// differs; other labels, annotations, keys and owner references are kept. It
// returns "secret/<namespace>/<name>".
//
// Once Liqo's identity controller runs, the Secret is Liqo's alone: it sets
// itself as the Secret's controller (an ownerReference to the Identity with
// controller: true) and rewrites the kubeconfig whenever its renewer changes
// the Identity's certificate. Writing gitpeer's certificate back would make
// two writers take turns (and restart Liqo's reflectors at every turn), so a
// Secret controlled by an Identity is left as it is and the returned place
// says so (docs/liqo.md, "One writer per field").
func (b *Backend) StoreKubeconfig(ctx context.Context, identity *authv1beta1.Identity) (string, error) {
	if identity == nil {
		return "", errors.New("store kubeconfig: nil identity")
	}
	provider := string(identity.Spec.ClusterID)
	ns := identity.Namespace
	switch {
	case provider == "":
		return "", fmt.Errorf("identity %s: spec.clusterID is empty", identity.Name)
	case ns == "":
		return "", fmt.Errorf("identity %s: metadata.namespace is empty", identity.Name)
	case identity.Spec.Type == "":
		return "", fmt.Errorf("identity %s: spec.type is empty", identity.Name)
	}
	data, err := liqo.Kubeconfig(identity, b.keyPEM)
	if err != nil {
		return "", err
	}
	name := liqo.KubeconfigSecretName(identity.Name)
	where := "secret/" + ns + "/" + name
	labels := map[string]string{
		liqo.LabelRemoteClusterID: provider,
		liqo.LabelIdentityType:    string(identity.Spec.Type),
	}
	annotations := map[string]string{}
	if identity.Spec.Namespace != nil && *identity.Spec.Namespace != "" {
		annotations[liqo.AnnotationRemoteTenantNamespace] = *identity.Spec.Namespace
	}
	secrets := b.core.Secrets(ns)
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		err := b.createKubeconfig(ctx, provider, ns, name, where, labels, annotations, data)
		if err == nil {
			return where, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", err
		}
		// Liqo's identity controller, which writes the same Secret from
		// the Identity Flux applied, created it since the Get: take it
		// as it is now.
		if cur, err = secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", fmt.Errorf("get %s: %w", where, err)
		}
	case err != nil:
		return "", fmt.Errorf("get %s: %w", where, err)
	}
	return b.updateKubeconfig(ctx, cur, where, labels, annotations, data)
}

// createKubeconfig creates the kubeconfig Secret name in ns (and ns, as
// Liqo labels a tenant namespace, when it is missing). An error that the
// Secret exists wraps the API server's AlreadyExists.
func (b *Backend) createKubeconfig(ctx context.Context, provider, ns, name, where string, labels, annotations map[string]string, data []byte) error {
	nsObj := liqo.Namespace(provider)
	nsObj.Name = ns
	if err := b.ensureNamespace(ctx, nsObj); err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{liqo.KubeconfigSecretKey: data},
	}
	if len(annotations) == 0 {
		s.Annotations = nil
	}
	if _, err := b.core.Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", where, err)
	}
	return nil
}

// updateKubeconfig brings the existing kubeconfig Secret cur to data,
// labels and annotations, unless Liqo's identity controller keeps it.
func (b *Backend) updateKubeconfig(ctx context.Context, cur *corev1.Secret, where string, labels, annotations map[string]string, data []byte) (string, error) {
	secrets := b.core.Secrets(cur.Namespace)
	if liqoControlled(cur) {
		return where + " (kept by Liqo's identity controller)", nil
	}
	changed := mergeInto(&cur.Labels, labels)
	changed = mergeInto(&cur.Annotations, annotations) || changed
	if !bytes.Equal(cur.Data[liqo.KubeconfigSecretKey], data) {
		if cur.Data == nil {
			cur.Data = map[string][]byte{}
		}
		cur.Data[liqo.KubeconfigSecretKey] = data
		changed = true
	}
	if !changed {
		return where, nil
	}
	if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("update %s: %w", where, err)
	}
	return where, nil
}

// RemoveKubeconfig implements backend.KubeconfigRemover: it deletes the
// Secret StoreKubeconfig writes for providerID's ControlPlane Identity
// (kubeconfig-controlplane-<provider> in liqo-tenant-<provider>). A missing
// Secret is not an error; the tenant namespace is left in place. A Secret
// Liqo's identity controller controls is left to the garbage collector,
// which deletes it with its Identity once the GitOps engine prunes that:
// deleting it first would only have Liqo write it again.
func (b *Backend) RemoveKubeconfig(ctx context.Context, providerID string) error {
	ns := liqo.TenantNamespace(providerID)
	name := liqo.KubeconfigSecretName(liqo.ControlPlaneIdentityName(providerID))
	secrets := b.core.Secrets(ns)
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get secret/%s/%s: %w", ns, name, err)
	case liqoControlled(cur):
		return nil
	}
	// The precondition keeps a Secret Liqo took over since the Get.
	err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete secret/%s/%s: %w", ns, name, err)
	}
	return nil
}

// liqoControlled reports whether Liqo's identity controller controls s: its
// controller ownerReference is an Identity of authentication.liqo.io, as
// controllerutil.SetControllerReference writes it in the controller's
// ensureKubeconfigSecret (Liqo v1.0 to v1.2).
func liqoControlled(s *corev1.Secret) bool {
	ref := metav1.GetControllerOfNoCopy(s)
	if ref == nil || ref.Kind != authv1beta1.IdentityKind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == authv1beta1.GroupVersion.Group
}

// mergeInto sets want's entries in *m and reports whether anything changed.
func mergeInto(m *map[string]string, want map[string]string) bool {
	changed := false
	for k, v := range want {
		if old, ok := (*m)[k]; ok && old == v {
			continue
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
		changed = true
	}
	return changed
}

// ClusterInfo implements backend.Backend: the cluster ID, the public key and
// its fingerprint, the API server and the CA bundle.
func (b *Backend) ClusterInfo() (*layout.ClusterInfo, error) {
	return layout.NewClusterInfo(b.clusterID, b.key.Public(), b.apiServer, b.caBundle)
}

// TokensSecretName is gitpeer's Secret in the Liqo namespace holding the
// tokens of the token acceptance policy, one data key per peer cluster ID.
const TokensSecretName = "gitpeer-tokens"

// Token implements backend.TokenStore: data[peer] of Secret gitpeer-tokens.
func (b *Backend) Token(ctx context.Context, peer string) ([]byte, error) {
	where := b.ref("secret", TokensSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, TokensSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", where, backend.ErrNoToken)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", where, err)
	}
	tok := bytes.TrimSpace(s.Data[peer])
	if len(tok) == 0 {
		return nil, fmt.Errorf("%s: no key %q: %w", where, peer, backend.ErrNoToken)
	}
	return tok, nil
}

// SetToken implements backend.TokenStore, creating Secret gitpeer-tokens
// when missing.
func (b *Backend) SetToken(ctx context.Context, peer string, token []byte) error {
	tok := bytes.TrimSpace(token)
	if len(tok) == 0 {
		return errors.New("empty token")
	}
	where := b.ref("secret", TokensSecretName)
	secrets := b.core.Secrets(b.ns())
	s, err := secrets.Get(ctx, TokensSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: TokensSecretName, Namespace: b.ns(), Labels: map[string]string{"app.kubernetes.io/managed-by": "gitpeer"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{peer: tok},
		}
		got, err := b.createOnce(ctx, s)
		if err != nil {
			return err
		}
		if !bytes.Equal(got.Data[peer], tok) {
			return b.SetToken(ctx, peer, tok) // someone created it first: add ours
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", where, err)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[peer] = tok
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", where, err)
	}
	return nil
}

// PinsSecretName is gitpeer's Secret in the Liqo namespace holding the pin
// store (data key pins.yaml), next to Liqo's authentication-keys.
const PinsSecretName = "gitpeer-pins"

const pinsKey = "pins.yaml"

// LoadPins implements backend.PinKeeper: data["pins.yaml"] of Secret gitpeer-pins.
func (b *Backend) LoadPins(ctx context.Context) (*pins.Store, error) {
	where := b.ref("secret", PinsSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, PinsSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return pins.New(b.clusterID), nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", where, err)
	}
	return pins.Parse(where, s.Data[pinsKey])
}

// SavePins implements backend.PinKeeper, creating Secret gitpeer-pins when
// missing. An update conflicts (and fails) if someone else changed the
// Secret since it was read, as Kubernetes' optimistic concurrency does; so
// does a create that finds another writer's Secret (apierrors.IsConflict).
func (b *Backend) SavePins(ctx context.Context, st *pins.Store) error {
	data, err := st.Encode()
	if err != nil {
		return err
	}
	where := b.ref("secret", PinsSecretName)
	secrets := b.core.Secrets(b.ns())
	s, err := secrets.Get(ctx, PinsSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: PinsSecretName, Namespace: b.ns(), Labels: map[string]string{"app.kubernetes.io/managed-by": "gitpeer"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{pinsKey: data},
		}
		got, err := b.createOnce(ctx, s)
		if err != nil {
			return err
		}
		if !bytes.Equal(got.Data[pinsKey], data) {
			// Created by another writer since our Get: theirs stands, and
			// ours must be recomputed from it, never silently dropped.
			return fmt.Errorf("create %s: %w", where, apierrors.NewConflict(corev1.Resource("secrets"), PinsSecretName,
				errors.New("created by another writer meanwhile; load the pins again")))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", where, err)
	}
	if bytes.Equal(s.Data[pinsKey], data) {
		return nil
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[pinsKey] = data
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", where, err)
	}
	return nil
}

var _ backend.PinKeeper = (*Backend)(nil)
