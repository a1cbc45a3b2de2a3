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
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
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
	// PinKeeper keeps the cluster's trust anchors beside its private
	// material.
	PinKeeper
	// TokenStore keeps the tokens of the token acceptance policy.
	TokenStore
	// KubeconfigRemover deletes what StoreKubeconfig wrote.
	KubeconfigRemover
	// KeyRoller rolls the cluster key in steps (gitpeer rotate-key).
	KeyRoller
}

// ErrNoToken means a backend holds no token for a peer.
var ErrNoToken = errors.New("no token for this peer")

// TokenStore keeps the tokens admins hand each other out of band for the
// token acceptance policy: part of every Backend. Tokens never enter Git:
// only a proof bound to the nonce does.
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

// KubeconfigRemover deletes what StoreKubeconfig wrote, when a peering is
// revoked: part of every Backend.
type KubeconfigRemover interface {
	// RemoveKubeconfig deletes the kubeconfig obtained from providerID; a
	// missing one is not an error.
	RemoveKubeconfig(ctx context.Context, providerID string) error
}

// PinKeeper keeps a cluster's trust anchors (package pins) beside its
// private material, out of Git: part of every Backend.
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

// ErrNoPreviousKey means a backend holds no key that a promotion replaced:
// the cluster key was never rotated with gitpeer rotate-key.
var ErrNoPreviousKey = errors.New("no previous cluster key (the key was never rotated with gitpeer rotate-key)")

// ErrNoNextKey means a backend holds no staged key: nothing to announce or
// promote (gitpeer rotate-key stages one).
var ErrNoNextKey = errors.New("no next cluster key staged (gitpeer rotate-key stages one)")

// NextKey is a cluster key staged by gitpeer rotate-key and not in force
// yet: the reconciler announces it to the cluster's Flux (the verify
// Secret of its applied tree) while it still signs with the current key,
// and promotes it once the cluster trusts it (docs/trust.md, "Rolling the
// cluster key").
type NextKey struct {
	// Signer is the staged Ed25519 key.
	Signer crypto.Signer
	// APIServer is the API server URL the cluster publishes with the new
	// key ("": unchanged).
	APIServer string
	// Announced is when a pass first pushed an applied tree that trusts
	// the key (MarkAnnounced); zero until then.
	Announced time.Time
}

// Restage is StageKey's check when n is staged already: asked again with
// the same apiServer ("" meaning unchanged), nil; with another, an error
// naming both.
func (n *NextKey) Restage(apiServer string) error {
	if n.APIServer == apiServer {
		return nil
	}
	describe := func(s string) string {
		if s == "" {
			return "unchanged"
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Errorf("a key is staged already with API server %s, not %s: let the reconciler promote it first", describe(n.APIServer), describe(apiServer))
}

// KeyRoller rolls the cluster key in steps, as DNSSEC and TUF roll keys
// (part of every Backend): the next key is staged beside the current
// one, announced, then promoted; the key it replaces is kept to sign the
// rotation statement (layout.SignRotation) until the next rotation.
// Every method is safe to repeat after a crash at any point.
type KeyRoller interface {
	// StageKey stages a new key, with apiServer ("" keeps it) published
	// at promotion. A key staged already is returned as it is, unless
	// apiServer names another URL than the one staged: an error.
	StageKey(ctx context.Context, apiServer string) (*NextKey, error)
	// Next returns the staged key, or nil when none is.
	Next(ctx context.Context) (*NextKey, error)
	// MarkAnnounced records at as NextKey.Announced unless it is set.
	MarkAnnounced(ctx context.Context, at time.Time) error
	// PromoteNextKey makes the staged key the cluster key (Signer returns
	// it from then on), keeps the key it replaces as the previous key,
	// applies the staged API server, and returns the replaced key. Without
	// a staged key it is an error.
	PromoteNextKey(ctx context.Context) (crypto.Signer, error)
	// PreviousKey is the key the last promotion replaced, or an error
	// wrapping ErrNoPreviousKey.
	PreviousKey(ctx context.Context) (crypto.Signer, error)
}

// FluxTruster is implemented by backends that can see the cluster's Flux:
// whether the Secret GitRepository gitpeer-<id> (in flux-system) verifies
// commits with holds want, one of its values (an authorized_keys line under
// a key ending in .sshpub, or an armored OpenPGP key under .asc), compared
// without surrounding white space. A cluster with no such GitRepository
// applies with another engine: ok is true, and why says so. When ok is
// false, why says what holds the switch and what to do, for status.
type FluxTruster interface {
	FluxTrusts(ctx context.Context, want []byte) (ok bool, why string, err error)
}

// SourcePinner is implemented by backends that run inside the cluster
// whose tree they seal (the kubernetes backend). A signature proves who made
// a seal, never when, and Flux (spec.verify) and Argo CD (sourceIntegrity)
// check only the signature: a writer who points the applied branch back at
// an older seal gets it applied. So after each seal the reconciler points
// the cluster's GitOps source at the exact commit it signed, which no repo
// writer can change (docs/trust.md, "A cluster applies only its freshest
// seal").
type SourcePinner interface {
	// PinSource points the cluster's GitOps source at commit (hex), the
	// newest seal, on the applied branch's remote already. It returns
	// what it pinned, "GitRepository flux-system/gitpeer-<id>" say, or
	// "" and no error when the cluster has no source gitpeer knows of
	// (another engine, or none yet). A source pinned to commit already
	// is left alone. Errors are the API server's, a Forbidden one naming
	// the permission gitpeer's Role grants for it.
	PinSource(ctx context.Context, commit string) (where string, err error)
}

// KeyReloader is implemented by backends whose cluster key another process
// may replace (the kubernetes backend: the leader of a replicated
// reconciler promotes a staged key while a standby holds the old one).
// ReloadKey reads the key in force again and reports whether it changed.
type KeyReloader interface {
	ReloadKey(ctx context.Context) (changed bool, err error)
}
