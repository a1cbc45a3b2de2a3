package handshake

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
)

// SignStatement signs msg, one of gitpeer's own signed statements (a signed
// manifest, a key rotation), with a cluster key: pure Ed25519 over msg, or
// for RSA (PKCS#1 v1.5) and ECDSA (ASN.1) keys over its SHA-256, the same
// schemes as Liqo's nonce signatures. Callers put a domain-separation prefix
// in msg so that a statement can never be replayed as a nonce signature or
// as another kind of statement. Unsupported keys give ErrMalformedKey.
func SignStatement(key crypto.Signer, msg []byte) ([]byte, error) {
	sig, err := signMessage(key, msg)
	if err != nil {
		return nil, fmt.Errorf("sign statement: %w", err)
	}
	return sig, nil
}

// VerifyStatement checks a SignStatement signature. A signature that does
// not verify gives ErrSignatureMismatch; a nil, invalid or unsupported key
// gives ErrMalformedKey. It never panics, whatever the input.
func VerifyStatement(pub crypto.PublicKey, msg, sig []byte) error {
	der, err := publicKeyDER(pub)
	if err != nil {
		return err
	}
	if !verifyMessage(pub, msg, sig) {
		return fmt.Errorf("does not verify with key %s: %w", fingerprintDER(der), ErrSignatureMismatch)
	}
	return nil
}

func signMessage(key crypto.Signer, msg []byte) ([]byte, error) {
	key, err := checkSigner(key)
	if err != nil {
		return nil, err
	}
	switch key.Public().(type) {
	case ed25519.PublicKey:
		// crypto.Hash(0) asks for pure Ed25519 over the whole message.
		return key.Sign(rand.Reader, msg, crypto.Hash(0))
	default:
		// With a plain crypto.Hash, RSA signers use PKCS#1 v1.5 and ECDSA
		// signers return ASN.1, the encodings Liqo verifies.
		digest := sha256.Sum256(msg)
		return key.Sign(rand.Reader, digest[:], crypto.SHA256)
	}
}

// verifyMessage expects a key publicKeyDER accepted: ed25519.Verify panics
// on a key of the wrong length, ecdsa on a key without a curve.
func verifyMessage(pub crypto.PublicKey, msg, sig []byte) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	case *rsa.PublicKey:
		digest := sha256.Sum256(msg)
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil
	case *ecdsa.PublicKey:
		digest := sha256.Sum256(msg)
		return ecdsa.VerifyASN1(k, digest[:], sig)
	}
	return false
}
