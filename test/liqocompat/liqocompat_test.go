package liqocompat

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	liqoauth "github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

const consumer = "cl-consumer"

func keys(t testing.TB) map[string]crypto.Signer {
	t.Helper()
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]crypto.Signer{"ed25519": ed, "rsa": r, "p256": p256, "p384": p384}
}

func resourceSlice(name, consumerID string, csr []byte) *authv1beta1.ResourceSlice {
	id := liqov1beta1.ClusterID(consumerID)
	return &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo-tenant-cl-provider"},
		Spec:       authv1beta1.ResourceSliceSpec{ConsumerClusterID: &id, CSR: csr},
	}
}

// liqoCheckCP runs Liqo's check, turning its panic (a CSR without
// Organization) into an error.
func liqoCheckCP(csr, pubDER []byte, id string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("liqo panicked: %v", r)
		}
	}()
	return liqoauth.CheckCSRForControlPlane(csr, pubDER, liqov1beta1.ClusterID(id))
}

func TestLiqoAcceptsWhatHandshakeWrites(t *testing.T) {
	for kind, key := range keys(t) {
		t.Run(kind, func(t *testing.T) {
			pubPEM, err := handshake.MarshalPublicKey(key.Public())
			if err != nil {
				t.Fatal(err)
			}
			t.Run("Liqo parses the Tenant public key to the same DER", func(t *testing.T) {
				lpub, lder, err := liqoauth.ParseTenantPublicKey(pubPEM)
				if err != nil {
					t.Fatal(err)
				}
				_, der, err := handshake.ParsePublicKey(pubPEM)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(lder, der) {
					t.Error("DER differs")
				}
				a, _ := handshake.Fingerprint(lpub)
				b, _ := handshake.Fingerprint(key.Public())
				if a != b {
					t.Error("Liqo parsed another key")
				}
			})

			nonce, err := handshake.NewNonce()
			if err != nil {
				t.Fatal(err)
			}
			t.Run("Liqo verifies the nonce signature", func(t *testing.T) {
				sig, err := handshake.SignNonce(key, nonce)
				if err != nil {
					t.Fatal(err)
				}
				lpub, _, _ := liqoauth.ParseTenantPublicKey(pubPEM)
				ok, err := liqoauth.VerifyNonce(lpub, []byte(nonce), sig)
				if err != nil || !ok {
					t.Fatalf("liqo VerifyNonce = %v, %v", ok, err)
				}
			})
			t.Run("handshake verifies Liqo's nonce signature", func(t *testing.T) {
				sig, err := liqoauth.SignNonce(key, []byte(nonce))
				if err != nil {
					t.Fatal(err)
				}
				if err := handshake.VerifyNonce(key.Public(), nonce, sig); err != nil {
					t.Fatal(err)
				}
			})

			_, pubDER, _ := handshake.ParsePublicKey(pubPEM)
			csr, err := handshake.ControlPlaneCSR(key, consumer)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("Liqo accepts the control-plane CSR", func(t *testing.T) {
				if err := liqoCheckCP(csr, pubDER, consumer); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("handshake accepts Liqo's control-plane CSR", func(t *testing.T) {
				lcsr, err := liqoauth.GenerateCSRForControlPlane(key, consumer)
				if err != nil {
					t.Fatal(err)
				}
				if err := handshake.CheckControlPlaneCSR(lcsr, pubDER, consumer); err != nil {
					t.Fatal(err)
				}
				if kind == "ed25519" || kind == "rsa" {
					if !bytes.Equal(lcsr, csr) {
						t.Errorf("CSR is not byte-identical to Liqo's:\n%s\n%s", lcsr, csr)
					}
				}
			})

			rsCSR, err := handshake.ResourceSliceCSR(key, "mypool", consumer)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("Liqo accepts the resource slice CSR", func(t *testing.T) {
				rs := resourceSlice("mypool", consumer, rsCSR)
				if got := liqoauth.CommonNameResourceSliceCSR(rs); got != handshake.ResourceSliceCommonName("mypool", consumer) {
					t.Errorf("common name: liqo %s", got)
				}
				if err := liqoauth.CheckCSRForResourceSlice(pubPEM, rs, true); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("handshake accepts Liqo's resource slice CSR", func(t *testing.T) {
				lcsr, err := liqoauth.GenerateCSRForResourceSlice(key, resourceSlice("mypool", consumer, nil))
				if err != nil {
					t.Fatal(err)
				}
				if err := handshake.CheckResourceSliceCSR(lcsr, pubDER, "mypool", consumer); err != nil {
					t.Fatal(err)
				}
				if kind == "ed25519" || kind == "rsa" {
					if !bytes.Equal(lcsr, rsCSR) {
						t.Error("CSR is not byte-identical to Liqo's")
					}
				}
			})
		})
	}
}

func TestHandshakeReadsLiqoKeys(t *testing.T) {
	for name, gen := range map[string]func() ([]byte, []byte, error){
		"ed25519": liqoauth.GenerateEd25519Keys,
		"rsa":     liqoauth.GenerateRSAKeys,
	} {
		t.Run("reads and rewrites Liqo's "+name+" authentication-keys byte for byte", func(t *testing.T) {
			privPEM, pubPEM, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			key, err := handshake.ParsePrivateKey(privPEM)
			if err != nil {
				t.Fatal(err)
			}
			again, err := handshake.MarshalPrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, privPEM) {
				t.Error("private key PEM differs from Liqo's")
			}
			pub, err := handshake.MarshalPublicKey(key.Public())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pub, pubPEM) {
				t.Error("public key PEM differs from Liqo's")
			}
		})
	}
	t.Run("reads a Liqo v1.0.0 raw ed25519 Tenant key as Liqo does", func(t *testing.T) {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		_, lder, err := liqoauth.ParseTenantPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		_, der, err := handshake.ParsePublicKey(pub)
		if err != nil || !bytes.Equal(der, lder) {
			t.Fatalf("DER differs (%v)", err)
		}
	})
}

// TestHandshakeIsNeverMoreLenientThanLiqo feeds both checks the same CSR
// variants: whatever handshake accepts, Liqo must accept.
func TestHandshakeIsNeverMoreLenientThanLiqo(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(key.Public())
	valid, err := handshake.ControlPlaneCSR(key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(name pkix.Name) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: name}, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	block, _ := pem.Decode(valid)
	for _, tc := range []struct {
		name       string
		csr        []byte
		liqoAccept bool // what Liqo v1.2.0 does, for the record
	}{
		{"a valid CSR", valid, true},
		{"no final line break", bytes.TrimSuffix(valid, []byte("\n")), true},
		{"CRLF line ends", bytes.ReplaceAll(valid, []byte("\n"), []byte("\r\n")), true},
		{"an extra line break", append(bytes.Clone(valid), '\n'), false},
		{"a leading space", append([]byte(" "), valid...), false},
		{"a leading text line", append([]byte("x\n"), valid...), true},
		{"PEM headers", pem.EncodeToMemory(&pem.Block{Type: block.Type, Headers: map[string]string{"A": "b"}, Bytes: block.Bytes}), true},
		{"type CERTIFICATE", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes}), true},
		{"no organization", raw(pkix.Name{CommonName: consumer}), false},
		{"organizations liqo.io and system:masters, liqo.io sorting first", raw(pkix.Name{CommonName: consumer, Organization: []string{"liqo.io", "system:masters"}}), true},
		{"an extra OU", raw(pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}, OrganizationalUnit: []string{"x"}}), true},
		{"a bad self-signature", pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: append(bytes.Clone(block.Bytes[:len(block.Bytes)-1]), block.Bytes[len(block.Bytes)-1]^1)}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := handshake.CheckControlPlaneCSR(tc.csr, pubDER, consumer)
			liqo := liqoCheckCP(tc.csr, pubDER, consumer)
			t.Logf("handshake: %v; liqo: %v", ours, liqo)
			if ours == nil && liqo != nil {
				t.Fatalf("handshake accepts what Liqo refuses: %v", liqo)
			}
			if (liqo == nil) != tc.liqoAccept {
				t.Errorf("Liqo's behaviour changed: accept = %v, recorded %v", liqo == nil, tc.liqoAccept)
			}
		})
	}
}

