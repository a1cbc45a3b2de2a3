package handshake

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != ed25519.PrivateKeySize {
		t.Errorf("key is %d bytes, want %d", len(a), ed25519.PrivateKeySize)
	}
	if a.Equal(b) {
		t.Error("two generated keys are equal")
	}
}

func TestPrivateKeyRoundTrip(t *testing.T) {
	for _, kind := range supportedKinds {
		t.Run("round-trips a "+kind+" key through PKCS#8 PEM", func(t *testing.T) {
			key := testKey(t, kind, "a")
			p, err := MarshalPrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(p, []byte("-----BEGIN "+"PRIVATE KEY-----\n")) || !bytes.HasSuffix(p, []byte("-----END PRIVATE KEY-----\n")) {
				t.Errorf("not a PRIVATE KEY block ending in one line break:\n%s", p)
			}
			block, rest := pem.Decode(p)
			if block == nil || len(rest) != 0 || block.Type != "PRIVATE KEY" {
				t.Fatalf("pem.Decode: block %v, rest %q", block, rest)
			}
			if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
				t.Fatalf("not PKCS#8: %v", err)
			}
			got, err := ParsePrivateKey(p)
			if err != nil {
				t.Fatal(err)
			}
			type equaler interface{ Equal(crypto.PrivateKey) bool }
			if !got.(equaler).Equal(key) {
				t.Error("parsed key differs from the original")
			}
		})
	}
}

func TestMarshalPrivateKeyRejectsBadKeys(t *testing.T) {
	short := ed25519.PrivateKey(make([]byte, 10))
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{
		{"rejects a nil key", nil},
		{"rejects an ed25519 key of the wrong length", short},
		{"rejects an rsa key without a modulus", &rsa.PrivateKey{}},
		{"rejects an rsa key under 2048 bits", testKey(t, "rsa1024", "a")},
		{"rejects an ecdsa key on p-224", testKey(t, "p224", "a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MarshalPrivateKey(tc.key)
			wantErr(t, err, ErrMalformedKey)
		})
	}
}

func TestMarshalPrivateKeyAcceptsAPointerToAnEd25519Key(t *testing.T) {
	key := testKey(t, "ed25519", "a").(ed25519.PrivateKey)
	a, err := MarshalPrivateKey(&key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("pointer and value encode differently")
	}
}

