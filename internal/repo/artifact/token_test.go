package artifact_test

import (
	"encoding/base64"
	"testing"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

func TestTokenProof(t *testing.T) {
	token := []byte("3c6e0b8a9c15224a8228b9a98ca1531d")
	nonce := handshake.DeriveNonce([]byte("secret"), consumer, 1)
	proof := artifact.TokenProof(token, nonce)

	t.Run("is base64 of an HMAC-SHA256", func(t *testing.T) {
		raw, err := base64.StdEncoding.DecodeString(proof)
		if err != nil || len(raw) != 32 {
			t.Fatalf("proof %q decodes to %d bytes, %v", proof, len(raw), err)
		}
		if artifact.TokenProof(token, nonce) != proof {
			t.Error("the same token and nonce give another proof")
		}
	})
	t.Run("does not reveal the token", func(t *testing.T) {
		if proof == string(token) || proof == base64.StdEncoding.EncodeToString(token) {
			t.Error("the proof is the token")
		}
	})

	cases := []struct {
		name   string
		proof  string
		token  []byte
		nonce  string
		reason string
	}{
		{"accepts the proof of the shared token over this nonce", proof, token, nonce, ""},
		{"refuses a missing proof as EmptyRefused", "", token, nonce, artifact.ReasonTokenEmptyRefused},
		{"refuses a proof by another token", artifact.TokenProof([]byte("another token"), nonce), token, nonce, artifact.ReasonTokenRefused},
		{"refuses a proof bound to another nonce", artifact.TokenProof(token, handshake.DeriveNonce([]byte("secret"), consumer, 2)), token, nonce, artifact.ReasonTokenRefused},
		{"refuses the token itself as a proof", string(token), token, nonce, artifact.ReasonTokenRefused},
		{"refuses a proof re-encoded without padding", base64.RawStdEncoding.EncodeToString(mustDecode(t, proof)), token, nonce, artifact.ReasonTokenRefused},
		{"refuses a proof with a trailing newline", proof + "\n", token, nonce, artifact.ReasonTokenRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := artifact.CheckTokenProof(tc.proof, tc.token, tc.nonce); got != tc.reason {
				t.Errorf("CheckTokenProof = %q, want %q", got, tc.reason)
			}
		})
	}
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
