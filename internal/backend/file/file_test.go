package file_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// The file backend is a whole Backend (tokens, key rollover, kubeconfig
// removal included).
var _ backend.Backend = (*file.Backend)(nil)

var stateFiles = []string{file.ConfigFile, file.KeyFile, file.CACertFile, file.CAKeyFile, file.NonceSecretFile}

func initState(t *testing.T, dir, id string) *file.Backend {
	t.Helper()
	b, created, err := file.Init(dir, file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".example:6443", Now: now})
	if err != nil {
		t.Fatalf("init %s: %v", id, err)
	}
	if !created {
		t.Fatalf("init %s: reported existing state in a fresh directory", id)
	}
	b.Now = func() time.Time { return now }
	return b
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range stateFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestInitCreatesAPrivateStateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "alpha")
	b := initState(t, dir, "alpha")
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("state dir mode %04o, want 0700", m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(stateFiles) {
		t.Errorf("state dir holds %d entries, want %d", len(entries), len(stateFiles))
	}
	for _, name := range stateFiles {
		if m := mode(t, filepath.Join(dir, name)); m != 0o600 {
			t.Errorf("%s mode %04o, want 0600", name, m)
		}
	}
	siblings, _ := os.ReadDir(filepath.Dir(dir))
	if len(siblings) != 1 {
		t.Errorf("init left %d entries beside the state dir (a temporary one?)", len(siblings))
	}
	if b.ClusterID() != "alpha" || b.Dir() != dir || b.Config().APIServer != "https://alpha.example:6443" {
		t.Errorf("backend %s at %s, config %+v", b.ClusterID(), b.Dir(), b.Config())
	}
	key, err := handshake.ParsePrivateKey(readAll(t, dir)[file.KeyFile])
	if err != nil {
		t.Fatalf("cluster.key is not a PKCS#8 key: %v", err)
	}
	if _, ok := key.Public().(ed25519.PublicKey); !ok {
		t.Errorf("cluster key is %T, want Ed25519", key.Public())
	}
	want, _ := handshake.Fingerprint(key.Public())
	if got, _ := handshake.Fingerprint(b.Signer().Public()); got != want {
		t.Error("the backend signs with another key than cluster.key")
	}
}

func TestInitIntoAnEmptyExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	initState(t, dir, "alpha")
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("state dir mode %04o, want 0700", m)
	}
}

func TestInitIsIdempotentForTheSameCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alpha")
	initState(t, dir, "alpha")
	before := readAll(t, dir)
	b, created, err := file.Init(dir, file.InitOptions{ClusterID: "alpha", APIServer: "https://other.example:6443", Now: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Error("second init reports it created the state")
	}
	after := readAll(t, dir)
	for _, name := range stateFiles {
		if !bytes.Equal(before[name], after[name]) {
			t.Errorf("%s changed on the second init: keys must never rotate silently", name)
		}
	}
	if b.ClusterID() != "alpha" || b.Config().APIServer != "https://alpha.example:6443" {
		t.Errorf("second init opened %+v", b.Config())
	}
}

func TestInitRefusesADirectoryItDoesNotOwn(t *testing.T) {
	t.Run("refuses another cluster's state", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "alpha")
		initState(t, dir, "alpha")
		before := readAll(t, dir)
		_, _, err := file.Init(dir, file.InitOptions{ClusterID: "beta", APIServer: "https://beta.example:6443"})
		if err == nil || !strings.Contains(err.Error(), `"alpha"`) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("error %v, want a refusal naming the dir and the cluster it holds", err)
		}
		after := readAll(t, dir)
		for _, name := range stateFiles {
			if !bytes.Equal(before[name], after[name]) {
				t.Errorf("%s changed", name)
			}
		}
	})
	t.Run("refuses a directory holding files that are not gitpeer's", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := file.Init(dir, file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443"})
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("error %v, want a refusal of a non-empty directory", err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != "notes.txt" {
			t.Errorf("directory now holds %v", entries)
		}
		if siblings, _ := os.ReadDir(filepath.Dir(dir)); len(siblings) != 1 {
			t.Errorf("init left %d entries beside the directory", len(siblings))
		}
	})
}

