package handshake

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"math/big"
	"testing"
	"time"
)

// certNow is when the certificate cases are checked: an hour into fuzzCA's
// life, as FuzzVerifyClientCertificate checks.
var certNow = t0.Add(time.Hour)

// badCert is a client certificate, as an Identity carries it with its CA,
// that consumer (key "a") must refuse at certNow.
type badCert struct {
	name   string
	cert   []byte
	ca     []byte
	want   error
	reason string
	field  string // "certificate: " or "ca bundle: "
	says   string
}

// badCerts builds the certificate cases (see badinput_keys_test.go for the
// suite); every certificate is issued at run time.
func badCerts(t testing.TB) []badCert {
	t.Helper()
	ca := fuzzCA()
	key := testKey(t, "ed25519", "a")
	subject := pkix.Name{CommonName: consumer, Organization: []string{ControlPlaneOrganization}}
	client := func(mod func(*x509.Certificate)) *x509.Certificate {
		tmpl := &x509.Certificate{
			Subject:     subject,
			NotBefore:   t0,
			NotAfter:    t0.Add(certLife),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if mod != nil {
			mod(tmpl)
		}
		return tmpl
	}
	issue := func(tmpl *x509.Certificate, pub crypto.PublicKey) []byte {
		return issueCert(t, ca.Cert, ca.Key, tmpl, pub)
	}
	good := issue(client(nil), key.Public())
	other, _, err := NewCA("other-ca", t0, caLife)
	if err != nil {
		t.Fatal(err)
	}
	untrusted := issueCert(t, other.Cert, other.Key, client(nil), key.Public())
	csr := mustCSR(t, key)
	const cert, bundle = "certificate: ", "ca bundle: "
	const invalid, untrust = reasons.InvalidCertificate, reasons.UntrustedCertificate
	return []badCert{
		{name: "an empty certificate", cert: nil, ca: ca.CertPEM, want: ErrMalformedCertificate, reason: invalid, field: cert, says: "is empty"},
		{name: "a certificate cut in the middle", cert: good[:len(good)/2], ca: ca.CertPEM, want: ErrMalformedCertificate, reason: invalid, field: cert, says: "malformed PEM block 1"},
		{name: "a CSR where the certificate belongs", cert: csr, ca: ca.CertPEM, want: ErrMalformedCertificate, reason: invalid, field: cert, says: `PEM type "CERTIFICATE REQUEST", want "CERTIFICATE"`},
		{name: "DER that is not a certificate", cert: reencode(t, good, func(d []byte) []byte { return d[:len(d)-5] }), ca: ca.CertPEM, want: ErrMalformedCertificate, reason: invalid, field: cert, says: "certificate: parse"},
		{name: "a certificate with a broken CA signature", cert: reencode(t, good, flipLastByte), ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "verification failure"},
		{name: "an expired certificate", cert: issue(client(func(c *x509.Certificate) { c.NotBefore, c.NotAfter = t0.Add(-48*time.Hour), t0.Add(-time.Hour) }), key.Public()), ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "expired"},
		{name: "a certificate not yet valid", cert: issue(client(func(c *x509.Certificate) { c.NotBefore = t0.Add(48 * time.Hour) }), key.Public()), ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "not yet valid"},
		{name: "a certificate signed by another CA", cert: untrusted, ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "unknown authority"},
		{name: "a server certificate (no client-auth usage)", cert: issue(client(func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), key.Public()), ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "incompatible key usage"},
		{name: "the CA's own certificate as a client certificate", cert: ca.CertPEM, ca: ca.CertPEM, want: ErrUntrustedCertificate, reason: untrust, field: cert, says: "is a ca certificate"},
		{name: "a certificate for another cluster's key", cert: issue(client(nil), testKey(t, "ed25519", "b").Public()), ca: ca.CertPEM, want: ErrCertificateKey, reason: invalid, field: cert, says: "public key is sha256:"},
		{name: "a certificate for another common name", cert: issue(client(func(c *x509.Certificate) { c.Subject.CommonName = "cl-mallory" }), key.Public()), ca: ca.CertPEM, want: ErrCertificateSubject, reason: invalid, field: cert, says: `common name is "cl-mallory"`},
		{name: "a certificate for organization system:masters", cert: issue(client(func(c *x509.Certificate) { c.Subject.Organization = []string{"system:masters"} }), key.Public()), ca: ca.CertPEM, want: ErrCertificateSubject, reason: invalid, field: cert, says: `organization is "system:masters"`},
		{name: "an empty CA bundle", cert: good, ca: nil, want: ErrMalformedCertificate, reason: invalid, field: bundle, says: "is empty"},
		{name: "a CA bundle holding a private key block", cert: good, ca: append(bytes.Clone(ca.CertPEM), marshalPriv(t, key)...), want: ErrMalformedCertificate, reason: invalid, field: bundle, says: `block 2 has PEM type "PRIVATE KEY"`},
		{name: "a CA bundle with text before the first block", cert: good, ca: append([]byte("# beta's CA\n"), ca.CertPEM...), want: ErrMalformedCertificate, reason: invalid, field: bundle, says: "data before the PEM block"},
		{name: "a CA bundle whose second block does not parse", cert: good, ca: append(bytes.Clone(ca.CertPEM), reencode(t, other.CertPEM, func(d []byte) []byte { return d[:20] })...), want: ErrMalformedCertificate, reason: invalid, field: bundle, says: "block 2: parse"},
	}
}

// TestBadInputCertificates: every malformed, untrusted or mismatched client
// certificate (and CA bundle) is refused with its sentinel and reason, and a
// message naming the certificate or the CA bundle.
func TestBadInputCertificates(t *testing.T) {
	for _, c := range badCerts(t) {
		t.Run(c.name, func(t *testing.T) {
			err := VerifyClientCertificate(c.cert, c.ca, pkixDER(t, testKey(t, "ed25519", "a").Public()), consumer, ControlPlaneOrganization, certNow)
			wantBadInput(t, err, c.want, c.reason, c.field, c.says)
		})
	}
}

// badCA is a CA certificate and key an admin could hand `gitpeer init`
// (kubeadm's pki/ca.crt and ca.key) that LoadCA must refuse.
type badCA struct {
	name      string
	cert, key []byte
	want      error
	field     string
	says      string
}

func badCAs(t testing.TB) []badCA {
	t.Helper()
	ca, keyPEM, err := NewCA("import-ca", t0, caLife)
	if err != nil {
		t.Fatal(err)
	}
	leafKey := testKey(t, "ed25519", "a")
	leaf := issueCert(t, ca.Cert, ca.Key, &x509.Certificate{Subject: pkix.Name{CommonName: "leaf"}, NotBefore: t0, NotAfter: t0.Add(certLife)}, leafKey.Public())
	noCertSign := issueCert(t, ca.Cert, ca.Key, &x509.Certificate{Subject: pkix.Name{CommonName: "sub"}, NotBefore: t0, NotAfter: t0.Add(certLife),
		BasicConstraintsValid: true, IsCA: true, KeyUsage: x509.KeyUsageDigitalSignature}, leafKey.Public())
	return []badCA{
		{name: "a CA certificate cut short", cert: ca.CertPEM[:len(ca.CertPEM)-30], key: keyPEM, want: ErrMalformedCertificate, field: "ca certificate: ", says: "malformed PEM block 1"},
		{name: "the key file given as the certificate", cert: keyPEM, key: keyPEM, want: ErrMalformedCertificate, field: "ca certificate: ", says: `want "CERTIFICATE"`},
		{name: "a leaf certificate (not a CA)", cert: leaf, key: marshalPriv(t, leafKey), want: ErrUntrustedCertificate, field: "ca certificate: ", says: "is not a ca (basic constraints)"},
		{name: "a CA that may not sign certificates", cert: noCertSign, key: marshalPriv(t, leafKey), want: ErrUntrustedCertificate, field: "ca certificate: ", says: "may not sign certificates"},
		{name: "another key than the certificate's", cert: ca.CertPEM, key: marshalPriv(t, leafKey), want: ErrCertificateKey, field: "ca key: ", says: "certificate is for sha256:"},
		{name: "a CA key that is not PEM", cert: ca.CertPEM, key: []byte("not a key\n"), want: ErrMalformedKey, field: "ca key: ", says: "is not PEM"},
		{name: "two keys in the key file", cert: ca.CertPEM, key: append(bytes.Clone(keyPEM), marshalPriv(t, leafKey)...), want: ErrMalformedKey, field: "ca key: ", says: "2 key blocks, want 1"},
	}
}

// TestBadInputLoadCA: an imported CA that is broken, no CA, or not paired
// with its key is refused, naming the certificate or the key.
func TestBadInputLoadCA(t *testing.T) {
	for _, c := range badCAs(t) {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadCA(c.cert, c.key)
			wantBadInput(t, err, c.want, Reason(c.want), c.field, c.says)
		})
	}
}

// issueCert signs tmpl for pub with a CA's certificate and key, bypassing
// SignCSR's rules to make the certificates it would never make.
func issueCert(t testing.TB, caCert *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate, pub crypto.PublicKey) []byte {
	t.Helper()
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
