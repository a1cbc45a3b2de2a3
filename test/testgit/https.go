package testgit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HTTPAuth is what an HTTPSServer accepts. A request with none of these
// credentials gets 401 with a Basic challenge.
type HTTPAuth struct {
	// Username and Password are accepted as basic auth, when Username is set.
	Username, Password string
	// Token is accepted as "Authorization: Bearer <Token>", when set.
	Token string
	// ReadOnlyToken, when set, is a bearer token that may fetch but gets
	// 403 Forbidden on push.
	ReadOnlyToken string
}

// HTTPSServer is git-http-backend behind a TLS server on 127.0.0.1, with a
// certificate from its own CA and authentication on every request.
type HTTPSServer struct {
	// Base is the server's https:// URL, without a trailing slash.
	Base string
	// CACert is the PEM certificate of the CA that issued the server's
	// certificate: a credentials directory's ca.crt.
	CACert []byte
	// Root is the directory of the bare repositories.
	Root string
}

// StartHTTPS serves the bare repositories under root over smart HTTP(S),
// pushes included, to clients presenting auth. It stops when the test ends.
func StartHTTPS(t testing.TB, root string, auth HTTPAuth) *HTTPSServer {
	t.Helper()
	// Stderr: "Not a git repository" for the tests of a missing one.
	h, err := HTTPBackend(root, "", true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, leaf := newCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		push := r.URL.Query().Get("service") == "git-receive-pack" || strings.HasSuffix(r.URL.Path, "/git-receive-pack")
		switch authorize(r, auth) {
		case "rw":
			h.ServeHTTP(w, r)
		case "ro":
			if push {
				http.Error(w, "this token may not push", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("WWW-Authenticate", `Basic realm="testgit"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the tests make fail
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &HTTPSServer{Base: srv.URL, CACert: caPEM, Root: root}
}

// URL is the https:// URL of the repository at Root/name.
func (s *HTTPSServer) URL(name string) string { return s.Base + "/" + name }

// authorize returns "rw", "ro" or "" for the request's credentials.
func authorize(r *http.Request, auth HTTPAuth) string {
	eq := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	if u, p, ok := r.BasicAuth(); ok && auth.Username != "" && eq(u, auth.Username) && eq(p, auth.Password) {
		return "rw"
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok:
		return ""
	case auth.Token != "" && eq(tok, auth.Token):
		return "rw"
	case auth.ReadOnlyToken != "" && eq(tok, auth.ReadOnlyToken):
		return "ro"
	}
	return ""
}

// ServerCertificate writes a server certificate for 127.0.0.1 and
// localhost, and its key, as PEM files in dir (server.crt, server.key), for
// a server the test starts itself (a Git host with its own TLS). It returns
// the PEM certificate of the fresh CA that issued it (a credentials
// directory's ca.crt) and the two files' paths.
func ServerCertificate(t testing.TB, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caPEM, leaf := newCA(t)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caPEM, certFile, keyFile
}

// newCA returns a fresh CA's PEM certificate and a server certificate it
// issued for 127.0.0.1 and localhost.
func newCA(t testing.TB) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testgit CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
