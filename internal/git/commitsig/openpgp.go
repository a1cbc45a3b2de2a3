package commitsig

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
)

// OpenPGP signatures (RFC 4880, "OpenPGP Message Format"; RFC 9580 §5.2.3.3
// for legacy EdDSA) are what Argo CD verifies. They are made with the same
// Ed25519 cluster key as the SSH ones, as a version 4 OpenPGP key of
// algorithm 22 (EdDSA, "EdDSALegacy" in RFC 9580) on curve Ed25519: the
// key type `gpg --quick-gen-key … ed25519` makes and every GnuPG since 2.1
// verifies. Its creation time is fixed (OpenPGPKeyCreation), so that the
// key, and with it its fingerprint, is a pure function of the Ed25519 public
// key: anyone recomputes it from cluster.yaml, offline.
//
// go-crypto signs legacy EdDSA only with the key's seed in memory, while a
// cluster key is a crypto.Signer (a backend may keep it anywhere). So the
// packets here are laid out by this file, after RFC 4880 §5.2.3 (v4
// signature packet), §5.2.4 (what is hashed) and §5.5.2 (v4 key packet),
// and the Ed25519 signature of the packet's digest is the crypto.Signer's
// (legacy EdDSA signs the digest as the message). go-crypto reads and
// checks them (Verify, CheckOpenPGPKey), as it reads everyone's.

// OpenPGPKeyCreation is the creation time of every key derived here: the
// Unix epoch, as ssh-to-pgp sets it for the same reason, so that the key's
// fingerprint depends on the Ed25519 public key alone. Self-signatures carry
// it too, which makes the published key byte-for-byte reproducible.
var OpenPGPKeyCreation = time.Unix(0, 0).UTC()

// OpenPGP's algorithm and hash numbers (RFC 4880 §9.1, §9.4; RFC 9580
// §9.1: 22 is EdDSALegacy).
const (
	pubKeyAlgoEdDSA = 22
	hashSHA512      = 10
)

// oidEd25519 is the curve OID of legacy EdDSA keys on Ed25519
// (1.3.6.1.4.1.11591.15.1, RFC 9580 §9.2), as its length-prefixed encoding.
var oidEd25519 = []byte{9, 0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01}

// Packet tags (RFC 4880 §4.3) and subpacket types (§5.2.3.1).
const (
	tagSignature = 2
	tagPublicKey = 6
	tagUserID    = 13

	subCreationTime      = 2
	subIssuerKeyID       = 16
	subKeyFlags          = 27
	subIssuerFingerprint = 33

	// keyFlagsCertifySign: the key certifies (its self-signature) and signs
	// (commits), nothing else; GnuPG shows it as [SC].
	keyFlagsCertifySign = 0x01 | 0x02
)

// Armor types of a detached signature and of a public key.
const (
	openPGPSignatureType = "PGP SIGNATURE"
	openPGPPublicKeyType = "PGP PUBLIC KEY BLOCK"
	openPGPArmorHeader   = "-----BEGIN " + openPGPSignatureType + "-----"
)

var (
	// ErrOpenPGPKeyMismatch is returned (wrapped) by CheckOpenPGPKey when a
	// published OpenPGP key is another key than the one derived from the
	// cluster key: other key material, or the same material with another
	// creation time (another fingerprint).
	ErrOpenPGPKeyMismatch = errors.New("not the OpenPGP key derived from the cluster key")
	// ErrOpenPGPKeyInvalid is returned (wrapped) by CheckOpenPGPKey for a
	// file that is not exactly one armored public key with the expected user
	// ID, self-signed by it, and nothing else (no subkey, no other user ID,
	// no signature by another key).
	ErrOpenPGPKeyInvalid = errors.New("not a gitpeer OpenPGP public key")
)

// OpenPGPUserID is the user ID of cluster id's OpenPGP key, "gitpeer cluster
// <id>": what `gpg --list-keys` and `git log --show-signature` show.
func OpenPGPUserID(id string) string { return "gitpeer cluster " + id }

