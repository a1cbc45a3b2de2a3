package handshake

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	t0       = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	caLife   = 10 * 365 * 24 * time.Hour
	certLife = 365 * 24 * time.Hour
)

func mustCA(t testing.TB, cn string) *CA {
	t.Helper()
	ca, keyPEM, err := NewCA(cn, t0, caLife)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Fatalf("ca key is not a PRIVATE KEY block")
	}
	return ca
}

func mustSign(t testing.TB, ca *CA, csr []byte, now time.Time, life time.Duration) []byte {
	t.Helper()
	cert, err := ca.SignCSR(csr, now, life)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func parseCert(t testing.TB, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("not PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewCA(t *testing.T) {
	ca := mustCA(t, "gitpeer-ca")
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid || c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("not a path-length-0 CA: IsCA %v, MaxPathLen %d", c.IsCA, c.MaxPathLen)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Error("cannot sign certificates")
	}
	if _, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || c.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key is %T, want ecdsa", c.PublicKey)
	}
	if c.PublicKey.(*ecdsa.PublicKey).Curve.Params().Name != "P-256" {
		t.Error("curve is not P-256")
	}
	if !c.NotBefore.Equal(t0.Add(-time.Hour)) || !c.NotAfter.Equal(t0.Add(caLife)) {
		t.Errorf("validity %s..%s", c.NotBefore, c.NotAfter)
	}
	if len(c.SubjectKeyId) == 0 {
		t.Error("no subject key id")
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !bytes.Equal(parseCert(t, ca.CertPEM).Raw, c.Raw) {
		t.Error("CertPEM is not Cert")
	}
	if _, _, err := NewCA("", t0, caLife); err == nil {
		t.Error("accepted an empty common name")
	}
	if _, _, err := NewCA("x", t0, 0); err == nil {
		t.Error("accepted a zero lifetime")
	}
}

func TestSignAndVerifyClientCertificate(t *testing.T) {
	ca := mustCA(t, "provider-ca")
	for _, kind := range supportedKinds {
		t.Run("issues a client certificate a consumer accepts, for a "+kind+" key", func(t *testing.T) {
			key := testKey(t, kind, "a")
			csr := mustCSR(t, key)
			certPEM := mustSign(t, ca, csr, t0, certLife)
			pubDER := pkixDER(t, key.Public())
			wantErr(t, VerifyClientCertificate(certPEM, ca.CertPEM, pubDER, consumer, "liqo.io", t0), nil)

			if !bytes.HasSuffix(certPEM, []byte("-----END CERTIFICATE-----\n")) || bytes.Count(certPEM, []byte("BEGIN")) != 1 {
				t.Error("not one CERTIFICATE block")
			}
			c := parseCert(t, certPEM)
			wantUsage := x509.KeyUsageDigitalSignature
			if kind == "rsa" {
				wantUsage |= x509.KeyUsageKeyEncipherment
			}
			if c.KeyUsage != wantUsage {
				t.Errorf("key usage %v, want %v", c.KeyUsage, wantUsage)
			}
			if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
				t.Errorf("ext key usage %v, want client auth", c.ExtKeyUsage)
			}
			if c.IsCA || !c.BasicConstraintsValid {
				t.Error("is a CA or lacks basic constraints")
			}
			if !c.NotBefore.Equal(t0.Add(-5*time.Minute)) || !c.NotAfter.Equal(t0.Add(certLife)) {
				t.Errorf("validity %s..%s", c.NotBefore, c.NotAfter)
			}
			if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
				t.Errorf("serial %v is not a positive 128-bit number", c.SerialNumber)
			}
			if !bytes.Equal(c.AuthorityKeyId, ca.Cert.SubjectKeyId) {
				t.Error("authority key id is not the CA's subject key id")
			}
			r, _ := pem.Decode(csr)
			req, _ := x509.ParseCertificateRequest(r.Bytes)
			if !bytes.Equal(c.RawSubject, req.RawSubject) {
				t.Error("subject is not the CSR's, byte for byte")
			}
			if !bytes.Equal(c.RawIssuer, ca.Cert.RawSubject) {
				t.Error("issuer is not the CA")
			}
		})
	}
	t.Run("gives every certificate a new serial", func(t *testing.T) {
		csr := mustCSR(t, testKey(t, "ed25519", "a"))
		a := parseCert(t, mustSign(t, ca, csr, t0, certLife))
		b := parseCert(t, mustSign(t, ca, csr, t0, certLife))
		if a.SerialNumber.Cmp(b.SerialNumber) == 0 {
			t.Error("serials are equal")
		}
	})
	t.Run("caps the lifetime at the CA's expiry", func(t *testing.T) {
		now := ca.Cert.NotAfter.Add(-time.Hour)
		c := parseCert(t, mustSign(t, ca, mustCSR(t, testKey(t, "ed25519", "a")), now, certLife))
		if !c.NotAfter.Equal(ca.Cert.NotAfter) {
			t.Errorf("NotAfter %s, want the CA's %s", c.NotAfter, ca.Cert.NotAfter)
		}
	})
	t.Run("signs resource slice CSRs", func(t *testing.T) {
		key := testKey(t, "ed25519", "a")
		csr, _ := ResourceSliceCSR(key, slice, consumer)
		cert := mustSign(t, ca, csr, t0, certLife)
		wantErr(t, VerifyClientCertificate(cert, ca.CertPEM, pkixDER(t, key.Public()), ResourceSliceCommonName(slice, consumer), consumer, t0), nil)
	})
}

