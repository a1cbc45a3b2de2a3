package gitsync

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Secrets of the transport tests: every one is looked for, byte for byte,
// in the clone, the credentials' neighbours and every message.
const (
	httpUser     = "peering-bot"
	httpPassword = "pw-7c1f0e9a-do-not-leak"
	httpToken    = "tok-51d2b8e4-do-not-leak"
	readToken    = "ro-9a3e77c2-do-not-leak"
	keyPassword  = "kp-2f6b1d08-do-not-leak"
)

// hosts is one bare repo served by sshd and by git-http-backend over TLS.
type hosts struct {
	root   string // holds peering.git
	deploy testgit.Key
	ssh    *testgit.SSHServer
	https  *testgit.HTTPSServer
}

func startHosts(t *testing.T) *hosts {
	t.Helper()
	h := &hosts{root: t.TempDir(), deploy: testgit.NewKey(t, "deploy", keyPassword)}
	testgit.Bare(t, filepath.Join(h.root, "peering.git"))
	h.ssh = testgit.StartSSHD(t, h.root, h.deploy)
	h.https = testgit.StartHTTPS(t, h.root, testgit.HTTPAuth{
		Username: httpUser, Password: httpPassword, Token: httpToken, ReadOnlyToken: readToken})
	return h
}

// sshCreds is a credentials directory for the SSH host.
func (h *hosts) sshCreds(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "ssh-creds")
	testgit.WriteFiles(t, dir, map[string][]byte{
		gitauth.IdentityFile:   h.deploy.PEM,
		gitauth.PasswordFile:   []byte(keyPassword),
		gitauth.KnownHostsFile: h.ssh.KnownHosts,
	})
	return dir
}

// httpsCreds is a credentials directory for the HTTPS host: basic auth,
// or bearer when token is set.
func (h *hosts) httpsCreds(t *testing.T, token string) string {
	dir := filepath.Join(t.TempDir(), "https-creds")
	files := map[string][]byte{gitauth.CAFile: h.https.CACert}
	if token != "" {
		files[gitauth.BearerTokenFile] = []byte(token)
	} else {
		files[gitauth.UsernameFile] = []byte(httpUser)
		files[gitauth.PasswordFile] = []byte(httpPassword + "\n")
	}
	testgit.WriteFiles(t, dir, files)
	return dir
}

func credOptions(t *testing.T, url, dir, name string) Options {
	t.Helper()
	src, err := gitauth.New(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t, url, name)
	o.Credentials = src
	return o
}

// leaks collects every message of a test and the places it wrote, and
// fails the test when a secret shows up in any.
type leaks struct {
	*testgit.Leaks
	msgs []string
	dirs []string
}

func newLeaks(h *hosts) *leaks {
	return &leaks{Leaks: testgit.NewLeaks(h.deploy.PEM, httpPassword, httpToken, readToken, keyPassword)}
}

func (l *leaks) err(err error) error {
	if err != nil {
		l.msgs = append(l.msgs, err.Error())
	}
	return err
}

// check scans every message and every file under the directories.
func (l *leaks) check(t *testing.T) {
	t.Helper()
	for _, msg := range l.msgs {
		if what := l.Find([]byte(msg)); what != "" {
			t.Errorf("%s in the message %q", what, msg)
		}
	}
	if l.ScanDirs(t, l.dirs...) == 0 {
		t.Error("the scan read no file")
	}
	if len(l.msgs) == 0 {
		t.Error("the scan read no message")
	}
}

