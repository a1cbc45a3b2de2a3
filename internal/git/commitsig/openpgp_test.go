package commitsig

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/test/testgit"
)

func mustOpenPGPSigner(t testing.TB, key crypto.Signer) git.Signer {
	t.Helper()
	s, err := NewOpenPGPSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustOpenPGPKey(t testing.TB, key crypto.Signer, userID string) []byte {
	t.Helper()
	data, err := OpenPGPPublicKey(key, userID)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func alphaFingerprint(t testing.TB) string {
	t.Helper()
	fp, _, err := OpenPGPFingerprint(alphaPub)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// colons returns the fields of the first line of gpg --with-colons output
// whose record type is typ.
func colons(out, typ string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, ":"); f[0] == typ {
			return f
		}
	}
	return nil
}

// TestOpenPGPSignedCommitIsGoodForGnuPGAndGoGit: a commit gitpeer signs with
// OpenPGP, and the key it publishes, as GnuPG (through git verify-commit and
// git log, as Argo CD runs them), go-git and Verify read them.
func TestOpenPGPSignedCommitIsGoodForGnuPGAndGoGit(t *testing.T) {
	r, dir := repoAt(t)
	c := commitWith(t, r, mustOpenPGPSigner(t, alphaKey), "alpha: publish\n\nGitpeer-Cluster: alpha\n")
	if FormatOf(c.PGPSignature) != FormatOpenPGP || !strings.HasPrefix(c.PGPSignature, "-----BEGIN PGP SIGNATURE-----\n") {
		t.Fatalf("gpgsig is not an armored OpenPGP signature:\n%s", c.PGPSignature)
	}
	fp, keyID, err := OpenPGPFingerprint(alphaPub)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp) != 40 || keyID != fp[24:] || strings.ToUpper(fp) != fp {
		t.Fatalf("fingerprint %q, key ID %q: want 40 uppercase hex digits and their last 16", fp, keyID)
	}
	key := mustOpenPGPKey(t, alphaKey, OpenPGPUserID("alpha"))

	if got, err := Verify(c, map[string]crypto.PublicKey{"alpha": alphaPub, "beta": betaPub}); err != nil || got != "alpha" {
		t.Fatalf("Verify = %q, %v; want alpha", got, err)
	}
	e, err := c.Verify(string(key))
	if err != nil {
		t.Fatalf("go-git commit.Verify with the published key: %v", err)
	}
	if got := fmt.Sprintf("%X", e.PrimaryKey.Fingerprint); got != fp {
		t.Errorf("go-git says the signer is %s, want %s", got, fp)
	}
	if _, err := c.Verify(string(mustOpenPGPKey(t, betaKey, OpenPGPUserID("beta")))); err == nil {
		t.Error("go-git commit.Verify accepted alpha's commit with beta's key")
	}

	g := testgit.NewGnuPG(t)
	if out := g.Import(key); !strings.Contains(out, `public key "gitpeer cluster alpha" imported`) {
		t.Fatalf("gpg --import:\n%s", out)
	}
	// GnuPG computes the same fingerprint from the key's packets: legacy
	// EdDSA (22) on Ed25519, created at the epoch, [SC].
	list := g.Run("--with-colons", "--fixed-list-mode", "--list-keys")
	if pub := colons(list, "pub"); len(pub) < 12 || pub[3] != "22" || pub[5] != "0" || pub[11] != "scSC" || pub[16] != "ed25519" {
		t.Errorf("gpg lists the key as %q; want algorithm 22, created 0, capabilities scSC, curve ed25519", pub)
	}
	if f := colons(list, "fpr"); len(f) < 10 || f[9] != fp {
		t.Errorf("gpg's fingerprint is %q, OpenPGPFingerprint's %s", f, fp)
	}
	out, err := g.Git(dir, "verify-commit", "-v", c.Hash.String())
	if err != nil {
		t.Fatalf("git verify-commit: %v\n%s", err, out)
	}
	for _, want := range []string{`Good signature from "gitpeer cluster alpha"`, "using EDDSA key " + fp, "Signature made Fri Mar 14 15:09:26 2025 UTC"} {
		if !strings.Contains(out, want) {
			t.Errorf("git verify-commit does not say %q:\n%s", want, out)
		}
	}
	if out, err := g.Git(dir, "log", "--show-signature", "-1"); err != nil || !strings.Contains(out, `Good signature from "gitpeer cluster alpha"`) {
		t.Errorf("git log --show-signature: %v\n%s", err, out)
	}
	// %G? is U: a good signature by a key of unknown validity, as nobody
	// set its trust in this keyring (git-log(1)); B would be bad.
	if out, _ := g.Git(dir, "log", "-1", "--format=%G? %GF"); strings.TrimSpace(out) != "U "+fp {
		t.Errorf("git log --format=%%G? %%GF = %q, want U %s", out, fp)
	}
}

