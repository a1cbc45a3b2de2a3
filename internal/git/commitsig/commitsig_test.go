package commitsig

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// testKey is a fixed Ed25519 key, so failures reproduce.
func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

var (
	alphaKey = testKey(1)
	betaKey  = testKey(2)
	alphaPub = alphaKey.Public()
	betaPub  = betaKey.Public()
)

func gitCmd(dir string, args ...string) (string, error) {
	out, err := testgit.Command(dir, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// repoAt is a fresh non-bare repository with one file written.
func repoAt(t *testing.T) (*git.Repository, string) {
	t.Helper()
	dir := t.TempDir()
	testgit.Git(t, dir, "init", "-q")
	r, err := gitobj.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("clusterID: alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("cluster.yaml"); err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// commitWith commits the worktree with signer (nil: unsigned) and returns the
// commit as read back from the object store.
func commitWith(t *testing.T, r *git.Repository, signer git.Signer, msg string) *object.Commit {
	t.Helper()
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "gitpeer alpha", Email: "alpha@gitpeer.example", When: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, Signer: signer, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSigner(t testing.TB, key crypto.Signer) git.Signer {
	t.Helper()
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// allowedSignersFile writes an allowed signers file trusting entries.
func allowedSignersFile(t *testing.T, entries ...Entry) string {
	t.Helper()
	content, err := AllowedSigners(entries...)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSignedCommitIsGoodForGitAndVerify(t *testing.T) {
	r, dir := repoAt(t)
	c := commitWith(t, r, mustSigner(t, alphaKey), "alpha: publish\n\nGitpeer-Cluster: alpha\n")
	if !strings.HasPrefix(c.PGPSignature, "-----BEGIN SSH SIGNATURE-----\n") {
		t.Fatalf("gpgsig is not an armored SSH signature:\n%s", c.PGPSignature)
	}
	sig, err := sshsig.Unarmor([]byte(c.PGPSignature))
	if err != nil {
		t.Fatal(err)
	}
	if sig.Namespace != "git" || sig.HashAlgorithm != sshsig.HashSHA512 {
		t.Errorf("signature namespace %q hash %q, want git sha512", sig.Namespace, sig.HashAlgorithm)
	}

	trustAlpha := allowedSignersFile(t, Entry{"beta", betaPub}, Entry{"alpha", alphaPub})
	out, err := gitCmd(dir, "-c", "gpg.ssh.allowedSignersFile="+trustAlpha, "log", "--show-signature", "-1")
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	if !strings.Contains(out, `Good "git" signature for alpha with ED25519 key`) {
		t.Errorf("git log --show-signature does not show a good signature by alpha:\n%s", out)
	}
	if out, err := gitCmd(dir, "-c", "gpg.ssh.allowedSignersFile="+trustAlpha, "verify-commit", c.Hash.String()); err != nil {
		t.Errorf("git verify-commit: %v\n%s", err, out)
	}
	// The same commit is refused by git when only beta is trusted.
	trustBeta := allowedSignersFile(t, Entry{"beta", betaPub})
	if out, err := gitCmd(dir, "-c", "gpg.ssh.allowedSignersFile="+trustBeta, "verify-commit", c.Hash.String()); err == nil {
		t.Errorf("git verify-commit trusting only beta succeeded:\n%s", out)
	}

	got, err := Verify(c, map[string]crypto.PublicKey{"alpha": alphaPub, "beta": betaPub})
	if err != nil || got != "alpha" {
		t.Errorf("Verify = %q, %v; want alpha", got, err)
	}
}

// pgpSigner writes a truncated OpenPGP signature: armored, unreadable.
type pgpSigner struct{}

func (pgpSigner) Sign(io.Reader) ([]byte, error) {
	return []byte("-----BEGIN PGP SIGNATURE-----\n\niHUEABYKAB0WIQ==\n=abcd\n-----END PGP SIGNATURE-----\n"), nil
}

// x509Signer stands in for gpgsm (gpg.format=x509): Verify only looks at
// the armor.
type x509Signer struct{}

func (x509Signer) Sign(io.Reader) ([]byte, error) {
	return []byte("-----BEGIN SIGNED MESSAGE-----\nMIAGCSqGSIb3DQEHAqCAMIACAQEx\n-----END SIGNED MESSAGE-----\n"), nil
}

// rawSigner signs with any SSH key, namespace and hash, as a foreign tool might.
type rawSigner struct {
	key       ssh.Signer
	namespace string
}

func (s rawSigner) Sign(m io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(m, s.key, sshsig.HashSHA512, s.namespace)
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(sig), nil
}

func TestVerifyRefuses(t *testing.T) {
	alphaSSH, err := ssh.NewSignerFromSigner(alphaKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSSH, err := ssh.NewSignerFromSigner(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	trusted := map[string]crypto.PublicKey{"alpha": alphaPub}

	for _, tc := range []struct {
		name   string
		signer git.Signer
		want   error
	}{
		{"a commit signed by another key", mustSigner(t, betaKey), ErrUnknownSigner},
		{"an unsigned commit", nil, ErrUnsigned},
		{"an unreadable OpenPGP signature", pgpSigner{}, ErrUnknownSigner},
		{"an X.509 signature", x509Signer{}, ErrUnsupportedFormat},
		{"a commit OpenPGP-signed by another key", mustOpenPGPSigner(t, betaKey), ErrUnknownSigner},
		{"alpha's signature made for another namespace", rawSigner{alphaSSH, "file"}, ErrUnknownSigner},
		{"an RSA signature", rawSigner{rsaSSH, "git"}, ErrUnknownSigner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := repoAt(t)
			c := commitWith(t, r, tc.signer, "alpha: publish\n")
			got, err := Verify(c, trusted)
			if !errors.Is(err, tc.want) || got != "" {
				t.Errorf("Verify = %q, %v; want error %v", got, err, tc.want)
			}
		})
	}

	t.Run("a tampered message under alpha's signature", func(t *testing.T) {
		r, dir := repoAt(t)
		c := commitWith(t, r, mustSigner(t, alphaKey), "alpha: publish\n")
		fc := withMessage(t, r, c, "alpha: revoke beta\n")
		h := fc.Hash
		if fc.PGPSignature != c.PGPSignature || fc.Message != "alpha: revoke beta\n" {
			t.Fatal("forged commit does not carry alpha's signature and the new message")
		}
		if got, err := Verify(fc, trusted); !errors.Is(err, ErrUnknownSigner) {
			t.Errorf("Verify(forged) = %q, %v; want ErrUnknownSigner", got, err)
		}
		f := allowedSignersFile(t, Entry{"alpha", alphaPub})
		if out, err := gitCmd(dir, "-c", "gpg.ssh.allowedSignersFile="+f, "verify-commit", h.String()); err == nil {
			t.Errorf("git verify-commit accepted the forged commit:\n%s", out)
		}
		// The original still verifies.
		if got, err := Verify(c, trusted); err != nil || got != "alpha" {
			t.Errorf("Verify(original) = %q, %v", got, err)
		}
	})

	t.Run("a non-Ed25519 trusted key", func(t *testing.T) {
		r, _ := repoAt(t)
		c := commitWith(t, r, mustSigner(t, alphaKey), "alpha: publish\n")
		if _, err := Verify(c, map[string]crypto.PublicKey{"alpha": &rsaKey.PublicKey}); !errors.Is(err, ErrUnsupportedKey) {
			t.Errorf("Verify with an RSA trusted key = %v, want ErrUnsupportedKey", err)
		}
	})
}

func TestNewSignerRefusesOtherKeys(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]crypto.Signer{"ecdsa": ec, "nil": nil} {
		if _, err := NewSigner(key); !errors.Is(err, ErrUnsupportedKey) {
			t.Errorf("NewSigner(%s) = %v, want ErrUnsupportedKey", name, err)
		}
	}
}

func TestAuthorizedKey(t *testing.T) {
	line, err := AuthorizedKey(alphaPub, "gitpeer alpha")
	if err != nil {
		t.Fatal(err)
	}
	const want = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIqI4910CfGV/VLbLTy6XXLKZwm/HZQSG/N0iAG0D29c gitpeer alpha\n"
	if line != want {
		t.Errorf("AuthorizedKey = %q, want %q", line, want)
	}
	// ssh-keygen reads it and names the same key.
	f := filepath.Join(t.TempDir(), "alpha.sshpub")
	if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ssh-keygen", "-l", "-f", f).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v\n%s", err, out)
	}
	k, _ := ssh.NewPublicKey(alphaPub)
	if fp := ssh.FingerprintSHA256(k); !strings.Contains(string(out), fp+" gitpeer alpha (ED25519)") {
		t.Errorf("ssh-keygen -l = %q, want fingerprint %s", out, fp)
	}

	if line, err := AuthorizedKey(alphaPub, ""); err != nil || strings.Count(line, " ") != 1 || !strings.HasSuffix(line, "\n") {
		t.Errorf("AuthorizedKey without comment = %q, %v", line, err)
	}
	if _, err := AuthorizedKey(alphaPub, "two\nlines"); err == nil {
		t.Error("AuthorizedKey accepted a comment with a newline")
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := AuthorizedKey(ec.Public(), "x"); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("AuthorizedKey(ecdsa) = %v, want ErrUnsupportedKey", err)
	}
}

func TestAllowedSigners(t *testing.T) {
	got, err := AllowedSigners(Entry{"beta", betaPub}, Entry{"alpha", alphaPub}, Entry{"beta", betaPub})
	if err != nil {
		t.Fatal(err)
	}
	ak, _ := AuthorizedKey(alphaPub, "")
	bk, _ := AuthorizedKey(betaPub, "")
	want := `alpha namespaces="git" ` + ak + `beta namespaces="git" ` + bk
	if got != want {
		t.Errorf("AllowedSigners =\n%s\nwant\n%s", got, want)
	}
	for _, p := range []string{"", "a b", "a,b", "*", `"a"`, "a\n"} {
		if _, err := AllowedSigners(Entry{p, alphaPub}); err == nil {
			t.Errorf("AllowedSigners accepted principal %q", p)
		}
	}
	if _, err := AllowedSigners(Entry{"alpha", []byte("not a key")}); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("AllowedSigners with a non-key = %v, want ErrUnsupportedKey", err)
	}
}

// FuzzVerify feeds untrusted gpgsig header values to Verify: it must never
// panic, must fail only with one of its sentinels, and must accept nothing but
// a signature that alpha made over the commit.
func FuzzVerify(f *testing.F) {
	when := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	base := object.Commit{
		Author:    object.Signature{Name: "a", Email: "a@example", When: when},
		Committer: object.Signature{Name: "a", Email: "a@example", When: when},
		Message:   "alpha: publish\n",
		TreeHash:  plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
	}
	payload := &plumbing.MemoryObject{}
	if err := base.EncodeWithoutSignature(payload); err != nil {
		f.Fatal(err)
	}
	pr, _ := payload.Reader()
	signed, err := io.ReadAll(pr)
	if err != nil {
		f.Fatal(err)
	}
	good, err := mustSigner(f, alphaKey).Sign(bytes.NewReader(signed))
	if err != nil {
		f.Fatal(err)
	}
	byBeta, _ := mustSigner(f, betaKey).Sign(bytes.NewReader(signed))
	goodPGP, err := mustOpenPGPSigner(f, alphaKey).Sign(bytes.NewReader(signed))
	if err != nil {
		f.Fatal(err)
	}
	byBetaPGP, _ := mustOpenPGPSigner(f, betaKey).Sign(bytes.NewReader(signed))
	block := strings.TrimSpace(string(good))
	f.Add(string(good))
	f.Add(string(byBeta))
	f.Add(string(goodPGP))
	f.Add(string(byBetaPGP))
	f.Add(strings.Replace(string(goodPGP), "\n\n", "\nComment: x\n\n", 1))
	f.Add("")
	f.Add("-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n")
	f.Add(block[:len(block)/2])
	f.Add(block + "\ntrailing")
	f.Add("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
	f.Add(strings.Replace(block, "\n", "\nKey: value\n\n", 1))

	keys := map[string]crypto.PublicKey{"alpha": alphaPub, "beta2": testKey(3).Public()}
	f.Fuzz(func(t *testing.T, armored string) {
		c := base
		c.PGPSignature = armored
		principal, err := Verify(&c, keys)
		switch {
		case err == nil:
			if principal != "alpha" {
				t.Fatalf("accepted, principal %q", principal)
			}
			switch FormatOf(armored) {
			case FormatSSH:
				if sig, err := sshsig.Unarmor([]byte(armored)); err != nil || !bytes.Equal(sig.PublicKey.Marshal(), mustSSH(t, alphaPub).Marshal()) {
					t.Fatalf("accepted a signature not made by alpha: %v", err)
				}
			case FormatOpenPGP:
				if sig, err := parseOpenPGPSignature(armored); err != nil || fmt.Sprintf("%X", sig.IssuerFingerprint) != alphaFingerprint(t) {
					t.Fatalf("accepted an OpenPGP signature not made by alpha: %v", err)
				}
			default:
				t.Fatalf("accepted a signature of no known format")
			}
		case !errors.Is(err, ErrUnsigned) && !errors.Is(err, ErrUnsupportedFormat) && !errors.Is(err, ErrUnknownSigner):
			t.Fatalf("error without a sentinel: %v", err)
		}
		if (armored == string(good) || armored == string(goodPGP)) && err != nil {
			t.Fatalf("refused alpha's signature: %v", err)
		}
	})
}

func mustSSH(t *testing.T, pub crypto.PublicKey) ssh.PublicKey {
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// withMessage stores and returns a copy of c with another message and c's
// signature: what a forger can make of a signed commit.
func withMessage(t *testing.T, r *git.Repository, c *object.Commit, msg string) *object.Commit {
	t.Helper()
	forged := *c
	forged.Message = msg
	obj := r.Storer.NewEncodedObject()
	if err := forged.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := r.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := r.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return fc
}
