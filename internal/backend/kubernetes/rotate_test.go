package kubernetes

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	liqoauth "github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

func fingerprint(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// liqoReads is the key pair Liqo's own controllers read from s
// (authentication.GetClusterKeys, as the identity controller, the nonce
// signer and the local ResourceSlice controller call it).
func liqoReads(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	cl := crfake.NewClientBuilder().WithObjects(s.DeepCopy()).Build()
	priv, pubDER, err := liqoauth.GetClusterKeys(context.Background(), cl, s.Namespace)
	if err != nil {
		t.Fatalf("Liqo cannot read %s: %v", s.Name, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		t.Fatalf("Liqo reads a %T", priv)
	}
	pub, err := x509.ParsePKIXPublicKey(pubDER)
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, pub) != fingerprint(t, signer.Public()) {
		t.Fatal("Liqo reads a publicKey that is not its privateKey's")
	}
	return fingerprint(t, pub)
}

// stage stages a key on b with apiServer, failing the test on error.
func stage(t *testing.T, b *Backend, apiServer string) *backend.NextKey {
	t.Helper()
	next, err := b.StageKey(context.Background(), apiServer)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func reopen(t *testing.T, cs *fake.Clientset, ca *handshake.CA) *Backend {
	t.Helper()
	b, err := NewWithClients(context.Background(), testOptions(ca), cs.CoreV1(), cs.CertificatesV1())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return b
}

func secretGone(t *testing.T, cs *fake.Clientset, name string) bool {
	t.Helper()
	_, err := cs.CoreV1().Secrets("liqo").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// TestStageKeyIsIdempotentAndChangesNothingInForce: rotate-key stages a
// key in Secret gitpeer-next-authentication-keys (Liqo's data keys and
// formats, gitpeer's label, the API server as an annotation) that Next
// returns, to this backend and to one opened later; running it again
// returns the same key; asking for another API server than the staged one
// is an error naming both. Until promotion authentication-keys, the key
// the backend signs with and what it publishes stay as they were.
func TestStageKeyIsIdempotentAndChangesNothingInForce(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	before := getSecret(t, cs, "liqo", KeysSecretName)
	oldFP := liqoReads(t, before)

	next := stage(t, b, "https://alpha.new.example:6443")
	if next.APIServer != "https://alpha.new.example:6443" || !next.Announced.IsZero() || fingerprint(t, next.Signer.Public()) == oldFP {
		t.Fatalf("staged %+v", next)
	}
	s := getSecret(t, cs, "liqo", NextKeysSecretName)
	if s.Labels["app.kubernetes.io/managed-by"] != "gitpeer" || s.Annotations[APIServerAnnotation] != "https://alpha.new.example:6443" ||
		len(s.Data) != 2 || !bytes.HasPrefix(s.Data[PrivateKeyKey], []byte("-----BEGIN "+"PRIVATE KEY-----\n")) ||
		!bytes.HasPrefix(s.Data[PublicKeyKey], []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Fatalf("the staged Secret is not in Liqo's shape with gitpeer's label and annotation: %+v", s)
	}
	if now := getSecret(t, cs, "liqo", KeysSecretName); !reflect.DeepEqual(now.Data, before.Data) {
		t.Fatal("staging changed authentication-keys")
	}
	if fingerprint(t, b.Signer().Public()) != oldFP {
		t.Fatal("staging changed the key the backend signs with")
	}
	if info, _ := b.ClusterInfo(); info.Fingerprint != oldFP || info.APIServer != "https://alpha.example:6443" {
		t.Fatalf("staging changed what the cluster publishes: %s %s", info.Fingerprint, info.APIServer)
	}
	for _, bb := range []*Backend{b, reopen(t, cs, ca)} {
		got, err := bb.Next(ctx)
		if err != nil || got == nil {
			t.Fatalf("Next: %+v, %v", got, err)
		}
		if fingerprint(t, got.Signer.Public()) != fingerprint(t, next.Signer.Public()) || got.APIServer != next.APIServer || !got.Announced.IsZero() {
			t.Fatalf("Next returned %+v, want the staged key", got)
		}
		if again := stage(t, bb, "https://alpha.new.example:6443"); fingerprint(t, again.Signer.Public()) != fingerprint(t, next.Signer.Public()) {
			t.Fatal("StageKey again staged another key")
		}
	}
	for asked, want := range map[string]string{
		"":                             `secret liqo/gitpeer-next-authentication-keys: a key is staged already with API server "https://alpha.new.example:6443", not unchanged`,
		"https://alpha.other.dev:6443": `a key is staged already with API server "https://alpha.new.example:6443", not "https://alpha.other.dev:6443"`,
		"http://alpha.new.example":     `api server: "http://alpha.new.example" is not an https URL`,
	} {
		if _, err := b.StageKey(ctx, asked); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("StageKey(%q): %v, want %q", asked, err, want)
		}
	}
	if !reflect.DeepEqual(getSecret(t, cs, "liqo", NextKeysSecretName), s) {
		t.Fatal("a refused or repeated StageKey changed the staged Secret")
	}
}

// TestStageKeyRacingAnotherKeepsTheirs: a rotate-key that finds the Secret
// created by another since it looked returns that one's key.
func TestStageKeyRacingAnotherKeepsTheirs(t *testing.T) {
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	theirs, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := handshake.MarshalPrivateKey(theirs)
	pub, _ := handshake.MarshalPublicKey(theirs.Public())
	raced := false
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).Name == NextKeysSecretName && !raced {
			raced = true
			// The other rotate-key's create lands first (through the
			// tracker: the clientset is locked while reactors run).
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: NextKeysSecretName, Namespace: "liqo"},
				Data: map[string][]byte{PrivateKeyKey: priv, PublicKeyKey: pub}}
			if err := cs.Tracker().Add(s); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	ours := stage(t, b, "")
	if !raced || fingerprint(t, ours.Signer.Public()) != fingerprint(t, theirs.Public()) {
		t.Fatal("StageKey did not return the key staged concurrently")
	}
}

