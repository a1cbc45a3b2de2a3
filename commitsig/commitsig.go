// Package commitsig signs and verifies Git commits with SSH signatures made
// by a cluster's Ed25519 key, and writes the public-key files that Git and
// Flux need to check them (design, "Trust" point 3).
//
// Formats, by source:
//
//   - Signatures are the armored "SSH SIGNATURE" blocks of OpenSSH's
//     PROTOCOL.sshsig, namespace "git", hash SHA-512: what `ssh-keygen -Y
//     sign -n git` writes and what Git stores in a commit's gpgsig header
//     (gitformat-signature(5)). They are made and parsed with
//     github.com/hiddeco/sshsig, the library Flux's source-controller uses to
//     verify them.
//   - AuthorizedKey writes one line of OpenSSH's authorized_keys format
//     (sshd(8)), the content Flux's GitRepository.spec.verify Secret takes
//     under a key ending in ".sshpub".
//   - AllowedSigners writes OpenSSH's allowed signers format (ssh-keygen(1),
//     "ALLOWED SIGNERS"), the file Git reads from gpg.ssh.allowedSignersFile.
//
// Only Ed25519 keys are accepted, for signing and for verifying: a cluster
// key is always Ed25519, and refusing the rest shuts out RSA's legacy
// algorithms and key-type confusion.
package commitsig

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of commit signatures, as Git uses it.
const Namespace = "git"

// hash is the SSHSIG hash algorithm of the signatures made here, as Git's
// (ssh-keygen's) default.
const hash = sshsig.HashSHA512

// armorHeader opens an armored SSH signature; Git tells signature formats
// apart by this prefix (gpg-interface.c).
const armorHeader = "-----BEGIN " + sshsig.PEMType + "-----"

var (
	// ErrUnsupportedKey is returned (wrapped) when a key given to this
	// package is not an Ed25519 key.
	ErrUnsupportedKey = errors.New("not an Ed25519 key")
	// ErrUnsigned is returned (wrapped) by Verify for a commit without a
	// signature.
	ErrUnsigned = errors.New("commit is not signed")
	// ErrNotSSH is returned (wrapped) by Verify for a commit signed in
	// another format than SSH, such as OpenPGP or X.509.
	ErrNotSSH = errors.New("commit signature is not an SSH signature")
	// ErrUnknownSigner is returned (wrapped) by Verify when an SSH signature
	// does not verify with any of the given keys: made by another key, over
	// other content (a tampered commit), in another namespace, malformed,
	// or by a key or algorithm other than Ed25519.
	ErrUnknownSigner = errors.New("commit signature does not verify with any trusted key")
)

// NewSigner returns a go-git Signer (for git.CommitOptions.Signer) that makes
// armored SSH signatures with key, namespace "git", hash SHA-512: the same
// signature `git commit -S` makes with gpg.format=ssh. key's private half may
// live anywhere (memory, a KMS); only Sign is called. NewSigner fails with
// ErrUnsupportedKey unless key.Public() is an ed25519.PublicKey.
func NewSigner(key crypto.Signer) (git.Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("new signer: nil key: %w", ErrUnsupportedKey)
	}
	if _, err := ed25519Key(key.Public()); err != nil {
		return nil, fmt.Errorf("new signer: %w", err)
	}
	s, err := ssh.NewSignerFromSigner(key)
	if err != nil {
		return nil, fmt.Errorf("new signer: %w", err)
	}
	return signer{s}, nil
}

type signer struct{ ssh.Signer }

// Sign returns the armored SSH signature of message, PEM-encoded with a
// trailing newline.
func (s signer) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.Signer, hash, Namespace)
	if err != nil {
		return nil, fmt.Errorf("ssh sign: %w", err)
	}
	return sshsig.Armor(sig), nil
}

// AuthorizedKey returns pub as one authorized_keys line,
// "ssh-ed25519 AAAA… comment\n" (no comment and no space before it when
// comment is empty): the value Flux's GitRepository.spec.verify Secret takes
// under a key ending in ".sshpub". It fails with ErrUnsupportedKey unless pub
// is an ed25519.PublicKey, and refuses a comment with a control character.
func AuthorizedKey(pub crypto.PublicKey, comment string) (string, error) {
	k, err := sshKey(pub)
	if err != nil {
		return "", fmt.Errorf("authorized key: %w", err)
	}
	if strings.ContainsFunc(comment, isControl) {
		return "", fmt.Errorf("authorized key: comment %q has a control character", comment)
	}
	line := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(k)), "\n")
	if comment != "" {
		line += " " + comment
	}
	return line + "\n", nil
}

// Entry is one line of an allowed signers file: Principal may sign commits
// with Key (an ed25519.PublicKey).
type Entry struct {
	Principal string
	Key       crypto.PublicKey
}

