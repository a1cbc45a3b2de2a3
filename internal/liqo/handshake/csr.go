package handshake

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
)

// ControlPlaneOrganization is the only Organization of a control-plane CSR,
// as Liqo's OrganizationControlPlaneCSR (pkg/liqo-controller-manager/
// authentication/csr.go) sets it. Kubernetes turns it into the group liqo.io.
const ControlPlaneOrganization = "liqo.io"

var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
)

// ControlPlaneCSR returns the CSR of a Tenant (spec.csr): PEM "CERTIFICATE
// REQUEST" with subject CN = consumerID and exactly one O = "liqo.io", as
// Liqo's GenerateCSRForControlPlane (pkg/liqo-controller-manager/
// authentication/csr.go) builds it: same subject encoding (O, then CN), same
// signature algorithm per key type, no extensions. The PEM ends with the
// single "\n" of pem.Encode and nothing else, as CheckControlPlaneCSR and
// Liqo require.
//
// For Ed25519 and RSA keys the output is byte-identical on every call, which
// matters twice: the peering repo gets no spurious commits, and Liqo reuses a
// cached certificate only for a byte-identical CSR (pkg/identityManager). An
// empty consumerID gives ErrCSRSubject; a bad key gives ErrMalformedKey.
func ControlPlaneCSR(key crypto.Signer, consumerID string) ([]byte, error) {
	return generateCSR(key, consumerID, ControlPlaneOrganization)
}

// ResourceSliceCommonName returns the common name of a ResourceSlice CSR:
// sliceName, "-", and the lowercase hex of the first 6 bytes of
// SHA-256(consumerID) (12 characters), as Liqo's CommonNameResourceSliceCSR
// (csr.go) computes it. The hash keeps names short and distinct per consumer;
// it is not a security measure.
func ResourceSliceCommonName(sliceName, consumerID string) string {
	sum := sha256.Sum256([]byte(consumerID))
	return sliceName + "-" + hex.EncodeToString(sum[:6])
}

// ResourceSliceCSR returns the CSR of a ResourceSlice (spec.csr): CN =
// ResourceSliceCommonName(sliceName, consumerID) and exactly one O =
// consumerID, so Kubernetes sees the consumer ID as the user's group, which
// Liqo's RBAC binds (csr.go GenerateCSRForResourceSlice). Encoding,
// determinism and errors are as for ControlPlaneCSR; an empty sliceName or
// consumerID gives ErrCSRSubject.
func ResourceSliceCSR(key crypto.Signer, sliceName, consumerID string) ([]byte, error) {
	if sliceName == "" || consumerID == "" {
		return nil, fmt.Errorf("csr: slice name %s and consumer id %s must not be empty: %w", quote(sliceName), quote(consumerID), ErrCSRSubject)
	}
	return generateCSR(key, ResourceSliceCommonName(sliceName, consumerID), consumerID)
}

func generateCSR(key crypto.Signer, commonName, organization string) ([]byte, error) {
	if commonName == "" || organization == "" {
		return nil, fmt.Errorf("csr: common name %s and organization %s must not be empty: %w", quote(commonName), quote(organization), ErrCSRSubject)
	}
	key, err := checkSigner(key)
	if err != nil {
		return nil, err
	}
	// Liqo marshals the subject itself (pkix.Name.ToRDNSequence, so O comes
	// before CN); doing the same keeps the bytes identical to Liqo's.
	subject, err := asn1.Marshal(pkix.Name{CommonName: commonName, Organization: []string{organization}}.ToRDNSequence())
	if err != nil {
		return nil, fmt.Errorf("csr: marshal subject: %v: %w", err, ErrCSRSubject)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		RawSubject:         subject,
		SignatureAlgorithm: csrSignatureAlgorithm(key.Public()),
	}, key)
	if err != nil {
		return nil, fmt.Errorf("csr: create: %v: %w", err, ErrMalformedKey)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificateRequest, Bytes: der}), nil
}

// csrSignatureAlgorithm picks the algorithm Liqo's generateCSR (csr.go) picks
// for the key type: the hash grows with the ECDSA curve.
func csrSignatureAlgorithm(pub crypto.PublicKey) x509.SignatureAlgorithm {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return x509.PureEd25519
	case *rsa.PublicKey:
		return x509.SHA256WithRSA
	case *ecdsa.PublicKey:
		switch k.Curve.Params().BitSize {
		case 521:
			return x509.ECDSAWithSHA512
		case 384:
			return x509.ECDSAWithSHA384
		}
		return x509.ECDSAWithSHA256
	}
	return x509.UnknownSignatureAlgorithm
}

// CheckControlPlaneCSR checks a Tenant's CSR the way Liqo's
// CheckCSRForControlPlane (pkg/liqo-controller-manager/authentication/csr.go)
// does, so that a CSR passing here passes in Liqo's tenant controller, and
// never panics. In order:
//
//  1. Framing: the input is a single PEM "CERTIFICATE REQUEST" block starting
//     at the first byte, with nothing after it but the line break that ends
//     the END line (Liqo requires pem.Decode to leave no rest: one more "\n"
//     fails there). Otherwise ErrMalformedCSR.
//  2. The DER parses and, stricter than Liqo, the self-signature verifies, so
//     whoever sent the CSR holds the key. Otherwise ErrMalformedCSR.
//  3. The subject is exactly one CN equal to consumerID and exactly one O
//     equal to "liqo.io", with no other attribute. Liqo reads
//     Organization[0] and panics when there is none; with several, DER SET
//     sorting decides which is first. Otherwise ErrCSRSubject.
//  4. The PKIX DER of the CSR's key equals pubDER (from ParsePublicKey).
//     Otherwise, or if pubDER is empty, ErrCSRKey.
func CheckControlPlaneCSR(csrPEM, pubDER []byte, consumerID string) error {
	if consumerID == "" {
		return fmt.Errorf("csr: consumer id is empty: %w", ErrCSRSubject)
	}
	return checkCSR(csrPEM, pubDER, consumerID, ControlPlaneOrganization)
}

