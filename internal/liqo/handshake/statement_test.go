package handshake

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"math/big"
	"testing"
)

var statement = []byte("gitpeer-manifest-v1\ncluster alpha\ndirectory clusters/alpha\nsequence 1\n")

func TestSignAndVerifyStatement(t *testing.T) {
	for _, kind := range supportedKinds {
		t.Run(kind, func(t *testing.T) {
			key := testKey(t, kind, "a")
			sig, err := SignStatement(key, statement)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("verifies", func(t *testing.T) {
				wantErr(t, VerifyStatement(key.Public(), statement, sig), nil)
			})
			t.Run("signs the message as the standard library checks it", func(t *testing.T) {
				if !stdlibVerify(key.Public(), statement, sig) {
					t.Error("the standard library does not verify the signature")
				}
			})
			t.Run("fails for a message with one byte changed", func(t *testing.T) {
				for _, i := range []int{0, len(statement) / 2, len(statement) - 1} {
					msg := append([]byte(nil), statement...)
					msg[i] ^= 0x01
					wantErr(t, VerifyStatement(key.Public(), msg, sig), ErrSignatureMismatch)
				}
			})
			t.Run("fails for a message with a byte appended", func(t *testing.T) {
				wantErr(t, VerifyStatement(key.Public(), append(append([]byte(nil), statement...), '\n'), sig), ErrSignatureMismatch)
			})
			t.Run("fails for a flipped signature bit", func(t *testing.T) {
				bad := append([]byte(nil), sig...)
				bad[len(bad)/2] ^= 0x01
				wantErr(t, VerifyStatement(key.Public(), statement, bad), ErrSignatureMismatch)
			})
			t.Run("fails for an empty signature", func(t *testing.T) {
				wantErr(t, VerifyStatement(key.Public(), statement, nil), ErrSignatureMismatch)
			})
			t.Run("fails with another cluster's key", func(t *testing.T) {
				wantErr(t, VerifyStatement(testKey(t, kind, "b").Public(), statement, sig), ErrSignatureMismatch)
			})
			t.Run("works through an opaque signer", func(t *testing.T) {
				sig2, err := SignStatement(opaqueSigner{key}, statement)
				if err != nil {
					t.Fatal(err)
				}
				wantErr(t, VerifyStatement(key.Public(), statement, sig2), nil)
			})
			t.Run("is never a nonce signature", func(t *testing.T) {
				// A statement is not a nonce, so the same bytes and signature
				// are refused as a Tenant's answer.
				wantErr(t, VerifyNonce(key.Public(), string(statement), sig), ErrMalformedNonce)
			})
		})
	}
	t.Run("signs pure Ed25519 over the whole message", func(t *testing.T) {
		key := testKey(t, "ed25519", "a").(ed25519.PrivateKey)
		sig, err := SignStatement(key, statement)
		if err != nil {
			t.Fatal(err)
		}
		if want := ed25519.Sign(key, statement); string(sig) != string(want) {
			t.Error("not the pure Ed25519 signature of the message")
		}
	})
}

func TestSignStatementRefusesBadKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{
		{"refuses a nil key", nil},
		{"refuses an ed25519 key of the wrong length", ed25519.PrivateKey(make([]byte, 3))},
		{"refuses an empty ecdsa key", &ecdsa.PrivateKey{}},
		{"refuses an rsa key under 2048 bits", testKey(t, "rsa1024", "a")},
		{"refuses a P-224 key", testKey(t, "p224", "a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := SignStatement(tc.key, statement)
			wantErr(t, err, ErrMalformedKey)
			if sig != nil {
				t.Error("returned a signature with an error")
			}
		})
	}
}

func TestVerifyStatementRejectsBadKeysWithoutPanicking(t *testing.T) {
	offCurve := &ecdsa.PublicKey{Curve: elliptic.P256(), X: big.NewInt(1), Y: big.NewInt(1)}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
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
		{"rejects a P-224 key", p224.Public()},
		{"rejects a private key given as public", testKey(t, "ed25519", "a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, VerifyStatement(tc.pub, statement, sig), ErrMalformedKey)
		})
	}
}