func TestSignCSRRefuses(t *testing.T) {
	ca := mustCA(t, "provider-ca")
	valid := mustCSR(t, testKey(t, "ed25519", "a"))
	badSig := reencode(t, valid, func(d []byte) []byte { d[len(d)-1] ^= 1; return d })
	for _, tc := range []struct {
		name string
		csr  []byte
		now  time.Time
		life time.Duration
		want error
	}{
		{"refuses a CSR with a bad self-signature", badSig, t0, certLife, ErrMalformedCSR},
		{"refuses a CSR with trailing data", append(bytes.Clone(valid), "\n"...), t0, certLife, ErrMalformedCSR},
		{"refuses a certificate given as CSR", ca.CertPEM, t0, certLife, ErrMalformedCSR},
		{"refuses a CSR for an rsa key under 2048 bits", rawCSR(t, testKey(t, "rsa1024", "a"), pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}}), t0, certLife, ErrCSRKey},
		{"refuses a CSR for group system:masters", rawCSR(t, testKey(t, "ed25519", "a"), pkix.Name{CommonName: consumer, Organization: []string{"system:masters"}}), t0, certLife, ErrCSRSubject},
		{"refuses a CSR for user system:admin", rawCSR(t, testKey(t, "ed25519", "a"), pkix.Name{CommonName: "system:admin", Organization: []string{"liqo.io"}}), t0, certLife, ErrCSRSubject},
		{"refuses a CSR with two organizations", rawCSR(t, testKey(t, "ed25519", "a"), pkix.Name{CommonName: consumer, Organization: []string{"liqo.io", "x"}}), t0, certLife, ErrCSRSubject},
		{"refuses a CSR without organization", rawCSR(t, testKey(t, "ed25519", "a"), pkix.Name{CommonName: consumer}), t0, certLife, ErrCSRSubject},
		{"refuses a CSR with an extra attribute", rawCSR(t, testKey(t, "ed25519", "a"), pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}, Country: []string{"IT"}}), t0, certLife, ErrCSRSubject},
		{"refuses to sign with an expired CA", valid, ca.Cert.NotAfter.Add(time.Second), certLife, ErrUntrustedCertificate},
		{"refuses to sign before the CA is valid", valid, t0.Add(-2 * time.Hour), certLife, ErrUntrustedCertificate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := ca.SignCSR(tc.csr, tc.now, tc.life)
			wantErr(t, err, tc.want)
			if cert != nil {
				t.Error("returned a certificate with an error")
			}
		})
	}
	t.Run("refuses a lifetime that is not positive", func(t *testing.T) {
		if _, err := ca.SignCSR(valid, t0, 0); err == nil {
			t.Error("no error")
		}
	})
	t.Run("refuses an empty CA", func(t *testing.T) {
		var nilCA *CA
		if _, err := nilCA.SignCSR(valid, t0, certLife); err == nil {
			t.Error("no error")
		}
		if _, err := (&CA{}).SignCSR(valid, t0, certLife); err == nil {
			t.Error("no error")
		}
	})
}