// CheckResourceSliceCSR checks a ResourceSlice's CSR as Liqo's
// CheckCSRForResourceSlice (csr.go) does with its key check on: the steps of
// CheckControlPlaneCSR, with CN = ResourceSliceCommonName(sliceName,
// consumerID) and O = consumerID. Liqo skips the key check for tenants under
// TolerateNoHandshake; this function never does, and an empty pubDER gives
// ErrCSRKey.
func CheckResourceSliceCSR(csrPEM, pubDER []byte, sliceName, consumerID string) error {
	if sliceName == "" || consumerID == "" {
		return fmt.Errorf("csr: slice name %s and consumer id %s must not be empty: %w", quote(sliceName), quote(consumerID), ErrCSRSubject)
	}
	return checkCSR(csrPEM, pubDER, ResourceSliceCommonName(sliceName, consumerID), consumerID)
}

func checkCSR(csrPEM, pubDER []byte, wantCN, wantO string) error {
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return err
	}
	if err := checkSubject(csr.Subject.Names, wantCN, wantO); err != nil {
		return fmt.Errorf("csr: %v: %w", err, ErrCSRSubject)
	}
	if len(pubDER) == 0 {
		return fmt.Errorf("csr: %v: %w", errNoKey, ErrCSRKey)
	}
	got, err := publicKeyDER(csr.PublicKey)
	if err != nil {
		// A key type the handshake refuses cannot be the expected key.
		return fmt.Errorf("csr: %v: %w", err, ErrCSRKey)
	}
	if !bytes.Equal(got, pubDER) {
		return fmt.Errorf("csr: public key is %s, want %s: %w", fingerprintDER(got), fingerprintDER(pubDER), ErrCSRKey)
	}
	return nil
}

// parseCSR applies Liqo's framing rule, parses the request and checks its
// self-signature; every failure wraps ErrMalformedCSR.
func parseCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	block, err := decodePEMBlock(csrPEM, pemCertificateRequest, trailingNone)
	if err != nil {
		return nil, fmt.Errorf("csr: %v: %w", err, ErrMalformedCSR)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("csr: parse: %v: %w", err, ErrMalformedCSR)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("csr: self-signature does not verify: %v: %w", err, ErrMalformedCSR)
	}
	return csr, nil
}

// checkSubject requires names (a parsed subject, flattened) to be exactly one
// common name wantCN and one organization wantO. Kubernetes reads the user
// from the CN and the groups from every O, so an extra O would be an extra
// group, and a second CN would leave the user name to the parser's whim.
func checkSubject(names []pkix.AttributeTypeAndValue, wantCN, wantO string) error {
	cns, orgs, err := subjectNames(names)
	if err != nil {
		return err
	}
	switch {
	case len(cns) == 0:
		return fmt.Errorf("subject has no common name, want %s", quote(wantCN))
	case len(cns) > 1:
		return fmt.Errorf("subject has common names %s, want exactly %s", quoteList(cns), quote(wantCN))
	case cns[0] != wantCN:
		return fmt.Errorf("subject common name is %s, want %s", quote(cns[0]), quote(wantCN))
	case len(orgs) == 0:
		return fmt.Errorf("subject has no organization, want %s", quote(wantO))
	case len(orgs) > 1:
		return fmt.Errorf("subject has organizations %s, want exactly %s", quoteList(orgs), quote(wantO))
	case orgs[0] != wantO:
		return fmt.Errorf("subject organization is %s, want %s", quote(orgs[0]), quote(wantO))
	}
	return nil
}

// subjectNames splits a subject into its common names and organizations,
// refusing any other attribute and any value that is not a string.
func subjectNames(names []pkix.AttributeTypeAndValue) (cns, orgs []string, err error) {
	for _, atv := range names {
		var into *[]string
		switch {
		case atv.Type.Equal(oidCommonName):
			into = &cns
		case atv.Type.Equal(oidOrganization):
			into = &orgs
		default:
			return nil, nil, fmt.Errorf("subject has unexpected attribute %s, want only common name and organization", atv.Type)
		}
		s, ok := atv.Value.(string)
		if !ok {
			return nil, nil, fmt.Errorf("subject attribute %s is not a string", atv.Type)
		}
		*into = append(*into, s)
	}
	return cns, orgs, nil
}

// checkSignableSubject is SignCSR's last line of defence, for a caller that
// forgot to check the CSR: every handshake CSR has one CN and one O, and
// neither may name a "system:" user or group, which Kubernetes reserves (a
// certificate for O=system:masters is cluster-admin).
func checkSignableSubject(names []pkix.AttributeTypeAndValue) error {
	cns, orgs, err := subjectNames(names)
	if err != nil {
		return err
	}
	if len(cns) != 1 || len(orgs) != 1 || cns[0] == "" || orgs[0] == "" {
		return fmt.Errorf("subject has common names %s and organizations %s, want one of each", quoteList(cns), quoteList(orgs))
	}
	for _, v := range []string{cns[0], orgs[0]} {
		if strings.HasPrefix(v, "system:") {
			return fmt.Errorf("subject names %s, reserved by kubernetes", quote(v))
		}
	}
	return nil
}
