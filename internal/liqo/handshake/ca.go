package handshake

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// caBackdate is how far a CA's NotBefore is set before it is made: an hour,
// because it is made once and must be valid wherever it is pinned.
const caBackdate = time.Hour

// CertBackdate is how far SignCSR sets a client certificate's NotBefore
// before the signing, like cfssl and the kube-controller-manager signer,
// because the certificate is used right away by a cluster whose clock may
// run a little behind. It is skew allowance, not lifetime: a certificate was
// signed at NotBefore + CertBackdate, and its lifetime runs from there.
const CertBackdate = 5 * time.Minute

// CA signs client certificates the way the kube-apiserver-client signer of
// the provider cluster would (Liqo's pkg/identityManager/
// certificateIdentityProvider.go asks that signer for every Tenant and
// ResourceSlice certificate), so that a certificate signed offline by
// gitpeer's file backend authenticates to an API server trusting Cert.
type CA struct {
	// Cert is the parsed CA certificate.
	Cert *x509.Certificate
	// CertPEM is Cert as a single PEM "CERTIFICATE" block, the CA bundle a
	// consumer pins and puts in its kubeconfig.
	CertPEM []byte
	// Key is the CA's private key; its public half is Cert's.
	Key crypto.Signer
}

// NewCA returns a new self-signed CA with subject CN = commonName and an ECDSA
// P-256 key (every TLS stack and kubectl accept it, unlike Ed25519 CAs in some
// of them), valid from now minus one hour to now plus lifetime. It may sign
// only end-entity certificates (path length 0). It also returns the key as
// PEM "PRIVATE KEY" (PKCS#8), for the caller to store outside Git. An empty
// commonName or a lifetime that is not positive is an error.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*CA, []byte, error) {
	if commonName == "" {
		return nil, nil, errors.New("new ca: common name is empty")
	}
	if lifetime <= 0 {
		return nil, nil, fmt.Errorf("new ca: lifetime %s is not positive", lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("new ca: generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, fmt.Errorf("new ca: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-caBackdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		// SubjectKeyId is left empty: x509 derives it from the key for a
		// CA, and SignCSR copies it into AuthorityKeyId.
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("new ca: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("new ca: parse certificate: %w", err)
	}
	keyPEM, err := MarshalPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("new ca: %w", err)
	}
	ca := &CA{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		Key:     key,
	}
	return ca, keyPEM, nil
}

// LoadCA pairs a CA certificate (one PEM "CERTIFICATE" block) with its private
// key, given as PEM "PRIVATE KEY" (PKCS#8), "RSA PRIVATE KEY" (PKCS#1) or "EC
// PRIVATE KEY" (SEC1, optionally after the "EC PARAMETERS" block openssl
// ecparam writes), so that kubeadm's pki/ca.crt and ca.key load as they are.
//
// Errors: a certificate that does not parse gives ErrMalformedCertificate; a
// key that does not parse, ErrMalformedKey; a key that is not the
// certificate's, ErrCertificateKey; a certificate that is not a CA (basic
// constraints) or may not sign certificates (key usage), ErrUntrustedCertificate.
// Expiry is not checked here: SignCSR refuses to sign with an expired CA.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	block, err := decodePEMBlock(certPEM, pemCertificate, trailingSpace)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %v: %w", err, ErrMalformedCertificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: parse: %v: %w", err, ErrMalformedCertificate)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("ca certificate: %s is not a ca (basic constraints): %w", quote(cert.Subject.CommonName), ErrUntrustedCertificate)
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("ca certificate: %s may not sign certificates (key usage): %w", quote(cert.Subject.CommonName), ErrUntrustedCertificate)
	}
	key, err := parseCAKey(keyPEM)
	if err != nil {
		return nil, &CAKeyError{Err: err}
	}
	certDER, err := publicKeyDER(cert.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %v: %w", err, ErrMalformedCertificate)
	}
	keyDER, err := publicKeyDER(key.Public())
	if err != nil {
		return nil, &CAKeyError{Err: fmt.Errorf("ca key: %w", err)}
	}
	if string(certDER) != string(keyDER) {
		return nil, fmt.Errorf("ca key: is for %s, certificate is for %s: %w", fingerprintDER(keyDER), fingerprintDER(certDER), ErrCertificateKey)
	}
	return &CA{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: cert.Raw}),
		Key:     key,
	}, nil
}

