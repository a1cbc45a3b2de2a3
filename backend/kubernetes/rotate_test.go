package kubernetes

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"testing"

	liqoauth "github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitpeer/gitpeer/handshake"
)

func fingerprint(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// liqoReads is the key pair Liqo's own controllers read from s
// (authentication.GetClusterKeys, as the identity controller, the nonce
// signer and the local ResourceSlice controller call it).
func liqoReads(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	cl := crfake.NewClientBuilder().WithObjects(s.DeepCopy()).Build()
	priv, pubDER, err := liqoauth.GetClusterKeys(context.Background(), cl, s.Namespace)
	if err != nil {
		t.Fatalf("Liqo cannot read %s: %v", s.Name, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		t.Fatalf("Liqo reads a %T", priv)
	}
	pub, err := x509.ParsePKIXPublicKey(pubDER)
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, pub) != fingerprint(t, signer.Public()) {
		t.Fatal("Liqo reads a publicKey that is not its privateKey's")
	}
	return fingerprint(t, pub)
}

// TestRotateKeyReplacesLiqosKeysAndKeepsThePrevious: rotate-key writes a
// new key into Liqo's authentication-keys in the format InitClusterKeys
// writes (Liqo's own reader reads it), keeps whatever else the Secret holds,
// keeps the old key byte for byte in gitpeer-previous-authentication-keys,
// and returns the old key, which signs the rotation statement. A reopened
// backend signs with the new key.
func TestRotateKeyReplacesLiqosKeysAndKeepsThePrevious(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	before := getSecret(t, cs, "liqo", KeysSecretName)
	oldFP := liqoReads(t, before)
	if _, err := b.PreviousKey(ctx); !errors.Is(err, ErrNoPreviousKey) {
		t.Fatalf("PreviousKey before any rotation: %v, want ErrNoPreviousKey", err)
	}

	old, err := b.RotateKey(ctx, "https://alpha.new.example:6443")
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, old.Public()) != oldFP {
		t.Fatal("RotateKey did not return the key it replaced")
	}
	after := getSecret(t, cs, "liqo", KeysSecretName)
	newFP := liqoReads(t, after)
	if newFP == oldFP {
		t.Fatal("the key was not replaced")
	}
	if len(after.Data) != 2 || len(after.Labels) != 0 || len(after.Annotations) != 0 ||
		!bytes.HasPrefix(after.Data[PrivateKeyKey], []byte("-----BEGIN "+"PRIVATE KEY-----\n")) ||
		!bytes.HasPrefix(after.Data[PublicKeyKey], []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Fatalf("authentication-keys is not in Liqo's shape after the rotation: %+v", after)
	}
	if got := fingerprint(t, b.Signer().Public()); got != newFP {
		t.Fatalf("the backend signs with %s, want the new %s", got, newFP)
	}
	prev := getSecret(t, cs, "liqo", PreviousKeysSecretName)
	if !bytes.Equal(prev.Data[PrivateKeyKey], before.Data[PrivateKeyKey]) || !bytes.Equal(prev.Data[PublicKeyKey], before.Data[PublicKeyKey]) {
		t.Fatal("the previous Secret does not hold the old key byte for byte")
	}
	if p, err := b.PreviousKey(ctx); err != nil || fingerprint(t, p.Public()) != oldFP {
		t.Fatalf("PreviousKey: %v", err)
	}
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.Fingerprint != newFP || info.APIServer != "https://alpha.new.example:6443" {
		t.Fatalf("cluster info after the rotation: %s %s", info.Fingerprint, info.APIServer)
	}
	reopened, err := NewWithClients(ctx, testOptions(ca), cs.CoreV1(), cs.CertificatesV1())
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, reopened.Signer().Public()) != newFP {
		t.Fatal("a reopened backend does not sign with the new key")
	}

	// A second rotation replaces the previous key with the one it rotates out.
	if _, err := b.RotateKey(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if p, err := b.PreviousKey(ctx); err != nil || fingerprint(t, p.Public()) != newFP {
		t.Fatalf("PreviousKey after a second rotation: %v", err)
	}
	if b.APIServer() != "https://alpha.new.example:6443" {
		t.Fatalf("an empty --api-server changed the API server to %q", b.APIServer())
	}
}

// TestRotateKeyInterruptedLeavesAUsableKey: a rotation that stops at any
// write (the API server refuses it, the process dies, a concurrent writer
// changed authentication-keys: a conflict) leaves authentication-keys with
// the old key pair byte for byte, which Liqo reads and a reopened backend
// signs with; a rotation run again then succeeds.
func TestRotateKeyInterruptedLeavesAUsableKey(t *testing.T) {
	for _, tc := range []struct {
		name, verb, secret string
		err                error
	}{
		{"keeping the previous key fails", "create", PreviousKeysSecretName, errors.New("etcdserver: request timed out")},
		{"replacing the key fails", "update", KeysSecretName, errors.New("etcdserver: request timed out")},
		{"authentication-keys changed meanwhile", "update", KeysSecretName, apierrors.NewConflict(corev1.Resource("secrets"), KeysSecretName, errors.New("the object has been modified"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ca := testCA(t)
			cs := newClientset()
			b, _ := initBackend(t, cs, testOptions(ca))
			before := getSecret(t, cs, "liqo", KeysSecretName)
			oldFP := liqoReads(t, before)
			fail := true
			cs.PrependReactor(tc.verb, "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				var name string
				switch a := a.(type) {
				case k8stesting.CreateAction:
					name = a.GetObject().(*corev1.Secret).Name
				case k8stesting.UpdateAction:
					name = a.GetObject().(*corev1.Secret).Name
				}
				if fail && name == tc.secret {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			if _, err := b.RotateKey(ctx, ""); err == nil {
				t.Fatal("RotateKey succeeded although a write failed")
			}
			now := getSecret(t, cs, "liqo", KeysSecretName)
			if !bytes.Equal(now.Data[PrivateKeyKey], before.Data[PrivateKeyKey]) || !bytes.Equal(now.Data[PublicKeyKey], before.Data[PublicKeyKey]) || liqoReads(t, now) != oldFP {
				t.Fatal("an interrupted rotation changed authentication-keys")
			}
			if fingerprint(t, b.Signer().Public()) != oldFP {
				t.Fatal("the backend signs with another key than the one in force")
			}
			reopened, err := NewWithClients(ctx, testOptions(ca), cs.CoreV1(), cs.CertificatesV1())
			if err != nil || fingerprint(t, reopened.Signer().Public()) != oldFP {
				t.Fatalf("reopened after an interrupted rotation: %v", err)
			}

			fail = false
			old, err := b.RotateKey(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if fingerprint(t, old.Public()) != oldFP || liqoReads(t, getSecret(t, cs, "liqo", KeysSecretName)) == oldFP {
				t.Fatal("the rotation run again did not rotate the old key out")
			}
			if p, err := b.PreviousKey(ctx); err != nil || fingerprint(t, p.Public()) != oldFP {
				t.Fatalf("PreviousKey after the rotation run again: %v", err)
			}
		})
	}
}