// openPGPKey is the derived key of pub: its packet body (RFC 4880 §5.5.2)
// and go-crypto's reading of it.
type openPGPKey struct {
	body []byte
	pk   *packet.PublicKey
	ed   ed25519.PublicKey
}

// deriveOpenPGPKey returns the v4 legacy-EdDSA OpenPGP key of the Ed25519
// key pub, created at OpenPGPKeyCreation; ErrUnsupportedKey for another key.
func deriveOpenPGPKey(pub crypto.PublicKey) (*openPGPKey, error) {
	ed, err := ed25519Key(pub)
	if err != nil {
		return nil, err
	}
	body := []byte{4}
	body = binary.BigEndian.AppendUint32(body, uint32(OpenPGPKeyCreation.Unix()))
	body = append(body, pubKeyAlgoEdDSA)
	body = append(body, oidEd25519...)
	// The point is an MPI of 0x40 (native point format) and the 32 bytes:
	// 263 bits.
	body = appendMPI(body, append([]byte{0x40}, ed...))
	p, err := packet.Read(bytes.NewReader(appendPacket(nil, tagPublicKey, body)))
	if err != nil {
		return nil, fmt.Errorf("derive OpenPGP key: %w", err)
	}
	pk, ok := p.(*packet.PublicKey)
	if !ok {
		return nil, fmt.Errorf("derive OpenPGP key: read back a %T", p)
	}
	return &openPGPKey{body: body, pk: pk, ed: ed}, nil
}

// OpenPGPFingerprint returns the fingerprint of pub's OpenPGP key, 40
// uppercase hex digits as GnuPG prints it, and its key ID, the last 16: the
// ID Argo CD's AppProject sourceIntegrity (gpg.keys) and its keyring
// ConfigMap argocd-gpg-keys-cm name a key by. It fails with
// ErrUnsupportedKey unless pub is an ed25519.PublicKey.
func OpenPGPFingerprint(pub crypto.PublicKey) (fingerprint, keyID string, err error) {
	k, err := deriveOpenPGPKey(pub)
	if err != nil {
		return "", "", fmt.Errorf("OpenPGP fingerprint: %w", err)
	}
	fp := fmt.Sprintf("%X", k.pk.Fingerprint)
	return fp, fp[len(fp)-16:], nil
}

// OpenPGPPublicKey returns key's OpenPGP public key, armored ("PGP PUBLIC
// KEY BLOCK"), as `gpg --import` and `argocd gpg add` take it: the derived
// key, the user ID userID and a positive certification of them by the key
// (key flags certify and sign, SHA-512, made at OpenPGPKeyCreation). GnuPG
// imports no key without a self-signed user ID, and only the private key
// can make one: that is why a cluster publishes this file rather than
// everyone deriving it. The result depends on the key and userID alone.
// It fails with ErrUnsupportedKey unless key is an Ed25519 signer, and
// refuses a userID that is empty or has a control character.
func OpenPGPPublicKey(key crypto.Signer, userID string) ([]byte, error) {
	if key == nil {
		return nil, fmt.Errorf("OpenPGP public key: nil key: %w", ErrUnsupportedKey)
	}
	if userID == "" || strings.ContainsFunc(userID, isControl) {
		return nil, fmt.Errorf("OpenPGP public key: invalid user ID %q", userID)
	}
	k, err := deriveOpenPGPKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("OpenPGP public key: %w", err)
	}
	sig, err := k.sign(key, packet.SigTypePositiveCert, OpenPGPKeyCreation,
		subpacket(nil, subKeyFlags, []byte{keyFlagsCertifySign}), func(h io.Writer) { k.hashUserID(h, userID) })
	if err != nil {
		return nil, fmt.Errorf("OpenPGP public key: %w", err)
	}
	var raw []byte
	raw = appendPacket(raw, tagPublicKey, k.body)
	raw = appendPacket(raw, tagUserID, []byte(userID))
	raw = append(raw, sig...)
	return armored(openPGPPublicKeyType, raw)
}