// kubeadmCA is a CA like kubeadm's pki/ca.crt and ca.key: RSA 2048, the key
// in PKCS#1 "RSA PRIVATE KEY" PEM. Generated at run time, never stored.
func kubeadmCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	kubeadmOnce.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "kubernetes"},
			NotBefore:             now.Add(-24 * time.Hour),
			NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		if err != nil {
			t.Fatal(err)
		}
		kubeadmCert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		kubeadmKey = pem.EncodeToMemory(&pem.Block{Type: "RSA " + "PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	})
	if kubeadmCert == nil {
		t.Fatal("no kubeadm CA")
	}
	return kubeadmCert, kubeadmKey
}

var (
	kubeadmOnce             sync.Once
	kubeadmCert, kubeadmKey []byte
)

func TestInitImportsAKubeadmCA(t *testing.T) {
	certPEM, keyPEM := kubeadmCA(t)
	dir := filepath.Join(t.TempDir(), "beta")
	b, _, err := file.Init(dir, file.InitOptions{ClusterID: "beta", APIServer: "https://beta.example:6443", CACertPEM: certPEM, CAKeyPEM: keyPEM, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	b.Now = func() time.Time { return now }
	if !bytes.Equal(b.CABundle(), certPEM) {
		t.Error("the CA bundle is not the imported certificate")
	}
	stored := readAll(t, dir)
	if !bytes.Equal(stored[file.CACertFile], certPEM) || !bytes.Equal(stored[file.CAKeyFile], keyPEM) {
		t.Error("the imported CA is not stored as given")
	}

	// A consumer's CSR signed by beta chains to the imported CA, so it
	// authenticates to the API server that trusts kubeadm's CA.
	consumerKey, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := handshake.ControlPlaneCSR(consumerKey, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	crt, err := b.SignCSR(context.Background(), csr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(consumerKey.Public())
	if err := handshake.VerifyClientCertificate(crt, certPEM, der, "alpha", handshake.ControlPlaneOrganization, now); err != nil {
		t.Fatalf("certificate does not chain to the imported CA: %v", err)
	}
	block, _ := pem.Decode(crt)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("crypto/x509 does not chain the certificate to kubeadm's CA: %v", err)
	}
	if info, err := b.ClusterInfo(); err != nil || info.CA != string(certPEM) {
		t.Errorf("cluster.yaml publishes CA %q, %v; want the imported one", info.CA, err)
	}

	reopened, err := file.Open(dir)
	if err != nil || !bytes.Equal(reopened.CABundle(), certPEM) {
		t.Fatalf("reopened with CA %q, %v", reopened.CABundle(), err)
	}
}

func TestInitRefusesAHalfGivenOrMismatchedCA(t *testing.T) {
	certPEM, keyPEM := kubeadmCA(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherKeyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA " + "PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(otherKey)})
	cases := []struct {
		name      string
		cert, key []byte
		says      string
	}{
		{"refuses a certificate without its key", certPEM, nil, "both"},
		{"refuses a key without its certificate", nil, keyPEM, "both"},
		{"refuses a key that is not the certificate's", certPEM, otherKeyPEM, "import CA"},
		{"refuses a certificate that is not PEM", []byte("garbage"), keyPEM, "import CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "beta")
			_, _, err := file.Init(dir, file.InitOptions{ClusterID: "beta", APIServer: "https://beta.example:6443", CACertPEM: tc.cert, CAKeyPEM: tc.key})
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, dir, tc.says)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a refused init wrote %v", entries)
			}
		})
	}
}

func TestOpenRefusesUnsafeOrBrokenState(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		names  string // the path the error must name
		says   string
	}{
		{"refuses a directory others can enter", func(t *testing.T, dir string) { chmod(t, dir, 0o755) }, "", "0755"},
		{"refuses a directory others can read", func(t *testing.T, dir string) { chmod(t, dir, 0o740) }, "", "0740"},
		{"refuses a key others can read", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, file.KeyFile), 0o644) }, file.KeyFile, "0644"},
		{"refuses a CA key others can read", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, file.CAKeyFile), 0o640) }, file.CAKeyFile, "0640"},
		{"refuses a nonce secret others can read", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, file.NonceSecretFile), 0o604) }, file.NonceSecretFile, "0604"},
		{"refuses a malformed key", func(t *testing.T, dir string) { write(t, filepath.Join(dir, file.KeyFile), "not a key\n") }, file.KeyFile, ""},
		{"refuses a public key where the private key goes", func(t *testing.T, dir string) {
			k, _ := handshake.GenerateKey()
			pub, _ := handshake.MarshalPublicKey(k.Public())
			write(t, filepath.Join(dir, file.KeyFile), string(pub))
		}, file.KeyFile, ""},
		{"refuses a missing key", func(t *testing.T, dir string) { remove(t, filepath.Join(dir, file.KeyFile)) }, file.KeyFile, ""},
		{"refuses a CA certificate that is not its key's", func(t *testing.T, dir string) {
			other := t.TempDir() + "/other"
			initState(t, other, "other")
			data, _ := os.ReadFile(filepath.Join(other, file.CACertFile))
			write(t, filepath.Join(dir, file.CACertFile), string(data))
		}, file.CACertFile, ""},
		{"refuses a short nonce secret", func(t *testing.T, dir string) { write(t, filepath.Join(dir, file.NonceSecretFile), "short") }, file.NonceSecretFile, "5 bytes"},
		{"refuses a config without a cluster ID", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, file.ConfigFile), "apiServer: https://x\n")
		}, file.ConfigFile, "malformed"},
		{"refuses a config with an unknown field", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, file.ConfigFile), "clusterID: alpha\napiServer: https://x\nkey: y\n")
		}, file.ConfigFile, "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "alpha")
			initState(t, dir, "alpha")
			tc.damage(t, dir)
			b, err := file.Open(dir)
			if err == nil {
				t.Fatalf("opened %+v", b)
			}
			if errors.Is(err, file.ErrNotInitialized) {
				t.Errorf("error %v reads as an uninitialized directory", err)
			}
			want := filepath.Join(dir, tc.names)
			if tc.names == "" {
				want = dir
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not name %s and say %q", err, want, tc.says)
			}
			// Init must not paper over a broken state directory either.
			if _, _, err := file.Init(dir, file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443"}); err == nil {
				t.Error("init accepted the broken state directory")
			}
		})
	}
}

