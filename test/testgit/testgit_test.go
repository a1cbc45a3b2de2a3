package testgit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures are checked with the git CLI, independently of go-git: a
// push and a clone through each, and a stranger refused.
func TestServersWithTheGitCLI(t *testing.T) {
	root := t.TempDir()
	Bare(t, filepath.Join(root, "repo.git"))
	work := t.TempDir()
	Git(t, work, "init", "--quiet", "--initial-branch=main", ".")
	if err := os.WriteFile(filepath.Join(work, "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "add", "f")
	Git(t, work, "commit", "--quiet", "-m", "first")

	t.Run("ssh with a deploy key and strict host key checking", func(t *testing.T) {
		deploy := NewKey(t, "deploy", "")
		s := StartSSHD(t, root, deploy)
		dir := t.TempDir()
		WriteFiles(t, dir, map[string][]byte{"identity": deploy.PEM, "known_hosts": s.KnownHosts, "stranger": NewKey(t, "x", "").PEM})
		sshCmd := func(key string) string {
			return "ssh -F /dev/null -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" +
				filepath.Join(dir, "known_hosts") + " -i " + filepath.Join(dir, key)
		}
		Git(t, work, "-c", "core.sshCommand="+sshCmd("identity"), "push", "--quiet", s.URL("repo.git"), "main")
		clone := filepath.Join(t.TempDir(), "c")
		Git(t, root, "-c", "core.sshCommand="+sshCmd("identity"), "clone", "--quiet", s.URL("repo.git"), clone)
		if _, err := os.Stat(filepath.Join(clone, "f")); err != nil {
			t.Fatal(err)
		}
		cmd := Command("", "-c", "core.sshCommand="+sshCmd("stranger"), "ls-remote", s.URL("repo.git"))
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("a stranger's key: %v\n%s", err, out)
		}
	})

	t.Run("https with a private CA, basic and bearer auth", func(t *testing.T) {
		s := StartHTTPS(t, root, HTTPAuth{Username: "bot", Password: "s3cret", Token: "tok"})
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, s.CACert, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GIT_SSL_CAINFO", ca) // the environment's would win over http.sslCAInfo
		basic := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bot:s3cret"))
		Git(t, root, "-c", "http.extraHeader="+basic, "ls-remote", s.URL("repo.git"))
		Git(t, work, "-c", "http.extraHeader=Authorization: Bearer tok",
			"push", "--quiet", s.URL("repo.git"), "main:other")
		cmd := Command("", "-c", "http.extraHeader=Authorization: Bearer nope",
			"-c", "credential.helper=", "ls-remote", s.URL("repo.git"))
		cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "terminal prompts disabled") {
			t.Fatalf("a wrong token: %v\n%s", err, out)
		}
	})
}

// TestHTTPBackendPushesOnlyWhenAsked: the handler hack/gitserve serves with
// no authentication of its own takes a clone, and a push only with push.
func TestHTTPBackendPushesOnlyWhenAsked(t *testing.T) {
	root := t.TempDir()
	Bare(t, filepath.Join(root, "repo.git"))
	work := t.TempDir()
	Git(t, work, "init", "--quiet", "--initial-branch=main", ".")
	Git(t, work, "commit", "--quiet", "--allow-empty", "-m", "first")
	for _, push := range []bool{false, true} {
		h, err := HTTPBackend(root, "", push, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		out, err := Command(work, "push", "--quiet", srv.URL+"/repo.git", "main").CombinedOutput()
		if push && err != nil {
			t.Errorf("a push with push set: %v\n%s", err, out)
		}
		if !push && (err == nil || !strings.Contains(string(out), "403")) {
			t.Errorf("a push without push set: %v\n%s", err, out)
		}
		Git(t, root, "clone", "--quiet", srv.URL+"/repo.git", filepath.Join(t.TempDir(), "c"))
		srv.Close()
	}
	if _, err := HTTPBackend(root, filepath.Join(root, "no-such-backend"), false, nil); err == nil || !strings.Contains(err.Error(), "git-http-backend") {
		t.Errorf("a missing backend: %v", err)
	}
}

// TestCommandCommitsAsTUnlessTheTestSaysWho: Command's identity is config,
// so a test's -c user.name=... (a human or an attacker committing) wins over
// it, and the user's own config is never read.
func TestCommandCommitsAsTUnlessTheTestSaysWho(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), ".gitconfig"), []byte("[user]\n\tname = home\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "first")
	Git(t, dir, "-c", "user.name=mallory", "-c", "user.email=m@example.com", "commit", "--quiet", "--allow-empty", "-m", "second")
	if got, want := Git(t, dir, "log", "--format=%an <%ae> %cn <%ce>"), "mallory <m@example.com> mallory <m@example.com>\nt <t@example.com> t <t@example.com>"; got != want {
		t.Errorf("authors and committers:\n%s\nwant\n%s", got, want)
	}
}

// TestServerCertificate: a TLS server on 127.0.0.1 with the written files
// is trusted by a client that trusts the returned CA, and by no other.
func TestServerCertificate(t *testing.T) {
	caPEM, certFile, keyFile := ServerCertificate(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	get := func(roots []byte) error {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(roots)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(caPEM); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	other, _, _ := ServerCertificate(t, t.TempDir())
	if err := get(other); err == nil {
		t.Fatal("another CA is trusted too")
	}
}

// Leaks finds an OpenSSH private key's body in output, but not another
// Ed25519 key's authorized_keys line, which shares its "ssh-ed25519"
// header with the private key's embedded public key.
func TestLeaksTellsAPrivateKeyFromAPublicOne(t *testing.T) {
	key := NewKey(t, "deploy", "a passphrase")
	leaks := NewLeaks(key.PEM)
	if what := leaks.Find(key.PEM); what != "private key material" {
		t.Errorf("the private key itself: %q", what)
	}
	for i := 0; i < 20; i++ {
		other := NewKey(t, "other", "")
		if what := leaks.Find([]byte(other.AuthorizedKey)); what != "" {
			t.Fatalf("another key's public line %q: %q", other.AuthorizedKey, what)
		}
	}
}
