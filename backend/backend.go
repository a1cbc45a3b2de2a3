// Package backend defines where one cluster's private material lives and how
// it signs: the cluster key, the CA (or signer) that issues client
// certificates, the secret nonces derive from, and the kubeconfigs the
// cluster obtains. Nothing a Backend holds ever goes into Git.
package backend

import (
	"context"
	"crypto"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
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
}