func TestOpenSaysWhenThereIsNoState(t *testing.T) {
	for name, dir := range map[string]string{
		"a missing directory": filepath.Join(t.TempDir(), "missing"),
		"an empty directory":  t.TempDir(),
	} {
		if _, err := file.Open(dir); !errors.Is(err, file.ErrNotInitialized) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %v, want ErrNotInitialized naming it", name, err)
		}
	}
	f := filepath.Join(t.TempDir(), "plain")
	write(t, f, "x")
	if _, err := file.Open(f); err == nil || errors.Is(err, file.ErrNotInitialized) {
		t.Errorf("a plain file: error %v, want a refusal", err)
	}
}

func TestNoncesAreDerivedStatelessly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "beta")
	b := initState(t, dir, "beta")
	n1, err := b.Nonce("alpha", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake.CheckNonce(n1); err != nil {
		t.Fatalf("nonce %q has not Liqo's shape: %v", n1, err)
	}
	reopened, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := reopened.Nonce("alpha", 1); again != n1 {
		t.Error("the same consumer and epoch give another nonce after reopening")
	}
	other := initState(t, filepath.Join(t.TempDir(), "beta"), "beta")
	distinct := map[string]string{"epoch 1 for alpha": n1}
	for name, n := range map[string]func() (string, error){
		"epoch 2 for alpha":           func() (string, error) { return b.Nonce("alpha", 2) },
		"epoch 1 for gamma":           func() (string, error) { return b.Nonce("gamma", 1) },
		"another state dir's epoch 1": func() (string, error) { return other.Nonce("alpha", 1) },
	} {
		v, err := n()
		if err != nil {
			t.Fatal(err)
		}
		for seen, w := range distinct {
			if v == w {
				t.Errorf("%s repeats the nonce of %s", name, seen)
			}
		}
		distinct[name] = v
	}
}

func TestClusterInfoIsWhatOthersParse(t *testing.T) {
	b := initState(t, filepath.Join(t.TempDir(), "alpha"), "alpha")
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	data, err := info.Encode()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := layout.ParseClusterInfo("clusters/alpha/cluster.yaml", "alpha", data)
	if err != nil {
		t.Fatalf("the published cluster.yaml does not parse: %v", err)
	}
	if fp, _ := handshake.Fingerprint(b.Signer().Public()); parsed.Fingerprint != fp {
		t.Errorf("published fingerprint %s, the key's is %s", parsed.Fingerprint, fp)
	}
	if parsed.CA != string(b.CABundle()) || parsed.APIServer != "https://alpha.example:6443" {
		t.Errorf("published %+v", parsed)
	}
	if regexp.MustCompile(`PRIVATE`).Match(data) {
		t.Error("cluster.yaml carries private material")
	}
}

