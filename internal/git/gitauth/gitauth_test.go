package gitauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://git.example.com/org/peering.git", true},
		{"ssh://git@git.example.com/org/peering.git", true},
		{"git@git.example.com:org/peering.git", true},
		{"/srv/git/peering.git", true},
		{"file:///srv/git/peering.git", true},
		{"https://bot:hunter2@git.example.com/org/peering.git", false},
		{"https://ghp_token@git.example.com/org/peering.git", false},
		{"http://bot@git.example.com/peering.git", false},
		{"ssh://git:hunter2@git.example.com/peering.git", false},
	} {
		err := CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%s) = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrURLCredentials) {
				t.Errorf("CheckURL(%s) = %v, not ErrURLCredentials", tc.url, err)
			}
			for _, secret := range []string{"hunter2", "ghp_token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("CheckURL(%s) shows the secret: %v", tc.url, err)
				}
			}
			if !strings.Contains(err.Error(), "--git-credentials DIR") {
				t.Errorf("CheckURL(%s) gives no hint: %v", tc.url, err)
			}
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://bot:pw@host/x.git":     "https://***@host/x.git",
		"https://a:b/c@host/x.git":      "https://***@host/x.git", // malformed: still hidden
		"https://host/x.git":            "https://host/x.git",
		"git@host:org/x.git":            "***@host:org/x.git",
		"/srv/git/x.git":                "/srv/git/x.git",
		"ssh://git@host:2222/srv/x.git": "ssh://***@host:2222/srv/x.git",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
	}
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newKey(t *testing.T) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block)), sp
}

