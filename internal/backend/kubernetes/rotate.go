package kubernetes

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// Secrets and annotations of a staged rollover (backend.KeyRoller), in
// the Liqo namespace. Liqo reads neither Secret.
const (
	// PreviousKeysSecretName keeps the cluster key PromoteNextKey replaced,
	// with the data keys of Liqo's authentication-keys (privateKey PEM
	// PKCS#8, publicKey PEM PKIX), as the file backend keeps
	// cluster.key.previous: it signs the rotation statement, again if its
	// first publication was lost.
	PreviousKeysSecretName = "gitpeer-previous-authentication-keys"
	// NextKeysSecretName holds the key gitpeer rotate-key staged, in the
	// same data keys, with annotations APIServerAnnotation and
	// AnnouncedAtAnnotation; PromoteNextKey deletes it.
	NextKeysSecretName = "gitpeer-next-authentication-keys"
	// APIServerAnnotation on NextKeysSecretName is the API server URL
	// published at promotion; absent: unchanged.
	APIServerAnnotation = "gitpeer.io/api-server"
	// AnnouncedAtAnnotation on NextKeysSecretName is when a pass first
	// announced the key (RFC 3339, UTC); absent: not yet.
	AnnouncedAtAnnotation = "gitpeer.io/announced-at"

	managedByLabel = "app.kubernetes.io/managed-by"
)

var _ backend.KeyRoller = (*Backend)(nil)

// staged is NextKeysSecretName as read.
type staged struct {
	secret    *corev1.Secret
	key       crypto.Signer
	apiServer string
	announced time.Time
}

func (s *staged) nextKey() *backend.NextKey {
	return &backend.NextKey{Signer: s.key, APIServer: s.apiServer, Announced: s.announced}
}

// readNext reads NextKeysSecretName, or nil when it does not exist.
func (b *Backend) readNext(ctx context.Context) (*staged, error) {
	where := b.ref("secret", NextKeysSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, NextKeysSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", where, err)
	}
	return parseNext(where, s)
}

// nextRecovery is what a broken staged key tells the admin to do: it was
// never in force, so staging another costs nothing.
const nextRecovery = "delete it and stage a new key with gitpeer rotate-key"

// parseNext checks NextKeysSecretName s, named where in errors.
func parseNext(where string, s *corev1.Secret) (*staged, error) {
	key, _, err := parseKeyPair(where, s)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, nextRecovery)
	}
	st := &staged{secret: s, key: key, apiServer: s.Annotations[APIServerAnnotation]}
	if st.apiServer != "" {
		if err := layout.CheckAPIServer(st.apiServer); err != nil {
			return nil, fmt.Errorf("%s: annotation %s: %v (%s)", where, APIServerAnnotation, err, nextRecovery)
		}
	}
	if at := s.Annotations[AnnouncedAtAnnotation]; at != "" {
		if st.announced, err = time.Parse(time.RFC3339, at); err != nil {
			return nil, fmt.Errorf("%s: annotation %s: %q is not an RFC 3339 time (%s)", where, AnnouncedAtAnnotation, at, nextRecovery)
		}
	}
	return st, nil
}

// currentKeys reads authentication-keys as it is now (not the key the
// Backend loaded: another replica may have promoted since), and makes its
// key the one the backend signs with.
func (b *Backend) currentKeys(ctx context.Context) (*corev1.Secret, error) {
	cur, err := b.core.Secrets(b.ns()).Get(ctx, KeysSecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", b.ref("secret", KeysSecretName), err)
	}
	if err := b.parseKeys(cur); err != nil {
		return nil, err
	}
	return cur, nil
}

// finishPromotion completes a promotion once authentication-keys holds
// the staged key st: its API server for ClusterInfo, then
// NextKeysSecretName deleted (only the object read, by UID).
func (b *Backend) finishPromotion(ctx context.Context, st *staged) error {
	if st.apiServer != "" {
		b.apiServer = st.apiServer
	}
	var opts metav1.DeleteOptions
	if uid := st.secret.UID; uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := b.core.Secrets(b.ns()).Delete(ctx, NextKeysSecretName, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s (the new key is in force; PromoteNextKey or Next run again deletes it): %w", b.ref("secret", NextKeysSecretName), err)
	}
	return nil
}

