package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/test/rbactest"
)

// pinWrites are the verbs of the writes among actions to Secret gitpeer-pins.
func pinWrites(t *testing.T, actions []k8stesting.Action) []string {
	t.Helper()
	var out []string
	for _, a := range actions {
		if a.GetResource().Resource != "secrets" || a.GetNamespace() != DefaultLiqoNamespace {
			continue
		}
		var name string
		switch a.GetVerb() {
		case "create", "update":
			// CreateAction and UpdateAction have the same method set: branch
			// on the verb, not the type.
			name = a.(interface{ GetObject() runtime.Object }).GetObject().(metav1.Object).GetName()
		case "patch", "delete":
			name = a.(interface{ GetName() string }).GetName()
		default:
			continue
		}
		if name == PinsSecretName {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func TestLoadPinsWithoutTheSecretIsAnEmptyStoreForTheCluster(t *testing.T) {
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(testCA(t)))
	cs.ClearActions()
	s, err := b.LoadPins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.APIVersion != pins.APIVersion || s.Kind != pins.Kind || s.ClusterID != "alpha" || len(s.Peers) != 0 {
		t.Fatalf("fresh store %+v", s)
	}
	if w := pinWrites(t, cs.Actions()); len(w) != 0 {
		t.Fatalf("loading wrote: %v", w)
	}
}

func TestSavePinsCreatesThenUpdatesAndSkipsAnUnchangedStore(t *testing.T) {
	ctx := context.Background()
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(testCA(t)))
	s, err := b.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Peer("beta").PublicKey = pinKey(t)
	s.Peer("beta").See("clusters/beta", 3)

	steps := []struct {
		name  string
		edit  func(s *pins.Store)
		wants []string
	}{
		{"creates the Secret on the first save", nil, []string{"create"}},
		{"updates the Secret when the pins change", func(s *pins.Store) { s.Peer("beta").Issue(42, testNow) }, []string{"update"}},
		{"writes nothing when the pins did not change", nil, nil},
		{"writes nothing for a reloaded, unchanged store", func(s *pins.Store) {
			loaded, err := b.LoadPins(ctx)
			if err != nil {
				t.Fatal(err)
			}
			*s = *loaded
		}, nil},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.edit != nil {
				step.edit(s)
			}
			cs.ClearActions()
			if err := b.SavePins(ctx, s); err != nil {
				t.Fatal(err)
			}
			if got := pinWrites(t, cs.Actions()); strings.Join(got, ",") != strings.Join(step.wants, ",") {
				t.Fatalf("writes %v, want %v", got, step.wants)
			}
			want, _ := s.Encode()
			sec := getSecret(t, cs, DefaultLiqoNamespace, PinsSecretName)
			if !bytes.Equal(sec.Data["pins.yaml"], want) {
				t.Fatalf("secret holds\n%s\nwant\n%s", sec.Data["pins.yaml"], want)
			}
			if sec.Type != corev1.SecretTypeOpaque || sec.Labels["app.kubernetes.io/managed-by"] != "gitpeer" {
				t.Errorf("secret type %q labels %v", sec.Type, sec.Labels)
			}
			loaded, err := b.LoadPins(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := loaded.Encode(); !bytes.Equal(got, want) {
				t.Fatalf("loaded\n%s\nwant\n%s", got, want)
			}
		})
	}
	if !s.Lookup("beta").WasIssued(42) {
		t.Fatal("the store lost its issued epoch")
	}
}

