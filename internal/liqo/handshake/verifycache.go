package handshake

import (
	"crypto"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
)

// maxVerified bounds how many successful checks a VerifyCache holds; when
// full it starts over empty.
const maxVerified = 1 << 14

// VerifyCache remembers checks that succeeded, so that a reconciler, which
// checks the same nonce signatures, CSRs and certificates at every pass
// while its peers do not change them, does the cryptography once per
// distinct input. An entry is keyed by the SHA-256 of everything the check
// reads: the kind of check, the exact bytes checked, the key's PKIX DER
// and the expected subject. Failures are never kept (each is checked
// again, its error as the check gives it). A certificate's check also
// depends on the time: its entry keeps the validity window of the chain
// that verified, and answers only for a time inside it. Safe for
// concurrent use; the zero value is not: use NewVerifyCache. A nil
// *VerifyCache checks every time.
type VerifyCache struct {
	m *boundedmap.Map[[sha256.Size]byte, window]
}

// window is when a kept success holds: always for a signature or a CSR
// (zero times), for a certificate from notBefore to notAfter inclusive
// (x509's own rule).
type window struct{ notBefore, notAfter time.Time }

func (w window) holds(now time.Time) bool {
	return w.notBefore.IsZero() && w.notAfter.IsZero() || !now.Before(w.notBefore) && !now.After(w.notAfter)
}

// NewVerifyCache returns an empty VerifyCache.
func NewVerifyCache() *VerifyCache {
	return &VerifyCache{m: boundedmap.New[[sha256.Size]byte, window](maxVerified)}
}

// key is the SHA-256 of the check's kind and its inputs, each prefixed
// with its length so that no two different inputs share a key.
func key(kind string, parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range append([][]byte{[]byte(kind)}, parts...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// VerifyNonce is VerifyNonce(pub, nonce, sig), answered from the cache
// when the same signature over the same nonce verified with the same key
// before.
func (c *VerifyCache) VerifyNonce(pub crypto.PublicKey, nonce string, sig []byte) error {
	if c == nil {
		return VerifyNonce(pub, nonce, sig)
	}
	der, err := publicKeyDER(pub)
	if err != nil {
		return VerifyNonce(pub, nonce, sig) // its error, as it gives it
	}
	k := key("nonce", der, []byte(nonce), sig)
	if _, ok := c.m.Get(k); ok {
		return nil
	}
	if err := VerifyNonce(pub, nonce, sig); err != nil {
		return err
	}
	c.m.Put(k, window{})
	return nil
}

// CheckControlPlaneCSR is CheckControlPlaneCSR(csrPEM, pubDER, consumerID),
// answered from the cache when the same bytes passed it for the same key
// and consumer before.
func (c *VerifyCache) CheckControlPlaneCSR(csrPEM, pubDER []byte, consumerID string) error {
	if c == nil {
		return CheckControlPlaneCSR(csrPEM, pubDER, consumerID)
	}
	k := key("controlplane-csr", csrPEM, pubDER, []byte(consumerID))
	if _, ok := c.m.Get(k); ok {
		return nil
	}
	if err := CheckControlPlaneCSR(csrPEM, pubDER, consumerID); err != nil {
		return err
	}
	c.m.Put(k, window{})
	return nil
}

// CheckResourceSliceCSR is CheckResourceSliceCSR(csrPEM, pubDER,
// sliceName, consumerID), answered from the cache when the same bytes
// passed it for the same key, slice and consumer before.
func (c *VerifyCache) CheckResourceSliceCSR(csrPEM, pubDER []byte, sliceName, consumerID string) error {
	if c == nil {
		return CheckResourceSliceCSR(csrPEM, pubDER, sliceName, consumerID)
	}
	k := key("resourceslice-csr", csrPEM, pubDER, []byte(sliceName), []byte(consumerID))
	if _, ok := c.m.Get(k); ok {
		return nil
	}
	if err := CheckResourceSliceCSR(csrPEM, pubDER, sliceName, consumerID); err != nil {
		return err
	}
	c.m.Put(k, window{})
	return nil
}

// VerifyClientCertificate is VerifyClientCertificate(certPEM, caPEM,
// pubDER, commonName, organization, now), answered from the cache when the
// same certificate verified against the same CA bundle, key and subject
// before and now is inside the validity of every certificate of the chain
// that verified then (what x509 checks of the time; the rest of the check
// does not depend on it).
func (c *VerifyCache) VerifyClientCertificate(certPEM, caPEM, pubDER []byte, commonName, organization string, now time.Time) error {
	if c == nil || now.IsZero() {
		return VerifyClientCertificate(certPEM, caPEM, pubDER, commonName, organization, now)
	}
	k := key("client-certificate", certPEM, caPEM, pubDER, []byte(commonName), []byte(organization))
	if w, ok := c.m.Get(k); ok && w.holds(now) {
		return nil
	}
	chain, err := verifyClientCertificate(certPEM, caPEM, pubDER, commonName, organization, now)
	if err != nil {
		return err
	}
	w := window{notBefore: chain[0].NotBefore, notAfter: chain[0].NotAfter}
	for _, crt := range chain[1:] {
		if crt.NotBefore.After(w.notBefore) {
			w.notBefore = crt.NotBefore
		}
		if crt.NotAfter.Before(w.notAfter) {
			w.notAfter = crt.NotAfter
		}
	}
	if w.holds(now) && !(w.notBefore.IsZero() && w.notAfter.IsZero()) {
		c.m.Put(k, w)
	}
	return nil
}
