package artifact_test

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const (
	consumer = "alpha"
	provider = "beta"
	slice    = "web"

	nonceFile    = "clusters/alpha/inbox/beta/nonce.yaml"
	tenantFile   = "clusters/beta/inbox/alpha/tenant.yaml"
	identityFile = "clusters/alpha/inbox/beta/identity.yaml"
	requestFile  = "clusters/beta/inbox/alpha/resourceslice-web.yaml"
	answerFile   = "clusters/alpha/inbox/beta/resourceslice-web.status.yaml"
)

// fixture is one completed handshake between consumer alpha and provider
// beta, with one accepted slice, all generated at run time: no key material
// is ever a fixture file.
type fixture struct {
	key      crypto.Signer // alpha's
	pubPEM   []byte
	keyDER   []byte
	other    crypto.Signer // a key of some other cluster
	ca       *handshake.CA // beta's
	otherCA  *handshake.CA // a CA beta never published
	info     *layout.ClusterInfo
	nonce    artifact.Nonce
	tenant   *authv1beta1.Tenant
	identity *authv1beta1.Identity
	request  *authv1beta1.ResourceSlice // as the provider reads it from Git
	answer   *authv1beta1.ResourceSlice
}

func must[T any](t testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{}
	f.key = must[crypto.Signer](t)(handshake.GenerateKey())
	f.other = must[crypto.Signer](t)(handshake.GenerateKey())
	providerKey := must[crypto.Signer](t)(handshake.GenerateKey())
	f.pubPEM = must[[]byte](t)(handshake.MarshalPublicKey(f.key.Public()))
	f.keyDER = must[[]byte](t)(x509.MarshalPKIXPublicKey(f.key.Public()))
	var err error
	if f.ca, _, err = handshake.NewCA("beta-ca", now, 10*365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if f.otherCA, _, err = handshake.NewCA("mallory-ca", now, 10*365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	f.info = &layout.ClusterInfo{
		APIVersion: layout.APIVersion, Kind: layout.ClusterKind, ClusterID: provider,
		PublicKey:   string(must[[]byte](t)(handshake.MarshalPublicKey(providerKey.Public()))),
		Fingerprint: must[string](t)(handshake.Fingerprint(providerKey.Public())),
		APIServer:   "https://beta.example:6443",
		CA:          string(f.ca.CertPEM),
	}

	f.nonce = artifact.Nonce{Value: handshake.DeriveNonce([]byte("beta's secret"), consumer, 7), Epoch: 7, Expires: now.Add(time.Hour)}
	csr := must[[]byte](t)(handshake.ControlPlaneCSR(f.key, consumer))
	sig := must[[]byte](t)(handshake.SignNonce(f.key, f.nonce.Value))
	f.tenant = artifact.NewTenant(consumer, f.nonce, f.pubPEM, csr, sig)

	crt := must[[]byte](t)(f.ca.SignCSR(csr, now, 24*time.Hour))
	f.identity = liqo.ControlPlaneIdentity(consumer, provider, authv1beta1.AuthParams{APIServer: f.info.APIServer, CA: f.ca.CertPEM, SignedCRT: crt})

	sliceCSR := must[[]byte](t)(handshake.ResourceSliceCSR(f.key, slice, consumer))
	req := liqo.ResourceSlice(slice, consumer, provider, "", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, true, sliceCSR)
	f.request = must[*authv1beta1.ResourceSlice](t)(liqo.DecodeResourceSlice(encode(t, req)))
	f.answer = f.request.DeepCopy()
	f.answer.Status = authv1beta1.ResourceSliceStatus{
		Conditions: []authv1beta1.ResourceSliceCondition{
			{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: liqo.ReasonSliceAuthAccepted},
			{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: liqo.ReasonSliceResourcesAccepted, Message: "2 cpu"},
		},
		AuthParams: &authv1beta1.AuthParams{APIServer: f.info.APIServer, CA: f.ca.CertPEM, SignedCRT: must[[]byte](t)(f.ca.SignCSR(sliceCSR, now, 24*time.Hour))},
	}
	return f
}

func (f *fixture) tenantCheck() artifact.TenantCheck {
	return artifact.TenantCheck{ConsumerID: consumer, Nonce: f.nonce.Value, PinnedKeyDER: f.keyDER}
}

func (f *fixture) identityCheck() artifact.IdentityCheck {
	return artifact.IdentityCheck{ConsumerID: consumer, Provider: f.info, ConsumerKeyDER: f.keyDER, Now: now}
}

func encode(t testing.TB, obj any) []byte {
	t.Helper()
	data, err := liqo.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rawCSR builds a CSR with any subject, for the ones gitpeer never makes.
func rawCSR(t testing.TB, key crypto.Signer, subject pkix.Name) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// wantRefusal checks err is an *artifact.Error on file and field with
// reason, and that its message starts with "file: field: ".
func wantRefusal(t testing.TB, err error, file, field, reason string) *artifact.Error {
	t.Helper()
	var ae *artifact.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v, want an *artifact.Error", err, err)
	}
	if ae.File != file || ae.Field != field || ae.Reason != reason {
		t.Fatalf("refusal names %s, field %q, reason %s; want %s, %q, %s (%v)", ae.File, ae.Field, ae.Reason, file, field, reason, err)
	}
	prefix := file + ": "
	if field != "" {
		prefix += field + ": "
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("message %q does not start with %q", err, prefix)
	}
	return ae
}