// TestOpenPGPKeyIsAFunctionOfTheEd25519Key: the fingerprint needs the
// public key alone, the published key is the same bytes every time, and
// another key gets another fingerprint.
func TestOpenPGPKeyIsAFunctionOfTheEd25519Key(t *testing.T) {
	a1 := mustOpenPGPKey(t, alphaKey, OpenPGPUserID("alpha"))
	a2 := mustOpenPGPKey(t, testKey(1), OpenPGPUserID("alpha"))
	if !bytes.Equal(a1, a2) {
		t.Fatalf("two runs publish different keys:\n%s\n%s", a1, a2)
	}
	fa, _, _ := OpenPGPFingerprint(alphaPub)
	fb, _, _ := OpenPGPFingerprint(betaPub)
	if fa == fb {
		t.Fatal("alpha and beta have the same fingerprint")
	}
	if got, _, err := CheckOpenPGPKey(a1, alphaPub, OpenPGPUserID("alpha")); err != nil || got != fa {
		t.Fatalf("CheckOpenPGPKey(alpha's own key) = %q, %v; want %s", got, err, fa)
	}
	if !strings.HasPrefix(string(a1), "-----BEGIN PGP PUBLIC KEY BLOCK-----\n") || !strings.HasSuffix(string(a1), "-----END PGP PUBLIC KEY BLOCK-----\n") {
		t.Errorf("not an armored public key block:\n%s", a1)
	}
	// Signatures of the same commit are the same: their time is the
	// commit's, and Ed25519 is deterministic.
	r, _ := repoAt(t)
	c1 := commitWith(t, r, mustOpenPGPSigner(t, alphaKey), "x\n")
	r2, _ := repoAt(t)
	c2 := commitWith(t, r2, mustOpenPGPSigner(t, alphaKey), "x\n")
	if c1.Hash != c2.Hash {
		t.Errorf("the same commit signed twice: %s and %s", c1.Hash, c2.Hash)
	}
	sig, err := parseOpenPGPSignature(c1.PGPSignature)
	if err != nil {
		t.Fatal(err)
	}
	if !sig.CreationTime.Equal(c1.Committer.When) {
		t.Errorf("signature made at %s, commit at %s", sig.CreationTime, c1.Committer.When)
	}
}

func TestOpenPGPRefusesOtherKeys(t *testing.T) {
	if _, err := NewOpenPGPSigner(nil); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("NewOpenPGPSigner(nil) = %v", err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenPGPFingerprint(ecKey.Public()); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("OpenPGPFingerprint(ECDSA) = %v", err)
	}
	if _, err := NewOpenPGPSigner(ecKey); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("NewOpenPGPSigner(ECDSA) = %v", err)
	}
	// A crypto.Signer whose signatures are not Ed25519 over the digest by
	// its own key (a misconfigured KMS, say) signs nothing.
	s := mustOpenPGPSigner(t, lyingSigner{alphaKey, betaKey})
	if _, err := s.Sign(strings.NewReader("tree x\n")); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("Sign with a signer of the wrong key = %v", err)
	}
	if _, err := OpenPGPPublicKey(alphaKey, "two\nlines"); err == nil {
		t.Error("OpenPGPPublicKey accepted a user ID with a newline")
	}
}

// lyingSigner claims pub's public key and signs with another key.
type lyingSigner struct{ pub, priv ed25519.PrivateKey }

