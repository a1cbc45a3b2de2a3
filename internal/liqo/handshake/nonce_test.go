package handshake

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"math/big"
	"strings"
	"testing"
)

func TestNewNonce(t *testing.T) {
	a, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 88 {
		t.Errorf("nonce is %d characters, want 88", len(a))
	}
	raw, err := base64.StdEncoding.DecodeString(a)
	if err != nil || len(raw) != NonceSize {
		t.Errorf("nonce decodes to %d bytes (%v), want %d", len(raw), err, NonceSize)
	}
	if err := CheckNonce(a); err != nil {
		t.Error(err)
	}
	if a == b {
		t.Error("two nonces are equal")
	}
}

func TestDeriveNonce(t *testing.T) {
	secret := []byte("s3cret")
	t.Run("matches a vector computed by openssl", func(t *testing.T) {
		// printf 'gitpeer/nonce/v1\x00alpha\x0042' | openssl dgst -sha512 -hmac s3cret -binary | base64 -w0
		const want = "P7nAqOb00/YvjN7Cy6mD8zGLJZhJLSIyJ9ST5W7T5U2rTJ7Tj5Lx0dA3o7eL9WSnuzhPUGo5tmI9f1ZhKuujBA=="
		if got := DeriveNonce(secret, "alpha", 42); got != want {
			t.Errorf("DeriveNonce = %s, want %s", got, want)
		}
	})
	t.Run("is deterministic", func(t *testing.T) {
		first, second := DeriveNonce(secret, "alpha", 1), DeriveNonce(secret, "alpha", 1)
		if first != second {
			t.Error("two derivations differ")
		}
	})
	t.Run("has Liqo's nonce shape", func(t *testing.T) {
		n := DeriveNonce(secret, "alpha", 1)
		if err := CheckNonce(n); err != nil {
			t.Error(err)
		}
		if err := CheckNonce(DeriveNonce(nil, "", 0)); err != nil {
			t.Error(err)
		}
	})
	base := DeriveNonce(secret, "alpha", 1)
	for _, tc := range []struct {
		name string
		got  string
	}{
		{"differs for another consumer", DeriveNonce(secret, "beta", 1)},
		{"differs for another epoch", DeriveNonce(secret, "alpha", 2)},
		{"differs for another secret", DeriveNonce([]byte("other"), "alpha", 1)},
		{"does not let the consumer id run into the epoch", DeriveNonce(secret, "alpha1", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got == base {
				t.Error("nonces are equal")
			}
		})
	}
}

func TestCheckNonce(t *testing.T) {
	good := DeriveNonce([]byte("k"), "alpha", 1)
	// The last data character of a 64-byte encoding carries 2 data bits
	// and 4 zero bits; 'B' sets one of the zero bits.
	noncanonical := good[:85] + "B=="
	if good[85] == 'B' {
		noncanonical = good[:85] + "C=="
	}
	for _, tc := range []struct {
		name  string
		nonce string
		ok    bool
	}{
		{"accepts a derived nonce", good, true},
		{"accepts all A's with padding", strings.Repeat("A", 86) + "==", true},
		{"rejects an empty nonce", "", false},
		{"rejects 87 characters", good[:87], false},
		{"rejects 89 characters", good + "=", false},
		{"rejects a line break", good[:40] + "\n" + good[41:], false},
		{"rejects a space", good[:40] + " " + good[41:], false},
		{"rejects url-safe characters", strings.Repeat("-", 86) + "==", false},
		{"rejects a nonce without padding that decodes to 66 bytes", strings.Repeat("A", 88), false},
		{"rejects padding in the middle", good[:40] + "=" + good[41:], false},
		{"rejects non-canonical padding bits", noncanonical, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckNonce(tc.nonce)
			if tc.ok {
				wantErr(t, err, nil)
			} else {
				wantErr(t, err, ErrMalformedNonce)
			}
		})
	}
}

