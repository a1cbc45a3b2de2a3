package handshake

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"strings"
	"testing"
)

// The bad-input suite: malformed input a peer (or a careless admin) could
// hand each parser, one family per file, one table per family. Every case
// is refused with a named reason (a sentinel error and its status reason),
// an error that names the field at fault, and no panic. The same tables
// seed the fuzz targets, so the suite and the fuzz corpus have one source.

// badKey is a key that must be refused.
type badKey struct {
	name    string
	private bool // ParsePrivateKey; else ParsePublicKey
	input   []byte
	says    string // a part of the message that says why
}

// badKeys builds the key cases; keys are generated at run time.
func badKeys(t testing.TB) []badKey {
	t.Helper()
	edPub := marshalPub(t, testKey(t, "ed25519", "a").Public())
	edPriv := marshalPriv(t, testKey(t, "ed25519", "a"))
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x25519Pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, x25519.PublicKey())})
	x25519Priv := marshalPriv(t, x25519)
	rsa1024 := testKey(t, "rsa1024", "a")
	withHeaders := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: pkixDER(t, testKey(t, "ed25519", "a").Public())})
	return []badKey{
		{name: "an empty public key", input: nil, says: "neither PEM nor a raw ed25519 key (0 bytes"},
		{name: "a public key cut in the middle of its PEM block", input: edPub[:len(edPub)/2], says: "malformed PEM block 1"},
		{name: "a public key without its END line", input: bytes.TrimSuffix(edPub, []byte("-----END PUBLIC KEY-----\n")), says: "malformed PEM block 1"},
		{name: "a public key in a CERTIFICATE block", input: retype(t, edPub, "CERTIFICATE"), says: `PEM type "CERTIFICATE", want "PUBLIC KEY"`},
		{name: "a public key in an RSA PUBLIC KEY block (PKCS#1 type)", input: retype(t, edPub, "RSA PUBLIC KEY"), says: `PEM type "RSA PUBLIC KEY"`},
		{name: "an RSA key of 1024 bits", input: marshalPubRaw(t, rsa1024.Public()), says: "rsa key has 1024 bits, want at least 2048"},
		{name: "an ECDSA key on P-224", input: marshalPubRaw(t, testKey(t, "p224", "a").Public()), says: "curve P-224 is not supported"},
		{name: "an X25519 key (key agreement, not signing)", input: x25519Pub, says: "unsupported type *ecdh.PublicKey"},
		{name: "a raw ed25519 key one byte short", input: bytes.Repeat([]byte{7}, 31), says: "(31 bytes, want 32)"},
		{name: "text before the BEGIN line", input: append([]byte("key:\n"), edPub...), says: "data before the PEM block"},
		{name: "two public keys in one value", input: append(bytes.Clone(edPub), marshalPub(t, testKey(t, "ed25519", "b").Public())...), says: "has 2 PEM blocks, want 1"},
		{name: "PEM encryption headers", input: withHeaders, says: "has PEM headers in block 1"},
		{name: "garbage after the END line", input: append(bytes.Clone(edPub), "trailing\n"...), says: "non-PEM data after PEM block 1"},
		{name: "DER that is not a key", input: reencode(t, edPub, func([]byte) []byte { return []byte{0x30, 0x03, 0x02, 0x01, 0x01} }), says: "parse pkix"},
		{name: "non-minimal DER (a length in long form)", input: reencode(t, edPub, longFormLength), says: "non-minimal length"},
		{name: "invalid UTF-8 bytes", input: []byte("\xff\xfe\xfd not a key"), says: "neither PEM nor a raw ed25519 key"},
		{name: "a private key where a public key belongs", input: edPriv, says: `PEM type "PRIVATE KEY", want "PUBLIC KEY"`},

		{name: "an empty private key", private: true, input: nil, says: "is empty"},
		{name: "a public key where the private key belongs", private: true, input: edPub, says: `PEM type "PUBLIC KEY", want "PRIVATE KEY"`},
		{name: "a PKCS#1 RSA PRIVATE KEY block where PKCS#8 is required", private: true, input: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{0x30, 0}}), says: `PEM type "RSA PRIVATE KEY"`},
		{name: "a private key cut short", private: true, input: edPriv[:len(edPriv)-20], says: "malformed PEM block 1"},
		{name: "a PKCS#8 X25519 private key (cannot sign)", private: true, input: x25519Priv, says: "unsupported type *ecdh.PrivateKey"},
		{name: "an RSA private key of 1024 bits", private: true, input: marshalPriv(t, rsa1024), says: "rsa key has 1024 bits"},
		{name: "PKCS#8 DER that is not a key", private: true, input: reencode(t, edPriv, func(der []byte) []byte { return der[:len(der)-3] }), says: "parse pkcs#8"},
	}
}

// TestBadInputKeys: every malformed key is refused with ErrMalformedKey
// (reason InvalidPublicKey), an error naming the field ("public key" or
// "private key") and why.
func TestBadInputKeys(t *testing.T) {
	for _, c := range badKeys(t) {
		t.Run(c.name, func(t *testing.T) {
			var err error
			field := "public key: "
			if c.private {
				field = "private key: "
				_, err = ParsePrivateKey(c.input)
			} else {
				_, _, err = ParsePublicKey(c.input)
			}
			wantBadInput(t, err, ErrMalformedKey, reasons.InvalidPublicKey, field, c.says)
		})
	}
}

// wantBadInput checks a refusal: the sentinel, its status reason, a message
// starting with the field and saying why.
func wantBadInput(t testing.TB, err, sentinel error, reason, field, says string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	t.Log(err)
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %q", err, sentinel)
	}
	if got := Reason(err); got != reason {
		t.Errorf("Reason = %q, want %q", got, reason)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, field) || !strings.Contains(msg, says) {
		t.Errorf("message %q does not start with %q and say %q", msg, field, says)
	}
}

func marshalPub(t testing.TB, pub any) []byte {
	t.Helper()
	p, err := MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// marshalPubRaw encodes keys MarshalPublicKey refuses to.
func marshalPubRaw(t testing.TB, pub any) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, pub)})
}

func marshalPriv(t testing.TB, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// longFormLength re-encodes the outer SEQUENCE's short-form length in the
// long form (0x81 n): the same key to a lenient BER reader, but not DER, and
// Liqo compares keys as DER bytes.
func longFormLength(der []byte) []byte {
	if len(der) < 2 || der[1] >= 0x80 {
		return der
	}
	return append([]byte{der[0], 0x81, der[1]}, der[2:]...)
}