func TestCorruptedPinsSecretIsAnErrorNamingIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string][]byte
	}{
		{"refuses a Secret without pins.yaml", map[string][]byte{"other": []byte("x")}},
		{"refuses a Secret without data", nil},
		{"refuses a pins.yaml that does not parse", map[string][]byte{"pins.yaml": []byte("peers: [\n")}},
		{"refuses a pins.yaml of another kind", map[string][]byte{"pins.yaml": []byte("apiVersion: v1\nkind: Secret\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newClientset()
			b, _ := initBackend(t, cs, testOptions(testCA(t)))
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PinsSecretName, Namespace: DefaultLiqoNamespace}, Data: tc.data}
			if err := cs.Tracker().Add(sec); err != nil {
				t.Fatal(err)
			}
			s, err := b.LoadPins(context.Background())
			if err == nil {
				t.Fatalf("a corrupted pin store loaded as %+v", s)
			}
			if !errors.Is(err, pins.ErrMalformed) || !strings.Contains(err.Error(), "secret liqo/gitpeer-pins") {
				t.Fatalf("error %q does not name the Secret or wrap %v", err, pins.ErrMalformed)
			}
		})
	}
	t.Run("passes on an API error", func(t *testing.T) {
		cs := newClientset()
		b, _ := initBackend(t, cs, testOptions(testCA(t)))
		cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, PinsSecretName, errors.New("no"))
		})
		if s, err := b.LoadPins(context.Background()); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "secret liqo/gitpeer-pins") {
			t.Fatalf("LoadPins = %+v, %v; want a forbidden error naming the Secret", s, err)
		}
	})
}

// Two reconcilers (or a reconciler and `gitpeer trust`) both find no Secret
// and both create it: the second must not report its pins saved while the
// Secret holds the first one's.
func TestSavePinsDoesNotLoseAStoreWhenTheSecretAppearsMeanwhile(t *testing.T) {
	ctx := context.Background()
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(testCA(t)))
	theirs := pins.New("alpha")
	theirs.Peer("gamma").PublicKey = pinKey(t)
	theirData, _ := theirs.Encode()
	// The Secret is created between our Get and our Create.
	created := false
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if created || a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName() != PinsSecretName {
			return false, nil, nil
		}
		created = true
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PinsSecretName, Namespace: DefaultLiqoNamespace}, Data: map[string][]byte{"pins.yaml": theirData}}
		if err := cs.Tracker().Add(sec); err != nil {
			t.Fatal(err)
		}
		return false, nil, nil // the tracker now answers AlreadyExists
	})
	ours := pins.New("alpha")
	ours.Peer("beta").PublicKey = pinKey(t)
	oursData, _ := ours.Encode()
	err := b.SavePins(ctx, ours)
	stored := getSecret(t, cs, DefaultLiqoNamespace, PinsSecretName).Data["pins.yaml"]
	switch {
	case err == nil && !bytes.Equal(stored, oursData):
		t.Fatalf("SavePins reported success but the Secret holds\n%s", stored)
	case err != nil && !bytes.Equal(stored, theirData):
		t.Fatalf("SavePins failed (%v) and still changed the Secret to\n%s", err, stored)
	case err != nil && !apierrors.IsConflict(err):
		t.Fatalf("SavePins failed with %v; want a conflict, so the caller reloads", err)
	}
}

// manifests/rbac allows every request the pin store makes.
func TestRBACCoversThePinStore(t *testing.T) {
	m := loadRBAC(t)
	ctx := context.Background()
	cs := newClientset()
	b, _ := initBackend(t, cs, testOptions(testCA(t)))
	cs.ClearActions()
	s, err := b.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Peer("beta").PublicKey = pinKey(t)
	if err := b.SavePins(ctx, s); err != nil { // create
		t.Fatal(err)
	}
	s.Peer("beta").See("clusters/beta", 1)
	if err := b.SavePins(ctx, s); err != nil { // update
		t.Fatal(err)
	}
	if _, err := b.LoadPins(ctx); err != nil {
		t.Fatal(err)
	}
	verbs := map[string]bool{}
	for _, req := range rbactest.Requests(cs.Actions()) {
		if !m.Allows(req) {
			t.Errorf("manifests/rbac forbids %s %s %q in namespace %q", req.Verb, req.Resource, req.Name, req.Namespace)
		}
		if req.Resource == "secrets" {
			verbs[req.Verb] = true
		}
	}
	for _, v := range []string{"get", "create", "update"} {
		if !verbs[v] {
			t.Errorf("the pin store never did %s: the test does not cover it", v)
		}
	}
}

// pinKey is a peer's public key, PEM, as a pin store holds it (the store
// refuses a key that does not parse).
func pinKey(t *testing.T) string {
	t.Helper()
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	data, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
