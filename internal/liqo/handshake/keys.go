package handshake

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// minRSABits is the smallest RSA modulus accepted: Liqo's
// --tls-compatibility-mode generates 2048-bit keys (keys.go GenerateRSAKeys),
// and anything smaller is below every current recommendation.
const minRSABits = 2048

// GenerateKey returns a new Ed25519 private key, Liqo's default cluster key
// algorithm (pkg/liqo-controller-manager/authentication/keys.go
// GenerateEd25519Keys). Its only error is a failure of the system's random
// source.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return priv, nil
}

// MarshalPrivateKey encodes an Ed25519, RSA or ECDSA private key as PEM
// "PRIVATE KEY" (PKCS#8), the privateKey of Liqo's authentication-keys Secret
// (keys.go InitClusterKeys). The output ends with a single "\n". A nil key, a
// key of another type, or an Ed25519 key of the wrong length gives
// ErrMalformedKey.
func MarshalPrivateKey(key crypto.Signer) ([]byte, error) {
	key, err := checkSigner(key)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("private key: %v: %w", err, ErrMalformedKey)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// MarshalPublicKey encodes an Ed25519, RSA or ECDSA public key as PEM
// "PUBLIC KEY" (PKIX), the publicKey of Liqo's authentication-keys Secret and
// the Tenant.spec.publicKey of Liqo v1.0.2 and later (forge/tenant.go). The
// output ends with a single "\n". Keys ParsePublicKey would refuse (RSA under
// 2048 bits, curves other than P-256/384/521, Ed25519 keys not 32 bytes long)
// give ErrMalformedKey.
func MarshalPublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := publicKeyDER(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePrivateKey decodes a PEM "PRIVATE KEY" (PKCS#8) holding an Ed25519,
// RSA or ECDSA key, as Liqo reads its authentication-keys Secret (keys.go
// GetClusterKeys). The input must start with the BEGIN line and hold exactly
// one block; only whitespace may follow it. Any other input gives
// ErrMalformedKey. The message never includes key material.
func ParsePrivateKey(pemBytes []byte) (crypto.Signer, error) {
	block, err := decodePEMBlock(pemBytes, pemPrivateKey, trailingSpace)
	if err != nil {
		return nil, fmt.Errorf("private key: %v: %w", err, ErrMalformedKey)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		// The parser's message describes structure, not secret bytes.
		return nil, fmt.Errorf("private key: parse pkcs#8: %v: %w", err, ErrMalformedKey)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key: unsupported type %T: %w", key, ErrMalformedKey)
	}
	return checkSigner(signer)
}

// ParsePublicKey parses a Tenant public key as Liqo's ParseTenantPublicKey
// (pkg/liqo-controller-manager/authentication/csr.go) does: PEM "PUBLIC KEY"
// (PKIX), as written since Liqo v1.0.2, or else exactly 32 raw bytes taken as
// an Ed25519 key, as Liqo v1.0.0 and v1.0.1 wrote it. It returns the key and
// its PKIX DER, the bytes Liqo compares a CSR's key against.
//
// It accepts a subset of what Liqo accepts, so a key it passes is never
// refused later by a real Liqo. Liqo ignores the PEM type, whole lines of text
// before the block and anything after it; here the input must start with the
// BEGIN line, hold a single "PUBLIC KEY" block without headers, and have only
// whitespace after it. The DER must be canonical (re-encoding it gives the same bytes),
// because Liqo compares DER byte for byte and a non-canonical key would never
// match any CSR. Only Ed25519, RSA of at least 2048 bits and ECDSA on P-256,
// P-384 or P-521 are accepted. Every failure gives ErrMalformedKey.
func ParsePublicKey(b []byte) (crypto.PublicKey, []byte, error) {
	if len(b) == ed25519.PublicKeySize {
		// Liqo tries PEM first; 32 bytes are too short to hold a PEM block,
		// so the raw form is the only reading of such input.
		if block, _ := pem.Decode(b); block == nil {
			pub := ed25519.PublicKey(bytes.Clone(b))
			der, err := publicKeyDER(pub)
			if err != nil {
				return nil, nil, err
			}
			return pub, der, nil
		}
	}
	if !bytes.Contains(b, pemBegin) {
		return nil, nil, fmt.Errorf("public key: is neither PEM nor a raw ed25519 key (%s, want %d): %w", plural(len(b), "byte"), ed25519.PublicKeySize, ErrMalformedKey)
	}
	block, err := decodePEMBlock(b, pemPublicKey, trailingSpace)
	if err != nil {
		return nil, nil, fmt.Errorf("public key: %v: %w", err, ErrMalformedKey)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("public key: parse pkix: %v: %w", err, ErrMalformedKey)
	}
	der, err := publicKeyDER(pub)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(der, block.Bytes) {
		return nil, nil, fmt.Errorf("public key: pkix der is not canonical: %w", ErrMalformedKey)
	}
	return pub, der, nil
}

// Fingerprint returns "sha256:" followed by the 64 lowercase hex digits of the
// SHA-256 of pub's PKIX DER: a short, stable name for a key in messages,
// status and pins. An unsupported or invalid key gives ErrMalformedKey.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := publicKeyDER(pub)
	if err != nil {
		return "", err
	}
	return fingerprintDER(der), nil
}

// fingerprintDER is Fingerprint over DER that is already encoded.
func fingerprintDER(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// publicKeyDER checks that pub is a key the handshake supports and returns its
// PKIX DER. It is the single gate for public keys, so Marshal, Parse,
// Fingerprint and the CSR and certificate checks agree on what is valid.
func publicKeyDER(pub crypto.PublicKey) ([]byte, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		// x509 would encode a key of any length without complaint.
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("public key: ed25519 key is %s, want %d: %w", plural(len(k), "byte"), ed25519.PublicKeySize, ErrMalformedKey)
		}
		// What x509.MarshalPKIXPublicKey writes (RFC 8410: the algorithm
		// identifier has no parameters), without its ASN.1 reflection: a
		// pass asks this of the same keys many times.
		return append(append(make([]byte, 0, len(ed25519DERPrefix)+len(k)), ed25519DERPrefix...), k...), nil
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return nil, fmt.Errorf("public key: empty rsa key: %w", ErrMalformedKey)
		}
		if k.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("public key: rsa key has %d bits, want at least %d: %w", k.N.BitLen(), minRSABits, ErrMalformedKey)
		}
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil || k.X == nil || k.Y == nil {
			return nil, fmt.Errorf("public key: empty ecdsa key: %w", ErrMalformedKey)
		}
		if !supportedCurve(k.Curve) {
			name := "unnamed"
			if p := k.Curve.Params(); p != nil && p.Name != "" {
				name = p.Name
			}
			return nil, fmt.Errorf("public key: ecdsa curve %s is not supported, want P-256, P-384 or P-521: %w", name, ErrMalformedKey)
		}
	case nil:
		return nil, fmt.Errorf("public key: missing: %w", ErrMalformedKey)
	default:
		return nil, fmt.Errorf("public key: unsupported type %T, want ed25519, rsa or ecdsa: %w", pub, ErrMalformedKey)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %v: %w", err, ErrMalformedKey)
	}
	return der, nil
}