// CheckOpenPGPKey checks data, an armored OpenPGP public key someone
// published, against the cluster key pub: it must be exactly what
// OpenPGPPublicKey makes for the key of pub and userID (the derived key,
// that one user ID, a valid self-signature of them, nothing else). It
// returns the key's fingerprint and key ID as OpenPGPFingerprint does.
// Errors wrap ErrOpenPGPKeyMismatch when the key is another one, and
// ErrOpenPGPKeyInvalid for anything else wrong with data.
func CheckOpenPGPKey(data []byte, pub crypto.PublicKey, userID string) (fingerprint, keyID string, err error) {
	want, err := deriveOpenPGPKey(pub)
	if err != nil {
		return "", "", err
	}
	fingerprint = fmt.Sprintf("%X", want.pk.Fingerprint)
	keyID = fingerprint[len(fingerprint)-16:]
	raw, err := unarmor(data, openPGPPublicKeyType)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrOpenPGPKeyInvalid, err)
	}
	p, err := packet.Read(bytes.NewReader(raw))
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrOpenPGPKeyInvalid, err)
	}
	pk, ok := p.(*packet.PublicKey)
	if !ok || pk.IsSubkey {
		return "", "", fmt.Errorf("%w: does not start with a primary public key", ErrOpenPGPKeyInvalid)
	}
	if !bytes.Equal(pk.Fingerprint, want.pk.Fingerprint) {
		return "", "", fmt.Errorf("%w: holds key %X, want %s", ErrOpenPGPKeyMismatch, pk.Fingerprint, fingerprint)
	}
	// Same fingerprint: the same key packet. What follows must be the user
	// ID and the self-signature, exactly, so that nothing (another user ID,
	// a subkey, a revocation) rides along into a keyring.
	wantPrefix := appendPacket(appendPacket(nil, tagPublicKey, want.body), tagUserID, []byte(userID))
	if !bytes.HasPrefix(raw, wantPrefix) {
		return "", "", fmt.Errorf("%w: the packets after key %s are not the user ID %q", ErrOpenPGPKeyInvalid, keyID, userID)
	}
	r := bytes.NewReader(raw[len(wantPrefix):])
	p, err = packet.Read(r)
	if err != nil {
		return "", "", fmt.Errorf("%w: self-signature: %w", ErrOpenPGPKeyInvalid, err)
	}
	sig, ok := p.(*packet.Signature)
	if !ok || sig.SigType != packet.SigTypePositiveCert {
		return "", "", fmt.Errorf("%w: user ID %q has no positive certification after it", ErrOpenPGPKeyInvalid, userID)
	}
	if err := want.pk.VerifyUserIdSignature(userID, want.pk, sig); err != nil {
		return "", "", fmt.Errorf("%w: self-signature of %q: %w", ErrOpenPGPKeyInvalid, userID, err)
	}
	if r.Len() > 0 {
		return "", "", fmt.Errorf("%w: %d bytes of packets after the self-signature", ErrOpenPGPKeyInvalid, r.Len())
	}
	if err := want.canonical(raw[len(wantPrefix):], userID); err != nil {
		return "", "", fmt.Errorf("%w: self-signature: %w", ErrOpenPGPKeyInvalid, err)
	}
	return fingerprint, keyID, nil
}

