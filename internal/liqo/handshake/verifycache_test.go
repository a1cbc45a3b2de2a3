package handshake

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
	"time"
)

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sameAnswer fails t unless the cached check and the plain one give the
// same error (or none), at the first call and again from the cache.
func sameAnswer(t *testing.T, what string, cached, plain func() error) {
	t.Helper()
	want := plain()
	for i := range 2 {
		if got := cached(); errText(got) != errText(want) {
			t.Errorf("%s, call %d: cached %v, plain %v", what, i, got, want)
		}
	}
}

// Every cached check answers what the check answers, success or failure,
// and a warm cache serves no input that differs from what succeeded: a
// byte of the signature, CSR or certificate, the key, the nonce, the
// subject or the CA bundle changed; a certificate's success is not served
// outside its validity.
func TestVerifyCacheAnswersAsTheChecks(t *testing.T) {
	c := NewVerifyCache()
	key, other := testKey(t, "ed25519", "a"), testKey(t, "ed25519", "b")
	pubDER, otherDER := pkixDER(t, key.Public()), pkixDER(t, other.Public())
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 1
		return b
	}

	nonce := DeriveNonce([]byte("0123456789abcdef0123456789abcdef"), consumer, 1)
	sig, err := SignNonce(key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	otherNonce := DeriveNonce([]byte("0123456789abcdef0123456789abcdef"), consumer, 2)
	for name, in := range map[string]struct {
		pub   any
		nonce string
		sig   []byte
	}{
		"a good signature": {key.Public(), nonce, sig}, "another key": {other.Public(), nonce, sig},
		"another nonce": {key.Public(), otherNonce, sig}, "a signature byte flipped": {key.Public(), nonce, flip(sig, 3)},
		"a malformed nonce": {key.Public(), "short", sig},
	} {
		sameAnswer(t, "nonce: "+name, func() error { return c.VerifyNonce(in.pub, in.nonce, in.sig) },
			func() error { return VerifyNonce(in.pub, in.nonce, in.sig) })
	}

	csr := mustCSR(t, key)
	sliceCSR, err := ResourceSliceCSR(key, slice, consumer)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]struct {
		csr, der []byte
		id       string
	}{
		"a good CSR": {csr, pubDER, consumer}, "another key": {csr, otherDER, consumer}, "another consumer": {csr, pubDER, "cl-other"},
		"a CSR byte flipped": {flip(csr, len(csr)/2), pubDER, consumer},
	} {
		sameAnswer(t, "controlplane csr: "+name, func() error { return c.CheckControlPlaneCSR(in.csr, in.der, in.id) },
			func() error { return CheckControlPlaneCSR(in.csr, in.der, in.id) })
		sameAnswer(t, "slice csr: "+name, func() error { return c.CheckResourceSliceCSR(sliceCSR, in.der, slice, in.id) },
			func() error { return CheckResourceSliceCSR(sliceCSR, in.der, slice, in.id) })
	}
	sameAnswer(t, "slice csr: the control-plane CSR", func() error { return c.CheckResourceSliceCSR(csr, pubDER, slice, consumer) },
		func() error { return CheckResourceSliceCSR(csr, pubDER, slice, consumer) })
	sameAnswer(t, "slice csr: another slice", func() error { return c.CheckResourceSliceCSR(sliceCSR, pubDER, "other", consumer) },
		func() error { return CheckResourceSliceCSR(sliceCSR, pubDER, "other", consumer) })

	ca, otherCA := mustCA(t, "provider-ca"), mustCA(t, "other-ca")
	cert := mustSign(t, ca, csr, t0, certLife)
	crt := parseCert(t, cert)
	for name, in := range map[string]struct {
		cert, ca, der []byte
		cn, org       string
		now           time.Time
	}{
		"a good certificate":            {cert, ca.CertPEM, pubDER, consumer, "liqo.io", t0},
		"another key":                   {cert, ca.CertPEM, otherDER, consumer, "liqo.io", t0},
		"another CA":                    {cert, otherCA.CertPEM, pubDER, consumer, "liqo.io", t0},
		"another common name":           {cert, ca.CertPEM, pubDER, "cl-other", "liqo.io", t0},
		"another organization":          {cert, ca.CertPEM, pubDER, consumer, "other", t0},
		"a certificate byte flipped":    {flip(cert, len(cert)/2), ca.CertPEM, pubDER, consumer, "liqo.io", t0},
		"the last second of validity":   {cert, ca.CertPEM, pubDER, consumer, "liqo.io", crt.NotAfter},
		"a second after it expired":     {cert, ca.CertPEM, pubDER, consumer, "liqo.io", crt.NotAfter.Add(time.Second)},
		"a second before it is valid":   {cert, ca.CertPEM, pubDER, consumer, "liqo.io", crt.NotBefore.Add(-time.Second)},
		"the first second of validity":  {cert, ca.CertPEM, pubDER, consumer, "liqo.io", crt.NotBefore},
		"after the CA expired":          {cert, ca.CertPEM, pubDER, consumer, "liqo.io", ca.Cert.NotAfter.Add(time.Second)},
		"the zero time (the clock now)": {cert, ca.CertPEM, pubDER, consumer, "liqo.io", time.Time{}},
	} {
		sameAnswer(t, "certificate: "+name, func() error { return c.VerifyClientCertificate(in.cert, in.ca, in.der, in.cn, in.org, in.now) },
			func() error { return VerifyClientCertificate(in.cert, in.ca, in.der, in.cn, in.org, in.now) })
	}
	// Warm: the good certificate is in the cache; later times are checked
	// against its validity, never answered by the earlier success.
	if err := c.VerifyClientCertificate(cert, ca.CertPEM, pubDER, consumer, "liqo.io", t0); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyClientCertificate(cert, ca.CertPEM, pubDER, consumer, "liqo.io", crt.NotAfter.Add(time.Nanosecond)); !errors.Is(err, ErrUntrustedCertificate) {
		t.Fatalf("an expired certificate from a warm cache: %v", err)
	}
	var nilCache *VerifyCache
	if err := nilCache.VerifyNonce(key.Public(), nonce, flip(sig, 0)); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("a nil cache: %v", err)
	}
}

// publicKeyDER writes an Ed25519 key's DER itself: the bytes x509 writes.
func TestEd25519DERIsX509s(t *testing.T) {
	for i := range 20 {
		key := testKey(t, "ed25519", fmt.Sprint("der", i))
		got, err := publicKeyDER(key.Public())
		want, werr := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%x, %v; x509: %x, %v", got, err, want, werr)
		}
	}
}