// AllowedSigners returns the content of a Git gpg.ssh.allowedSignersFile
// trusting each entry for commits only: one line per entry,
// `principal namespaces="git" ssh-ed25519 AAAA…`, sorted, duplicates dropped,
// each ending in a newline. With it `git log --show-signature` prints
// `Good "git" signature for <principal>` and `git verify-commit` succeeds.
// A principal must be non-empty and free of spaces, control characters,
// quotes, commas and the pattern characters * ? ! (the format would read
// those as lists or patterns). It fails with ErrUnsupportedKey for a key that
// is not an ed25519.PublicKey.
func AllowedSigners(entries ...Entry) (string, error) {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Principal == "" || strings.ContainsFunc(e.Principal, func(r rune) bool {
			return isControl(r) || strings.ContainsRune(" \t\",*?!", r)
		}) {
			return "", fmt.Errorf("allowed signers: invalid principal %q", e.Principal)
		}
		k, err := sshKey(e.Key)
		if err != nil {
			return "", fmt.Errorf("allowed signers: principal %s: %w", e.Principal, err)
		}
		lines = append(lines, fmt.Sprintf("%s namespaces=%q %s", e.Principal, Namespace,
			strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(k)), "\n")))
	}
	sort.Strings(lines)
	var b strings.Builder
	for i, l := range lines {
		if i > 0 && l == lines[i-1] {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Verify checks c's signature (its gpgsig header) against keys, principal →
// ed25519.PublicKey, and returns the principal whose key made it. The signed
// payload is the commit object without its signature, as Git signs it. A
// signature is accepted only when it is an armored SSH signature (nothing but
// whitespace around the block) by an Ed25519 key, in namespace "git", with
// hash SHA-256 or SHA-512, and verifies over c; when several principals share
// the key, the first in sorted order is returned.
//
// Errors callers branch on (errors.Is): ErrUnsigned (no signature),
// ErrNotSSH (another format, e.g. OpenPGP), ErrUnknownSigner (anything else
// that does not verify). A key in keys that is not Ed25519 is a caller error,
// ErrUnsupportedKey.
func Verify(c *object.Commit, keys map[string]crypto.PublicKey) (principal string, err error) {
	if c == nil {
		return "", errors.New("verify commit: nil commit")
	}
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		return "", fmt.Errorf("verify commit %s: %w", c.Hash, err)
	}
	r, err := payload.Reader()
	if err != nil {
		return "", fmt.Errorf("verify commit %s: %w", c.Hash, err)
	}
	defer r.Close()
	principal, err = verify(c.PGPSignature, r, keys)
	if err != nil {
		return "", fmt.Errorf("verify commit %s: %w", c.Hash, err)
	}
	return principal, nil
}

// verify checks armored, an untrusted gpgsig header value, over payload.
func verify(armored string, payload io.Reader, keys map[string]crypto.PublicKey) (string, error) {
	principals := make([]string, 0, len(keys))
	for p, k := range keys {
		if _, err := ed25519Key(k); err != nil {
			return "", fmt.Errorf("key of %s: %w", p, err)
		}
		principals = append(principals, p)
	}
	sort.Strings(principals)

	armored = strings.TrimSpace(armored)
	if armored == "" {
		return "", ErrUnsigned
	}
	if !strings.HasPrefix(armored, armorHeader) {
		return "", fmt.Errorf("%w (%s)", ErrNotSSH, firstLine(armored))
	}
	block, rest := pem.Decode([]byte(armored))
	if block == nil || len(bytes.TrimSpace(rest)) > 0 || len(block.Headers) > 0 {
		return "", fmt.Errorf("%w: malformed armor", ErrUnknownSigner)
	}
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnknownSigner, err)
	}
	if t := sig.PublicKey.Type(); t != ssh.KeyAlgoED25519 || sig.Signature.Format != ssh.KeyAlgoED25519 {
		return "", fmt.Errorf("%w: key type %s, signature format %s: only %s is accepted",
			ErrUnknownSigner, t, sig.Signature.Format, ssh.KeyAlgoED25519)
	}
	if len(sig.Signature.Rest) > 0 {
		return "", fmt.Errorf("%w: trailing data in signature", ErrUnknownSigner)
	}
	if sig.Namespace != Namespace {
		return "", fmt.Errorf("%w: namespace %q, want %q", ErrUnknownSigner, sig.Namespace, Namespace)
	}
	if sig.HashAlgorithm != sshsig.HashSHA512 && sig.HashAlgorithm != sshsig.HashSHA256 {
		return "", fmt.Errorf("%w: hash algorithm %q", ErrUnknownSigner, sig.HashAlgorithm)
	}
	signedBy := ssh.FingerprintSHA256(sig.PublicKey)
	for _, p := range principals {
		k, _ := sshKey(keys[p]) // checked above
		if ssh.FingerprintSHA256(k) != signedBy {
			continue
		}
		if err := sshsig.Verify(payload, sig, k, sig.HashAlgorithm, Namespace); err != nil {
			return "", fmt.Errorf("%w: signature by %s (%s): %w", ErrUnknownSigner, p, signedBy, err)
		}
		return p, nil
	}
	return "", fmt.Errorf("%w: signed by %s", ErrUnknownSigner, signedBy)
}

// ed25519Key returns pub as an Ed25519 key, or ErrUnsupportedKey.
func ed25519Key(pub crypto.PublicKey) (ed25519.PublicKey, error) {
	k, ok := pub.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%T: %w", pub, ErrUnsupportedKey)
	}
	if len(k) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%d-byte key: %w", len(k), ErrUnsupportedKey)
	}
	return k, nil
}

func sshKey(pub crypto.PublicKey) (ssh.PublicKey, error) {
	k, err := ed25519Key(pub)
	if err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(k)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// firstLine names an unknown signature format in errors, without echoing a
// whole untrusted blob.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("%q", s)
}