// FuzzHandshakeIsNeverMoreLenientThanLiqo is the same property over fuzzed
// CSRs and Tenant keys.
func FuzzHandshakeIsNeverMoreLenientThanLiqo(f *testing.F) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	csr, err := handshake.ControlPlaneCSR(key, consumer)
	if err != nil {
		f.Fatal(err)
	}
	pubPEM, _ := handshake.MarshalPublicKey(key.Public())
	f.Add(csr, pubPEM)
	f.Add(csr, []byte(key.Public().(ed25519.PublicKey)))
	f.Fuzz(func(t *testing.T, csr, pubBytes []byte) {
		if _, _, err := handshake.ParsePublicKey(pubBytes); err == nil {
			if _, _, lerr := liqoauth.ParseTenantPublicKey(pubBytes); lerr != nil {
				t.Fatalf("handshake accepts a key Liqo refuses: %v", lerr)
			}
		}
		_, pubDER, err := handshake.ParsePublicKey(pubBytes)
		if err != nil {
			return
		}
		if handshake.CheckControlPlaneCSR(csr, pubDER, consumer) == nil {
			if err := liqoCheckCP(csr, pubDER, consumer); err != nil {
				t.Fatalf("handshake accepts a CSR Liqo refuses: %v", err)
			}
		}
	})
}