// CAKeyError is LoadCA's error when the CA key itself cannot be used (not
// PEM, not a private key, an unsupported algorithm), as against the
// certificate, or a key that is not the certificate's (ErrCertificateKey):
// callers name the key's file for it. Its message is Err's.
type CAKeyError struct{ Err error }

func (e *CAKeyError) Error() string { return e.Err.Error() }
func (e *CAKeyError) Unwrap() error { return e.Err }

// parseCAKey reads a CA private key in any of the encodings kubeadm and
// openssl write.
func parseCAKey(keyPEM []byte) (crypto.Signer, error) {
	blocks, err := decodePEMBlocks(keyPEM, trailingSpace)
	if err != nil {
		return nil, fmt.Errorf("ca key: %v: %w", err, ErrMalformedKey)
	}
	var keyBlocks []*pem.Block
	for _, b := range blocks {
		// The curve is repeated inside the SEC1 key, so the parameters
		// block carries nothing we need.
		if b.Type != pemECParameters {
			keyBlocks = append(keyBlocks, b)
		}
	}
	if len(keyBlocks) != 1 {
		return nil, fmt.Errorf("ca key: has %d key blocks, want 1: %w", len(keyBlocks), ErrMalformedKey)
	}
	b := keyBlocks[0]
	var key any
	switch b.Type {
	case pemPrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case pemRSAPrivateKey:
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case pemECPrivateKey:
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("ca key: has PEM type %s, want %q, %q or %q: %w", quote(b.Type), pemPrivateKey, pemRSAPrivateKey, pemECPrivateKey, ErrMalformedKey)
	}
	if err != nil {
		return nil, fmt.Errorf("ca key: parse %s: %v: %w", b.Type, err, ErrMalformedKey)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("ca key: unsupported type %T: %w", key, ErrMalformedKey)
	}
	signer, err = checkSigner(signer)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	return signer, nil
}

// SignCSR issues a client certificate for a CSR, as the
// kubernetes.io/kube-apiserver-client signer does for the Kubernetes CSRs
// Liqo creates (usages digital signature, key encipherment, client auth):
// subject (byte for byte) and public key from the CSR; KeyUsage
// DigitalSignature, plus KeyEncipherment for RSA keys (the only ones that can
// encipher); ExtKeyUsage ClientAuth; not a CA; NotBefore = now - 5 minutes
// for clock skew; NotAfter = now + lifetime, capped at the CA's own NotAfter
// as Kubernetes' signer caps it (pkg/controller/certificates/authority/
// policies.go: a certificate cannot outlive its chain); a
// random 128-bit serial; AuthorityKeyId = the CA's SubjectKeyId. It returns a
// single PEM "CERTIFICATE" block.
//
// It does not know which consumer the CSR should be for: callers run
// CheckControlPlaneCSR or CheckResourceSliceCSR first. As a last line of
// defence it still insists on the CSR framing of those checks and a valid
// self-signature (ErrMalformedCSR); on a subject of exactly one CN and one O,
// neither starting with the "system:" prefix Kubernetes reserves (a
// certificate for O=system:masters is cluster-admin) (ErrCSRSubject); on a
// supported key (ErrCSRKey); and on a CA valid at now
// (ErrUntrustedCertificate). A lifetime that is not positive is an error.
func (ca *CA) SignCSR(csrPEM []byte, now time.Time, lifetime time.Duration) ([]byte, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("sign csr: ca is not initialized")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("sign csr: lifetime %s is not positive", lifetime)
	}
	if now.Before(ca.Cert.NotBefore) || now.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("sign csr: ca %s is valid from %s to %s, not at %s: %w",
			quote(ca.Cert.Subject.CommonName), ca.Cert.NotBefore.UTC().Format(time.RFC3339),
			ca.Cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), ErrUntrustedCertificate)
	}
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	if err := checkSignableSubject(csr.Subject.Names); err != nil {
		return nil, fmt.Errorf("csr: %v: %w", err, ErrCSRSubject)
	}
	if _, err := publicKeyDER(csr.PublicKey); err != nil {
		return nil, fmt.Errorf("csr: %v: %w", err, ErrCSRKey)
	}
	usage := x509.KeyUsageDigitalSignature
	if _, ok := csr.PublicKey.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("sign csr: %w", err)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The raw subject is what the checks looked at; re-encoding a
		// pkix.Name could change string types or drop attributes.
		RawSubject:            csr.RawSubject,
		NotBefore:             now.Add(-CertBackdate),
		NotAfter:              notAfter,
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		// AuthorityKeyId is filled in by x509 from ca.Cert.SubjectKeyId.
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign csr: create certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}), nil
}

