package layout_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

const rotatedFile = "clusters/alpha/cluster.yaml"

func newKey(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func fingerprint(t testing.TB, k crypto.Signer) string {
	t.Helper()
	fp, err := handshake.Fingerprint(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func caPEM(t testing.TB, name string) string {
	t.Helper()
	ca, _, err := handshake.NewCA(name, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return string(ca.CertPEM)
}

// rotated is cluster alpha's cluster.yaml after `gitpeer rotate-key`: a new
// key, API server and CA, with a statement signed by previous.
func rotated(t testing.TB, previous crypto.Signer) *layout.ClusterInfo {
	t.Helper()
	c, err := layout.NewClusterInfo("alpha", newKey(t).Public(), "https://alpha-new.example:6443", []byte(caPEM(t, "alpha-ca-2")))
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.SignRotation(c, previous); err != nil {
		t.Fatal(err)
	}
	return c
}

func copyInfo(c *layout.ClusterInfo) *layout.ClusterInfo {
	d := *c
	if c.Rotation != nil {
		r := *c.Rotation
		r.Signature = bytes.Clone(c.Rotation.Signature)
		d.Rotation = &r
	}
	return &d
}

func TestRotationSignedByThePinnedKeyVerifies(t *testing.T) {
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		old  crypto.Signer
	}{
		{"accepts a rotation signed by the pinned Ed25519 key", newKey(t)},
		{"accepts a rotation signed by a pinned ECDSA P-256 key", p256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rotated(t, tc.old)
			if err := c.VerifyRotation(fingerprint(t, tc.old)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyRotationRefuses(t *testing.T) {
	old := newKey(t)
	oldFP := fingerprint(t, old)
	other := newKey(t)
	otherPEM, err := handshake.MarshalPublicKey(other.Public())
	if err != nil {
		t.Fatal(err)
	}
	valid := rotated(t, old)
	replacement := rotated(t, old) // another new key, API server and CA
	cases := []struct {
		name   string
		edit   func(c *layout.ClusterInfo)
		pinned string
		reason string // in the message
	}{
		{name: "refuses a cluster.yaml without a statement", edit: func(c *layout.ClusterInfo) { c.Rotation = nil }, reason: "missing"},
		{name: "refuses a statement signed by another key", edit: func(c *layout.ClusterInfo) {
			if err := layout.SignRotation(c, other); err != nil {
				t.Fatal(err)
			}
		}, reason: "not by the pinned"},
		{name: "refuses a statement whose previous key was swapped for another", edit: func(c *layout.ClusterInfo) {
			c.Rotation.PreviousPublicKey = string(otherPEM)
		}, reason: "not by the pinned"},
		{name: "refuses a statement checked against the new key itself", pinned: valid.Fingerprint, reason: "not by the pinned"},
		{name: "refuses a statement checked against a pin that is no fingerprint", pinned: "-", reason: "not by the pinned"},
		{name: "refuses a statement for another API server", edit: func(c *layout.ClusterInfo) { c.APIServer = "https://evil.example:6443" }, reason: "rotation.signature"},
		{name: "refuses a statement for an API server one byte longer", edit: func(c *layout.ClusterInfo) { c.APIServer += "/" }, reason: "rotation.signature"},
		{name: "refuses a statement for another CA", edit: func(c *layout.ClusterInfo) { c.CA = caPEM(t, "evil-ca") }, reason: "rotation.signature"},
		{name: "refuses a statement for a CA bundle with a certificate added", edit: func(c *layout.ClusterInfo) { c.CA += caPEM(t, "evil-ca") }, reason: "rotation.signature"},
		{name: "refuses a statement for a CA one byte longer", edit: func(c *layout.ClusterInfo) { c.CA += "\n" }, reason: "rotation.signature"},
		{name: "refuses a statement for another new key", edit: func(c *layout.ClusterInfo) {
			c.PublicKey, c.Fingerprint = replacement.PublicKey, replacement.Fingerprint
		}, reason: "rotation.signature"},
		{name: "refuses a statement for another new fingerprint", edit: func(c *layout.ClusterInfo) { c.Fingerprint = replacement.Fingerprint }, reason: "rotation.signature"},
		{name: "refuses a statement replayed onto another cluster ID", edit: func(c *layout.ClusterInfo) { c.ClusterID = "beta" }, reason: "rotation.signature"},
		{name: "refuses a signature with one byte changed", edit: func(c *layout.ClusterInfo) { c.Rotation.Signature[10] ^= 1 }, reason: "rotation.signature"},
		{name: "refuses a truncated signature", edit: func(c *layout.ClusterInfo) { c.Rotation.Signature = c.Rotation.Signature[:32] }, reason: "rotation.signature"},
		{name: "refuses an empty signature", edit: func(c *layout.ClusterInfo) { c.Rotation.Signature = nil }, reason: "rotation.signature"},
		{name: "refuses a previous key that does not parse", edit: func(c *layout.ClusterInfo) { c.Rotation.PreviousPublicKey = "not a key" }, reason: "rotation.previousPublicKey"},
		{name: "refuses an empty previous key", edit: func(c *layout.ClusterInfo) { c.Rotation.PreviousPublicKey = "" }, reason: "rotation.previousPublicKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := copyInfo(valid)
			if tc.edit != nil {
				tc.edit(c)
			}
			pinned := oldFP
			if tc.pinned != "" {
				pinned = tc.pinned
			}
			err := c.VerifyRotation(pinned)
			if !errors.Is(err, layout.ErrRotation) {
				t.Fatalf("error = %v, want %v", err, layout.ErrRotation)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
		})
	}
	if err := valid.VerifyRotation(oldFP); err != nil {
		t.Fatalf("the edits changed the original: %v", err)
	}
}

// A statement covers the cluster ID: alpha's rotation, signed by a key beta
// also once used, cannot be carried over to beta's cluster.yaml.
func TestRotationIsBoundToItsCluster(t *testing.T) {
	shared := newKey(t)
	alpha := rotated(t, shared)
	beta := copyInfo(alpha)
	beta.ClusterID = "beta"
	if err := beta.VerifyRotation(fingerprint(t, shared)); !errors.Is(err, layout.ErrRotation) {
		t.Fatalf("alpha's statement verified for beta: %v", err)
	}
	if err := layout.SignRotation(beta, shared); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(beta.Rotation.Signature, alpha.Rotation.Signature) {
		t.Fatal("two clusters' statements are the same signature")
	}
	if err := beta.VerifyRotation(fingerprint(t, shared)); err != nil {
		t.Fatalf("beta's own statement: %v", err)
	}
}

func TestRotationPayloadIsTheDocumentedByteString(t *testing.T) {
	c := &layout.ClusterInfo{
		ClusterID:   "alpha",
		Fingerprint: "sha256:" + strings.Repeat("1", 64),
		APIServer:   "https://alpha.example:6443",
		CA:          "-----BEGIN CERTIFICATE-----\n",
	}
	ca := sha256.Sum256([]byte(c.CA))
	want := "gitpeer-rotation-v1\n" +
		"cluster alpha\n" +
		"previous sha256:" + strings.Repeat("0", 64) + "\n" +
		"publicKey sha256:" + strings.Repeat("1", 64) + "\n" +
		"apiServer https://alpha.example:6443\n" +
		"ca " + hex.EncodeToString(ca[:]) + "\n"
	if got := string(layout.RotationPayload(c, "sha256:"+strings.Repeat("0", 64))); got != want {
		t.Fatalf("payload:\n%s\nwant\n%s", got, want)
	}
}

func TestRotatedClusterInfoRoundTrips(t *testing.T) {
	old := newKey(t)
	want := rotated(t, old)
	data := encodeInfo(t, want)
	if !bytes.Contains(data, []byte("rotation:\n")) || !bytes.Contains(data, []byte("previousPublicKey: |")) {
		t.Fatalf("cluster.yaml does not carry the statement:\n%s", data)
	}
	got, err := layout.ParseClusterInfo(rotatedFile, "alpha", data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rotation == nil || got.Rotation.PreviousPublicKey != want.Rotation.PreviousPublicKey ||
		!bytes.Equal(got.Rotation.Signature, want.Rotation.Signature) {
		t.Fatalf("rotation %+v, want %+v", got.Rotation, want.Rotation)
	}
	g, w := *got, *want
	g.Rotation, w.Rotation = nil, nil
	if g != w {
		t.Fatalf("round trip changed the cluster info:\n%+v\nwant\n%+v", g, w)
	}
	if err := got.VerifyRotation(fingerprint(t, old)); err != nil {
		t.Fatalf("the parsed statement: %v", err)
	}
	again := encodeInfo(t, got)
	if !bytes.Equal(again, data) {
		t.Fatalf("re-encoding changed cluster.yaml:\n%s\nwant\n%s", again, data)
	}
	// A cluster.yaml without a statement has no rotation field at all.
	plain := copyInfo(want)
	plain.Rotation = nil
	if bytes.Contains(encodeInfo(t, plain), []byte("rotation")) {
		t.Fatal("an unrotated cluster.yaml mentions rotation")
	}
}

// FuzzVerifyRotation feeds cluster.yaml files carrying rotation statements
// as a repo writer could commit them. ParseClusterInfo and VerifyRotation
// must never panic, and a statement can only be accepted for exactly what
// the pinned key signed: same cluster, new key, API server and CA.
func FuzzVerifyRotation(f *testing.F) {
	old := newKey(f)
	oldFP := fingerprint(f, old)
	signed := rotated(f, old)
	valid := encodeInfo(f, signed)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:len(valid)-10])
	sig := []byte("signature: ")
	i := bytes.Index(valid, sig)
	f.Add(append(append(bytes.Clone(valid[:i]), sig...), "'%%% not base64'\n"...))
	f.Add(bytes.Replace(valid, []byte("previousPublicKey: |"), []byte("previousPublicKey: |\n    garbage\n  x: |"), 1))
	f.Add(bytes.Replace(valid, []byte("alpha-new.example"), []byte("evil.example"), 1))
	f.Add(bytes.Replace(valid, []byte("rotation:"), []byte("rotation: null\nx:"), 1))
	f.Add([]byte("rotation: {previousPublicKey: '', signature: ''}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := layout.ParseClusterInfo(rotatedFile, "alpha", data)
		if err != nil {
			var fe *layout.FieldError
			if !errors.As(err, &fe) || fe.File != rotatedFile {
				t.Fatalf("error %T %v is not a *FieldError on %s", err, err, rotatedFile)
			}
			return
		}
		if err := c.VerifyRotation(oldFP); err != nil {
			if !errors.Is(err, layout.ErrRotation) {
				t.Fatalf("error %v does not wrap ErrRotation", err)
			}
			return
		}
		if c.ClusterID != signed.ClusterID || c.Fingerprint != signed.Fingerprint ||
			c.APIServer != signed.APIServer || c.CA != signed.CA {
			t.Fatalf("accepted a statement for something the pinned key did not sign:\n%+v", c)
		}
	})
}
