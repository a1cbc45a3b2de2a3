package handshake

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"sync"
	"testing"
)

// The fuzz targets cover every parser of input that crosses the trust
// boundary (another cluster's commits). Each must never panic, and anything
// it accepts must satisfy, through an independent path, what Liqo checks.

// sentinels lists every error a check may wrap; a failure must wrap one.
var sentinels = []error{
	ErrSignatureMismatch, ErrMalformedNonce, ErrMalformedKey, ErrMalformedCSR, ErrCSRSubject,
	ErrCSRKey, ErrMalformedCertificate, ErrUntrustedCertificate, ErrCertificateKey, ErrCertificateSubject,
}

func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzParsePublicKey(f *testing.F) {
	for _, kind := range supportedKinds {
		pub := testKey(f, kind, "a").Public()
		p, err := MarshalPublicKey(pub)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
		f.Add(append(bytes.Clone(p), "\n\n"...))
	}
	f.Add([]byte(testKey(f, "ed25519", "a").Public().(ed25519.PublicKey)))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte{})
	for _, c := range badKeys(f) {
		if !c.private {
			f.Add(c.input)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pub, der, err := ParsePublicKey(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("error does not wrap ErrMalformedKey: %v", err)
			}
			return
		}
		// What Liqo's ParseTenantPublicKey would return: the PEM block's
		// bytes, or the raw key's PKIX encoding.
		want := der
		if block, _ := pem.Decode(b); block != nil {
			want = block.Bytes
		} else if len(b) != 32 {
			t.Fatalf("accepted %d bytes that are neither PEM nor a raw key", len(b))
		}
		got, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil || !bytes.Equal(got, der) || !bytes.Equal(der, want) {
			t.Fatalf("DER mismatch: %v", err)
		}
		p, err := MarshalPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		if _, der2, err := ParsePublicKey(p); err != nil || !bytes.Equal(der2, der) {
			t.Fatalf("re-marshalled key does not round-trip: %v", err)
		}
	})
}

// FuzzParsePrivateKey feeds private keys as a state directory or a Secret
// could hold them. Whatever it accepts must sign a statement that its own
// public half verifies.
func FuzzParsePrivateKey(f *testing.F) {
	for _, kind := range supportedKinds {
		f.Add(marshalPriv(f, testKey(f, kind, "a")))
	}
	for _, c := range badKeys(f) {
		if c.private {
			f.Add(c.input)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		key, err := ParsePrivateKey(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("error does not wrap ErrMalformedKey: %v", err)
			}
			return
		}
		sig, err := SignStatement(key, []byte("fuzz"))
		if err != nil {
			t.Fatalf("accepted a key that cannot sign: %v", err)
		}
		if err := VerifyStatement(key.Public(), []byte("fuzz"), sig); err != nil {
			t.Fatalf("accepted a key whose public half does not verify its signature: %v", err)
		}
	})
}

func FuzzCheckControlPlaneCSR(f *testing.F) {
	for _, kind := range supportedKinds {
		key := testKey(f, kind, "a")
		csr, err := ControlPlaneCSR(key, consumer)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(csr, pkixDER(f, key.Public()), consumer)
	}
	key := testKey(f, "ed25519", "a")
	der := pkixDER(f, key.Public())
	f.Add(rawCSR(f, key, pkix.Name{CommonName: consumer}), der, consumer)
	f.Add(rawCSR(f, key, pkix.Name{CommonName: consumer, Organization: []string{"a", "liqo.io"}}), der, consumer)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"), der, consumer)
	f.Add([]byte{}, []byte{}, "")
	for _, c := range badCSRs(f) {
		f.Add(c.csr, c.pubDER, consumer)
	}
	f.Fuzz(func(t *testing.T, csrPEM, pubDER []byte, consumerID string) {
		err := CheckControlPlaneCSR(csrPEM, pubDER, consumerID)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		// Accepted: Liqo's CheckCSRForControlPlane must accept it too.
		block, rest := pem.Decode(csrPEM)
		if block == nil || len(rest) != 0 || block.Type != "CERTIFICATE REQUEST" {
			t.Fatal("accepted bad framing")
		}
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if csr.CheckSignature() != nil {
			t.Fatal("accepted a bad self-signature")
		}
		if csr.Subject.CommonName != consumerID || len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] != "liqo.io" {
			t.Fatalf("accepted subject %v", csr.Subject)
		}
		got, err := x509.MarshalPKIXPublicKey(csr.PublicKey)
		if err != nil || !bytes.Equal(got, pubDER) {
			t.Fatal("accepted another key")
		}
	})
}

// fuzzCA is made once per process: the fuzz engine calls the target
// function many times.
var fuzzCA = sync.OnceValue(func() *CA {
	ca, _, err := NewCA("fuzz-ca", t0, caLife)
	if err != nil {
		panic(err)
	}
	return ca
})

