// Package artifact reads and checks the handshake artifacts one cluster
// addresses to another in a peering repo (nonce.yaml, tenant.yaml,
// identity.yaml). The same checks gate signing in the reconciler and run
// offline in `gitpeer verify`, so what one accepts the other accepts.
//
// Every refusal is an *Error naming the file, the field and a condition
// reason (Liqo's event names where Liqo has one).
package artifact

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// AnnotationNonceEpoch records on a nonce Secret, and on the Tenant answering
// it, which epoch the nonce belongs to, so a provider can recompute it.
const AnnotationNonceEpoch = "gitpeer.io/nonce-epoch"

// AnnotationNonceExpires records on a nonce Secret (RFC 3339, UTC) when a
// Tenant answering it stops being accepted, unless it already was.
const AnnotationNonceExpires = "gitpeer.io/nonce-expires"

// Error is a refused artifact.
type Error struct {
	File   string // repo path of the artifact
	Field  string // JSON path of the field at fault; "" for the whole file
	Reason string // condition reason, one of package reasons' constants
	Err    error
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.File, e.Field, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func refuse(file, field, reason string, format string, a ...any) *Error {
	return &Error{File: file, Field: field, Reason: reason, Err: fmt.Errorf(format, a...)}
}

// tooLarge refuses an artifact above layout.MaxArtifactSize before it is
// decoded (nil when it is within): a peer's artifact must not cost its
// reader more than that, whatever the tree it came from did.
func tooLarge(file string, data []byte) error {
	if len(data) <= layout.MaxArtifactSize {
		return nil
	}
	return &Error{File: file, Reason: reasons.MalformedArtifact, Err: fmt.Errorf("%w: %d bytes, larger than the %d an artifact may have", layout.ErrTooLarge, len(data), layout.MaxArtifactSize)}
}

// decodeErr turns a liqo.DecodeError into a refusal of the file.
func decodeErr(file string, err error) *Error {
	var de *liqo.DecodeError
	if errors.As(err, &de) {
		return &Error{File: file, Field: de.Field, Reason: reasons.MalformedArtifact, Err: errors.New(de.Reason)}
	}
	return &Error{File: file, Reason: reasons.MalformedArtifact, Err: err}
}

// Nonce is the nonce Secret a provider addresses to a consumer.
type Nonce struct {
	Value string // 88 characters of base64 (Liqo's shape)
	Epoch uint64
	// Expires is when an unanswered nonce is replaced by the next epoch's;
	// zero means never.
	Expires time.Time
}

// NonceSecret renders the nonce.yaml a provider writes into the consumer's
// inbox: Liqo's liqo-nonce Secret plus the epoch annotation.
func NonceSecret(consumerID string, n Nonce) *corev1.Secret {
	s := liqo.NonceSecret(consumerID, n.Value)
	s.Annotations = map[string]string{AnnotationNonceEpoch: strconv.FormatUint(n.Epoch, 10)}
	if !n.Expires.IsZero() {
		s.Annotations[AnnotationNonceExpires] = n.Expires.UTC().Format(time.RFC3339)
	}
	return s
}

// ParseNonce reads a nonce.yaml addressed to consumerID: Liqo's liqo-nonce
// Secret in the consumer's tenant namespace with its labels, a well-formed
// nonce and an epoch.
func ParseNonce(file string, data []byte, consumerID string) (Nonce, error) {
	if err := tooLarge(file, data); err != nil {
		return Nonce{}, err
	}
	s, value, err := liqo.DecodeNonceSecret(data)
	if err != nil {
		return Nonce{}, decodeErr(file, err)
	}
	if want := liqo.TenantNamespace(consumerID); s.Namespace != want {
		return Nonce{}, refuse(file, "metadata.namespace", reasons.MalformedArtifact, "is %q, want %q", s.Namespace, want)
	}
	if s.Labels[liqo.LabelNonce] != "true" || s.Labels[liqo.LabelRemoteClusterID] != consumerID {
		return Nonce{}, refuse(file, "metadata.labels", reasons.MalformedArtifact, "want %s=true and %s=%s", liqo.LabelNonce, liqo.LabelRemoteClusterID, consumerID)
	}
	if err := handshake.CheckNonce(value); err != nil {
		return Nonce{}, refuse(file, "data.nonce", reasons.InvalidNonce, "%v", err)
	}
	epoch, err := parseEpoch(s.Annotations)
	if err != nil {
		return Nonce{}, refuse(file, "metadata.annotations", reasons.MalformedArtifact, "%v", err)
	}
	n := Nonce{Value: value, Epoch: epoch}
	if v, ok := s.Annotations[AnnotationNonceExpires]; ok {
		if n.Expires, err = time.Parse(time.RFC3339, v); err != nil {
			return Nonce{}, refuse(file, "metadata.annotations", reasons.MalformedArtifact, "%s: %q is not an RFC 3339 time", AnnotationNonceExpires, v)
		}
	}
	return n, nil
}

func parseEpoch(annotations map[string]string) (uint64, error) {
	v, ok := annotations[AnnotationNonceEpoch]
	if !ok {
		return 0, fmt.Errorf("%s missing", AnnotationNonceEpoch)
	}
	e, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an epoch number", AnnotationNonceEpoch, v)
	}
	return e, nil
}

