// Package testgit runs real Git hosts on loopback for tests: OpenSSH's sshd
// serving bare repositories to a deploy key through git-shell, and
// git-http-backend behind a TLS server with a private CA and basic or bearer
// authentication. Both serve the same directory of bare repositories, so one
// repo can be reached over ssh:// and https:// at once.
//
// Everything runs as the test's user, in the test's temp dirs, on 127.0.0.1,
// and is stopped by t.Cleanup. Keys and certificates are generated per test.
package testgit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Key is an Ed25519 SSH key pair.
type Key struct {
	// PEM is the private key in OpenSSH format, as ssh-keygen writes it and
	// as a credentials directory's identity file holds it.
	PEM []byte
	// AuthorizedKey is the public key as one authorized_keys line without
	// options or newline ("ssh-ed25519 AAAA... comment").
	AuthorizedKey string
	// Public is the public key.
	Public ssh.PublicKey
}

// NewKey generates an Ed25519 key pair, its private key encrypted with
// passphrase unless that is empty.
func NewKey(t testing.TB, comment, passphrase string) Key {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, comment)
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, comment, []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	if comment != "" {
		line += " " + comment
	}
	return Key{PEM: pem.EncodeToMemory(block), AuthorizedKey: line, Public: sshPub}
}

// Bare creates an empty bare repository at path whose HEAD is main, with
// the git CLI.
func Bare(t testing.TB, path string) {
	t.Helper()
	Git(t, filepath.Dir(path), "init", "--quiet", "--bare", "--initial-branch=main", path)
}

// Git runs the git CLI in dir as Command makes it and returns its trimmed
// combined output; it fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Command(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Command is the git CLI command every test runs: args in dir ("" is the
// current directory), ignoring the user's and the system's config, in the C
// locale, with user.name t and user.email t@example.com. The identity is
// config from the environment (GIT_CONFIG_COUNT), which a -c user.name=...
// or --author among args overrides, so a test can commit as someone else.
// Command is for the tests Git does not fit: a command that reads stdin,
// whose stdout alone is parsed, that is expected to fail, or that needs
// more environment (append to its Env: a later KEY=value wins).
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=t",
		"GIT_CONFIG_KEY_1=user.email", "GIT_CONFIG_VALUE_1=t@example.com")
	return cmd
}

// WriteFiles writes files (name → content) into dir with mode 0600, creating
// dir: a credentials directory as a mounted Secret holds it.
func WriteFiles(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteTree writes files (slash path relative to dir → content) into dir
// as a work tree holds them: files 0644, the directories they need 0755.
func WriteTree(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitExecPath is ExecPath, failing the test when git cannot tell.
func gitExecPath(t testing.TB) string {
	t.Helper()
	dir, err := ExecPath()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SyncBuffer is a bytes.Buffer that a process (an exec.Cmd's Stdout or
// Stderr) writes while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreeLoopbackAddr is a 127.0.0.1 address whose port was free a moment ago,
// for a server a test starts.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