// StageKey implements backend.KeyRoller: a new Ed25519 key, in the format
// Liqo's InitClusterKeys writes, into Secret NextKeysSecretName (label
// app.kubernetes.io/managed-by: gitpeer), with apiServer as
// APIServerAnnotation. A key staged already (by this call or a concurrent
// one) is returned, unless apiServer is not exactly the staged one (""
// staged or asked meaning unchanged): an error naming both. A promotion
// cut short is completed first (Next).
func (b *Backend) StageKey(ctx context.Context, apiServer string) (*backend.NextKey, error) {
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return nil, fmt.Errorf("api server: %w", err)
		}
	}
	next, err := b.Next(ctx)
	if err != nil {
		return nil, err
	}
	if next == nil {
		key, data, err := newKeyPair()
		if err != nil {
			return nil, err
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: NextKeysSecretName, Namespace: b.ns(), Labels: map[string]string{managedByLabel: "gitpeer"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		if apiServer != "" {
			s.Annotations = map[string]string{APIServerAnnotation: apiServer}
		}
		_, err = b.core.Secrets(b.ns()).Create(ctx, s, metav1.CreateOptions{})
		switch {
		case err == nil:
			return &backend.NextKey{Signer: key, APIServer: apiServer}, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("create %s: %w", b.ref("secret", NextKeysSecretName), err)
		}
		// Staged meanwhile by another rotate-key: theirs stands.
		st, err := b.readNext(ctx)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, fmt.Errorf("create %s: it existed, then was gone: run rotate-key again", b.ref("secret", NextKeysSecretName))
		}
		next = st.nextKey()
	}
	if err := next.Restage(apiServer); err != nil {
		return nil, fmt.Errorf("%s: %v, or delete the Secret to stage another", b.ref("secret", NextKeysSecretName), err)
	}
	return next, nil
}

// Next implements backend.KeyRoller: the key in NextKeysSecretName. When
// authentication-keys already holds it (a promotion that stopped before
// deleting the Secret), the promotion is completed (the backend signs with
// it and publishes its API server) and Next returns nil.
func (b *Backend) Next(ctx context.Context) (*backend.NextKey, error) {
	st, err := b.readNext(ctx)
	if err != nil || st == nil {
		return nil, err
	}
	if _, err := b.currentKeys(ctx); err != nil {
		return nil, err
	}
	done, err := handshake.SameKey(b.key.Public(), st.key.Public())
	if err != nil {
		return nil, err
	}
	if done {
		return nil, b.finishPromotion(ctx, st)
	}
	return st.nextKey(), nil
}

// MarkAnnounced implements backend.KeyRoller: at (RFC 3339, UTC) as
// AnnouncedAtAnnotation of NextKeysSecretName unless it holds a time
// already, in an update conditional on the Secret read (a conflict is an
// error: the next pass marks it). Without a staged key it is an error
// wrapping backend.ErrNoNextKey.
func (b *Backend) MarkAnnounced(ctx context.Context, at time.Time) error {
	if at.IsZero() {
		return errors.New("mark announced: zero time")
	}
	st, err := b.readNext(ctx)
	if err != nil {
		return err
	}
	where := b.ref("secret", NextKeysSecretName)
	if st == nil {
		return fmt.Errorf("%s: %w", where, backend.ErrNoNextKey)
	}
	if !st.announced.IsZero() {
		return nil
	}
	s := st.secret.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[AnnouncedAtAnnotation] = at.UTC().Format(time.RFC3339Nano)
	if _, err := b.core.Secrets(b.ns()).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", where, err)
	}
	return nil
}