// TenantEpoch returns the nonce epoch a Tenant says it answers.
func TenantEpoch(file string, t *authv1beta1.Tenant) (uint64, error) {
	e, err := parseEpoch(t.Annotations)
	if err != nil {
		return 0, refuse(file, "metadata.annotations", reasons.MalformedArtifact, "%v", err)
	}
	return e, nil
}

// NewTenant builds the Tenant a consumer answers a nonce with.
func NewTenant(consumerID string, n Nonce, publicKeyPEM, csrPEM, signature []byte) *authv1beta1.Tenant {
	t := liqo.Tenant(consumerID, publicKeyPEM, csrPEM, signature)
	t.Annotations = map[string]string{AnnotationNonceEpoch: strconv.FormatUint(n.Epoch, 10)}
	return t
}

// DecodeTenant parses a tenant.yaml without checking it; one above
// layout.MaxArtifactSize is refused (ReasonMalformed) before it is decoded,
// as by every parser of this package.
func DecodeTenant(file string, data []byte) (*authv1beta1.Tenant, error) {
	if err := tooLarge(file, data); err != nil {
		return nil, err
	}
	t, err := liqo.DecodeTenant(data)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	return t, nil
}

// TenantCheck is what a provider knows when it checks a consumer's Tenant.
type TenantCheck struct {
	ConsumerID string
	// Nonce is the nonce the provider issued for the Tenant's epoch.
	Nonce string
	// PinnedKeyDER is the PKIX DER of the key the Tenant must carry: the key
	// published in clusters/<consumer>/cluster.yaml (pinned policy) or the
	// first key accepted (open and token policies). Nil accepts any key: the
	// first Tenant of an open or token peering.
	PinnedKeyDER []byte
	// Fingerprint, when set, is the spec's pin of the consumer's key.
	Fingerprint string
	// Cache, when set, answers the signature and CSR checks that succeeded
	// before on the same bytes and key (handshake.VerifyCache); nil checks
	// every time. The answer is the same either way.
	Cache *handshake.VerifyCache
}

// VerifyTenant runs, in order, every check that must hold before a provider
// signs: the Tenant is the consumer's (name, namespace, label, clusterID),
// asks for a handshake (KeysExchange), carries the pinned key, its signature
// verifies over the nonce, and its CSR is Liqo's control-plane CSR for that
// key (CN = consumer ID, O = liqo.io). It returns the parsed Tenant.
func VerifyTenant(file string, data []byte, c TenantCheck) (*authv1beta1.Tenant, error) {
	t, err := DecodeTenant(file, data)
	if err != nil {
		return nil, err
	}
	id := c.ConsumerID
	if err := checkMeta(file, t, id, liqo.TenantNamespace(id), id); err != nil {
		return nil, err
	}
	switch {
	case string(t.Spec.ClusterID) != id:
		return nil, refuse(file, "spec.clusterID", reasons.MalformedArtifact, "is %q, want %q", t.Spec.ClusterID, id)
	case t.Spec.AuthzPolicy != nil && *t.Spec.AuthzPolicy != authv1beta1.KeysExchange:
		return nil, refuse(file, "spec.authzPolicy", reasons.MalformedArtifact, "is %q: gitpeer only signs Tenants that went through the key exchange", *t.Spec.AuthzPolicy)
	case t.Status.AuthParams != nil || t.Status.TenantNamespace != "":
		return nil, refuse(file, "status", reasons.MalformedArtifact, "a consumer's Tenant carries no status")
	}
	_, der, err := handshake.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return nil, refuse(file, "spec.publicKey", reasons.InvalidPublicKey, "%v", err)
	}
	pub, _, _ := handshake.ParsePublicKey(t.Spec.PublicKey)
	if c.PinnedKeyDER != nil && !bytes.Equal(der, c.PinnedKeyDER) {
		return nil, refuse(file, "spec.publicKey", reasons.KeyNotPinned, "is not the key pinned for %s (%s)", id, layout.ClusterPath(id, layout.ClusterFile))
	}
	if fp, _ := handshake.Fingerprint(pub); c.Fingerprint != "" && fp != c.Fingerprint {
		return nil, refuse(file, "spec.publicKey", reasons.KeyNotPinned, "fingerprint %s is not the %s pinned in the spec", fp, c.Fingerprint)
	}
	if err := c.Cache.VerifyNonce(pub, c.Nonce, t.Spec.Signature); err != nil {
		return nil, refuse(file, "spec.signature", reasons.SignatureVerificationFailed, "%v", err)
	}
	if err := c.Cache.CheckControlPlaneCSR(t.Spec.CSR, der, id); err != nil {
		return nil, refuse(file, "spec.csr", reasons.InvalidCSR, "%v", err)
	}
	return t, nil
}