// canonical checks that pkt, a certification of userID by k that
// verified, is laid out as sign lays it out: what the signature does not
// cover (its unhashed subpackets, the hash tag, the encoding of the
// packet's length and of its numbers) is anyone's to change, and a
// published key carries nothing gitpeer did not write.
func (k *openPGPKey) canonical(pkt []byte, userID string) error {
	if len(pkt) < 2 || pkt[0] != 0xc0|tagSignature || int(pkt[1]) != len(pkt)-2 || pkt[1] >= 192 {
		return errors.New("not in the packet framing gitpeer writes")
	}
	body := pkt[2:]
	if len(body) < 6 {
		return errors.New("truncated")
	}
	u := 6 + int(binary.BigEndian.Uint16(body[4:6]))
	if len(body) < u+2 {
		return errors.New("truncated")
	}
	end := u + 2 + int(binary.BigEndian.Uint16(body[u:u+2]))
	if len(body) < end+2 {
		return errors.New("truncated")
	}
	if want := subpacket(nil, subIssuerKeyID, binary.BigEndian.AppendUint64(nil, k.pk.KeyId)); !bytes.Equal(body[u+2:end], want) {
		return errors.New("its unhashed subpackets are not the issuer key ID alone")
	}
	if d := v4Digest(body[:u], func(h io.Writer) { k.hashUserID(h, userID) }); !bytes.Equal(body[end:end+2], d[:2]) {
		return errors.New("its hash tag is not its digest's")
	}
	sig, err := packet.Read(bytes.NewReader(pkt))
	if err != nil {
		return err
	}
	s, ok := sig.(*packet.Signature)
	if !ok || s.EdDSASigR == nil || s.EdDSASigS == nil {
		return errors.New("not an EdDSA signature")
	}
	mpis := appendMPI(appendMPI(nil, s.EdDSASigR.Bytes()), s.EdDSASigS.Bytes())
	if !bytes.Equal(body[end+2:], mpis) {
		return errors.New("its numbers are not minimally encoded")
	}
	return nil
}

// NewOpenPGPSigner returns a go-git Signer (for git.CommitOptions.Signer)
// that makes armored OpenPGP signatures ("PGP SIGNATURE", binary document,
// SHA-512) with key's derived OpenPGP key: the signature `git commit -S`
// makes with gpg.format=openpgp and that key. The signature's creation time
// is the committer time of the commit it signs (so the same commit gets the
// same signature), else now. key's private half may live anywhere; only
// Sign is called. It fails with ErrUnsupportedKey unless key.Public() is an
// ed25519.PublicKey.
func NewOpenPGPSigner(key crypto.Signer) (git.Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("new OpenPGP signer: nil key: %w", ErrUnsupportedKey)
	}
	k, err := deriveOpenPGPKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("new OpenPGP signer: %w", err)
	}
	return openPGPSigner{key: key, k: k, now: time.Now}, nil
}

type openPGPSigner struct {
	key crypto.Signer
	k   *openPGPKey
	now func() time.Time
}

// Sign returns the armored OpenPGP signature of message.
func (s openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	data, err := io.ReadAll(message)
	if err != nil {
		return nil, fmt.Errorf("OpenPGP sign: %w", err)
	}
	when, ok := committerTime(data)
	if !ok {
		when = s.now()
	}
	sig, err := s.k.sign(s.key, packet.SigTypeBinary, when, nil, func(h io.Writer) { _, _ = h.Write(data) })
	if err != nil {
		return nil, fmt.Errorf("OpenPGP sign: %w", err)
	}
	return armored(openPGPSignatureType, sig)
}

// committerTime is the time of the committer line of a commit object (or
// the tagger line of a tag): "committer Name <email> 1700000000 +0000".
func committerTime(object []byte) (time.Time, bool) {
	sc := bufio.NewScanner(bytes.NewReader(object))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the headers end here
		}
		rest, ok := strings.CutPrefix(line, "committer ")
		if !ok {
			rest, ok = strings.CutPrefix(line, "tagger ")
		}
		if !ok {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '>')+1:])
		if len(f) != 2 {
			return time.Time{}, false
		}
		secs, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || secs < OpenPGPKeyCreation.Unix() || secs > 1<<32-1 {
			return time.Time{}, false
		}
		return time.Unix(secs, 0), true
	}
	return time.Time{}, false
}

