// Package handshake holds the cryptography of Liqo's inter-cluster
// authentication handshake, with no I/O and no clients, so that every step can
// be table-tested and fuzzed on its own.
//
// The handshake has three artifacts:
//
//   - a nonce: the provider's challenge, 64 random bytes in standard base64
//     (88 characters), as Liqo's pkg/liqo-controller-manager/authentication/
//     noncecreator-controller writes it. [DeriveNonce] computes one from a
//     provider secret instead, so a provider keeps no per-peering state;
//   - a Tenant: the consumer's answer, carrying the consumer's public key
//     ([MarshalPublicKey], [ParsePublicKey]), a signature over the nonce
//     ([SignNonce], [VerifyNonce]) and a CSR for its control-plane user
//     ([ControlPlaneCSR], [CheckControlPlaneCSR]);
//   - an Identity: the provider's answer, carrying a client certificate signed
//     by the provider's CA ([CA.SignCSR]) that the consumer checks before it
//     trusts it ([VerifyClientCertificate]).
//
// ResourceSlices repeat the CSR step with a different subject
// ([ResourceSliceCSR], [CheckResourceSliceCSR]).
//
// Every format is Liqo v1.2's, byte for byte: what this package produces is
// accepted by Liqo's own checks (pkg/liqo-controller-manager/authentication/
// keys.go and csr.go), and what it accepts is a subset of what Liqo accepts.
// Where Liqo is lenient or fragile (it ignores trailing PEM data in keys, it
// panics on a CSR without an Organization, it never checks a CSR's
// self-signature) this package is stricter and returns an error instead.
//
// Errors wrap one of the package's sentinel errors (ErrSignatureMismatch,
// ErrMalformedCSR, …) so callers branch with [errors.Is]; [Reason] maps an
// error to a status-condition reason.
package handshake
