package handshake

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"strconv"
)

// NonceSize is the number of random bytes behind a nonce, as Liqo's nonce
// controller draws them (pkg/liqo-controller-manager/authentication/
// noncecreator-controller). Encoded, a nonce is 88 characters.
const NonceSize = 64

// nonceLen is the length of an encoded nonce: base64 of 64 bytes with padding.
var nonceLen = base64.StdEncoding.EncodedLen(NonceSize)

// nonceDomain separates gitpeer's derived nonces from any other use of the
// provider secret; the version lets the derivation change without collisions.
const nonceDomain = "gitpeer/nonce/v1"

// NewNonce returns a fresh random nonce in Liqo's format:
// base64.StdEncoding of NonceSize bytes from crypto/rand, 88 characters. Its
// only error is a failure of the system's random source.
func NewNonce() (string, error) {
	b := make([]byte, NonceSize)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("nonce: read random bytes: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DeriveNonce computes the nonce a provider issues to consumerID for epoch:
// base64.StdEncoding of HMAC-SHA512(secret, "gitpeer/nonce/v1" 0x00
// consumerID 0x00 decimal(epoch)). The 64-byte MAC gives Liqo's exact nonce
// shape (88 characters, CheckNonce passes), so Liqo's signer and verifier
// treat it as any other nonce, while the provider needs no per-peering state
// to check a Tenant: it derives the nonce again. Bumping epoch revokes every
// earlier nonce of that consumer.
//
// The input is unambiguous: the epoch's digits never contain 0x00, so the
// last 0x00 splits consumerID from epoch even if consumerID held one. secret
// should be at least 32 random bytes kept out of Git; the function does not
// check it, so that it can stay infallible.
func DeriveNonce(secret []byte, consumerID string, epoch uint64) string {
	mac := hmac.New(sha512.New, secret)
	mac.Write([]byte(nonceDomain))
	mac.Write([]byte{0})
	mac.Write([]byte(consumerID))
	mac.Write([]byte{0})
	mac.Write(strconv.AppendUint(nil, epoch, 10))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// CheckNonce reports whether s has Liqo's nonce shape: exactly 88 characters
// of padded standard base64 (no line breaks, no whitespace, canonical padding
// bits) that decode to exactly NonceSize bytes. Anything else gives
// ErrMalformedNonce; the message does not repeat the nonce.
func CheckNonce(s string) error {
	if len(s) != nonceLen {
		return fmt.Errorf("nonce: is %s long, want %d: %w", plural(len(s), "byte"), nonceLen, ErrMalformedNonce)
	}
	// The decoder skips '\r' and '\n', so check the alphabet first: a
	// nonce must have one spelling only, since it is signed as text.
	for i := 0; i < len(s); i++ {
		if !isBase64Char(s[i]) {
			return fmt.Errorf("nonce: byte %d is %q, not standard base64: %w", i, s[i], ErrMalformedNonce)
		}
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return fmt.Errorf("nonce: %v: %w", err, ErrMalformedNonce)
	}
	if len(b) != NonceSize {
		return fmt.Errorf("nonce: decodes to %s, want %d: %w", plural(len(b), "byte"), NonceSize, ErrMalformedNonce)
	}
	return nil
}

func isBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '='
}

// SignNonce signs the nonce for a Tenant's spec.signature, as Liqo's
// SignNonce (pkg/liqo-controller-manager/authentication/keys.go, called by the
// noncesigner-controller) does: over the ASCII bytes of the 88-character
// string, not the 64 bytes it decodes to. Ed25519 gives the raw 64-byte
// signature; RSA gives PKCS#1 v1.5 over SHA-256; ECDSA gives ASN.1 DER over
// SHA-256. Any crypto.Signer whose public key is one of these works (an HSM,
// a KMS), since only the standard Sign conventions are used.
//
// Unlike Liqo, it refuses to sign anything that fails CheckNonce
// (ErrMalformedNonce). The cluster key is also the TLS client key of every
// kubeconfig the cluster obtains; signing arbitrary provider-chosen bytes
// would let a hostile provider pass off, say, a TLS 1.2 CertificateVerify
// digest as a nonce and impersonate the consumer elsewhere. A base64 string of
// 88 characters cannot be such a message. A bad key gives ErrMalformedKey.
func SignNonce(key crypto.Signer, nonce string) ([]byte, error) {
	if err := CheckNonce(nonce); err != nil {
		return nil, err
	}
	sig, err := signMessage(key, []byte(nonce))
	if err != nil {
		return nil, fmt.Errorf("sign nonce: %w", err)
	}
	return sig, nil
}

// VerifyNonce checks sig, a Tenant's spec.signature, over the ASCII bytes of
// nonce with pub, as Liqo's VerifyNonce (keys.go) does for the tenant
// controller. A signature that does not verify gives ErrSignatureMismatch; a
// nonce failing CheckNonce gives ErrMalformedNonce; a nil, invalid or
// unsupported key gives ErrMalformedKey. It never panics, whatever the input.
func VerifyNonce(pub crypto.PublicKey, nonce string, sig []byte) error {
	// publicKeyDER validates the key first: ed25519.Verify panics on a key
	// of the wrong length, ecdsa on a key without a curve.
	der, err := publicKeyDER(pub)
	if err != nil {
		return err
	}
	if err := CheckNonce(nonce); err != nil {
		return err
	}
	if !verifyMessage(pub, []byte(nonce), sig) {
		return fmt.Errorf("nonce signature: does not verify with key %s: %w", fingerprintDER(der), ErrSignatureMismatch)
	}
	return nil
}
