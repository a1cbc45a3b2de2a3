package kubernetes

import (
	"context"
	"crypto"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/layout"
)

// PreviousKeysSecretName is gitpeer's Secret in the Liqo namespace that
// keeps the cluster key RotateKey replaced, with the data keys of Liqo's
// authentication-keys (privateKey PEM PKCS#8, publicKey PEM PKIX), as the
// file backend keeps cluster.key.previous: the rotation statement can then be
// signed again if its first publication was lost. Liqo does not read it.
const PreviousKeysSecretName = "gitpeer-previous-authentication-keys"

// ErrNoPreviousKey means no key was rotated out on this cluster: the Secret
// PreviousKeysSecretName does not exist.
var ErrNoPreviousKey = errors.New("no previous cluster key (the key was never rotated with gitpeer rotate-key)")

// RotateKey replaces Liqo's cluster keys (Secret authentication-keys) with a
// new Ed25519 key, in the format Liqo's InitClusterKeys writes, and returns
// the key it replaced: the one that signs the rotation statement peers check
// against their pins. apiServer, when not empty, replaces the API server
// ClusterInfo publishes (the kubernetes backend keeps none of its own: give
// the reconciler the same --api-server).
//
// The writes are ordered so that authentication-keys always holds a usable
// key pair, the old one or the new one, whatever the point of a crash:
//  1. authentication-keys is read and checked (privateKey and publicKey
//     agree) and its resourceVersion kept;
//  2. the old key is written to PreviousKeysSecretName (created, or
//     updated);
//  3. authentication-keys is updated in one request carrying both new
//     values, conditional on the resourceVersion read in 1: a concurrent
//     change (another rotate-key, the Secret recreated) is a conflict
//     error, never overwritten.
//
// A crash after 2 leaves the old key in force and in both Secrets; running
// rotate-key again then rotates it. The Backend signs with the new key from
// then on; a running reconciler keeps the key it loaded until it restarts.
func (b *Backend) RotateKey(ctx context.Context, apiServer string) (crypto.Signer, error) {
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return nil, fmt.Errorf("api server: %w", err)
		}
	}
	where := b.ref("secret", KeysSecretName)
	secrets := b.core.Secrets(b.ns())
	cur, err := secrets.Get(ctx, KeysSecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", where, err)
	}
	if err := b.parseKeys(cur); err != nil {
		return nil, err
	}
	old, oldPriv, oldPub := b.key, cur.Data[PrivateKeyKey], cur.Data[PublicKeyKey]
	key, err := handshake.GenerateKey()
	if err != nil {
		return nil, err
	}
	priv, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pub, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	if err := b.keepPrevious(ctx, oldPriv, oldPub); err != nil {
		return nil, err
	}
	next := cur.DeepCopy()
	next.Data[PrivateKeyKey], next.Data[PublicKeyKey] = priv, pub
	updated, err := secrets.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s (the old key stays in force; run rotate-key again): %w", where, err)
	}
	if err := b.parseKeys(updated); err != nil {
		return nil, err
	}
	if apiServer != "" {
		b.apiServer = apiServer
	}
	return old, nil
}

// keepPrevious writes the key pair priv, pub into PreviousKeysSecretName,
// creating the Secret or replacing what it held.
func (b *Backend) keepPrevious(ctx context.Context, priv, pub []byte) error {
	where := b.ref("secret", PreviousKeysSecretName)
	secrets := b.core.Secrets(b.ns())
	s, err := secrets.Get(ctx, PreviousKeysSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: PreviousKeysSecretName, Namespace: b.ns(), Labels: map[string]string{"app.kubernetes.io/managed-by": "gitpeer"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{PrivateKeyKey: priv, PublicKeyKey: pub},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s: %w", where, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get %s: %w", where, err)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[PrivateKeyKey], s.Data[PublicKeyKey] = priv, pub
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", where, err)
	}
	return nil
}

// PreviousKey is the cluster key the last RotateKey replaced, from
// PreviousKeysSecretName (its privateKey). It is an error wrapping
// ErrNoPreviousKey when there is none.
func (b *Backend) PreviousKey(ctx context.Context) (crypto.Signer, error) {
	where := b.ref("secret", PreviousKeysSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, PreviousKeysSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", where, ErrNoPreviousKey)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", where, err)
	}
	key, err := handshake.ParsePrivateKey(s.Data[PrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s: key %s: %w", where, PrivateKeyKey, err)
	}
	return key, nil
}