// sign returns a v4 signature packet of sigType by k over what hash writes,
// made at when: hashed subpackets creation time, issuer fingerprint and
// extra; unhashed the issuer key ID (for GnuPG before 2.2). The Ed25519
// signature is key's, over the SHA-512 digest, and is checked before it is
// returned: a crypto.Signer that signs anything else (Ed25519ph, another
// key) is refused.
func (k *openPGPKey) sign(key crypto.Signer, sigType packet.SignatureType, when time.Time, extra []byte, hash func(io.Writer)) ([]byte, error) {
	if u := when.Unix(); u < 0 || u > 1<<32-1 {
		return nil, fmt.Errorf("signature time %s does not fit OpenPGP's", when)
	}
	var hashed []byte
	hashed = subpacket(hashed, subCreationTime, binary.BigEndian.AppendUint32(nil, uint32(when.Unix())))
	hashed = subpacket(hashed, subIssuerFingerprint, append([]byte{4}, k.pk.Fingerprint...))
	hashed = append(hashed, extra...)
	head := []byte{4, byte(sigType), pubKeyAlgoEdDSA, hashSHA512}
	head = binary.BigEndian.AppendUint16(head, uint16(len(hashed)))
	head = append(head, hashed...)

	digest := v4Digest(head, hash)

	sig, err := key.Sign(rand.Reader, digest, crypto.Hash(0))
	if err != nil {
		return nil, err
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(k.ed, digest, sig) {
		return nil, errors.New("the key's signature does not verify as Ed25519 over the digest")
	}
	unhashed := subpacket(nil, subIssuerKeyID, binary.BigEndian.AppendUint64(nil, k.pk.KeyId))
	body := head
	body = binary.BigEndian.AppendUint16(body, uint16(len(unhashed)))
	body = append(body, unhashed...)
	body = append(body, digest[:2]...)
	body = appendMPI(body, sig[:32]) // R
	body = appendMPI(body, sig[32:]) // S
	return appendPacket(nil, tagSignature, body), nil
}

// v4Digest is the SHA-512 digest a v4 signature whose fields up to its
// hashed subpackets are head signs, over what hash writes (RFC 4880
// §5.2.4).
func v4Digest(head []byte, hash func(io.Writer)) []byte {
	h := sha512.New()
	hash(h)
	h.Write(head)
	h.Write([]byte{4, 0xff})
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(head))))
	return h.Sum(nil)
}

// hashUserID writes what a certification of userID on k hashes before the
// signature's own fields (RFC 4880 §5.2.4).
func (k *openPGPKey) hashUserID(h io.Writer, userID string) {
	_, _ = h.Write(append([]byte{0x99}, binary.BigEndian.AppendUint16(nil, uint16(len(k.body)))...))
	_, _ = h.Write(k.body)
	_, _ = h.Write(append([]byte{0xb4}, binary.BigEndian.AppendUint32(nil, uint32(len(userID)))...))
	_, _ = h.Write([]byte(userID))
}

