package layout

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// Rotation is a statement in cluster.yaml, signed by the cluster's previous
// key, that the new public key, API server and CA replace it. `gitpeer
// rotate-key` writes it. It is checked against the key a peer pinned, never
// against anything else in the repo.
type Rotation struct {
	// PreviousPublicKey is the key that signs, PEM "PUBLIC KEY" (PKIX).
	PreviousPublicKey string `json:"previousPublicKey"`
	// Signature is handshake.SignStatement over RotationPayload (base64 in YAML).
	Signature []byte `json:"signature"`
}

// ErrRotation means a rotation statement is missing, malformed, signed by
// another key than the pinned one, or does not cover this cluster.yaml.
var ErrRotation = errors.New("no valid rotation statement")

// RotationPayload is the byte string a rotation statement signs: a domain
// line, then the cluster ID, the previous key's fingerprint, and the new
// key's fingerprint, API server and CA (as the SHA-256 of the PEM bundle):
//
//	gitpeer-rotation-v1
//	cluster <id>
//	previous sha256:<hex>
//	publicKey sha256:<hex>
//	apiServer <url>
//	ca <sha256 hex of the ca field>
func RotationPayload(c *ClusterInfo, previousFingerprint string) []byte {
	ca := sha256.Sum256([]byte(c.CA))
	return fmt.Appendf(nil, "gitpeer-rotation-v1\ncluster %s\nprevious %s\npublicKey %s\napiServer %s\nca %s\n",
		c.ClusterID, previousFingerprint, c.Fingerprint, c.APIServer, hex.EncodeToString(ca[:]))
}

// SignRotation adds to c a rotation statement signed by previous, the key c
// replaces.
func SignRotation(c *ClusterInfo, previous crypto.Signer) error {
	pub := previous.Public()
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		return err
	}
	pem, err := handshake.MarshalPublicKey(pub)
	if err != nil {
		return err
	}
	sig, err := handshake.SignStatement(previous, RotationPayload(c, fp))
	if err != nil {
		return err
	}
	c.Rotation = &Rotation{PreviousPublicKey: string(pem), Signature: sig}
	return nil
}

// VerifyRotation checks that c carries a rotation statement signed by the
// key with fingerprint pinned. Errors wrap ErrRotation and say why.
func (c *ClusterInfo) VerifyRotation(pinned string) error {
	if c.Rotation == nil {
		return fmt.Errorf("rotation: missing: %w", ErrRotation)
	}
	pub, _, err := handshake.ParsePublicKey([]byte(c.Rotation.PreviousPublicKey))
	if err != nil {
		return fmt.Errorf("rotation.previousPublicKey: %v: %w", err, ErrRotation)
	}
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		return fmt.Errorf("rotation.previousPublicKey: %v: %w", err, ErrRotation)
	}
	if fp != pinned {
		return fmt.Errorf("rotation: signed by %s, not by the pinned %s: %w", fp, pinned, ErrRotation)
	}
	if err := handshake.VerifyStatement(pub, RotationPayload(c, fp), c.Rotation.Signature); err != nil {
		return fmt.Errorf("rotation.signature: %v: %w", err, ErrRotation)
	}
	return nil
}
