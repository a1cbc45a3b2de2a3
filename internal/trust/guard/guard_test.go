package guard

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// material is generated once per test binary: key generation (RSA above all)
// is the slow part, and no key fixture is ever committed.
type material struct {
	rsaPKCS1, rsaPKCS8, ecSEC1, ecPKCS8, edPKCS8, openSSH, encrypted []byte // PEM
	edDER                                                            []byte // raw PKCS#8 DER
	publicKey, cert, csr                                             []byte // PEM, all fine
}

var (
	matOnce sync.Once
	mat     material
)

func keys(testing.TB) material {
	matOnce.Do(func() {
		must := func(b []byte, err error) []byte {
			if err != nil {
				panic(err)
			}
			return b
		}
		enc := func(typ string, der []byte) []byte {
			return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
		}
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		epub, ed, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		mat.rsaPKCS1 = enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk))
		mat.rsaPKCS8 = enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(rk)))
		mat.ecSEC1 = enc("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(ek)))
		mat.ecPKCS8 = enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(ek)))
		mat.edDER = must(x509.MarshalPKCS8PrivateKey(ed))
		mat.edPKCS8 = enc("PRIVATE KEY", mat.edDER)
		block, err := ssh.MarshalPrivateKey(ed, "test")
		if err != nil {
			panic(err)
		}
		mat.openSSH = pem.EncodeToMemory(block)
		// The body of an encrypted PKCS#8 key is opaque; its armour is what
		// must be recognised.
		junk := make([]byte, 180)
		_, _ = rand.Read(junk)
		mat.encrypted = enc("ENCRYPTED PRIVATE KEY", junk)

		mat.publicKey = enc("PUBLIC KEY", must(x509.MarshalPKIXPublicKey(epub)))
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "cl-provider"},
			NotBefore:    time.Now(), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true,
		}
		mat.cert = enc("CERTIFICATE", must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, ek.Public(), ek)))
		mat.csr = enc("CERTIFICATE REQUEST", must(x509.CreateCertificateRequest(rand.Reader,
			&x509.CertificateRequest{Subject: pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo"}}}, ed)))
	})
	return mat
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// indent prefixes every line of b, for YAML block scalars.
func indent(b []byte, prefix string) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix)
}