func (l lyingSigner) Public() crypto.PublicKey { return l.pub.Public() }
func (l lyingSigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	return l.priv.Sign(r, d, o)
}

// TestCheckOpenPGPKeyRefuses: what a repo writer could publish as a
// cluster's OpenPGP key, and why each is refused.
func TestCheckOpenPGPKeyRefuses(t *testing.T) {
	uid := OpenPGPUserID("alpha")
	good := mustOpenPGPKey(t, alphaKey, uid)
	raw, err := unarmor(good, openPGPPublicKeyType)
	if err != nil {
		t.Fatal(err)
	}
	k, err := deriveOpenPGPKey(alphaPub)
	if err != nil {
		t.Fatal(err)
	}
	arm := func(raw []byte) []byte {
		out, err := armored(openPGPPublicKeyType, raw)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The same material created at another time: another key to GnuPG.
	later := append([]byte(nil), k.body...)
	later[4] = 1
	laterKey := appendPacket(nil, tagPublicKey, later)
	// A second user ID certified by alpha's key: harmless, but not what
	// gitpeer publishes.
	second, err := k.sign(alphaKey, packet.SigTypePositiveCert, OpenPGPKeyCreation, nil, func(h io.Writer) { k.hashUserID(h, "mallory") })
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), raw...)
	tampered[len(tampered)-5] ^= 1
	// The issuer key ID sits in the unhashed subpackets, which the
	// self-signature does not cover: still valid to go-crypto.
	issuer := subpacket(nil, subIssuerKeyID, binary.BigEndian.AppendUint64(nil, k.pk.KeyId))
	otherIssuer := bytes.Replace(raw, issuer, subpacket(nil, subIssuerKeyID, []byte("mallory!")), 1)
	if bytes.Equal(otherIssuer, raw) {
		t.Fatal("no issuer subpacket in alpha's key")
	}

	g := testgit.NewGnuPG(t)
	g.GenerateKey("gitpeer cluster alpha")
	foreign := []byte(g.Run("--armor", "--export", "gitpeer cluster alpha"))

	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"beta's key", mustOpenPGPKey(t, betaKey, uid), ErrOpenPGPKeyMismatch},
		{"a key GnuPG made with alpha's user ID", foreign, ErrOpenPGPKeyMismatch},
		{"alpha's key material with another creation time", arm(append(laterKey, raw[len(appendPacket(nil, tagPublicKey, k.body)):]...)), ErrOpenPGPKeyMismatch},
		{"alpha's key with another user ID", mustOpenPGPKey(t, alphaKey, "gitpeer cluster beta"), ErrOpenPGPKeyInvalid},
		{"alpha's key with a second user ID", arm(append(append(append([]byte(nil), raw...), appendPacket(nil, tagUserID, []byte("mallory"))...), second...)), ErrOpenPGPKeyInvalid},
		{"alpha's key with a broken self-signature", arm(tampered), ErrOpenPGPKeyInvalid},
		{"alpha's key with another unhashed issuer", arm(otherIssuer), ErrOpenPGPKeyInvalid},
		{"alpha's key without its self-signature", arm(appendPacket(appendPacket(nil, tagPublicKey, k.body), tagUserID, []byte(uid))), ErrOpenPGPKeyInvalid},
		{"alpha's key twice", append(append([]byte(nil), good...), good...), ErrOpenPGPKeyInvalid},
		{"alpha's key and a line of text", append(append([]byte(nil), good...), "see also\n"...), ErrOpenPGPKeyInvalid},
		{"an SSH key", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB alpha\n"), ErrOpenPGPKeyInvalid},
		{"nothing", nil, ErrOpenPGPKeyInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp, _, err := CheckOpenPGPKey(tc.data, alphaPub, uid)
			if !errors.Is(err, tc.want) || fp != "" {
				t.Fatalf("CheckOpenPGPKey = %q, %v; want %v", fp, err, tc.want)
			}
		})
	}
}