func TestParsePrivateKeyRejects(t *testing.T) {
	good, err := MarshalPrivateKey(testKey(t, "ed25519", "a"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := MarshalPublicKey(testKey(t, "ed25519", "a").Public())
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testKey(t, "rsa", "a").(*rsa.PrivateKey))})
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	xder, err := x509.MarshalPKCS8PrivateKey(x)
	if err != nil {
		t.Fatal(err)
	}
	x25519 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: xder})
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"rejects empty input", nil},
		{"rejects a public key", pub},
		{"rejects a PKCS#1 rsa key", pkcs1},
		{"rejects an x25519 key, which cannot sign", x25519},
		{"rejects trailing garbage", append(bytes.Clone(good), "junk"...)},
		{"rejects a leading comment", append([]byte("key\n"), good...)},
		{"rejects broken der", reencode(t, good, func(d []byte) []byte { return d[:len(d)-1] })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePrivateKey(tc.in)
			wantErr(t, err, ErrMalformedKey)
			if strings.Contains(err.Error(), "BEGIN") {
				t.Errorf("message repeats the input: %v", err)
			}
		})
	}
	t.Run("accepts trailing blank lines", func(t *testing.T) {
		if _, err := ParsePrivateKey(append(bytes.Clone(good), "\n\n  \n"...)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMarshalPublicKey(t *testing.T) {
	for _, kind := range supportedKinds {
		t.Run("writes a "+kind+" key as one PKIX PUBLIC KEY block", func(t *testing.T) {
			pub := testKey(t, kind, "a").Public()
			p, err := MarshalPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			block, rest := pem.Decode(p)
			if block == nil || len(rest) != 0 || block.Type != "PUBLIC KEY" || len(block.Headers) != 0 {
				t.Fatalf("pem.Decode: block %v, rest %q", block, rest)
			}
			if !bytes.Equal(block.Bytes, pkixDER(t, pub)) {
				t.Error("DER is not x509.MarshalPKIXPublicKey's")
			}
			got, der, err := ParsePublicKey(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(der, block.Bytes) {
				t.Error("ParsePublicKey returned other DER")
			}
			type equaler interface{ Equal(crypto.PublicKey) bool }
			if !got.(equaler).Equal(pub) {
				t.Error("parsed key differs")
			}
		})
	}
	t.Run("rejects an x25519 key", func(t *testing.T) {
		x, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		_, err = MarshalPublicKey(x.PublicKey())
		wantErr(t, err, ErrMalformedKey)
	})
	t.Run("rejects a nil key", func(t *testing.T) {
		_, err := MarshalPublicKey(nil)
		wantErr(t, err, ErrMalformedKey)
	})
}

func TestParsePublicKey(t *testing.T) {
	edPub := testKey(t, "ed25519", "a").Public().(ed25519.PublicKey)
	edPEM, _ := MarshalPublicKey(edPub)
	rsaPEM, _ := MarshalPublicKey(testKey(t, "rsa", "a").Public())
	ecPEM, _ := MarshalPublicKey(testKey(t, "p256", "a").Public())
	rsa1024PEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, testKey(t, "rsa1024", "a").Public())})
	p224PEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, testKey(t, "p224", "a").Public())})
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x25519PEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, x.PublicKey())})
	// Raw keys are arbitrary bytes; these look like whitespace and PEM.
	awkwardRaw := []byte("\n-----BEGIN \n\t  \r\n0123456789abcd")
	if len(awkwardRaw) != 32 {
		t.Fatalf("awkwardRaw is %d bytes", len(awkwardRaw))
	}
	withHeaders := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: pkixDER(t, edPub)})

	for _, tc := range []struct {
		name    string
		in      []byte
		wantDER []byte // nil: the DER of the PEM block
		wantErr bool
	}{
		{name: "accepts an ed25519 PEM key", in: edPEM},
		{name: "accepts an rsa PEM key", in: rsaPEM},
		{name: "accepts an ecdsa PEM key", in: ecPEM},
		{name: "accepts a PEM key followed by blank lines", in: append(bytes.Clone(edPEM), "\n\r\n "...), wantDER: pkixDER(t, edPub)},
		{name: "accepts a PEM key without its final line break", in: bytes.TrimSuffix(edPEM, []byte("\n")), wantDER: pkixDER(t, edPub)},
		{name: "accepts a raw 32-byte ed25519 key, as Liqo v1.0.0 wrote it", in: []byte(edPub), wantDER: pkixDER(t, edPub)},
		{name: "accepts raw bytes that look like whitespace and PEM", in: awkwardRaw, wantDER: pkixDER(t, ed25519.PublicKey(awkwardRaw))},
		{name: "rejects empty input", in: nil, wantErr: true},
		{name: "rejects 31 raw bytes", in: []byte(edPub)[:31], wantErr: true},
		{name: "rejects 33 raw bytes", in: append([]byte(edPub), 0), wantErr: true},
		{name: "rejects garbage", in: []byte("this is not a key at all, not even close to one"), wantErr: true},
		{name: "rejects a PEM block of another type", in: retype(t, edPEM, "RSA PUBLIC KEY"), wantErr: true},
		{name: "rejects a private key", in: mustMarshalPrivate(t, testKey(t, "ed25519", "a")), wantErr: true},
		{name: "rejects trailing data after the block", in: append(bytes.Clone(edPEM), "trailing"...), wantErr: true},
		{name: "rejects a second block", in: append(bytes.Clone(edPEM), rsaPEM...), wantErr: true},
		{name: "rejects a leading space", in: append([]byte(" "), edPEM...), wantErr: true},
		{name: "rejects a leading text line", in: append([]byte("key:\n"), edPEM...), wantErr: true},
		{name: "rejects PEM headers", in: withHeaders, wantErr: true},
		{name: "rejects broken DER", in: reencode(t, edPEM, func(d []byte) []byte { return d[:len(d)-2] }), wantErr: true},
		{name: "rejects DER with trailing bytes", in: reencode(t, edPEM, func(d []byte) []byte { return append(d, 0) }), wantErr: true},
		{name: "rejects an rsa key under 2048 bits", in: rsa1024PEM, wantErr: true},
		{name: "rejects an ecdsa key on p-224", in: p224PEM, wantErr: true},
		{name: "rejects an x25519 key", in: x25519PEM, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, der, err := ParsePublicKey(tc.in)
			if tc.wantErr {
				wantErr(t, err, ErrMalformedKey)
				if pub != nil || der != nil {
					t.Error("returned a key with an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.wantDER
			if want == nil {
				b, _ := pem.Decode(tc.in)
				want = b.Bytes
			}
			if !bytes.Equal(der, want) {
				t.Errorf("DER = %x, want %x", der, want)
			}
			if !bytes.Equal(der, pkixDER(t, pub)) {
				t.Error("DER is not the key's")
			}
		})
	}

	t.Run("does not alias the raw input", func(t *testing.T) {
		in := bytes.Clone([]byte(edPub))
		pub, _, err := ParsePublicKey(in)
		if err != nil {
			t.Fatal(err)
		}
		in[0] ^= 0xff
		if !pub.(ed25519.PublicKey).Equal(edPub) {
			t.Error("key changed with its input")
		}
	})
}

func mustMarshalPrivate(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	p, err := MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFingerprint(t *testing.T) {
	for _, kind := range supportedKinds {
		t.Run("is sha256 over the PKIX DER of a "+kind+" key", func(t *testing.T) {
			pub := testKey(t, kind, "a").Public()
			got, err := Fingerprint(pub)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(pkixDER(t, pub))
			if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
				t.Errorf("Fingerprint = %s, want %s", got, want)
			}
			if len(got) != len("sha256:")+64 || strings.ToLower(got) != got {
				t.Errorf("not lowercase sha256:<64 hex>: %s", got)
			}
		})
	}
	t.Run("is the same for the raw and PEM forms of a key", func(t *testing.T) {
		edPub := testKey(t, "ed25519", "a").Public().(ed25519.PublicKey)
		p, _ := MarshalPublicKey(edPub)
		a, _, err := ParsePublicKey(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := ParsePublicKey(edPub)
		if err != nil {
			t.Fatal(err)
		}
		fa, _ := Fingerprint(a)
		fb, _ := Fingerprint(b)
		if fa != fb {
			t.Errorf("%s != %s", fa, fb)
		}
	})
	t.Run("differs between keys", func(t *testing.T) {
		a, _ := Fingerprint(testKey(t, "ed25519", "a").Public())
		b, _ := Fingerprint(testKey(t, "ed25519", "b").Public())
		if a == b {
			t.Error("two keys share a fingerprint")
		}
	})
	t.Run("rejects an unsupported key", func(t *testing.T) {
		_, err := Fingerprint("not a key")
		wantErr(t, err, ErrMalformedKey)
	})
}