// appendPacket appends a new-format packet (RFC 4880 §4.2.2) of tag with
// body.
func appendPacket(b []byte, tag byte, body []byte) []byte {
	b = append(b, 0xc0|tag)
	switch n := len(body); {
	case n < 192:
		b = append(b, byte(n))
	case n < 8384:
		n -= 192
		b = append(b, byte(n>>8)+192, byte(n))
	default:
		b = append(b, 0xff)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return append(b, body...)
}

// subpacket appends a signature subpacket of typ with data (at most 190
// bytes: a one-octet length).
func subpacket(b []byte, typ byte, data []byte) []byte {
	return append(append(b, byte(1+len(data)), typ), data...)
}

// appendMPI appends v, big-endian, as an MPI (RFC 4880 §3.2): its length in
// bits, then its bytes without leading zeros.
func appendMPI(b, v []byte) []byte {
	v = bytes.TrimLeft(v, "\x00")
	n := 0
	if len(v) > 0 {
		n = (len(v)-1)*8 + bits.Len8(v[0])
	}
	return append(binary.BigEndian.AppendUint16(b, uint16(n)), v...)
}

// armored ASCII-armors raw as blockType, with a checksum, without headers.
func armored(blockType string, raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// unarmor decodes data, which must be one armor block of blockType with
// nothing but whitespace around it.
func unarmor(data []byte, blockType string) ([]byte, error) {
	s := strings.TrimSpace(string(data))
	begin, end := "-----BEGIN "+blockType+"-----", "-----END "+blockType+"-----"
	if !strings.HasPrefix(s, begin) || !strings.HasSuffix(s, end) || strings.Count(s, "-----BEGIN ") != 1 {
		return nil, fmt.Errorf("not one armored %q block", blockType)
	}
	block, err := armor.Decode(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("armor: %w", err)
	}
	if block.Type != blockType {
		return nil, fmt.Errorf("armor type %q, want %q", block.Type, blockType)
	}
	raw, err := io.ReadAll(io.LimitReader(block.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("armor: %w", err)
	}
	return raw, nil
}

// parseOpenPGPSignature reads armored, which must be one armored "PGP
// SIGNATURE" block holding one signature packet and nothing else.
func parseOpenPGPSignature(armored string) (*packet.Signature, error) {
	raw, err := unarmor([]byte(armored), openPGPSignatureType)
	if err != nil {
		return nil, err
	}
	r := bytes.NewReader(raw)
	p, err := packet.Read(r)
	if err != nil {
		return nil, fmt.Errorf("signature packet: %w", err)
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		return nil, fmt.Errorf("a %T where a signature packet belongs", p)
	}
	if r.Len() > 0 {
		return nil, fmt.Errorf("%d bytes after the signature packet", r.Len())
	}
	return sig, nil
}

// openPGPIssuer returns the first principal (in sorted order) whose derived
// OpenPGP key sig names as its issuer: by fingerprint when sig has one,
// else by key ID.
func openPGPIssuer(sig *packet.Signature, principals []string, keys map[string]crypto.PublicKey) (string, *openPGPKey) {
	for _, p := range principals {
		k, err := deriveOpenPGPKey(keys[p])
		if err != nil {
			continue
		}
		switch {
		case len(sig.IssuerFingerprint) > 0:
			if bytes.Equal(sig.IssuerFingerprint, k.pk.Fingerprint) {
				return p, k
			}
		case sig.IssuerKeyId != nil && *sig.IssuerKeyId == k.pk.KeyId:
			return p, k
		}
	}
	return "", nil
}

// issuerName names the key a signature says made it, for errors.
func issuerName(sig *packet.Signature) string {
	switch {
	case len(sig.IssuerFingerprint) > 0:
		return fmt.Sprintf("OpenPGP key %X", sig.IssuerFingerprint)
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("OpenPGP key ID %016X", *sig.IssuerKeyId)
	}
	return "an OpenPGP key it does not name"
}

// verifyOpenPGP checks armored, an OpenPGP signature, over payload.
func verifyOpenPGP(armored string, payload io.Reader, principals []string, keys map[string]crypto.PublicKey) (string, error) {
	sig, err := parseOpenPGPSignature(armored)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnknownSigner, err)
	}
	p, k := openPGPIssuer(sig, principals, keys)
	if p == "" {
		return "", fmt.Errorf("%w: signed by %s", ErrUnknownSigner, issuerName(sig))
	}
	switch {
	case sig.Version != 4:
		return "", fmt.Errorf("%w: version %d signature, want 4", ErrUnknownSigner, sig.Version)
	case sig.SigType != packet.SigTypeBinary:
		return "", fmt.Errorf("%w: signature type %#x, want a binary document (0x00)", ErrUnknownSigner, sig.SigType)
	case sig.PubKeyAlgo != packet.PubKeyAlgoEdDSA:
		return "", fmt.Errorf("%w: public-key algorithm %d, want EdDSA (%d)", ErrUnknownSigner, sig.PubKeyAlgo, packet.PubKeyAlgoEdDSA)
	case sig.Hash != crypto.SHA512 && sig.Hash != crypto.SHA256:
		return "", fmt.Errorf("%w: hash algorithm %v", ErrUnknownSigner, sig.Hash)
	}
	h := sig.Hash.New()
	if _, err := io.Copy(h, payload); err != nil {
		return "", err
	}
	if err := k.pk.VerifySignature(h, sig); err != nil {
		return "", fmt.Errorf("%w: signature by %s (%X): %w", ErrUnknownSigner, p, k.pk.Fingerprint, err)
	}
	return p, nil
}
