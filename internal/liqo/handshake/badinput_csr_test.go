package handshake

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/asn1"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"testing"
)

// badCSR is a control-plane CSR, as a Tenant carries it, that must be
// refused for consumer, with key "a" pinned.
type badCSR struct {
	name   string
	csr    []byte
	pubDER []byte
	want   error
	says   string
}

// badCSRs builds the CSR cases (see badinput_keys_test.go for the suite).
func badCSRs(t testing.TB) []badCSR {
	t.Helper()
	key := testKey(t, "ed25519", "a")
	der := pkixDER(t, key.Public())
	good, err := ControlPlaneCSR(key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	other := testKey(t, "ed25519", "b")
	otherCSR, err := ControlPlaneCSR(other, consumer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := fuzzCA().SignCSR(good, t0, certLife)
	if err != nil {
		t.Fatal(err)
	}
	withEmail := rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{ControlPlaneOrganization},
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b"}}})
	return []badCSR{
		{name: "an empty CSR", csr: nil, pubDER: der, want: ErrMalformedCSR, says: "is empty"},
		{name: "a CSR cut in the middle", csr: good[:len(good)/2], pubDER: der, want: ErrMalformedCSR, says: "malformed PEM block 1"},
		{name: "a CSR in a CERTIFICATE block", csr: retype(t, good, "CERTIFICATE"), pubDER: der, want: ErrMalformedCSR, says: `PEM type "CERTIFICATE", want "CERTIFICATE REQUEST"`},
		{name: "a certificate where the CSR belongs", csr: cert, pubDER: der, want: ErrMalformedCSR, says: `PEM type "CERTIFICATE"`},
		{name: "a blank line after the CSR (Liqo refuses any rest)", csr: append(bytes.Clone(good), '\n'), pubDER: der, want: ErrMalformedCSR, says: "1 byte after the PEM block"},
		{name: "DER that is not a CSR", csr: reencode(t, good, func(d []byte) []byte { return d[:len(d)-10] }), pubDER: der, want: ErrMalformedCSR, says: "csr: parse"},
		{name: "a CSR whose self-signature does not verify", csr: reencode(t, good, flipLastByte), pubDER: der, want: ErrMalformedCSR, says: "self-signature does not verify"},
		{name: "a CSR for another common name", csr: rawCSR(t, key, pkix.Name{CommonName: "cl-mallory", Organization: []string{ControlPlaneOrganization}}), pubDER: der, want: ErrCSRSubject, says: `common name is "cl-mallory", want "cl-consumer"`},
		{name: "a CSR for organization system:masters", csr: rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{"system:masters"}}), pubDER: der, want: ErrCSRSubject, says: `organization is "system:masters", want "liqo.io"`},
		{name: "a CSR with a second organization (an extra group)", csr: rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{ControlPlaneOrganization, "system:masters"}}), pubDER: der, want: ErrCSRSubject, says: "organizations"},
		{name: "a CSR without organization (Liqo panics on it)", csr: rawCSR(t, key, pkix.Name{CommonName: consumer}), pubDER: der, want: ErrCSRSubject, says: "no organization"},
		{name: "a CSR with an e-mail attribute in its subject", csr: withEmail, pubDER: der, want: ErrCSRSubject, says: "unexpected attribute 1.2.840.113549.1.9.1"},
		{name: "a CSR for another cluster's key", csr: otherCSR, pubDER: der, want: ErrCSRKey, says: "public key is sha256:"},
		{name: "a CSR for an RSA key of 1024 bits", csr: rawCSR(t, testKey(t, "rsa1024", "a"), pkix.Name{CommonName: consumer, Organization: []string{ControlPlaneOrganization}}), pubDER: der, want: ErrCSRKey, says: "1024 bits"},
		{name: "a CSR checked with no pinned key", csr: good, pubDER: nil, want: ErrCSRKey, says: "no expected public key"},
	}
}

// TestBadInputCSRs: every malformed or mismatched control-plane CSR is
// refused with its sentinel, reason InvalidCSR (Liqo's event name), and a
// message starting with "csr: ".
func TestBadInputCSRs(t *testing.T) {
	for _, c := range badCSRs(t) {
		t.Run(c.name, func(t *testing.T) {
			wantBadInput(t, CheckControlPlaneCSR(c.csr, c.pubDER, consumer), c.want, reasons.InvalidCSR, "csr: ", c.says)
		})
	}
}

func flipLastByte(b []byte) []byte {
	b[len(b)-1] ^= 0xff
	return b
}