// randomSerial returns a uniformly random positive serial number of at most
// 128 bits, per RFC 5280 §4.1.2.2 (unique, positive, at most 20 octets).
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("random serial: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// VerifyClientCertificate checks a certificate from an Identity
// (authParams.signedCRT) the way a consumer must before trusting it:
//
//  1. certPEM is a single PEM "CERTIFICATE" block starting at the first byte,
//     followed by whitespace at most, and parses: else ErrMalformedCertificate.
//     caPEM, a bundle of one or more such blocks, likewise.
//  2. It is not a CA and chains to a certificate in caPEM for
//     ExtKeyUsageClientAuth at time now: else ErrUntrustedCertificate
//     (unknown issuer, expired, not yet valid, wrong usage).
//  3. Its public key's PKIX DER equals pubDER, the consumer's own key: else,
//     or if pubDER is empty, ErrCertificateKey.
//  4. Its subject is exactly CN = commonName and Organization =
//     [organization]: else ErrCertificateSubject.
func VerifyClientCertificate(certPEM, caPEM, pubDER []byte, commonName, organization string, now time.Time) error {
	_, err := verifyClientCertificate(certPEM, caPEM, pubDER, commonName, organization, now)
	return err
}

// verifyClientCertificate is VerifyClientCertificate, returning on success
// the chain that verified, leaf first.
func verifyClientCertificate(certPEM, caPEM, pubDER []byte, commonName, organization string, now time.Time) ([]*x509.Certificate, error) {
	cert, err := parseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	roots, err := parseCABundle(caPEM)
	if err != nil {
		return nil, err
	}
	if cert.IsCA {
		return nil, fmt.Errorf("certificate: %s is a ca certificate, want a client certificate: %w", quote(cert.Subject.CommonName), ErrUntrustedCertificate)
	}
	chains, err := cert.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("certificate: %v: %w", err, ErrUntrustedCertificate)
	}
	if len(pubDER) == 0 {
		return nil, fmt.Errorf("certificate: %v: %w", errNoKey, ErrCertificateKey)
	}
	got, err := publicKeyDER(cert.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("certificate: %v: %w", err, ErrCertificateKey)
	}
	if string(got) != string(pubDER) {
		return nil, fmt.Errorf("certificate: public key is %s, want %s: %w", fingerprintDER(got), fingerprintDER(pubDER), ErrCertificateKey)
	}
	if err := checkSubject(cert.Subject.Names, commonName, organization); err != nil {
		return nil, fmt.Errorf("certificate: %v: %w", err, ErrCertificateSubject)
	}
	return chains[0], nil
}

// CertificateValidity returns the validity window of a PEM certificate (a
// single "CERTIFICATE" block, whitespace after it at most), for deciding when
// to rotate it. A certificate that does not parse gives
// ErrMalformedCertificate. Nothing about trust is checked.
func CertificateValidity(certPEM []byte) (notBefore, notAfter time.Time, err error) {
	cert, err := parseCertificate(certPEM)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	return cert.NotBefore, cert.NotAfter, nil
}

func parseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, err := decodePEMBlock(certPEM, pemCertificate, trailingSpace)
	if err != nil {
		return nil, fmt.Errorf("certificate: %v: %w", err, ErrMalformedCertificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate: parse: %v: %w", err, ErrMalformedCertificate)
	}
	return cert, nil
}

// parseCABundle reads one or more CA certificates. Unlike
// x509.CertPool.AppendCertsFromPEM it does not skip what it cannot read: a
// pinned bundle with a broken entry is a mistake to report, not to ignore.
func parseCABundle(caPEM []byte) (*x509.CertPool, error) {
	blocks, err := decodePEMBlocks(caPEM, trailingSpace)
	if err != nil {
		return nil, fmt.Errorf("ca bundle: %v: %w", err, ErrMalformedCertificate)
	}
	pool := x509.NewCertPool()
	for i, b := range blocks {
		if b.Type != pemCertificate {
			return nil, fmt.Errorf("ca bundle: block %d has PEM type %s, want %q: %w", i+1, quote(b.Type), pemCertificate, ErrMalformedCertificate)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("ca bundle: block %d: parse: %v: %w", i+1, err, ErrMalformedCertificate)
		}
		pool.AddCert(cert)
	}
	return pool, nil
}