// TestNothingStaged: a fresh cluster has no next key (Next is nil) and no
// previous key; announcing or promoting is an error saying nothing is
// staged, and writes nothing.
func TestNothingStaged(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	cs.ClearActions()
	if next, err := b.Next(ctx); next != nil || err != nil {
		t.Fatalf("Next: %+v, %v; want nil, nil", next, err)
	}
	if _, err := b.PromoteNextKey(ctx); !errors.Is(err, backend.ErrNoNextKey) {
		t.Errorf("PromoteNextKey: %v, want ErrNoNextKey", err)
	}
	if err := b.MarkAnnounced(ctx, testNow); !errors.Is(err, backend.ErrNoNextKey) {
		t.Errorf("MarkAnnounced: %v, want ErrNoNextKey", err)
	}
	_, err := b.PreviousKey(ctx)
	if !errors.Is(err, backend.ErrNoPreviousKey) || !strings.Contains(err.Error(), "secret liqo/gitpeer-previous-authentication-keys") {
		t.Errorf("PreviousKey: %v, want ErrNoPreviousKey naming the Secret", err)
	}
	if w := writes(cs, "secrets"); len(w) != 0 {
		t.Errorf("writes with nothing staged: %v", w)
	}
}

// TestMarkAnnouncedKeepsTheFirstTime: the announcement time is recorded
// once, in UTC; a later pass does not move it.
func TestMarkAnnouncedKeepsTheFirstTime(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	stage(t, b, "")
	first := time.Date(2026, 11, 22, 13, 0, 0, 500, time.FixedZone("CET", 3600))
	if err := b.MarkAnnounced(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := b.MarkAnnounced(ctx, first.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := getSecret(t, cs, "liqo", NextKeysSecretName).Annotations[AnnouncedAtAnnotation]; got != "2026-11-22T12:00:00.0000005Z" {
		t.Errorf("annotation %s: %q", AnnouncedAtAnnotation, got)
	}
	for _, bb := range []*Backend{b, reopen(t, cs, ca)} {
		next, err := bb.Next(ctx)
		if err != nil || next == nil || !next.Announced.Equal(first) {
			t.Fatalf("Next: %+v, %v; want announced at %s", next, err, first)
		}
	}
	if err := b.MarkAnnounced(ctx, time.Time{}); err == nil {
		t.Error("MarkAnnounced accepted the zero time")
	}
}

// keyPair is the data of a keys Secret.
type keyPair struct{ priv, pub []byte }

func pairOf(s *corev1.Secret) keyPair { return keyPair{s.Data[PrivateKeyKey], s.Data[PublicKeyKey]} }

// checkPromoted checks the cluster of cs (and b) after a promotion from old
// to next with API server apiServer: authentication-keys holds next byte
// for byte in Liqo's shape (Liqo's reader reads it), the previous Secret
// old, the staged Secret is gone, b signs with and publishes the new key
// and apiServer, a reopened backend signs with the new key.
func checkPromoted(t *testing.T, cs *fake.Clientset, ca *handshake.CA, b *Backend, old, next keyPair, apiServer string) {
	t.Helper()
	ctx := context.Background()
	keys := getSecret(t, cs, "liqo", KeysSecretName)
	if !bytes.Equal(keys.Data[PrivateKeyKey], next.priv) || !bytes.Equal(keys.Data[PublicKeyKey], next.pub) {
		t.Fatal("authentication-keys does not hold the staged key byte for byte")
	}
	if len(keys.Data) != 2 || len(keys.Labels) != 0 || len(keys.Annotations) != 0 {
		t.Fatalf("authentication-keys is not in Liqo's shape after the promotion: %+v", keys)
	}
	newFP := liqoReads(t, keys)
	prev := getSecret(t, cs, "liqo", PreviousKeysSecretName)
	if !bytes.Equal(prev.Data[PrivateKeyKey], old.priv) || !bytes.Equal(prev.Data[PublicKeyKey], old.pub) {
		t.Fatal("the previous Secret does not hold the old key byte for byte")
	}
	if !secretGone(t, cs, NextKeysSecretName) {
		t.Error("the staged Secret is still there")
	}
	oldKey, err := handshake.ParsePrivateKey(old.priv)
	if err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(t, b.Signer().Public()); got != newFP {
		t.Fatalf("the backend signs with %s, want the new %s", got, newFP)
	}
	info, err := b.ClusterInfo()
	if err != nil || info.Fingerprint != newFP || info.APIServer != apiServer {
		t.Fatalf("cluster info after the promotion: %+v, %v; want %s", info, err, apiServer)
	}
	for name, bb := range map[string]*Backend{"the promoting backend": b, "a reopened backend": reopen(t, cs, ca)} {
		if fingerprint(t, bb.Signer().Public()) != newFP {
			t.Errorf("%s does not sign with the new key", name)
		}
		if next, err := bb.Next(ctx); next != nil || err != nil {
			t.Errorf("%s: Next after the promotion: %+v, %v", name, next, err)
		}
		if p, err := bb.PreviousKey(ctx); err != nil || fingerprint(t, p.Public()) != fingerprint(t, oldKey.Public()) {
			t.Errorf("%s: PreviousKey: %v, or not the replaced key", name, err)
		}
	}
}

// TestPromoteNextKeyReplacesLiqosKeysAndKeepsThePrevious: promotion writes
// the staged key into Liqo's authentication-keys in the format
// InitClusterKeys writes (Liqo's own reader reads it), keeps whatever else
// the Secret holds, keeps the old key byte for byte in
// gitpeer-previous-authentication-keys, deletes the staged Secret and
// returns the old key, which signs the rotation statement. The backend
// signs with the new key and publishes the staged API server. A second
// rollover replaces the previous key and, staged without an API server,
// keeps the first one's.
func TestPromoteNextKeyReplacesLiqosKeysAndKeepsThePrevious(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(ca))
	before := pairOf(getSecret(t, cs, "liqo", KeysSecretName))
	oldFP := fingerprint(t, b.Signer().Public())
	stage(t, b, "https://alpha.new.example:6443")
	next := pairOf(getSecret(t, cs, "liqo", NextKeysSecretName))

	old, err := b.PromoteNextKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, old.Public()) != oldFP {
		t.Fatal("PromoteNextKey did not return the key it replaced")
	}
	checkPromoted(t, cs, ca, b, before, next, "https://alpha.new.example:6443")
	if _, err := b.PromoteNextKey(ctx); !errors.Is(err, backend.ErrNoNextKey) {
		t.Fatalf("PromoteNextKey twice: %v, want ErrNoNextKey", err)
	}

	stage(t, b, "")
	third := pairOf(getSecret(t, cs, "liqo", NextKeysSecretName))
	if old, err = b.PromoteNextKey(ctx); err != nil || fingerprint(t, old.Public()) == oldFP {
		t.Fatalf("second promotion: %v, or it returned the first old key", err)
	}
	checkPromoted(t, cs, ca, b, next, third, "https://alpha.new.example:6443")
}