func TestSignAndVerifyNonce(t *testing.T) {
	nonce, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range supportedKinds {
		t.Run(kind, func(t *testing.T) {
			key := testKey(t, kind, "a")
			sig, err := SignNonce(key, nonce)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("verifies", func(t *testing.T) {
				wantErr(t, VerifyNonce(key.Public(), nonce, sig), nil)
			})
			t.Run("signs the ASCII string, as the standard library confirms", func(t *testing.T) {
				if !stdlibVerify(key.Public(), []byte(nonce), sig) {
					t.Error("signature does not verify over the ASCII bytes")
				}
				decoded, _ := base64.StdEncoding.DecodeString(nonce)
				if stdlibVerify(key.Public(), decoded, sig) {
					t.Error("signature verifies over the decoded bytes")
				}
			})
			t.Run("fails for another nonce", func(t *testing.T) {
				wantErr(t, VerifyNonce(key.Public(), other, sig), ErrSignatureMismatch)
			})
			t.Run("fails for a nonce with one character changed", func(t *testing.T) {
				tampered := []byte(nonce)
				tampered[10] = 'A'
				if nonce[10] == 'A' {
					tampered[10] = 'B'
				}
				wantErr(t, VerifyNonce(key.Public(), string(tampered), sig), ErrSignatureMismatch)
			})
			t.Run("fails for a flipped signature bit", func(t *testing.T) {
				bad := append([]byte(nil), sig...)
				bad[len(bad)/2] ^= 0x01
				wantErr(t, VerifyNonce(key.Public(), nonce, bad), ErrSignatureMismatch)
			})
			t.Run("fails for a truncated signature", func(t *testing.T) {
				wantErr(t, VerifyNonce(key.Public(), nonce, sig[:len(sig)-1]), ErrSignatureMismatch)
			})
			t.Run("fails for an empty signature", func(t *testing.T) {
				wantErr(t, VerifyNonce(key.Public(), nonce, nil), ErrSignatureMismatch)
			})
			t.Run("fails with another cluster's key", func(t *testing.T) {
				wantErr(t, VerifyNonce(testKey(t, kind, "b").Public(), nonce, sig), ErrSignatureMismatch)
			})
			t.Run("works through an opaque signer", func(t *testing.T) {
				sig2, err := SignNonce(opaqueSigner{key}, nonce)
				if err != nil {
					t.Fatal(err)
				}
				wantErr(t, VerifyNonce(key.Public(), nonce, sig2), nil)
			})
		})
	}
	t.Run("gives a raw 64-byte ed25519 signature, deterministic", func(t *testing.T) {
		key := testKey(t, "ed25519", "a")
		a, _ := SignNonce(key, nonce)
		b, _ := SignNonce(key, nonce)
		if len(a) != ed25519.SignatureSize || string(a) != string(b) {
			t.Errorf("signatures: %d bytes, equal %v", len(a), string(a) == string(b))
		}
	})
	t.Run("gives a PKCS#1 v1.5 rsa signature the size of the modulus", func(t *testing.T) {
		key := testKey(t, "rsa", "a").(*rsa.PrivateKey)
		sig, _ := SignNonce(key, nonce)
		if len(sig) != key.Size() {
			t.Errorf("signature is %d bytes, want %d", len(sig), key.Size())
		}
	})
}

// stdlibVerify verifies with the standard library directly, so the tests do
// not only check VerifyNonce against SignNonce.
func stdlibVerify(pub crypto.PublicKey, msg, sig []byte) bool {
	digest := sha256.Sum256(msg)
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil
	case *ecdsa.PublicKey:
		return ecdsa.VerifyASN1(k, digest[:], sig)
	}
	return false
}

// opaqueSigner hides the concrete key type, as an HSM or KMS signer would.
type opaqueSigner struct{ s crypto.Signer }

func (o opaqueSigner) Public() crypto.PublicKey { return o.s.Public() }
func (o opaqueSigner) Sign(r io.Reader, d []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.s.Sign(r, d, opts)
}

func TestSignNonceRefuses(t *testing.T) {
	nonce := DeriveNonce([]byte("k"), "alpha", 1)
	key := testKey(t, "ed25519", "a")
	for _, tc := range []struct {
		name  string
		key   crypto.Signer
		nonce string
		want  error
	}{
		{"refuses to sign a short string", key, "hello", ErrMalformedNonce},
		{"refuses to sign the decoded nonce bytes", key, mustDecode(t, nonce), ErrMalformedNonce},
		{"refuses to sign a 32-byte digest", key, string(make([]byte, 32)), ErrMalformedNonce},
		{"refuses a nil key", nil, nonce, ErrMalformedKey},
		{"refuses an ed25519 key of the wrong length", ed25519.PrivateKey(make([]byte, 3)), nonce, ErrMalformedKey},
		{"refuses an empty ecdsa key", &ecdsa.PrivateKey{}, nonce, ErrMalformedKey},
		{"refuses an rsa key under 2048 bits", testKey(t, "rsa1024", "a"), nonce, ErrMalformedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := SignNonce(tc.key, tc.nonce)
			wantErr(t, err, tc.want)
			if sig != nil {
				t.Error("returned a signature with an error")
			}
		})
	}
}

func mustDecode(t testing.TB, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVerifyNonceRejectsBadKeysWithoutPanicking(t *testing.T) {
	nonce := DeriveNonce([]byte("k"), "alpha", 1)
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	offCurve := &ecdsa.PublicKey{Curve: elliptic.P256(), X: big.NewInt(1), Y: big.NewInt(1)}
	sig := make([]byte, 64)
	for _, tc := range []struct {
		name string
		pub  crypto.PublicKey
	}{
		{"rejects a nil key", nil},
		{"rejects an ed25519 key of the wrong length", ed25519.PublicKey(make([]byte, 31))},
		{"rejects an rsa key without a modulus", &rsa.PublicKey{}},
		{"rejects an ecdsa key without a curve", &ecdsa.PublicKey{}},
		{"rejects an ecdsa point off the curve", offCurve},
		{"rejects an x25519 key", x.PublicKey()},
		{"rejects a private key given as public", testKey(t, "ed25519", "a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, VerifyNonce(tc.pub, nonce, sig), ErrMalformedKey)
		})
	}
	t.Run("rejects a malformed nonce", func(t *testing.T) {
		wantErr(t, VerifyNonce(testKey(t, "ed25519", "a").Public(), "short", sig), ErrMalformedNonce)
	})
}