func TestVerifyClientCertificate(t *testing.T) {
	ca := mustCA(t, "provider-ca")
	otherCA := mustCA(t, "provider-ca") // same name, other key
	key := testKey(t, "ed25519", "a")
	pubDER := pkixDER(t, key.Public())
	csr := mustCSR(t, key)
	cert := mustSign(t, ca, csr, t0, certLife)
	fromOtherCA := mustSign(t, otherCA, csr, t0, certLife)
	otherKey := mustSign(t, ca, mustCSR(t, testKey(t, "ed25519", "b")), t0, certLife)
	wrongCN := mustSign(t, ca, rawCSR(t, key, pkix.Name{CommonName: "mallory", Organization: []string{"liqo.io"}}), t0, certLife)
	twoOrgs := craftCert(t, ca, key.Public(), func(c *x509.Certificate) {
		c.Subject.Organization = []string{"liqo.io", "system:masters"}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	serverOnly := craftCert(t, ca, key.Public(), func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })
	bundle := append(bytes.Clone(otherCA.CertPEM), ca.CertPEM...)

	for _, tc := range []struct {
		name   string
		cert   []byte
		caPEM  []byte
		pubDER []byte
		cn, o  string
		now    time.Time
		want   error
	}{
		{name: "accepts a certificate signed by the CA", want: nil},
		{name: "accepts a CA bundle holding the issuer second", caPEM: bundle, want: nil},
		{name: "accepts a certificate followed by a blank line", cert: append(bytes.Clone(cert), '\n'), want: nil},
		{name: "accepts a certificate one second before it expires", now: t0.Add(certLife - time.Second), want: nil},
		{name: "rejects a certificate from another CA", cert: fromOtherCA, want: ErrUntrustedCertificate},
		{name: "rejects an expired certificate", now: t0.Add(certLife + time.Second), want: ErrUntrustedCertificate},
		{name: "rejects a certificate not valid yet", now: t0.Add(-10 * time.Minute), want: ErrUntrustedCertificate},
		{name: "rejects a server-only certificate", cert: serverOnly, want: ErrUntrustedCertificate},
		{name: "rejects the CA certificate itself", cert: ca.CertPEM, want: ErrUntrustedCertificate},
		{name: "rejects a certificate for another key", cert: otherKey, want: ErrCertificateKey},
		{name: "rejects an empty expected key", pubDER: []byte{}, want: ErrCertificateKey},
		{name: "rejects another common name", cert: wrongCN, want: ErrCertificateSubject},
		{name: "rejects a check for another organization", o: "cl-consumer", want: ErrCertificateSubject},
		{name: "rejects two organizations", cert: twoOrgs, want: ErrCertificateSubject},
		{name: "rejects trailing garbage", cert: append(bytes.Clone(cert), "garbage"...), want: ErrMalformedCertificate},
		{name: "rejects two certificates", cert: append(bytes.Clone(cert), cert...), want: ErrMalformedCertificate},
		{name: "rejects a CSR", cert: csr, want: ErrMalformedCertificate},
		{name: "rejects broken DER", cert: reencode(t, cert, func(d []byte) []byte { return d[:len(d)-3] }), want: ErrMalformedCertificate},
		{name: "rejects an empty CA bundle", caPEM: []byte{}, want: ErrMalformedCertificate},
		{name: "rejects a CA bundle with a broken entry", caPEM: append(bytes.Clone(ca.CertPEM), reencode(t, otherCA.CertPEM, func(d []byte) []byte { return d[:10] })...), want: ErrMalformedCertificate},
		{name: "rejects a CA bundle with a key in it", caPEM: append(bytes.Clone(ca.CertPEM), mustMarshalPrivate(t, key)...), want: ErrMalformedCertificate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, caPEM, pd, cn, o, now := cert, ca.CertPEM, pubDER, consumer, "liqo.io", t0
			if tc.cert != nil {
				c = tc.cert
			}
			if tc.caPEM != nil {
				caPEM = tc.caPEM
			}
			if tc.pubDER != nil {
				pd = tc.pubDER
			}
			if tc.cn != "" {
				cn = tc.cn
			}
			if tc.o != "" {
				o = tc.o
			}
			if !tc.now.IsZero() {
				now = tc.now
			}
			err := VerifyClientCertificate(c, caPEM, pd, cn, o, now)
			wantErr(t, err, tc.want)
			wantReason := map[error]string{
				nil:                     "",
				ErrUntrustedCertificate: "UntrustedCertificate",
				ErrMalformedCertificate: "InvalidCertificate",
				ErrCertificateKey:       "InvalidCertificate",
				ErrCertificateSubject:   "InvalidCertificate",
			}[tc.want]
			if got := Reason(err); got != wantReason {
				t.Errorf("Reason = %q, want %q", got, wantReason)
			}
		})
	}
}

