package handshake

import (
	"testing"
)

// Benchmarks report cost only; nothing here asserts timing.

var benchKinds = []string{"ed25519", "rsa", "p256"}

func BenchmarkSignNonce(b *testing.B) {
	nonce := DeriveNonce([]byte("bench"), consumer, 1)
	for _, kind := range benchKinds {
		key := testKey(b, kind, "a")
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := SignNonce(key, nonce); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyNonce(b *testing.B) {
	nonce := DeriveNonce([]byte("bench"), consumer, 1)
	for _, kind := range benchKinds {
		key := testKey(b, kind, "a")
		sig, err := SignNonce(key, nonce)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if err := VerifyNonce(key.Public(), nonce, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDeriveNonce(b *testing.B) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	for b.Loop() {
		DeriveNonce(secret, consumer, 1)
	}
}

func BenchmarkControlPlaneCSR(b *testing.B) {
	for _, kind := range benchKinds {
		key := testKey(b, kind, "a")
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := ControlPlaneCSR(key, consumer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheckControlPlaneCSR(b *testing.B) {
	for _, kind := range benchKinds {
		key := testKey(b, kind, "a")
		csr := mustCSR(b, key)
		pubDER := pkixDER(b, key.Public())
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if err := CheckControlPlaneCSR(csr, pubDER, consumer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSignCSR(b *testing.B) {
	ca := mustCA(b, "bench-ca")
	for _, kind := range benchKinds {
		csr := mustCSR(b, testKey(b, kind, "a"))
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := ca.SignCSR(csr, t0, certLife); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyClientCertificate(b *testing.B) {
	ca := mustCA(b, "bench-ca")
	key := testKey(b, "ed25519", "a")
	cert := mustSign(b, ca, mustCSR(b, key), t0, certLife)
	pubDER := pkixDER(b, key.Public())
	for b.Loop() {
		if err := VerifyClientCertificate(cert, ca.CertPEM, pubDER, consumer, "liqo.io", t0); err != nil {
			b.Fatal(err)
		}
	}
}