func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestTransport(t *testing.T) {
	key, pub := newKey(t)
	known := "[git.example.com]:2222 " + string(ssh.MarshalAuthorizedKey(pub))
	const sshURL = "ssh://git@git.example.com:2222/org/peering.git"
	const httpsURL = "https://git.example.com/org/peering.git"

	t.Run("an ssh directory gives a deploy key checked against known_hosts", func(t *testing.T) {
		dir := writeDir(t, map[string]string{IdentityFile: key, KnownHostsFile: known, "identity.pub": "ignored"})
		s, err := New(dir, sshURL)
		if err != nil {
			t.Fatal(err)
		}
		auth, ca, err := s.Transport()
		if err != nil {
			t.Fatal(err)
		}
		pk, ok := auth.(*gitssh.PublicKeys)
		if !ok || ca != nil {
			t.Fatalf("auth = %T, ca = %q", auth, ca)
		}
		if pk.User != "git" || pk.HostKeyCallback == nil || len(pk.HostKeyAlgorithms) == 0 {
			t.Errorf("user %q, callback %v, algorithms %v", pk.User, pk.HostKeyCallback != nil, pk.HostKeyAlgorithms)
		}
		if strings.Contains(fmt.Sprint(auth), "PRIVATE") {
			t.Errorf("the auth method prints its key: %v", auth)
		}
	})

	t.Run("https: a bearer token wins over basic auth, and ca.crt is the bundle", func(t *testing.T) {
		caPEM := selfSigned(t)
		dir := writeDir(t, map[string]string{UsernameFile: "bot\n", PasswordFile: "pw\n", BearerTokenFile: "tok\n", CAFile: caPEM})
		s, err := New(dir, httpsURL)
		if err != nil {
			t.Fatal(err)
		}
		auth, ca, err := s.Transport()
		if err != nil {
			t.Fatal(err)
		}
		if tok, ok := auth.(*githttp.TokenAuth); !ok || tok.Token != "tok" {
			t.Errorf("auth = %#v, want the bearer token without its newline", auth)
		}
		if string(ca) != caPEM {
			t.Errorf("CA bundle = %q", ca)
		}
		os.Remove(filepath.Join(dir, BearerTokenFile))
		auth, _, err = s.Transport()
		if b, ok := auth.(*githttp.BasicAuth); err != nil || !ok || b.Username != "bot" || b.Password != "pw" {
			t.Errorf("after removing the token: %#v, %v", auth, err)
		}
	})

	t.Run("nothing to authenticate", func(t *testing.T) {
		for _, tc := range []struct{ dir, url string }{
			{"", sshURL}, {"", httpsURL}, {writeDir(t, nil), "/srv/git/peering.git"}, {writeDir(t, nil), httpsURL},
		} {
			s, err := New(tc.dir, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if auth, ca, err := s.Transport(); auth != nil || ca != nil || err != nil {
				t.Errorf("%q %s: %v %q %v", tc.dir, tc.url, auth, ca, err)
			}
		}
	})

	for _, tc := range []struct {
		name, url string
		files     map[string]string
		want      []string
	}{
		{"ssh without identity names the file", sshURL, map[string]string{KnownHostsFile: known},
			[]string{"no DIR/identity: add the private key of a deploy key"}},
		{"ssh without known_hosts refuses, naming the file to add", sshURL, map[string]string{IdentityFile: key},
			[]string{"no DIR/known_hosts: refusing to connect to git.example.com:2222", "ssh-keyscan -p 2222 git.example.com >> DIR/known_hosts"}},
		{"ssh with known_hosts for other hosts refuses", sshURL, map[string]string{IdentityFile: key, KnownHostsFile: "other.example.com " + string(ssh.MarshalAuthorizedKey(pub))},
			[]string{"DIR/known_hosts has no key for git.example.com:2222"}},
		{"an identity that is no key", sshURL, map[string]string{IdentityFile: "garbage", KnownHostsFile: known},
			[]string{"DIR/identity: not a usable SSH private key"}},
		{"a password without username", httpsURL, map[string]string{PasswordFile: "pw"},
			[]string{"credentials in DIR", "'password' requires 'username'"}},
		{"credentials over plain http", "http://git.example.com/x.git", map[string]string{BearerTokenFile: "tok"},
			[]string{"refusing to send the credentials of DIR over plain http://"}},
		{"a ca.crt without a certificate", httpsURL, map[string]string{CAFile: "nope"},
			[]string{"DIR/ca.crt holds no PEM certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			s, err := New(dir, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = s.Transport()
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), dir, "DIR")
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q: %s", w, msg)
				}
			}
			if strings.Contains(msg, "garbage") || strings.Contains(msg, "tok") {
				t.Errorf("error shows a secret: %s", msg)
			}
		})
	}

	t.Run("a missing directory", func(t *testing.T) {
		if _, err := New(filepath.Join(t.TempDir(), "nope"), httpsURL); err == nil {
			t.Error("no error")
		}
	})
}

func TestHost(t *testing.T) {
	for url, want := range map[string]string{
		"git@github.com:org/peering.git":             "github.com",
		"ssh://git@git.example.com:22/peering.git":   "git.example.com",
		"ssh://git@git.example.com:2222/peering.git": "git.example.com:2222",
		"https://git.example.com/peering.git":        "git.example.com",
		"https://git.example.com:8443/peering.git":   "git.example.com:8443",
	} {
		s, err := New("", url)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Host(); got != want {
			t.Errorf("Host of %s = %s, want %s", url, got, want)
		}
	}
}