// PromoteNextKey implements backend.KeyRoller: the staged key replaces
// Liqo's cluster keys (authentication-keys), and is returned the key it
// replaced. The writes are ordered so that authentication-keys always
// holds a usable key pair, the old one or the new one, whatever the point
// of a crash, and PromoteNextKey (or Next) run again completes:
//  1. NextKeysSecretName is read and checked, then authentication-keys
//     (its resourceVersion kept);
//  2. the old key is written to PreviousKeysSecretName (created, or
//     updated);
//  3. authentication-keys is updated in one request carrying both new
//     values, conditional on the resourceVersion read in 1: a concurrent
//     change (another promotion, the Secret recreated) is a conflict
//     error, never overwritten;
//  4. NextKeysSecretName is deleted.
//
// When authentication-keys already holds the staged key (stopped after 3),
// only 4 is done, and the key returned is PreviousKeysSecretName's. From
// then on the Backend signs with the new key and ClusterInfo publishes the
// staged API server, if any; another Backend of the cluster (a standby
// replica) keeps the key it loaded until it is opened again. Without a
// staged key it is an error wrapping backend.ErrNoNextKey.
func (b *Backend) PromoteNextKey(ctx context.Context) (crypto.Signer, error) {
	st, err := b.readNext(ctx)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%s: promote: %w", b.ref("secret", NextKeysSecretName), backend.ErrNoNextKey)
	}
	where := b.ref("secret", KeysSecretName)
	cur, err := b.currentKeys(ctx)
	if err != nil {
		return nil, err
	}
	old := b.key
	done, err := handshake.SameKey(old.Public(), st.key.Public())
	if err != nil {
		return nil, err
	}
	if done {
		prev, err := b.PreviousKey(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s already holds the staged key, and the key it replaced is unknown: %w", where, err)
		}
		return prev, b.finishPromotion(ctx, st)
	}
	if err := b.keepPrevious(ctx, cur.Data[PrivateKeyKey], cur.Data[PublicKeyKey]); err != nil {
		return nil, err
	}
	next := cur.DeepCopy()
	next.Data[PrivateKeyKey], next.Data[PublicKeyKey] = st.secret.Data[PrivateKeyKey], st.secret.Data[PublicKeyKey]
	updated, err := b.core.Secrets(b.ns()).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s (the old key stays in force; the next promotion tries again): %w", where, err)
	}
	if err := b.parseKeys(updated); err != nil {
		return nil, err
	}
	if err := b.finishPromotion(ctx, st); err != nil {
		return nil, err
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
			ObjectMeta: metav1.ObjectMeta{Name: PreviousKeysSecretName, Namespace: b.ns(), Labels: map[string]string{managedByLabel: "gitpeer"}},
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

// PreviousKey implements backend.KeyRoller: the cluster key the last
// PromoteNextKey replaced, from PreviousKeysSecretName (its privateKey), or
// an error wrapping backend.ErrNoPreviousKey when there is none.
func (b *Backend) PreviousKey(ctx context.Context) (crypto.Signer, error) {
	where := b.ref("secret", PreviousKeysSecretName)
	s, err := b.core.Secrets(b.ns()).Get(ctx, PreviousKeysSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", where, backend.ErrNoPreviousKey)
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

// ReloadKey implements backend.KeyReloader: it reads authentication-keys
// again (one GET) and reports whether the key in force changed since this
// Backend loaded it, as after another replica's promotion.
func (b *Backend) ReloadKey(ctx context.Context) (bool, error) {
	before := b.key
	if _, err := b.currentKeys(ctx); err != nil {
		return false, err
	}
	same, err := handshake.SameKey(before.Public(), b.key.Public())
	return !same, err
}

// newKeyPair is a new Ed25519 key and the data of a Secret holding it in
// the format of Liqo's InitClusterKeys: privateKey (PEM PKCS#8) and
// publicKey (PEM PKIX).
func newKeyPair() (crypto.Signer, map[string][]byte, error) {
	key, err := handshake.GenerateKey()
	if err != nil {
		return nil, nil, err
	}
	priv, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	return key, map[string][]byte{PrivateKeyKey: priv, PublicKeyKey: pub}, nil
}