// craftCert signs a certificate with any template tweak, bypassing SignCSR.
func craftCert(t testing.TB, ca *CA, pub crypto.PublicKey, tweak func(*x509.Certificate)) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}},
		NotBefore:             t0.Add(-time.Hour),
		NotAfter:              t0.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	tweak(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// kubeadmCA makes a CA the way kubeadm does (CN kubernetes, RSA key written
// as PKCS#1, or an ECDSA key written as SEC1) and returns its PEMs.
func kubeadmCA(t testing.TB, key crypto.Signer) (certPEM []byte) {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             t0.Add(-24 * time.Hour),
		NotAfter:              t0.Add(caLife),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestLoadCA(t *testing.T) {
	rsaKey := testKey(t, "rsa", "ca").(*rsa.PrivateKey)
	ecKey := testKey(t, "p256", "ca").(*ecdsa.PrivateKey)
	rsaCert := kubeadmCA(t, rsaKey)
	ecCert := kubeadmCA(t, ecKey)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	sec1DER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	sec1 := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1DER})
	params, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7})
	withParams := append(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: params}), sec1...)
	ours, oursKey, err := NewCA("gitpeer", t0, caLife)
	if err != nil {
		t.Fatal(err)
	}
	leaf := mustSign(t, ours, mustCSR(t, testKey(t, "ed25519", "a")), t0, certLife)

	for _, tc := range []struct {
		name    string
		cert    []byte
		key     []byte
		want    error
		wantKey string
	}{
		{name: "loads a kubeadm rsa CA with a PKCS#1 key", cert: rsaCert, key: pkcs1},
		{name: "loads a kubeadm ecdsa CA with a SEC1 key", cert: ecCert, key: sec1},
		{name: "loads a SEC1 key after an EC PARAMETERS block, as openssl ecparam writes it", cert: ecCert, key: withParams},
		{name: "loads the CA NewCA made", cert: ours.CertPEM, key: oursKey},
		{name: "loads a PKCS#8 rsa key", cert: rsaCert, key: mustMarshalPrivate(t, rsaKey)},
		{name: "rejects the key of another CA", cert: rsaCert, key: sec1, want: ErrCertificateKey},
		{name: "rejects a certificate that is not a CA", cert: leaf, key: oursKey, want: ErrUntrustedCertificate},
		{name: "rejects a garbage key", cert: rsaCert, key: []byte("not a key"), want: ErrMalformedKey},
		{name: "rejects a public key as key", cert: rsaCert, key: func() []byte { p, _ := MarshalPublicKey(rsaKey.Public()); return p }(), want: ErrMalformedKey},
		{name: "rejects two keys", cert: rsaCert, key: append(bytes.Clone(pkcs1), pkcs1...), want: ErrMalformedKey},
		{name: "rejects a garbage certificate", cert: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), key: pkcs1, want: ErrMalformedCertificate},
		{name: "rejects a certificate bundle", cert: append(bytes.Clone(rsaCert), ecCert...), key: pkcs1, want: ErrMalformedCertificate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, err := LoadCA(tc.cert, tc.key)
			wantErr(t, err, tc.want)
			if tc.want != nil {
				return
			}
			// A loaded CA signs certificates that verify against it.
			k := testKey(t, "ed25519", "a")
			cert := mustSign(t, ca, mustCSR(t, k), t0, certLife)
			wantErr(t, VerifyClientCertificate(cert, tc.cert, pkixDER(t, k.Public()), consumer, "liqo.io", t0), nil)
		})
	}
}