// TestVerifyOpenPGPRefuses: OpenPGP signatures Verify must not accept as
// alpha's, and Claim's reading of them.
func TestVerifyOpenPGPRefuses(t *testing.T) {
	trusted := map[string]crypto.PublicKey{"alpha": alphaPub}
	k, err := deriveOpenPGPKey(alphaPub)
	if err != nil {
		t.Fatal(err)
	}
	// Alpha's key, but a text signature (0x01) rather than a binary one.
	text := signerFunc(func(m io.Reader) ([]byte, error) {
		data, _ := io.ReadAll(m)
		sig, err := k.sign(alphaKey, packet.SigTypeText, time.Now(), nil, func(h io.Writer) { _, _ = h.Write(data) })
		if err != nil {
			return nil, err
		}
		return armored(openPGPSignatureType, sig)
	})
	g := testgit.NewGnuPG(t)
	malloryFP := g.GenerateKey("mallory")

	t.Run("a signature GnuPG made with a key of its own", func(t *testing.T) {
		r, dir := repoAt(t)
		if out, err := g.Git(dir, "-c", "user.name=mallory", "-c", "user.email=m@example.com", "commit", "-q", "-S"+malloryFP, "-m", "alpha: publish"); err != nil {
			t.Fatalf("git commit -S: %v\n%s", err, out)
		}
		head, err := r.Head()
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.CommitObject(head.Hash())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Verify(c, trusted); !errors.Is(err, ErrUnknownSigner) || !strings.Contains(err.Error(), malloryFP) {
			t.Errorf("Verify = %q, %v; want ErrUnknownSigner naming %s", got, err, malloryFP)
		}
		if p, f, err := Claim(c.PGPSignature, trusted); p != "" || f != FormatOpenPGP || err != nil {
			t.Errorf("Claim = %q, %q, %v; want no principal, openpgp", p, f, err)
		}
	})
	for _, tc := range []struct {
		name   string
		signer git.Signer
		claim  string
	}{
		{"beta's OpenPGP signature", mustOpenPGPSigner(t, betaKey), ""},
		{"alpha's key signing a text document", text, "alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := repoAt(t)
			c := commitWith(t, r, tc.signer, "alpha: publish\n")
			if got, err := Verify(c, trusted); !errors.Is(err, ErrUnknownSigner) || got != "" {
				t.Errorf("Verify = %q, %v; want ErrUnknownSigner", got, err)
			}
			if p, _, err := Claim(c.PGPSignature, trusted); p != tc.claim || err != nil {
				t.Errorf("Claim = %q, %v; want %q", p, err, tc.claim)
			}
		})
	}
	t.Run("a tampered message under alpha's OpenPGP signature", func(t *testing.T) {
		r, dir := repoAt(t)
		c := commitWith(t, r, mustOpenPGPSigner(t, alphaKey), "alpha: publish\n")
		fc := withMessage(t, r, c, "alpha: revoke beta\n")
		h := fc.Hash
		if got, err := Verify(fc, trusted); !errors.Is(err, ErrUnknownSigner) {
			t.Errorf("Verify(forged) = %q, %v; want ErrUnknownSigner", got, err)
		}
		if p, _, _ := Claim(fc.PGPSignature, trusted); p != "alpha" {
			t.Errorf("Claim(forged) = %q; want alpha: the signature names alpha's key", p)
		}
		g.Import(mustOpenPGPKey(t, alphaKey, OpenPGPUserID("alpha")))
		if out, err := g.Git(dir, "verify-commit", h.String()); err == nil || !strings.Contains(out, "BAD signature") {
			t.Errorf("git verify-commit on the forged commit: %v\n%s", err, out)
		}
	})
}