// identityFor is the Identity beta issues to alpha: alpha's CSR signed by
// beta's backend.
func identityFor(t *testing.T, alpha, beta *file.Backend, apiServer string) *authv1beta1.Identity {
	t.Helper()
	csr, err := handshake.ControlPlaneCSR(alpha.Signer(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	crt, err := beta.SignCSR(context.Background(), csr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return liqo.ControlPlaneIdentity("alpha", "beta", authv1beta1.AuthParams{APIServer: apiServer, CA: beta.CABundle(), SignedCRT: crt})
}

func TestKubeconfigsAreStoredPrivatelyAndOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	alpha := initState(t, filepath.Join(t.TempDir(), "alpha"), "alpha")
	beta := initState(t, filepath.Join(t.TempDir(), "beta"), "beta")
	id := identityFor(t, alpha, beta, "https://beta.example:6443")

	p, err := alpha.StoreKubeconfig(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p != alpha.KubeconfigPath("beta") || p != filepath.Join(alpha.Dir(), file.KubeconfigDir, "beta.kubeconfig") {
		t.Errorf("stored at %s", p)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("kubeconfig mode %04o, want 0600", m)
	}
	if m := mode(t, filepath.Dir(p)); m != 0o700 {
		t.Errorf("kubeconfig dir mode %04o, want 0700", m)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", p)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://beta.example:6443" {
		t.Errorf("server %s", rc.Host)
	}
	if _, err := rest.TLSConfigFor(rc); err != nil {
		t.Fatalf("the kubeconfig's certificate and key do not pair: %v", err)
	}
	if _, err := file.Open(alpha.Dir()); err != nil {
		t.Errorf("the state dir no longer opens: %v", err)
	}

	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.StoreKubeconfig(ctx, id); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); !fi.ModTime().Equal(old) {
		t.Error("an unchanged kubeconfig was rewritten")
	}

	moved := identityFor(t, alpha, beta, "https://beta-2.example:6443")
	if _, err := alpha.StoreKubeconfig(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.ModTime().Equal(old) {
		t.Error("a changed kubeconfig was not rewritten")
	}
	if data, _ := os.ReadFile(p); !strings.Contains(string(data), "beta-2.example") {
		t.Error("the rewritten kubeconfig does not carry the new server")
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("rewritten kubeconfig mode %04o, want 0600", m)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	if err := alpha.RemoveKubeconfig(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig still there: %v", err)
	}
	if err := alpha.RemoveKubeconfig(ctx, "beta"); err != nil {
		t.Errorf("removing a missing kubeconfig: %v", err)
	}
}

func TestStoreKubeconfigRefusesAnIdentityWithoutCertificate(t *testing.T) {
	alpha := initState(t, filepath.Join(t.TempDir(), "alpha"), "alpha")
	id := liqo.ControlPlaneIdentity("alpha", "beta", authv1beta1.AuthParams{APIServer: "https://beta.example:6443"})
	if p, err := alpha.StoreKubeconfig(context.Background(), id); err == nil {
		t.Fatalf("stored %s", p)
	}
	if _, err := os.Stat(alpha.KubeconfigPath("beta")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a kubeconfig was written")
	}
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	b := initState(t, filepath.Join(t.TempDir(), "beta"), "beta")
	t.Run("a peer without a token has none", func(t *testing.T) {
		_, err := b.Token(ctx, "alpha")
		if !errors.Is(err, backend.ErrNoToken) || !strings.Contains(err.Error(), "alpha.token") {
			t.Fatalf("error %v, want ErrNoToken naming the file", err)
		}
	})
	t.Run("a set token is read back without surrounding blanks", func(t *testing.T) {
		if err := b.SetToken(ctx, "alpha", []byte("  s3cret\n\n")); err != nil {
			t.Fatal(err)
		}
		tok, err := b.Token(ctx, "alpha")
		if err != nil || string(tok) != "s3cret" {
			t.Fatalf("token %q, %v", tok, err)
		}
		if m := mode(t, filepath.Join(b.Dir(), file.TokenDir, "alpha.token")); m != 0o600 {
			t.Errorf("token mode %04o, want 0600", m)
		}
		if m := mode(t, filepath.Join(b.Dir(), file.TokenDir)); m != 0o700 {
			t.Errorf("token dir mode %04o, want 0700", m)
		}
	})
	t.Run("an empty token is refused", func(t *testing.T) {
		if err := b.SetToken(ctx, "gamma", []byte(" \n")); err == nil {
			t.Fatal("stored an empty token")
		}
		if _, err := b.Token(ctx, "gamma"); !errors.Is(err, backend.ErrNoToken) {
			t.Errorf("error %v, want ErrNoToken", err)
		}
	})
	t.Run("an emptied token file counts as no token", func(t *testing.T) {
		write(t, filepath.Join(b.Dir(), file.TokenDir, "delta.token"), "\n")
		if _, err := b.Token(ctx, "delta"); !errors.Is(err, backend.ErrNoToken) {
			t.Errorf("error %v, want ErrNoToken", err)
		}
	})
	t.Run("a new token is 64 hex characters and distinct", func(t *testing.T) {
		tok, err := backend.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
			t.Errorf("token %q", tok)
		}
		if again, _ := backend.NewToken(); again == tok {
			t.Error("two new tokens are equal")
		}
	})
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}