// checkMeta checks the name, namespace and remote-cluster-id label every
// Liqo artifact is looked up by.
func checkMeta(file string, obj metav1.Object, name, namespace, remoteID string) error {
	switch {
	case obj.GetName() != name:
		return refuse(file, "metadata.name", reasons.MalformedArtifact, "is %q, want %q", obj.GetName(), name)
	case obj.GetNamespace() != namespace:
		return refuse(file, "metadata.namespace", reasons.MalformedArtifact, "is %q, want %q", obj.GetNamespace(), namespace)
	case obj.GetLabels()[liqo.LabelRemoteClusterID] != remoteID:
		return refuse(file, "metadata.labels", reasons.MalformedArtifact, "%s is %q, want %q", liqo.LabelRemoteClusterID, obj.GetLabels()[liqo.LabelRemoteClusterID], remoteID)
	}
	return nil
}

// IdentityCheck is what a consumer knows when it checks a provider's Identity.
type IdentityCheck struct {
	ConsumerID string
	Provider   *layout.ClusterInfo // the provider's published cluster.yaml
	// ConsumerKeyDER is the PKIX DER of the consumer's own public key.
	ConsumerKeyDER []byte
	Now            time.Time
	// Cache, when set, answers the certificate checks that succeeded
	// before on the same bytes, CA, key and subject, at a time inside the
	// chain's validity (handshake.VerifyCache); nil checks every time. The
	// answer is the same either way.
	Cache *handshake.VerifyCache
}

// DecodeIdentity parses an identity.yaml without checking it.
func DecodeIdentity(file string, data []byte) (*authv1beta1.Identity, error) {
	if err := tooLarge(file, data); err != nil {
		return nil, err
	}
	id, err := liqo.DecodeIdentity(data)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	return id, nil
}

// VerifyIdentity runs every check a consumer makes before it trusts an
// Identity: it is the ControlPlane Identity of that provider for this
// consumer, its API server and CA are exactly the ones the provider
// published, and its certificate chains to that CA, is valid now, and is for
// the consumer's own key with CN = consumer ID and O = liqo.io.
func VerifyIdentity(file string, data []byte, c IdentityCheck) (*authv1beta1.Identity, error) {
	id, err := DecodeIdentity(file, data)
	if err != nil {
		return nil, err
	}
	p := c.Provider.ClusterID
	if err := checkMeta(file, id, liqo.ControlPlaneIdentityName(p), liqo.TenantNamespace(p), p); err != nil {
		return nil, err
	}
	switch {
	case string(id.Spec.ClusterID) != p:
		return nil, refuse(file, "spec.clusterID", reasons.MalformedArtifact, "is %q, want %q", id.Spec.ClusterID, p)
	case id.Spec.Type != authv1beta1.ControlPlaneIdentityType:
		return nil, refuse(file, "spec.type", reasons.MalformedArtifact, "is %q, want %q", id.Spec.Type, authv1beta1.ControlPlaneIdentityType)
	case id.Spec.Namespace == nil || *id.Spec.Namespace != liqo.TenantNamespace(c.ConsumerID):
		return nil, refuse(file, "spec.namespace", reasons.MalformedArtifact, "want %q", liqo.TenantNamespace(c.ConsumerID))
	case id.Spec.AuthParams.AwsConfig != nil:
		return nil, refuse(file, "spec.authParams.awsConfig", reasons.MalformedArtifact, "AWS credentials never travel through Git")
	case id.Spec.AuthParams.APIServer != c.Provider.APIServer:
		return nil, refuse(file, "spec.authParams.apiServer", reasons.UntrustedAPIServer, "is %q, but %s publishes %q", id.Spec.AuthParams.APIServer, p, c.Provider.APIServer)
	}
	if !SameCertificates(id.Spec.AuthParams.CA, []byte(c.Provider.CA)) {
		return nil, refuse(file, "spec.authParams.ca", reasons.UntrustedCA, "is not the CA published in %s", layout.ClusterPath(p, layout.ClusterFile))
	}
	err = c.Cache.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, []byte(c.Provider.CA), c.ConsumerKeyDER,
		c.ConsumerID, handshake.ControlPlaneOrganization, c.Now)
	if err != nil {
		return nil, refuse(file, "spec.authParams.signedCRT", reasons.InvalidCertificate, "%v", err)
	}
	return id, nil
}

// SameCertificates reports whether two PEM bundles hold the same set of
// certificates, whatever the order and PEM formatting. Bundles with anything
// but parseable certificates are never the same.
func SameCertificates(a, b []byte) bool {
	ca, okA := certSet(a)
	cb, okB := certSet(b)
	if !okA || !okB || len(ca) != len(cb) || len(ca) == 0 {
		return false
	}
	for k := range ca {
		if !cb[k] {
			return false
		}
	}
	return true
}

func certSet(bundle []byte) (map[string]bool, bool) {
	set := map[string]bool{}
	rest := bundle
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, false
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, false
		}
		set[string(block.Bytes)] = true
	}
	return set, len(bytes.TrimSpace(rest)) == 0
}
