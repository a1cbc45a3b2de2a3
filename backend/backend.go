// Package backend defines where one cluster's private material lives and how
// it signs: the cluster key, the CA (or signer) that issues client
// certificates, the secret nonces derive from, and the kubeconfigs the
// cluster obtains. Nothing a Backend holds ever goes into Git.
package backend

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/pins"
)

// Backend is one cluster's private side of the handshake.
type Backend interface {
	// ClusterID is the Liqo cluster ID this backend holds material for.
	ClusterID() string
	// Signer is the cluster's private key (Liqo's authentication-keys): it
	// signs nonces and the CSRs of this cluster's Tenants and ResourceSlices.
	Signer() crypto.Signer
	// Nonce is the nonce issued to consumerID in epoch: 88 characters of
	// base64 over 64 bytes, Liqo's shape, derived so that checking a Tenant
	// needs no stored state.
	Nonce(consumerID string, epoch uint64) (string, error)
	// SignCSR issues a client certificate (PEM) for a verified CSR, valid for
	// lifetime from now. Callers check the CSR first: a Backend signs what it
	// is given.
	SignCSR(ctx context.Context, csrPEM []byte, lifetime time.Duration) ([]byte, error)
	// CABundle is the PEM bundle consumers must trust: the issuer of SignCSR's
	// certificates and of the API server's serving certificate.
	CABundle() []byte
	// StoreKubeconfig writes the kubeconfig built from a verified Identity and
	// this cluster's private key, outside Git, and says where it went.
	StoreKubeconfig(ctx context.Context, identity *authv1beta1.Identity) (string, error)
	// ClusterInfo is the cluster.yaml this cluster publishes: public facts
	// only (cluster ID, public key and fingerprint, API server, CA bundle).
	ClusterInfo() (*layout.ClusterInfo, error)
}

// ErrNoToken means a backend holds no token for a peer.
var ErrNoToken = errors.New("no token for this peer")

// TokenStore is implemented by backends that keep the tokens admins hand
// each other out of band for the token acceptance policy. Tokens never enter
// Git: only a proof bound to the nonce does.
type TokenStore interface {
	// Token returns the token shared with peer, or an error wrapping ErrNoToken.
	Token(ctx context.Context, peer string) ([]byte, error)
	// SetToken stores the token shared with peer, replacing any other.
	SetToken(ctx context.Context, peer string, token []byte) error
}

// NewToken returns a random token: 32 bytes in hex (the shape of Liqo
// v0.2's auth-token, shorter), for an admin to hand to a peer's admin.
func NewToken() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw), nil
}

// KubeconfigRemover is implemented by backends that can delete what
// StoreKubeconfig wrote, when a peering is revoked.
type KubeconfigRemover interface {
	// RemoveKubeconfig deletes the kubeconfig obtained from providerID; a
	// missing one is not an error.
	RemoveKubeconfig(ctx context.Context, providerID string) error
}

// PinKeeper is implemented by every backend: it keeps the cluster's trust
// anchors (package pins) beside its private material, out of Git.
type PinKeeper interface {
	// LoadPins returns the stored pins, or an empty store for this cluster
	// when none were saved yet. A store that exists but does not parse is an
	// error, never silently replaced: it would re-trust every peer.
	LoadPins(ctx context.Context) (*pins.Store, error)
	// SavePins replaces the stored pins atomically.
	SavePins(ctx context.Context, s *pins.Store) error
}

// Stuck is an object of a peering that is being deleted and has not gone for
// longer than a backend's bound: typically a tenant namespace held by Liqo's
// finalizers while a Liqo controller is down.
type Stuck struct {
	// Object names it as kubectl does, e.g. "namespace/liqo-tenant-alpha".
	Object string `json:"object"`
	// Since is when its deletion started.
	Since time.Time `json:"since,omitzero"`
	// Message says what holds it and what to do.
	Message string `json:"message"`
}

// StuckReporter is implemented by backends that can see the cluster: it
// lists what a revocation left being deleted for too long at now, so that a
// prune held by a finalizer is named instead of hanging unseen.
type StuckReporter interface {
	Stuck(ctx context.Context, now time.Time) ([]Stuck, error)
}