func TestCertificateValidity(t *testing.T) {
	ca := mustCA(t, "provider-ca")
	cert := mustSign(t, ca, mustCSR(t, testKey(t, "ed25519", "a")), t0, certLife)
	nb, na, err := CertificateValidity(cert)
	if err != nil {
		t.Fatal(err)
	}
	if !nb.Equal(t0.Add(-5*time.Minute)) || !na.Equal(t0.Add(certLife)) {
		t.Errorf("validity %s..%s", nb, na)
	}
	_, _, err = CertificateValidity([]byte("nope"))
	wantErr(t, err, ErrMalformedCertificate)
}

// TestOpenSSLReadsWhatWeWrite checks the CSRs and certificates with an
// independent implementation, when the openssl CLI is installed.
func TestOpenSSLReadsWhatWeWrite(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not on PATH")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(openssl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// openssl verify uses the wall clock.
	now := time.Now()
	ca, _, err := NewCA("gitpeer-ca", now, caLife)
	if err != nil {
		t.Fatal(err)
	}
	caFile := write("ca.pem", ca.CertPEM)
	for _, kind := range supportedKinds {
		t.Run("openssl accepts the CSR and certificate of a "+kind+" key", func(t *testing.T) {
			csr := mustCSR(t, testKey(t, kind, "a"))
			csrFile := write(kind+".csr", csr)
			out := run("req", "-in", csrFile, "-noout", "-verify", "-subject")
			if !strings.Contains(out, "CN") || !strings.Contains(out, consumer) || !strings.Contains(out, "liqo.io") {
				t.Errorf("openssl req: %s", out)
			}
			cert, err := ca.SignCSR(csr, now, certLife)
			if err != nil {
				t.Fatal(err)
			}
			certFile := write(kind+".crt", cert)
			text := run("x509", "-in", certFile, "-noout", "-text")
			for _, want := range []string{"TLS Web Client Authentication", "Digital Signature", "CA:FALSE", "Authority Key Identifier"} {
				if !strings.Contains(text, want) {
					t.Errorf("openssl x509 -text lacks %q:\n%s", want, text)
				}
			}
			if kind == "rsa" && !strings.Contains(text, "Key Encipherment") {
				t.Error("rsa certificate lacks Key Encipherment")
			}
			out = run("verify", "-CAfile", caFile, "-purpose", "sslclient", certFile)
			if !strings.Contains(out, ": OK") {
				t.Errorf("openssl verify: %s", out)
			}
		})
	}
}
