package reasons

import "github.com/fluxcd/pkg/apis/meta"

// Condition reasons: what a peering's conditions in a cluster's status.yaml
// (and `gitpeer status`) say, and, where verify finds the same in a
// repo, its finding's reason too. docs/trust.md ("What a reader
// reports" and "Handshake progress") has a line for each.
const (
	// FileTooLarge: the file is larger than the cap of its kind
	// (layout.SizeLimit), so it was not read, signed or not.
	FileTooLarge = "FileTooLarge"
	// IdentityAccepted: (consumer) the provider's Identity verified and its
	// kubeconfig is in the backend: the handshake is done on this side.
	IdentityAccepted = "IdentityAccepted"
	// IdentityIssued: (provider) this cluster issued the consumer's Identity:
	// the handshake is done on this side.
	IdentityIssued = "IdentityIssued"
	// InvalidCSR: a CSR in an artifact does not parse, or fails Liqo's checks
	// of its subject and key (Liqo's word: tenant_controller.go).
	InvalidCSR = "InvalidCSR"
	// InvalidCertificate: a certificate in an Identity does not parse, is not
	// valid now, or does not match the key its CSR carried.
	InvalidCertificate = "InvalidCertificate"
	// InvalidClusterInfo: the peer's cluster.yaml does not parse, breaks a
	// rule of its format, or is larger than its cap; the peering accepted
	// before is kept.
	InvalidClusterInfo = "InvalidClusterInfo"
	// InvalidNonce: a nonce is not base64 of 64 bytes as Liqo's nonce
	// controller writes it, or not the one the provider issued.
	InvalidNonce = "InvalidNonce"
	// InvalidPublicKey: a public key in an artifact or cluster.yaml is not an
	// Ed25519 key in Liqo's PEM form.
	InvalidPublicKey = "InvalidPublicKey"
	// KeyChanged: a commit changed a cluster.yaml's public key, API
	// server or CA without a rotation statement signed by the previous key.
	KeyChanged = "KeyChanged"
	// KeyNotPinned: an artifact's writer has no key pinned yet: its
	// cluster.yaml was never accepted.
	KeyNotPinned = "KeyNotPinned"
	// KeyRotationInProgress: a consumer published a new key with a
	// rotation statement signed by the key of the Tenant this provider
	// accepted, and no Tenant for the new key has verified yet. The peering
	// is Ready: the accepted Tenant, its bindings, Identity and granted
	// slices stay as they were until the new Tenant verifies, and are then
	// re-issued for the new key in the same pass. On the consumer's side:
	// it rolled its key over and keeps the Identity issued for the previous
	// key until the provider answers the new key's Tenant.
	KeyRotationInProgress = "KeyRotationInProgress"
	// MalformedArtifact: an artifact (nonce, Tenant, Identity, answer) does
	// not parse, or breaks a rule of its format.
	MalformedArtifact = "MalformedArtifact"
	// ManifestInvalid: the directory's manifest is missing, malformed,
	// or not signed by the writer's trusted key.
	ManifestInvalid = "ManifestInvalid"
	// ManifestRolledBack: the manifest's sequence is lower than one the
	// reader has already seen: an old signed state replayed.
	ManifestRolledBack = "ManifestRolledBack"
	// NonceExpired: a Tenant answers a nonce of an epoch the provider no
	// longer accepts.
	NonceExpired = "NonceExpired"
	// NonceReplayed: a Tenant answers a nonce epoch this provider never
	// issued, or an older one than the ones it remembers.
	NonceReplayed = "NonceReplayed"
	// PeerContentRefused: what this cluster would write for a peering
	// held something that looks like private material, put there by the peer
	// (a ResourceSlice request's fields are echoed in the answer, refusals quote
	// what they refuse). That peering's new writes are dropped and the state
	// accepted before is kept; the other peerings go on.
	PeerContentRefused = "PeerContentRefused"
	// PeeringFailed: this cluster's part of the pass for one peering
	// failed (a signer that refused a peer's CSR, say, or anything else the
	// peering's inputs led to). What was signed for that peer before is kept as
	// it was; the other peerings went on. The message says what failed.
	PeeringFailed = "PeeringFailed"
	// PinDamaged: this cluster's pin store holds, for the peer, a value
	// out of its bounds or malformed (written by an earlier version, or by
	// hand). Nothing of that peer is read until an admin re-pins it (gitpeer
	// trust --peer); the message says the command.
	PinDamaged = "PinDamaged"
	// Progressing: the pass moved the handshake a step (Flux's
	// meta.ProgressingReason).
	Progressing = meta.ProgressingReason
	// Revoking marks a peering removed from the spec while its Tenant is drained.
	Revoking = "Revoking"
	// SignatureVerificationFailed: a Tenant's signature over the nonce does
	// not verify with the consumer's pinned key (Liqo's word:
	// tenant_controller.go).
	SignatureVerificationFailed = "SignatureVerificationFailed"
	// SliceDiffersFromSpec: the spec lists the slice, with another
	// class or other resources than the request (or, for verify, than the
	// grant).
	SliceDiffersFromSpec = "SliceDiffersFromSpec"
	// SliceNameRefused: the request's name is not a slice name Liqo
	// can serve (a DNS-1123 label of at most 63 characters); nothing of it
	// is decoded, signed or answered.
	SliceNameRefused = "SliceNameRefused"
	// SliceNotInSpec: the spec lists no slice of that name for the
	// peering (consumer → provider).
	SliceNotInSpec = "SliceNotInSpec"
	// SliceNotSigned: this provider granted a slice but its signer did
	// not sign the slice's CSR (it refused the subject, or the backend failed).
	// The answer given before to the same request is kept, or none is written;
	// the pass goes on for the other slices and peers, and the next pass tries
	// again.
	SliceNotSigned = "SliceNotSigned"
	// SliceOverClassTotal: granting the slice would take the
	// resources granted to the consumer in its class past the class's caps.
	SliceOverClassTotal = "SliceOverClassTotal"
	// TooManyEntries: a directory holds more entries than the cap of
	// its kind (layout.EntryLimit), so nothing in it was read, signed or
	// not.
	TooManyEntries = "TooManyEntries"
	// UnexpectedArtifact: a file in an inbox, clusters/<to>/inbox/<from>/,
	// is not one of the artifacts <from> sends <to> in the parts the spec gives
	// them (see Sender and InboxArtifact). Signed or not, no reader acts on it;
	// the reconciler of <to> names it in its status and gitpeer verify names it
	// as a finding.
	UnexpectedArtifact = "UnexpectedArtifact"
	// UnsignedChange: the file is not listed in its directory's
	// manifest, or its content is not the listed one.
	UnsignedChange = "UnsignedChange"
	// UntrustedAPIServer: an Identity names another API server than the
	// provider's published cluster.yaml.
	UntrustedAPIServer = "UntrustedAPIServer"
	// UntrustedCA: an Identity carries another CA than the provider's
	// published cluster.yaml.
	UntrustedCA = "UntrustedCA"
	// UntrustedCertificate: a certificate does not chain to the CA the
	// provider published in its cluster.yaml.
	UntrustedCertificate = "UntrustedCertificate"
	// WaitingForCluster: the peer has published no cluster.yaml this cluster
	// can read and pin yet.
	WaitingForCluster = "WaitingForCluster"
	// WaitingForIdentity: (consumer) the Tenant is sent; the provider's
	// Identity has not arrived yet.
	WaitingForIdentity = "WaitingForIdentity"
	// WaitingForNonce: (consumer) the provider's nonce for this cluster has
	// not arrived yet.
	WaitingForNonce = "WaitingForNonce"
	// WaitingForTenant: (provider) the nonce is sent; the consumer's Tenant
	// has not arrived yet.
	WaitingForTenant = "WaitingForTenant"
)