// TestCredentialsOverSSHAndHTTPS runs gitsync against a real OpenSSH sshd
// (deploy key, strict known_hosts) and git-http-backend over TLS (private
// CA, basic and bearer auth) serving one repo.
func TestCredentialsOverSSHAndHTTPS(t *testing.T) {
	h := startHosts(t)
	ctx := context.Background()
	sshURL, httpsURL := h.ssh.URL("peering.git"), h.https.URL("peering.git")
	clones := t.TempDir()
	l := newLeaks(h)
	l.dirs = []string{clones}
	t.Cleanup(func() { l.check(t) })

	open := func(t *testing.T, url, creds, name string) (*Repo, error) {
		t.Helper()
		src, err := gitauth.New(creds, url)
		if err != nil {
			return nil, l.err(err)
		}
		o := testOptions(t, url, name)
		o.Dir = filepath.Join(clones, name)
		o.Credentials = src
		r, err := Open(ctx, o)
		return r, l.err(err)
	}
	mustOpen := func(t *testing.T, url, creds, name string) *Repo {
		t.Helper()
		r, err := open(t, url, creds, name)
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		return r
	}
	wantErr := func(t *testing.T, err error, cause error, parts ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		if cause != nil && !errors.Is(err, cause) {
			t.Errorf("error is not %v: %v", cause, err)
		}
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error does not say %q: %v", p, err)
			}
		}
	}

	t.Run("an encrypted deploy key pushes over ssh, basic auth and a bearer token over https", func(t *testing.T) {
		overSSH := mustOpen(t, sshURL, h.sshCreds(t), "ssh")
		basic := mustOpen(t, httpsURL, h.httpsCreds(t, ""), "basic")
		bearer := mustOpen(t, httpsURL, h.httpsCreds(t, httpToken), "bearer")
		var commits []string
		for i, r := range []*Repo{overSSH, basic, bearer} {
			res, err := r.SyncTree(ctx, writes("write "+string(rune('a'+i)), map[string]string{string(rune('a'+i)) + ".yaml": "x: 1\n"}))
			if l.err(err) != nil {
				t.Fatalf("Sync %d: %v", i, err)
			}
			commits = append(commits, res.Commit)
		}
		// Each side reads what the others pushed.
		if _, err := overSSH.SyncTree(ctx, func(context.Context, *TreeFS) (*Change, error) { return nil, nil }); l.err(err) != nil {
			t.Fatal(err)
		}
		if overSSH.Head() != commits[2] {
			t.Errorf("ssh clone Head = %s, want the bearer's %s", overSSH.Head(), commits[2])
		}
		if got := testgit.Git(t, h.root, "--git-dir=peering.git", "rev-list", "--count", "main"); got != "3" {
			t.Errorf("remote has %s commits, want 3", got)
		}
		testgit.Git(t, h.root, "--git-dir=peering.git", "fsck", "--strict")
	})

	t.Run("a stranger's host key is refused", func(t *testing.T) {
		creds := h.sshCreds(t)
		host := strings.Fields(string(h.ssh.KnownHosts))[0]
		stranger := testgit.NewKey(t, "", "")
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.KnownHostsFile: []byte(host + " " + stranger.AuthorizedKey + "\n")})
		_, err := open(t, sshURL, creds, "stranger-host")
		wantErr(t, err, gitauth.ErrHostKeyMismatch, "host key of "+h.ssh.Addr+" does not match known_hosts in "+creds,
			"SHA256:", filepath.Join(creds, "known_hosts"))
	})

	t.Run("a known_hosts without the host is refused before connecting", func(t *testing.T) {
		creds := h.sshCreds(t)
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.KnownHostsFile: []byte("[127.0.0.2]:22 " + h.ssh.HostKey.AuthorizedKey + "\n")})
		_, err := open(t, sshURL, creds, "unknown-host")
		wantErr(t, err, nil, filepath.Join(creds, "known_hosts")+" has no key for "+h.ssh.Addr, "ssh-keyscan -p ")
	})

	t.Run("no known_hosts is refused, naming the file to add", func(t *testing.T) {
		creds := h.sshCreds(t)
		if err := os.Remove(filepath.Join(creds, gitauth.KnownHostsFile)); err != nil {
			t.Fatal(err)
		}
		_, err := open(t, sshURL, creds, "no-known-hosts")
		wantErr(t, err, nil, "no "+filepath.Join(creds, "known_hosts"), "refusing to connect to "+h.ssh.Addr)
	})

	t.Run("a stranger's deploy key is refused", func(t *testing.T) {
		creds := h.sshCreds(t)
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.IdentityFile: testgit.NewKey(t, "", "").PEM})
		_, err := open(t, sshURL, creds, "stranger-key")
		wantErr(t, err, gitauth.ErrAuthRefused, "authentication refused by "+h.ssh.Addr, filepath.Join(creds, "identity"))
	})

	t.Run("a wrong key passphrase is refused", func(t *testing.T) {
		creds := h.sshCreds(t)
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.PasswordFile: []byte("not-it")})
		_, err := open(t, sshURL, creds, "wrong-passphrase")
		wantErr(t, err, nil, filepath.Join(creds, "identity")+" is encrypted and "+filepath.Join(creds, "password")+" is not its passphrase")
	})

	t.Run("a wrong password is refused", func(t *testing.T) {
		creds := h.httpsCreds(t, "")
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.PasswordFile: []byte("wrong-password")})
		_, err := open(t, httpsURL, creds, "wrong-password")
		wantErr(t, err, gitauth.ErrAuthRefused, "authentication refused by "+strings.TrimPrefix(h.https.Base, "https://")+
			": check username/password or bearerToken in "+creds)
	})

	t.Run("no credentials for an https host that wants them says how to give them", func(t *testing.T) {
		creds := filepath.Join(t.TempDir(), "ca-only")
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.CAFile: h.https.CACert})
		_, err := open(t, httpsURL, creds, "ca-only")
		wantErr(t, err, gitauth.ErrAuthRefused, "check username/password or bearerToken in "+creds)
	})

	t.Run("a private CA is needed to trust the https host", func(t *testing.T) {
		creds := h.httpsCreds(t, "")
		if err := os.Remove(filepath.Join(creds, gitauth.CAFile)); err != nil {
			t.Fatal(err)
		}
		_, err := open(t, httpsURL, creds, "no-ca")
		wantErr(t, err, gitauth.ErrUntrustedCertificate, filepath.Join(creds, "ca.crt"))
	})

	t.Run("a read-only token may fetch but its push is refused", func(t *testing.T) {
		r := mustOpen(t, httpsURL, h.httpsCreds(t, readToken), "read-only")
		_, err := r.SyncTree(ctx, writes("ro", map[string]string{"ro.yaml": "x: 1\n"}))
		wantErr(t, l.err(err), gitauth.ErrAuthRefused, "403")
	})

	t.Run("a missing repository is reported as such", func(t *testing.T) {
		_, err := open(t, h.https.URL("nope.git"), h.httpsCreds(t, ""), "missing-https")
		wantErr(t, err, gitauth.ErrRepoNotFound, "repository /nope.git not found on")
		_, err = open(t, h.ssh.URL("nope.git"), h.sshCreds(t), "missing-ssh")
		wantErr(t, err, gitauth.ErrRepoNotFound, "nope.git not found on "+h.ssh.Addr)
	})

	t.Run("credentials fixed on disk work at the next Sync of the same clone", func(t *testing.T) {
		creds := h.httpsCreds(t, "")
		r := mustOpen(t, httpsURL, creds, "rotated")
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.PasswordFile: []byte("revoked")})
		_, err := r.SyncTree(ctx, writes("rotate", map[string]string{"rot.yaml": "x: 1\n"}))
		wantErr(t, l.err(err), gitauth.ErrAuthRefused)
		// Rotated to a bearer token: username and password are gone.
		for _, f := range []string{gitauth.UsernameFile, gitauth.PasswordFile} {
			if err := os.Remove(filepath.Join(creds, f)); err != nil {
				t.Fatal(err)
			}
		}
		testgit.WriteFiles(t, creds, map[string][]byte{gitauth.BearerTokenFile: []byte(httpToken)})
		if _, err := r.SyncTree(ctx, writes("rotate", map[string]string{"rot.yaml": "x: 1\n"})); l.err(err) != nil {
			t.Fatalf("Sync after the rotation: %v", err)
		}
	})

	t.Run("a push declined by a hook carries the host's message", func(t *testing.T) {
		overSSH := mustOpen(t, sshURL, h.sshCreds(t), "declined-ssh")
		overHTTPS := mustOpen(t, httpsURL, h.httpsCreds(t, httpToken), "declined-https")
		hook := filepath.Join(h.root, "peering.git", "hooks", "pre-receive")
		script := "#!/bin/sh\necho 'GH006: Protected branch update failed for refs/heads/main.' >&2\n" +
			"echo 'Changes must be made through a pull request.' >&2\nexit 1\n"
		if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(hook)
		for _, r := range []*Repo{overSSH, overHTTPS} {
			res, err := r.SyncTree(ctx, writes("declined", map[string]string{"declined.yaml": "x: 1\n"}))
			wantErr(t, l.err(err), gitauth.ErrPushDeclined, "pre-receive hook declined",
				"\nremote: GH006: Protected branch update failed for refs/heads/main.\nremote: Changes must be made through a pull request.")
			if res.Attempts != 1 {
				t.Errorf("a declined push was retried: %d attempts", res.Attempts)
			}
		}
	})

	t.Run("a URL with credentials is refused without showing them", func(t *testing.T) {
		for _, url := range []string{
			strings.Replace(httpsURL, "https://", "https://"+httpUser+":"+httpPassword+"@", 1),
			strings.Replace(httpsURL, "https://", "https://"+httpToken+"@", 1),
			strings.Replace(sshURL, "ssh://root@", "ssh://root:"+keyPassword+"@", 1),
		} {
			o := testOptions(t, url, "userinfo")
			o.Dir = filepath.Join(clones, "userinfo")
			_, err := Open(ctx, o)
			wantErr(t, l.err(err), gitauth.ErrURLCredentials, "--git-credentials")
			if _, err := os.Stat(o.Dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a clone was made for %s", gitauth.Redact(url))
			}
			_, err = gitauth.New("", url)
			wantErr(t, l.err(err), gitauth.ErrURLCredentials)
		}
	})

	t.Run("a clone whose origin URL held a token is re-pointed at the clean URL", func(t *testing.T) {
		dir := filepath.Join(clones, "old-token")
		testgit.Git(t, clones, "init", "--quiet", dir)
		testgit.Git(t, dir, "remote", "add", "origin", strings.Replace(httpsURL, "https://", "https://x:"+httpToken+"@", 1))
		mustOpen(t, httpsURL, h.httpsCreds(t, httpToken), "old-token")
		if got := testgit.Git(t, dir, "remote", "get-url", "--all", "origin"); got != httpsURL {
			t.Errorf("origin = %q, want %q", got, httpsURL)
		}
	})
}
