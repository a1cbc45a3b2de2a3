package handshake

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
)

// Keys are generated at run time (no private key is ever a fixture). RSA
// generation is slow, so each kind is made once per test binary; tests that
// need "another cluster's key" ask for a second one by name.
var (
	keyMu    sync.Mutex
	keyCache = map[string]crypto.Signer{}
)

// testKey returns the key called name of the given kind ("ed25519", "rsa",
// "rsa1024", "p224", "p256", "p384", "p521"), the same one on every call.
func testKey(t testing.TB, kind, name string) crypto.Signer {
	t.Helper()
	keyMu.Lock()
	defer keyMu.Unlock()
	id := kind + "/" + name
	if k, ok := keyCache[id]; ok {
		return k
	}
	var (
		k   crypto.Signer
		err error
	)
	switch kind {
	case "ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	case "rsa":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "rsa1024":
		k, err = rsa.GenerateKey(rand.Reader, 1024)
	case "p224":
		k, err = ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	case "p256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "p384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "p521":
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	default:
		t.Fatalf("unknown key kind %q", kind)
	}
	if err != nil {
		t.Fatalf("generate %s key: %v", kind, err)
	}
	keyCache[id] = k
	return k
}

// supportedKinds are the key types the handshake accepts.
var supportedKinds = []string{"ed25519", "rsa", "p256", "p384", "p521"}

// pkixDER is the test's own path to a key's PKIX DER, independent of the
// package's publicKeyDER.
func pkixDER(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("marshal pkix: %v", err)
	}
	return der
}

// rawCSR builds a CSR with any subject, bypassing the package, for the cases
// the package would never produce.
func rawCSR(t testing.TB, key crypto.Signer, subject pkix.Name) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatalf("create csr: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// reencode replaces a PEM block's bytes, keeping its type.
func reencode(t testing.TB, p []byte, edit func(der []byte) []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("reencode: not PEM")
	}
	der := edit(bytes.Clone(b.Bytes))
	return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der})
}

// retype changes a PEM block's type, keeping its bytes.
func retype(t testing.TB, p []byte, typ string) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("retype: not PEM")
	}
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b.Bytes})
}

// wantErr checks err against the expected sentinel (nil: no error) and that
// the message follows the package's style: lowercase, ending in the
// sentinel's text.
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	t.Log(err)
	msg := err.Error()
	if !strings.HasSuffix(msg, ": "+want.Error()) {
		t.Errorf("message %q does not end with %q", msg, ": "+want.Error())
	}
	if msg != strings.ToLower(msg[:1])+msg[1:] {
		t.Errorf("message %q does not start lowercase", msg)
	}
}
