package testgit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Leaks finds credentials in what a program printed or wrote: any of its
// secrets verbatim, or any 24 consecutive characters of a private key's
// PEM body past its first 100, across line breaks (those first characters
// encode an OpenSSH key's fixed header: "openssh-key-v1", cipher and KDF
// names, common to every such key), unless they are also in the key's own
// public key, which an OpenSSH private key holds in clear: a program may
// rightly print a public key, and every Ed25519 one (a Flux verify Secret,
// allowed signers) starts with the same "ssh-ed25519" header.
type Leaks struct {
	secrets []string
	key     string // the key's base64 body, without line breaks
	public  string // its public key's authorized_keys line, when known
}

// NewLeaks looks for keyPEM (a PEM private key) and secrets.
func NewLeaks(keyPEM []byte, secrets ...string) *Leaks {
	l := &Leaks{secrets: secrets}
	for _, line := range strings.Split(string(keyPEM), "\n") {
		if !strings.HasPrefix(line, "-----") {
			l.key += strings.TrimSpace(line)
		}
	}
	// An encrypted key still tells its public key, in clear.
	var pub ssh.PublicKey
	var missing *ssh.PassphraseMissingError
	if raw, err := ssh.ParseRawPrivateKey(keyPEM); err == nil {
		if signer, err := ssh.NewSignerFromKey(raw); err == nil {
			pub = signer.PublicKey()
		}
	} else if errors.As(err, &missing) {
		pub = missing.PublicKey
	}
	if pub != nil {
		l.public = string(ssh.MarshalAuthorizedKey(pub))
	}
	return l
}

// Find describes the first credential in data, "" if none.
func (l *Leaks) Find(data []byte) string {
	for _, sec := range l.secrets {
		if bytes.Contains(data, []byte(sec)) {
			return fmt.Sprintf("secret %.6s...", sec)
		}
	}
	flat := bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\n"), nil), []byte("\r"), nil)
	const window = 24
	for i := 100; i+window <= len(l.key); i++ {
		w := l.key[i : i+window]
		if bytes.Contains(flat, []byte(w)) && !strings.Contains(l.public, w) {
			return "private key material"
		}
	}
	return ""
}

// ScanDirs reports (t.Errorf) every regular file under dirs holding a
// credential, and returns how many files it read.
func (l *Leaks) ScanDirs(t testing.TB, dirs ...string) int {
	t.Helper()
	files := 0
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			if what := l.Find(data); what != "" {
				t.Errorf("%s in %s", what, p)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	return files
}