// wrap breaks s into lines of n characters, as `base64` does.
func wrap(s string, n int) string {
	var sb strings.Builder
	for len(s) > n {
		sb.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	sb.WriteString(s)
	return sb.String()
}

func kubeconfig(user string) string {
	m := keys(nil)
	return `apiVersion: v1
kind: Config
clusters:
- name: cl-provider
  cluster:
    server: https://203.0.113.7:6443
    certificate-authority-data: ` + b64(m.cert) + `
contexts:
- name: cl-provider
  context: {cluster: cl-provider, user: cl-consumer}
current-context: cl-provider
users:
- name: cl-consumer
  user:
` + user
}

func nonce() string {
	raw := make([]byte, 64)
	_, _ = rand.Read(raw)
	return b64(raw)
}

func TestCheck(t *testing.T) {
	m := keys(t)
	sig := make([]byte, 64)
	_, _ = rand.Read(sig)
	tests := []struct {
		name    string
		content string
		refuse  string // substring of the reason; "" means accepted
	}{
		// Private keys, bare.
		{"refuses an RSA PKCS#1 key", string(m.rsaPKCS1), `PEM block "RSA PRIVATE KEY"`},
		{"refuses an RSA PKCS#8 key", string(m.rsaPKCS8), `PEM block "PRIVATE KEY"`},
		{"refuses an EC SEC 1 key", string(m.ecSEC1), `PEM block "EC PRIVATE KEY"`},
		{"refuses an EC PKCS#8 key", string(m.ecPKCS8), `PEM block "PRIVATE KEY"`},
		{"refuses an Ed25519 PKCS#8 key", string(m.edPKCS8), `PEM block "PRIVATE KEY"`},
		{"refuses an OpenSSH key", string(m.openSSH), `PEM block "OPENSSH PRIVATE KEY"`},
		{"refuses an encrypted PKCS#8 key", string(m.encrypted), `PEM block "ENCRYPTED PRIVATE KEY"`},
		{"refuses a truncated key (armour only)", "notes:\n-----BEGIN EC " + "PRIVATE KEY-----\nMHcC", `line 2: PEM block "EC PRIVATE KEY"`},
		{"refuses a raw DER key", string(m.edDER), "DER private key (PKCS#8)"},

		// Private keys, wrapped.
		{"refuses a base64 key inside a Secret", `apiVersion: v1
kind: Secret
metadata: {name: authentication-keys, namespace: liqo}
data:
  publicKey: ` + b64(m.publicKey) + `
  privateKey: ` + b64(m.edPKCS8) + "\n", `data.privateKey (base64-decoded): line 1: PEM block "PRIVATE KEY"`},
		{"refuses a base64 DER key inside a Secret", "apiVersion: v1\nkind: Secret\ndata:\n  key: " + b64(m.edDER) + "\n",
			"data.key (base64-decoded): DER private key"},
		{"refuses a key in a block scalar", "apiVersion: v1\nkind: Secret\nstringData:\n  tls.key: |\n" + indent(m.ecSEC1, "    ") + "\n",
			`PEM block "EC PRIVATE KEY"`},
		{"refuses wrapped base64 of a key", "apiVersion: v1\nkind: ConfigMap\ndata:\n  blob: |\n" + indent([]byte(wrap(b64(m.rsaPKCS1), 76)), "    ") + "\n",
			`PEM block "RSA PRIVATE KEY"`},
		{"refuses wrapped base64 of a key in text that is not YAML", "{{ broken: [yaml\n" + wrap(b64(m.ecPKCS8), 64) + "\n}}\n",
			`line 2: base64-decoded: line 1: PEM block "PRIVATE KEY"`},
		{"refuses a key in a JSON string", mustJSON(map[string]any{"kind": "Secret", "stringData": map[string]string{"key": string(m.ecPKCS8)}}),
			`PEM block "PRIVATE KEY"`},
		{"refuses base64 of a key inside base64 (bounded depth)", "data:\n  x: " + b64([]byte("data:\n  y: "+b64(m.ecSEC1)+"\n")) + "\n",
			`PEM block "EC PRIVATE KEY"`},
		{"refuses a key in the second YAML document", "kind: ConfigMap\ndata: {a: b}\n---\nkind: Secret\ndata:\n  k: " + b64(m.ecSEC1) + "\n",
			`data.k (base64-decoded)`},
		{"refuses a base64 key in text that is not YAML", "{{ broken: [yaml\nkey=" + b64(m.rsaPKCS8) + "\n", "base64-decoded"},

		// Kubeconfigs.
		{"refuses a kubeconfig with client-key-data", kubeconfig("    client-certificate-data: " + b64(m.cert) + "\n    client-key-data: " + b64(m.ecSEC1) + "\n"),
			"client-key-data"},
		{"refuses a kubeconfig with a client-key path", kubeconfig("    client-certificate: /etc/gitpeer/tls.crt\n    client-key: /etc/gitpeer/tls.key\n"),
			"users[0].user.client-key: kubeconfig user credential"},
		{"refuses a kubeconfig with a token", kubeconfig("    token: eyJhbGciOiJSUzI1NiJ9.payload.signature\n"),
			"users[0].user.token: kubeconfig user credential"},
		{"refuses a kubeconfig with an auth-provider token", kubeconfig("    auth-provider:\n      name: oidc\n      config:\n        id-token: abc.def.ghi\n"),
			"auth-provider.config.id-token"},
		{"refuses a kubeconfig inside a Secret", "apiVersion: v1\nkind: Secret\ndata:\n  kubeconfig: " +
			b64([]byte(kubeconfig("    token: sha256~abcdefghijklmnop\n"))) + "\n", "data.kubeconfig (base64-decoded)"},
		{"refuses a kubeconfig as JSON", mustJSON(map[string]any{"kind": "Config", "users": []any{map[string]any{"name": "u", "user": map[string]any{"client-key-data": b64(m.ecSEC1)}}}}),
			"client-key-data"},
		{"accepts a kubeconfig with only a certificate", kubeconfig("    client-certificate-data: " + b64(m.cert) + "\n"), ""},
		{"accepts a kubeconfig with an exec plugin", kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: gitpeer\n      args: [credential]\n"), ""},
		{"accepts a kubeconfig with an empty token", kubeconfig("    token: \"\"\n"), ""},

		// AWS.
		{"refuses an AWS secret in an Identity's awsConfig", `apiVersion: authentication.liqo.io/v1beta1
kind: Identity
metadata: {name: controlplane-cl-provider, namespace: liqo-tenant-cl-provider}
spec:
  clusterID: cl-provider
  type: ControlPlane
  authParams:
    apiServer: https://eks.example:443
    awsConfig:
      awsAccessKeyID: AKIAIOSFODNN7EXAMPLE
      awsSecretAccessKey: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
      awsRegion: eu-west-1
      awsClusterName: prod
`, "spec.authParams.awsConfig.awsSecretAccessKey: AWS secret access key"},
		{"refuses aws_secret_access_key in JSON", `{"aws_secret_access_key": "x"}`, "aws_secret_access_key: AWS secret access key"},
		{"refuses an AWS_SECRET_ACCESS_KEY env var", "env:\n- name: AWS_SECRET_ACCESS_KEY\n  value: wJalrXUtnFEMI/K7MDENG\n", "AWS secret access key"},
		{"refuses AWS credentials in an env file", "AWS_ACCESS_KEY_ID=AKIA\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY\n", "line 2: AWS secret access key"},
		{"refuses AWS credentials base64'd in a Secret", "kind: Secret\ndata:\n  credentials: " +
			b64([]byte("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")) + "\n",
			"AWS secret access key"},
		{"accepts an empty awsSecretAccessKey", "spec:\n  authParams:\n    awsConfig:\n      awsAccessKeyID: AKIA\n      awsSecretAccessKey: \"\"\n", ""},
		{"accepts a null awsSecretAccessKey", "awsSecretAccessKey: null\n", ""},
		{"accepts an awsSecretAccessKey reference", "awsSecretAccessKey:\n  secretKeyRef: {name: aws, key: secret}\n", ""},

		// Fine.
		{"accepts a public key", string(m.publicKey), ""},
		{"accepts a certificate", string(m.cert), ""},
		{"accepts a CSR", string(m.csr), ""},
		{"accepts a cluster.yaml", `apiVersion: gitpeer.io/v1alpha1
kind: Cluster
clusterID: cl-provider
publicKey: |
` + indent(m.publicKey, "  ") + `
apiServer: https://203.0.113.7:6443
caBundle: ` + b64(m.cert) + "\n", ""},
		{"accepts a Tenant with CSR and public key", `apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
spec:
  clusterID: cl-consumer
  publicKey: ` + b64(m.publicKey) + `
  csr: ` + b64(m.csr) + `
  signature: ` + b64(sig) + "\n", ""},
		{"accepts a nonce Secret", `apiVersion: v1
kind: Secret
metadata:
  name: liqo-nonce
  namespace: liqo-tenant-cl-consumer
  labels: {liqo.io/nonce: "true", liqo.io/remote-cluster-id: cl-consumer}
data:
  nonce: ` + b64([]byte(nonce())) + "\n", ""},
		{"accepts a signed nonce Secret", "kind: Secret\ndata:\n  nonce: " + b64([]byte(nonce())) + "\n  signedNonce: " + b64(sig) + "\n", ""},
		{"accepts plain text", "The peering is Ready.\n", ""},
		{"accepts a document about keys", "Private keys live in the state directory, never in Git.\n", ""},
		{"accepts empty content", "", ""},
		{"accepts binary noise", string(sig), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check("clusters/cl-a/x.yaml", []byte(tt.content))
			if tt.refuse == "" {
				if err != nil {
					t.Fatalf("Check refused acceptable content: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check accepted content that holds %s", tt.refuse)
			}
			if !errors.Is(err, ErrSecret) {
				t.Errorf("error %v does not wrap ErrSecret", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "clusters/cl-a/x.yaml: private material: ") || !strings.Contains(msg, tt.refuse) {
				t.Errorf("error %q does not name the path and %q", msg, tt.refuse)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestCheckHostileInput makes sure alias expansion, deep nesting and large
// base64 stay cheap.
func TestCheckHostileInput(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("a: &a [x, x, x, x, x, x, x, x, x]\n")
	for i := 'b'; i <= 'z'; i++ {
		prev := i - 1
		sb.WriteString(string(i) + ": &" + string(i) + " [*" + string(prev) + ", *" + string(prev) + ", *" + string(prev) + ", *" + string(prev) + "]\n")
	}
	start := time.Now()
	if err := Check("bomb.yaml", []byte(sb.String())); err != nil {
		t.Fatalf("Check(bomb) = %v", err)
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if err := Check("deep.yaml", []byte(deep)); err != nil {
		t.Fatalf("Check(deep) = %v", err)
	}
	// Wrapped base64 is grouped line by line: linear, not quadratic.
	raw := make([]byte, 512<<10)
	_, _ = rand.Read(raw)
	if err := Check("big.b64", []byte(wrap(b64(raw), 76))); err != nil {
		t.Fatalf("Check(big.b64) = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("hostile input took %v", d)
	}
}

func FuzzCheck(f *testing.F) {
	m := keys(f)
	for _, seed := range []string{
		"", "a: b\n", "---\n---\n", string(m.cert), string(m.ecSEC1), b64(m.edPKCS8),
		"data:\n  k: " + b64(m.rsaPKCS1) + "\n", kubeconfig("    token: x\n"),
		"awsSecretAccessKey: k\n", "&a [*a]", "{\"a\": \"\\u0000\"}", "key: !!binary " + b64(m.edDER),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		err := Check("f", content)
		if err != nil && !errors.Is(err, ErrSecret) {
			t.Fatalf("error does not wrap ErrSecret: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("checker failed: %v", err)
		}
	})
}