// ed25519DERPrefix is the PKIX DER of an Ed25519 public key up to the key:
// SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (33 bytes, 0 unused) }.
var ed25519DERPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

func supportedCurve(c elliptic.Curve) bool {
	return c == elliptic.P256() || c == elliptic.P384() || c == elliptic.P521()
}

// checkSigner rejects signers that would make the standard library panic or
// produce something Liqo cannot read, and normalizes *ed25519.PrivateKey (a
// crypto.Signer too, through its value methods) to the value x509 expects.
func checkSigner(key crypto.Signer) (crypto.Signer, error) {
	switch k := key.(type) {
	case nil:
		return nil, fmt.Errorf("private key: missing: %w", ErrMalformedKey)
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("private key: ed25519 key is %s, want %d: %w", plural(len(k), "byte"), ed25519.PrivateKeySize, ErrMalformedKey)
		}
	case *ed25519.PrivateKey:
		if k == nil {
			return nil, fmt.Errorf("private key: missing: %w", ErrMalformedKey)
		}
		return checkSigner(*k)
	case *rsa.PrivateKey:
		if k == nil || k.N == nil || k.D == nil {
			return nil, fmt.Errorf("private key: empty rsa key: %w", ErrMalformedKey)
		}
	case *ecdsa.PrivateKey:
		if k == nil || k.Curve == nil || k.D == nil || k.X == nil || k.Y == nil {
			return nil, fmt.Errorf("private key: empty ecdsa key: %w", ErrMalformedKey)
		}
	}
	// Other signers (an HSM, a KMS) are fine as long as their public half
	// is. The message names the private key: that is what the caller read.
	if _, err := publicKeyDER(key.Public()); err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	return key, nil
}

// errNoKey is returned when a check is asked to compare against no key at all.
var errNoKey = errors.New("no expected public key given")

// SameKey reports whether a and b are the same public key (same
// Fingerprint). An unsupported or invalid key gives ErrMalformedKey.
func SameKey(a, b crypto.PublicKey) (bool, error) {
	fa, err := Fingerprint(a)
	if err != nil {
		return false, err
	}
	fb, err := Fingerprint(b)
	if err != nil {
		return false, err
	}
	return fa == fb, nil
}