func FuzzVerifyClientCertificate(f *testing.F) {
	ca := fuzzCA()
	key := testKey(f, "ed25519", "a")
	pubDER := pkixDER(f, key.Public())
	csr := mustCSR(f, key)
	cert, err := ca.SignCSR(csr, t0, certLife)
	if err != nil {
		f.Fatal(err)
	}
	other, _, err := NewCA("other", t0, caLife)
	if err != nil {
		f.Fatal(err)
	}
	fromOther, err := other.SignCSR(csr, t0, certLife)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cert, ca.CertPEM)
	f.Add(fromOther, ca.CertPEM)
	f.Add(cert, append(bytes.Clone(other.CertPEM), ca.CertPEM...))
	f.Add(ca.CertPEM, ca.CertPEM)
	f.Add(csr, ca.CertPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"), []byte{})
	for _, c := range badCerts(f) {
		f.Add(c.cert, c.ca)
	}
	f.Fuzz(func(t *testing.T, certPEM, caPEM []byte) {
		now := certNow
		err := VerifyClientCertificate(certPEM, caPEM, pubDER, consumer, "liqo.io", now)
		if _, _, verr := CertificateValidity(certPEM); verr != nil && err == nil {
			t.Fatal("verified a certificate CertificateValidity cannot read")
		}
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		// Accepted: it must chain for client auth, with the standard
		// library's own pool parsing.
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			t.Fatal("accepted a CA bundle the standard library cannot read")
		}
		block, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("accepted an untrusted certificate: %v", err)
		}
		if got, _ := x509.MarshalPKIXPublicKey(c.PublicKey); !bytes.Equal(got, pubDER) {
			t.Fatal("accepted another key")
		}
	})
}

func FuzzVerifyNonce(f *testing.F) {
	nonce := DeriveNonce([]byte("fuzz"), consumer, 1)
	for _, kind := range []string{"ed25519", "rsa", "p256"} {
		key := testKey(f, kind, "a")
		p, err := MarshalPublicKey(key.Public())
		if err != nil {
			f.Fatal(err)
		}
		sig, err := SignNonce(key, nonce)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p, nonce, sig)
	}
	edKey := testKey(f, "ed25519", "a")
	sig, _ := SignNonce(edKey, nonce)
	f.Add([]byte(edKey.Public().(ed25519.PublicKey)), nonce, sig)
	f.Add([]byte{}, "", []byte{})
	f.Fuzz(func(t *testing.T, pubBytes []byte, nonce string, sig []byte) {
		pub, _, err := ParsePublicKey(pubBytes)
		if err != nil {
			// A key that does not parse must still not make
			// VerifyNonce panic when passed on regardless.
			if VerifyNonce(pub, nonce, sig) == nil {
				t.Fatal("verified with no key")
			}
			return
		}
		err = VerifyNonce(pub, nonce, sig)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if CheckNonce(nonce) != nil {
			t.Fatal("verified a malformed nonce")
		}
		if !stdlibVerify(pub, []byte(nonce), sig) {
			t.Fatal("verified a signature the standard library rejects")
		}
	})
}

// FuzzCheckControlPlaneCSRDER wraps the fuzzed bytes in correct PEM framing,
// so that mutations reach the ASN.1 parser and the subject and key checks
// instead of dying in the base64 armour.
func FuzzCheckControlPlaneCSRDER(f *testing.F) {
	key := testKey(f, "ed25519", "a")
	pubDER := pkixDER(f, key.Public())
	for _, subject := range []pkix.Name{
		{CommonName: consumer, Organization: []string{"liqo.io"}},
		{CommonName: consumer},
		{CommonName: consumer, Organization: []string{"liqo.io", "x"}},
	} {
		block, _ := pem.Decode(rawCSR(f, key, subject))
		f.Add(block.Bytes)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
		err := CheckControlPlaneCSR(csrPEM, pubDER, consumer)
		if err == nil {
			csr, perr := x509.ParseCertificateRequest(der)
			if perr != nil || csr.CheckSignature() != nil || csr.Subject.CommonName != consumer ||
				len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] != "liqo.io" {
				t.Fatal("accepted a CSR Liqo would refuse")
			}
			return
		}
		if !wrapsSentinel(err) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
	})
}

// FuzzVerifyClientCertificateDER is FuzzVerifyClientCertificate with the PEM
// framing fixed, for the same reason.
func FuzzVerifyClientCertificateDER(f *testing.F) {
	ca := fuzzCA()
	key := testKey(f, "ed25519", "a")
	pubDER := pkixDER(f, key.Public())
	cert, err := ca.SignCSR(mustCSR(f, key), t0, certLife)
	if err != nil {
		f.Fatal(err)
	}
	block, _ := pem.Decode(cert)
	f.Add(block.Bytes)
	f.Fuzz(func(t *testing.T, der []byte) {
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		err := VerifyClientCertificate(certPEM, ca.CertPEM, pubDER, consumer, "liqo.io", t0)
		if err != nil && !wrapsSentinel(err) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if err == nil && !bytes.Equal(der, block.Bytes) {
			// Only the CA can make another valid certificate; a mutation
			// that passes means a check is missing.
			t.Fatalf("accepted a mutated certificate")
		}
	})
}

// FuzzLoadCA feeds CA certificates and keys as an admin imports them. What
// it accepts is a CA whose key matches its certificate and may sign.
func FuzzLoadCA(f *testing.F) {
	ca, keyPEM, err := NewCA("fuzz-import", t0, caLife)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.CertPEM, keyPEM)
	for _, c := range badCAs(f) {
		f.Add(c.cert, c.key)
	}
	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		got, err := LoadCA(certPEM, keyPEM)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if !got.Cert.IsCA || (got.Cert.KeyUsage != 0 && got.Cert.KeyUsage&x509.KeyUsageCertSign == 0) {
			t.Fatal("accepted a certificate that may not sign certificates")
		}
		if !bytes.Equal(pkixDER(t, got.Cert.PublicKey), pkixDER(t, got.Key.Public())) {
			t.Fatal("accepted a key that is not the certificate's")
		}
	})
}