// TestAPromotionCutShortIsCompleted stops a promotion at each of its writes,
// as a crash leaves it (the writes made here directly) or as a failed
// request does (the API server refuses it, a concurrent writer changed
// authentication-keys: a conflict): authentication-keys holds one whole key
// pair, old or new, which Liqo reads and a reopened backend signs with, and
// PromoteNextKey (returning the replaced key) or Next (returning nil once
// the staged key is in force) run again completes the promotion to the
// same end as one run through.
func TestAPromotionCutShortIsCompleted(t *testing.T) {
	const newAPI = "https://alpha.new.example:6443"
	type cluster struct {
		cs        *fake.Clientset
		old, next keyPair
	}
	put := func(t *testing.T, cs *fake.Clientset, name string, p keyPair) {
		t.Helper()
		s, err := cs.CoreV1().Secrets("liqo").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo"}}
			s.Data = map[string][]byte{PrivateKeyKey: p.priv, PublicKeyKey: p.pub}
			_, err = cs.CoreV1().Secrets("liqo").Create(context.Background(), s, metav1.CreateOptions{})
		} else if err == nil {
			s.Data = map[string][]byte{PrivateKeyKey: p.priv, PublicKeyKey: p.pub}
			_, err = cs.CoreV1().Secrets("liqo").Update(context.Background(), s, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fails := func(cs *fake.Clientset, verb, secret string, err error) *bool {
		fail := true
		cs.PrependReactor(verb, "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			var name string
			switch a := a.(type) {
			case k8stesting.CreateAction:
				name = a.GetObject().(*corev1.Secret).Name
			case k8stesting.UpdateAction:
				name = a.GetObject().(*corev1.Secret).Name
			case k8stesting.DeleteAction:
				name = a.GetName()
			}
			if fail && name == secret {
				return true, nil, err
			}
			return false, nil, nil
		})
		return &fail
	}
	timeout := errors.New("etcdserver: request timed out")
	for _, tc := range []struct {
		name string
		// cut stops the promotion; with a failing request it returns the
		// switch that lets it pass again, after a failed PromoteNextKey.
		cut     func(t *testing.T, c cluster, b *Backend) *bool
		inForce string // "old" or "new": authentication-keys after the cut
	}{
		{"crash before any write", func(*testing.T, cluster, *Backend) *bool { return nil }, "old"},
		{"crash after keeping the previous key", func(t *testing.T, c cluster, _ *Backend) *bool {
			put(t, c.cs, PreviousKeysSecretName, c.old)
			return nil
		}, "old"},
		{"crash after replacing authentication-keys", func(t *testing.T, c cluster, _ *Backend) *bool {
			put(t, c.cs, PreviousKeysSecretName, c.old)
			put(t, c.cs, KeysSecretName, c.next)
			return nil
		}, "new"},
		{"keeping the previous key fails", func(_ *testing.T, c cluster, _ *Backend) *bool {
			return fails(c.cs, "create", PreviousKeysSecretName, timeout)
		}, "old"},
		{"replacing authentication-keys fails", func(_ *testing.T, c cluster, _ *Backend) *bool {
			return fails(c.cs, "update", KeysSecretName, timeout)
		}, "old"},
		{"authentication-keys changed meanwhile", func(_ *testing.T, c cluster, _ *Backend) *bool {
			return fails(c.cs, "update", KeysSecretName, apierrors.NewConflict(corev1.Resource("secrets"), KeysSecretName, errors.New("the object has been modified")))
		}, "old"},
		{"deleting the staged key fails", func(_ *testing.T, c cluster, _ *Backend) *bool {
			return fails(c.cs, "delete", NextKeysSecretName, timeout)
		}, "new"},
	} {
		for _, resume := range []string{"PromoteNextKey", "Next"} {
			t.Run(tc.name+", then "+resume, func(t *testing.T) {
				ctx := context.Background()
				ca := testCA(t)
				cs := newClientset()
				b, _ := initBackend(t, cs, testOptions(ca))
				stage(t, b, newAPI)
				c := cluster{cs, pairOf(getSecret(t, cs, "liqo", KeysSecretName)), pairOf(getSecret(t, cs, "liqo", NextKeysSecretName))}
				want := map[string]keyPair{"old": c.old, "new": c.next}[tc.inForce]
				if fail := tc.cut(t, c, b); fail != nil {
					if _, err := b.PromoteNextKey(ctx); err == nil {
						t.Fatal("PromoteNextKey succeeded although a write failed")
					}
					*fail = false
				} else {
					b = reopen(t, cs, ca) // the process died
				}
				keys := getSecret(t, cs, "liqo", KeysSecretName)
				if !bytes.Equal(keys.Data[PrivateKeyKey], want.priv) || !bytes.Equal(keys.Data[PublicKeyKey], want.pub) {
					t.Fatalf("after the cut authentication-keys does not hold the %s key pair byte for byte", tc.inForce)
				}
				inForce := liqoReads(t, keys)
				if fingerprint(t, b.Signer().Public()) != inForce || fingerprint(t, reopen(t, cs, ca).Signer().Public()) != inForce {
					t.Fatal("the backend signs with another key than the one in force")
				}

				switch resume {
				case "PromoteNextKey":
					old, err := b.PromoteNextKey(ctx)
					if err != nil {
						t.Fatal(err)
					}
					oldKey, _ := handshake.ParsePrivateKey(c.old.priv)
					if fingerprint(t, old.Public()) != fingerprint(t, oldKey.Public()) {
						t.Fatal("PromoteNextKey run again did not return the replaced key")
					}
				case "Next":
					next, err := b.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if tc.inForce == "old" {
						// Not promoted: still staged, as it was.
						if next == nil || fingerprint(t, next.Signer.Public()) == inForce {
							t.Fatalf("Next: %+v, want the staged key", next)
						}
						if _, err := b.PromoteNextKey(ctx); err != nil {
							t.Fatal(err)
						}
					} else if next != nil {
						t.Fatalf("Next returned %+v for a key in force, want nil", next)
					}
				}
				checkPromoted(t, cs, ca, b, c.old, c.next, newAPI)
			})
		}
	}
}

// TestABrokenStagedKeyIsAnErrorNamingTheSecret: a staged Secret whose keys
// do not parse or do not match, or whose annotations are not what gitpeer
// writes, is an error naming the Secret, the key or annotation, and what to
// do; nothing is promoted, and the key in force and a reopened backend are
// unaffected.
func TestABrokenStagedKeyIsAnErrorNamingTheSecret(t *testing.T) {
	other, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _ := handshake.MarshalPublicKey(other.Public())
	for _, tc := range []struct {
		name   string
		damage func(s *corev1.Secret)
		want   string
	}{
		{"garbage private key", func(s *corev1.Secret) { s.Data[PrivateKeyKey] = []byte("not a key") }, "secret liqo/gitpeer-next-authentication-keys: key privateKey: "},
		{"no public key", func(s *corev1.Secret) { delete(s.Data, PublicKeyKey) }, "secret liqo/gitpeer-next-authentication-keys: key publicKey is missing"},
		{"mismatched halves", func(s *corev1.Secret) { s.Data[PublicKeyKey] = otherPub }, "secret liqo/gitpeer-next-authentication-keys: key publicKey is not the public key of key privateKey"},
		{"api server not https", func(s *corev1.Secret) { s.Annotations = map[string]string{APIServerAnnotation: "http://a.example"} },
			`secret liqo/gitpeer-next-authentication-keys: annotation gitpeer.io/api-server: "http://a.example" is not an https URL`},
		{"announced-at not a time", func(s *corev1.Secret) { s.Annotations = map[string]string{AnnouncedAtAnnotation: "yesterday"} },
			`secret liqo/gitpeer-next-authentication-keys: annotation gitpeer.io/announced-at: "yesterday" is not an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ca := testCA(t)
			cs := newClientset()
			b, _ := initBackend(t, cs, testOptions(ca))
			before := pairOf(getSecret(t, cs, "liqo", KeysSecretName))
			stage(t, b, "")
			s := getSecret(t, cs, "liqo", NextKeysSecretName)
			tc.damage(s)
			if _, err := cs.CoreV1().Secrets("liqo").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			for name, call := range map[string]func() error{
				"Next":           func() error { _, err := b.Next(ctx); return err },
				"StageKey":       func() error { _, err := b.StageKey(ctx, ""); return err },
				"MarkAnnounced":  func() error { return b.MarkAnnounced(ctx, testNow) },
				"PromoteNextKey": func() error { _, err := b.PromoteNextKey(ctx); return err },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "delete it and stage a new key with gitpeer rotate-key") {
					t.Errorf("%s: %v, want %q and what to do", name, err, tc.want)
				}
			}
			if !reflect.DeepEqual(pairOf(getSecret(t, cs, "liqo", KeysSecretName)), before) || !secretGone(t, cs, PreviousKeysSecretName) {
				t.Fatal("a broken staged key was promoted")
			}
			oldKey, _ := handshake.ParsePrivateKey(before.priv)
			if fingerprint(t, b.Signer().Public()) != fingerprint(t, oldKey.Public()) || fingerprint(t, reopen(t, cs, ca).Signer().Public()) != fingerprint(t, oldKey.Public()) {
				t.Fatal("a broken staged key changed the key in force")
			}
		})
	}
}

// TestAStandbyReplicaReloadsAKeyItsLeaderPromoted: two replicas of one
// cluster's reconciler share authentication-keys. The leader promotes a
// staged key; the standby, which loaded the old one, sees the change at
// its next ReloadKey and signs with the new key from then on.
func TestAStandbyReplicaReloadsAKeyItsLeaderPromoted(t *testing.T) {
	ctx := context.Background()
	ca := testCA(t)
	cs := newClientset()
	leader, _ := initBackend(t, cs, testOptions(ca))
	standby := reopen(t, cs, ca)
	if changed, err := standby.ReloadKey(ctx); err != nil || changed {
		t.Fatalf("ReloadKey with nothing promoted: %v, %v", changed, err)
	}
	next := stage(t, leader, "")
	if _, err := leader.PromoteNextKey(ctx); err != nil {
		t.Fatal(err)
	}
	changed, err := standby.ReloadKey(ctx)
	if err != nil || !changed {
		t.Fatalf("ReloadKey after the leader's promotion: %v, %v", changed, err)
	}
	if fingerprint(t, standby.Signer().Public()) != fingerprint(t, next.Signer.Public()) {
		t.Fatal("the standby signs with another key than the one promoted")
	}
}