func TestExplain(t *testing.T) {
	dir := writeDir(t, map[string]string{UsernameFile: "bot", PasswordFile: "hunter2-hunter2"})
	withDir, err := New(dir, "https://git.example.com/org/peering.git")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := withDir.Transport(); err != nil {
		t.Fatal(err)
	}
	without, err := New("", "https://git.example.com/org/peering.git")
	if err != nil {
		t.Fatal(err)
	}
	sshWithout, err := New("", "ssh://git@git.example.com/org/peering.git")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		src   *Source
		err   error
		cause error
		want  string
	}{
		{"401 with credentials", withDir, fmt.Errorf("x: %w: ", transport.ErrAuthenticationRequired), ErrAuthRefused,
			"authentication refused by git.example.com: check username/password or bearerToken in " + dir},
		{"401 without credentials", without, transport.ErrAuthenticationRequired, ErrAuthRefused,
			"authentication refused by git.example.com: no credentials were given: pass --git-credentials DIR holding username/password or bearerToken"},
		{"403", withDir, transport.ErrAuthorizationFailed, ErrAuthRefused, "403 Forbidden"},
		{"not found", withDir, transport.ErrRepositoryNotFound, ErrRepoNotFound, "repository /org/peering.git not found on git.example.com"},
		{"a hook", withDir, errors.New("command error on refs/heads/main: pre-receive hook declined\nremote: no"), ErrPushDeclined,
			"declined by the host (is the branch protected?"},
		{"an ssh key refused", withDir, errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey]"),
			ErrAuthRefused, "authentication refused by git.example.com"},
		{"a secret echoed by the host is hidden", withDir, errors.New("bad password hunter2-hunter2"), nil, "bad password ***"},
		{"an unknown error is kept", withDir, errors.New("disk full"), nil, "disk full"},
		{"ssh without credentials nor agent", sshWithout, errors.New(`error creating SSH agent: "SSH agent requested but SSH_AUTH_SOCK not-specified"`), ErrNoCredentials,
			"ssh://git@git.example.com/org/peering.git is an SSH URL and no --git-credentials were given (nor is an ssh agent running): pass --git-credentials DIR"},
		{"ssh without credentials nor known_hosts", sshWithout, errors.New("knownhosts: open /home/x/.ssh/known_hosts: no such file or directory"), ErrNoCredentials,
			"no --git-credentials were given, and there is no known_hosts to check git.example.com's host key with: pass --git-credentials DIR with the deploy key as DIR/identity and the host's key as DIR/known_hosts (ssh-keyscan git.example.com > DIR/known_hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.src.Explain(tc.err)
			if tc.cause != nil && !errors.Is(got, tc.cause) {
				t.Errorf("%v is not %v", got, tc.cause)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("%v does not wrap %v", got, tc.err)
			}
			if !strings.Contains(got.Error(), tc.want) {
				t.Errorf("Explain = %q, want it to say %q", got, tc.want)
			}
			if strings.Contains(got.Error(), "hunter2") {
				t.Errorf("Explain shows the password: %q", got)
			}
		})
	}
	if withDir.Explain(nil) != nil {
		t.Error("Explain(nil) != nil")
	}
}

func TestAPIToken(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		files     map[string]string
		token     string // "" when none
		from      string
	}{
		{"bearer token wins", "https://git.example.org/o/r", map[string]string{"bearerToken": "bt\n", "username": "u", "password": "pw"}, "bt", "bearerToken"},
		{"password over https", "https://git.example.org/o/r", map[string]string{"username": "u", "password": "pat\n"}, "pat", "password"},
		{"a passphrase is no token", "ssh://git@git.example.org/o/r", map[string]string{"identity": "k", "password": "passphrase"}, "", ""},
		{"empty directory", "https://git.example.org/o/r", map[string]string{"ca.crt": "x"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(writeDir(t, tc.files), tc.url)
			if err != nil {
				t.Fatal(err)
			}
			token, file, ca, err := s.APIToken()
			if err != nil || token != tc.token || (tc.from == "") != (file == "") || tc.from != "" && filepath.Base(file) != tc.from {
				t.Fatalf("APIToken() = %q from %q, %v; want %q from %q", token, file, err, tc.token, tc.from)
			}
			if want := tc.files["ca.crt"]; string(ca) != want {
				t.Errorf("ca = %q, want %q", ca, want)
			}
		})
	}
	s, _ := New("", "https://git.example.org/o/r")
	if token, file, _, err := s.APIToken(); token != "" || file != "" || err != nil {
		t.Errorf("no directory: %q %q %v", token, file, err)
	}
}
