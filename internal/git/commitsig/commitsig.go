// Package commitsig signs and verifies Git commits with a cluster's Ed25519
// key, as SSH signatures (what Flux verifies) or OpenPGP signatures (what
// Argo CD verifies), and writes the public-key files that Git, Flux and
// Argo CD need to check them (docs/design.md, trust point 3). A commit carries one
// signature, so a cluster signs in one format (Format), named as Git's
// gpg.format.
//
// Formats, by source:
//
//   - SSH signatures are the armored "SSH SIGNATURE" blocks of OpenSSH's
//     PROTOCOL.sshsig, namespace "git", hash SHA-512: what `ssh-keygen -Y
//     sign -n git` writes and what Git stores in a commit's gpgsig header
//     (gitformat-signature(5)). They are made and parsed with
//     github.com/hiddeco/sshsig, the library Flux's source-controller uses to
//     verify them.
//   - OpenPGP signatures are armored "PGP SIGNATURE" blocks (RFC 4880) by
//     the cluster key as a legacy-EdDSA OpenPGP key derived from it with a
//     fixed creation time (openpgp.go): what `git commit -S` makes with
//     gpg.format=openpgp, and what GnuPG (`git verify-commit`, Argo CD)
//     checks once OpenPGPPublicKey's file is imported.
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
	// ErrUnsupportedFormat is returned (wrapped) by Verify for a commit
	// signed in a format other than SSH and OpenPGP, such as X.509 (gpgsm).
	ErrUnsupportedFormat = errors.New("commit signature is neither an SSH nor an OpenPGP signature")
	// ErrUnknownSigner is returned (wrapped) by Verify when a signature
	// does not verify with any of the given keys: made by another key, over
	// other content (a tampered commit), in another namespace (SSH) or of
	// another type (OpenPGP), malformed, or by a key or algorithm other than
	// Ed25519.
	ErrUnknownSigner = errors.New("commit signature does not verify with any trusted key")
)

// Format is a commit signature format, in the words of Git's gpg.format.
type Format string

// The formats a cluster signs its commits in.
const (
	// FormatSSH: SSH signatures, which Flux's GitRepository.spec.verify
	// checks (the default).
	FormatSSH Format = "ssh"
	// FormatOpenPGP: OpenPGP signatures, which Argo CD's AppProject
	// sourceIntegrity checks.
	FormatOpenPGP Format = "openpgp"
)

// ParseFormat returns the Format named s, "ssh" or "openpgp"; "" is
// FormatSSH.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatSSH:
		return FormatSSH, nil
	case FormatOpenPGP:
		return FormatOpenPGP, nil
	}
	return "", fmt.Errorf("signing format %q is not one of: %s, %s", s, FormatSSH, FormatOpenPGP)
}

// FormatOf tells the format of armored, a gpgsig header value, by its armor
// (as Git does, gpg-interface.c): FormatSSH, FormatOpenPGP, or "" for none
// or another format. It does not check the signature.
func FormatOf(armored string) Format {
	armored = strings.TrimSpace(armored)
	switch {
	case strings.HasPrefix(armored, armorHeader):
		return FormatSSH
	case strings.HasPrefix(armored, openPGPArmorHeader):
		return FormatOpenPGP
	}
	return ""
}

// NewFormatSigner returns the go-git Signer of format for key: NewSigner
// or NewOpenPGPSigner.
func NewFormatSigner(format Format, key crypto.Signer) (git.Signer, error) {
	switch format {
	case FormatSSH:
		return NewSigner(key)
	case FormatOpenPGP:
		return NewOpenPGPSigner(key)
	}
	return nil, fmt.Errorf("new signer: unknown format %q", format)
}

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
// signature is accepted, in either format, only when it is one armored
// block (nothing but whitespace around it) that verifies over c, and:
//
//   - SSH: by an Ed25519 key, in namespace "git", with hash SHA-256 or
//     SHA-512;
//   - OpenPGP: one v4 signature packet of a binary document, by the
//     OpenPGP key derived from a principal's key (OpenPGPFingerprint;
//     matched by issuer fingerprint, else key ID), legacy EdDSA, with hash
//     SHA-256 or SHA-512.
//
// When several principals share the key, the first in sorted order is
// returned.
//
// Errors callers branch on (errors.Is): ErrUnsigned (no signature),
// ErrUnsupportedFormat (neither SSH nor OpenPGP, e.g. X.509),
// ErrUnknownSigner (anything else that does not verify). A key in keys that
// is not Ed25519 is a caller error, ErrUnsupportedKey.
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
	switch FormatOf(armored) {
	case FormatSSH:
		return verifySSH(armored, payload, principals, keys)
	case FormatOpenPGP:
		return verifyOpenPGP(armored, payload, principals, keys)
	}
	if armored == "" {
		return "", ErrUnsigned
	}
	return "", fmt.Errorf("%w (%s)", ErrUnsupportedFormat, firstLine(armored))
}

// verifySSH checks armored, an SSH signature, over payload.
func verifySSH(armored string, payload io.Reader, principals []string, keys map[string]crypto.PublicKey) (string, error) {
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

// Claim returns the principal of keys whose key armored, a gpgsig header
// value, says made it (SSH: the public key the signature embeds; OpenPGP:
// its issuer fingerprint, else key ID, against the derived keys), and the
// signature's format, without checking the signature: what a caller needs
// to tell "made by a key nobody trusts" from "claims a trusted key and does
// not verify". principal is "" when armored names none of keys (the first
// in sorted order when several share the key); format is "" when armored is
// neither an SSH nor an OpenPGP signature. An error means a signature of a
// known format that cannot be read. Keys that are not Ed25519 are skipped.
func Claim(armored string, keys map[string]crypto.PublicKey) (principal string, format Format, err error) {
	principals := make([]string, 0, len(keys))
	for p, k := range keys {
		if _, err := ed25519Key(k); err == nil {
			principals = append(principals, p)
		}
	}
	sort.Strings(principals)
	armored = strings.TrimSpace(armored)
	format = FormatOf(armored)
	switch format {
	case FormatSSH:
		sig, err := sshsig.Unarmor([]byte(armored))
		if err != nil {
			return "", format, err
		}
		for _, p := range principals {
			if k, err := sshKey(keys[p]); err == nil && bytes.Equal(k.Marshal(), sig.PublicKey.Marshal()) {
				return p, format, nil
			}
		}
	case FormatOpenPGP:
		sig, err := parseOpenPGPSignature(armored)
		if err != nil {
			return "", format, err
		}
		p, _ := openPGPIssuer(sig, principals, keys)
		return p, format, nil
	}
	return "", format, nil
}
