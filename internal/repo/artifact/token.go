package artifact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// AnnotationTokenProof carries, on a Tenant, proof that the consumer holds
// the token its provider's admin handed out of band: the token itself never
// enters Git.
const AnnotationTokenProof = "gitpeer.io/token-proof"

// Token refusals, in Liqo v0.2's words (ForeignCluster authStatus).
const (
	ReasonTokenRefused      = "Refused"
	ReasonTokenEmptyRefused = "EmptyRefused"
)

// TokenProof is base64(HMAC-SHA256(token, "gitpeer/token/v1" 0x00 nonce)):
// bound to the nonce, so a proof seen in Git cannot be replayed for another
// handshake.
func TokenProof(token []byte, nonce string) string {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("gitpeer/token/v1\x00"))
	m.Write([]byte(nonce))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// CheckTokenProof compares a Tenant's proof with the one token gives for
// nonce, in constant time. It returns "" when they match, else the refusal
// reason: EmptyRefused for a missing or empty proof, Refused otherwise.
func CheckTokenProof(proof string, token []byte, nonce string) string {
	if proof == "" {
		return ReasonTokenEmptyRefused
	}
	if !hmac.Equal([]byte(proof), []byte(TokenProof(token, nonce))) {
		return ReasonTokenRefused
	}
	return ""
}