func TestClaim(t *testing.T) {
	keys := map[string]crypto.PublicKey{"alpha": alphaPub, "beta": betaPub}
	payload := strings.NewReader("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nx\n")
	sshSig, err := mustSigner(t, betaKey).Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	pgpSig, err := mustOpenPGPSigner(t, betaKey).Sign(strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, armored string
		principal     string
		format        Format
		err           bool
	}{
		{"an SSH signature by beta", string(sshSig), "beta", FormatSSH, false},
		{"an OpenPGP signature by beta", string(pgpSig), "beta", FormatOpenPGP, false},
		{"no signature", "", "", "", false},
		{"an X.509 signature", "-----BEGIN SIGNED MESSAGE-----\nabc\n-----END SIGNED MESSAGE-----", "", "", false},
		{"an unreadable OpenPGP signature", "-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----", "", FormatOpenPGP, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f, err := Claim(tc.armored, keys)
			if p != tc.principal || f != tc.format || (err != nil) != tc.err {
				t.Errorf("Claim = %q, %q, %v; want %q, %q, error %v", p, f, err, tc.principal, tc.format, tc.err)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatSSH, "ssh": FormatSSH, "openpgp": FormatOpenPGP} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"gpg", "x509", "OpenPGP"} {
		if _, err := ParseFormat(in); err == nil || !strings.Contains(err.Error(), "ssh, openpgp") {
			t.Errorf("ParseFormat(%q) = %v; want an error listing ssh, openpgp", in, err)
		}
	}
}

type signerFunc func(io.Reader) ([]byte, error)

func (f signerFunc) Sign(m io.Reader) ([]byte, error) { return f(m) }

// A seal commit (gitsync) is signed outside go-git's Commit: through
// EncodeWithoutSignature, as Verify reads it. That path verifies too.
func TestOpenPGPSignatureOfAnEncodedCommit(t *testing.T) {
	r, dir := repoAt(t)
	parent := commitWith(t, r, nil, "base\n")
	c := &object.Commit{Author: parent.Author, Committer: parent.Committer, Message: "alpha: seal clusters/alpha\n",
		TreeHash: parent.TreeHash, ParentHashes: []plumbing.Hash{parent.Hash}}
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		t.Fatal(err)
	}
	pr, _ := payload.Reader()
	sig, err := mustOpenPGPSigner(t, alphaKey).Sign(pr)
	if err != nil {
		t.Fatal(err)
	}
	c.PGPSignature = string(sig)
	obj := r.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := r.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Verify(got, map[string]crypto.PublicKey{"alpha": alphaPub}); err != nil || p != "alpha" {
		t.Fatalf("Verify = %q, %v", p, err)
	}
	g := testgit.NewGnuPG(t)
	g.Import(mustOpenPGPKey(t, alphaKey, OpenPGPUserID("alpha")))
	if out, err := g.Git(dir, "verify-commit", h.String()); err != nil {
		t.Errorf("git verify-commit: %v\n%s", err, out)
	}
	if out, err := g.Git(dir, "fsck", "--strict"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// FuzzCheckOpenPGPKey: whatever a writer puts in openpgp.asc, the check
// never panics, and accepts nothing but the packets of alpha's own key
// (however armored: only alpha can make another valid self-signature).
func FuzzCheckOpenPGPKey(f *testing.F) {
	uid := OpenPGPUserID("alpha")
	good := mustOpenPGPKey(f, alphaKey, uid)
	f.Add(good)
	f.Add(mustOpenPGPKey(f, betaKey, uid))
	f.Add([]byte(strings.Replace(string(good), "\n\n", "\nComment: x\n\n", 1)))
	f.Add([]byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEAAAAABYJ\n-----END PGP PUBLIC KEY BLOCK-----\n"))
	f.Add([]byte{})
	fp, _, err := OpenPGPFingerprint(alphaPub)
	if err != nil {
		f.Fatal(err)
	}
	want, err := unarmor(good, openPGPPublicKeyType)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := CheckOpenPGPKey(data, alphaPub, uid)
		switch {
		case err == nil && got != fp:
			t.Fatalf("accepted key %s, want %s", got, fp)
		case err == nil:
			if raw, err := unarmor(data, openPGPPublicKeyType); err != nil || !bytes.Equal(raw, want) {
				t.Fatalf("accepted other packets than alpha's key: %v", err)
			}
		case err != nil && !errors.Is(err, ErrOpenPGPKeyInvalid) && !errors.Is(err, ErrOpenPGPKeyMismatch):
			t.Fatalf("error without a sentinel: %v", err)
		}
	})
}
