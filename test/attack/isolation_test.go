package attack

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/schema"
)

// twoWaySpec: alpha and beta provide for each other, and beta also
// provides for gamma, a bystander whose peering must go on whatever alpha
// or a repo writer does to alpha's files.
const twoWaySpec = `clusters: [{id: "alpha"}, {id: "gamma"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta"},
	{consumer: "beta", provider: "alpha"},
	{consumer: "gamma", provider: "beta"},
]
`

// pinsOf returns what cluster id pinned for its peers (keys, API servers,
// CAs, sequences seen, nonce epochs), as its backend holds it, encoded: the
// bytes compare whole. Its own sequences, and those it published, are left
// out: they grow with every status it signs; so is its newest seal, which
// moves with every tree it applies.
func (w *world) pinsOf(id string) []byte {
	w.t.Helper()
	s, err := w.clusters[id].b.LoadPins(ctx)
	if err != nil {
		w.t.Fatalf("%s's pin store: %v", id, err)
	}
	s.Own, s.Published, s.Seal = nil, nil, ""
	data, err := s.Encode()
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// mustStall fails unless cluster's view of consumer → provider is Stalled
// with reason, its message saying every one of say.
func (w *world) mustStall(cluster, consumer, provider, reason string, say ...string) {
	w.t.Helper()
	ps := w.peering(cluster, consumer, provider)
	if got := stalled(ps); got != reason {
		w.t.Fatalf("%s's view of %s → %s: %s\nwant Stalled %s", cluster, consumer, provider, describe(ps), reason)
	}
	assertContains(w.t, cluster+"'s status of "+consumer+" → "+provider, describe(ps), say...)
}

// TestAPeerClusterInfoAboveItsCapIsRefusedBeforeItIsRead: alpha, holding
// its own key, publishes and signs a cluster.yaml just above
// layout.MaxClusterInfoSize (a CA bundle of the real CA repeated: a file
// that would otherwise parse, and whose CA beta would copy into its pin
// store). beta's pass goes on: both of its peerings with alpha are Stalled
// InvalidClusterInfo naming the cap, gamma's peering with beta stays Ready,
// nothing is signed, and beta's pin store is byte for byte as before.
func TestAPeerClusterInfoAboveItsCapIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	w := settled(t, twoWaySpec)
	before := w.signedAll()
	pinned := w.pinsOf("beta")
	alpha := w.clusters["alpha"].b.Signer()
	w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: a larger CA bundle\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
		ci, err := layout.ParseClusterInfo(alphaCluster, "alpha", a.read(alphaCluster))
		if err != nil {
			t.Fatal(err)
		}
		one := ci.CA
		for len(ci.CA) <= layout.MaxClusterInfoSize {
			ci.CA += one
		}
		data, err := ci.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) <= layout.MaxClusterInfoSize || len(data) > 2*layout.MaxClusterInfoSize {
			t.Fatalf("cluster.yaml of %d bytes, want just above %d", len(data), layout.MaxClusterInfoSize)
		}
		a.write(alphaCluster, data)
		a.resign(alpha, "alpha", "clusters/alpha")
	})

	mustFind(t, w.verify(), alphaCluster, reasons.InvalidFile, "")

	w.pass("beta")
	w.pass("gamma")
	w.pass("beta")
	w.nothingSigned(before)
	for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}} {
		w.mustStall("beta", pr.Consumer, pr.Provider, reasons.InvalidClusterInfo, alphaCluster, "more than", "bytes")
	}
	w.mustBeReady("gamma", "beta")
	if got := w.pinsOf("beta"); !bytes.Equal(got, pinned) {
		t.Fatalf("beta's pin store changed:\n%s\nwas\n%s", got, pinned)
	}
}

// TestAMalformedPeerClusterInfoAndAStrayFolderStallOnlyThatPeer: a writer
// breaks alpha's cluster.yaml and adds a top-level folder named alpha/
// holding a file. beta's pass goes on: its peerings with alpha are Stalled
// InvalidClusterInfo, what it wrote for alpha before is kept, nothing of the
// stray folder is signed or vouched for, gamma's peering stays Ready, and
// beta's pin store is unchanged.
func TestAMalformedPeerClusterInfoAndAStrayFolderStallOnlyThatPeer(t *testing.T) {
	t.Parallel()
	w := settled(t, twoWaySpec)
	before := w.signedAll()
	pinned := w.pinsOf("beta")
	identity := w.mustShow("clusters/alpha/inbox/beta/identity.yaml")
	rendered := w.lsTree("main", layout.PeerDir("beta", "alpha")) // its tree's hash
	if rendered == "" {
		t.Fatal("beta rendered nothing for alpha")
	}
	w.attack("mallory <mallory@example.com>", "alpha: tidy up", func(a *writer) {
		a.write(alphaCluster, []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Cluster\nclusterID: [alpha\n"))
		a.write("alpha/notes.yaml", []byte("kind: ConfigMap\n"))
		a.write("alpha/inbox/beta/tenant.yaml", []byte("kind: Tenant\n"))
	})

	w.pass("beta")
	w.pass("gamma")
	w.pass("beta")
	w.nothingSigned(before)
	for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}} {
		w.mustStall("beta", pr.Consumer, pr.Provider, reasons.InvalidClusterInfo, alphaCluster)
	}
	w.mustBeReady("gamma", "beta")
	if got := w.mustShow("clusters/alpha/inbox/beta/identity.yaml"); !bytes.Equal(got, identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	if got := w.pinsOf("beta"); !bytes.Equal(got, pinned) {
		t.Fatalf("beta's pin store changed:\n%s\nwas\n%s", got, pinned)
	}
	if got := w.lsTree("main", layout.PeerDir("beta", "alpha")); got != rendered {
		t.Fatalf("beta's objects for alpha changed: %s, were %s", got, rendered)
	}
}

// TestAnUnsignedProviderEndpointNeverReachesThePinsOfATwoWayPeer: alpha and
// beta provide for each other, so beta pins alpha's API server and CA. A
// writer edits them in alpha's cluster.yaml without alpha's signature.
// Whatever the order beta's roles run in (it provides for alpha before it
// consumes from it), beta's peerings with alpha are Stalled KeyChanged, its
// pin store is unchanged, nothing is signed, and gamma's peering stays
// Ready. Once the edit is reverted, the peerings are Ready again without an
// admin.
func TestAnUnsignedProviderEndpointNeverReachesThePinsOfATwoWayPeer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, a *writer)
		field  string
	}{
		{"API server", func(t *testing.T, a *writer) {
			a.edit(alphaCluster, "https://alpha.gitpeer.test:6443", "https://evil.example:6443")
		}, "apiServer"},
		{"CA", func(t *testing.T, a *writer) {
			evil := impostor(t, "alpha", "https://alpha.gitpeer.test:6443")
			ci, err := layout.ParseClusterInfo(alphaCluster, "alpha", a.read(alphaCluster))
			if err != nil {
				t.Fatal(err)
			}
			ci.CA = string(evil.CABundle())
			data, _ := ci.Encode()
			a.write(alphaCluster, data)
		}, "ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoWaySpec)
			before := w.signedAll()
			pinned := w.pinsOf("beta")
			attack := w.attack("mallory <mallory@example.com>", "alpha: new endpoint", func(a *writer) { tc.change(t, a) })
			mustFind(t, w.verify(), alphaCluster, reasons.KeyChanged, attack)

			w.pass("beta")
			w.pass("gamma")
			w.pass("beta")
			w.nothingSigned(before)
			for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}} {
				w.mustStall("beta", pr.Consumer, pr.Provider, reasons.KeyChanged, alphaCluster, tc.field)
			}
			w.mustBeReady("gamma", "beta")
			if got := w.pinsOf("beta"); !bytes.Equal(got, pinned) {
				t.Fatalf("beta's pin store changed:\n%s\nwas\n%s", got, pinned)
			}
			store, err := pins.Parse("beta's pins", pinned)
			if err != nil {
				t.Fatal(err)
			}
			if p := store.Lookup("alpha"); p == nil || strings.Contains(p.APIServer, "evil") {
				t.Fatalf("beta's pin of alpha: %+v", p)
			}

			// The admins revert the edit: the peerings settle again with
			// nothing re-pinned.
			a := w.writer()
			a.git("checkout", "-q", attack+"~1", "--", alphaCluster)
			a.commit("admin <admin@example.com>", "revert alpha's cluster.yaml")
			a.push()
			if err := w.tryConverge(); err != nil && !errors.Is(err, nil) {
				t.Fatal(err)
			}
			w.mustBeReady("alpha", "beta")
			w.mustBeReady("beta", "alpha")
			w.mustBeReady("gamma", "beta")
		})
	}
}

// TestAPeerArtifactAboveItsCapIsNotRead: alpha, holding its own key, signs
// into beta's inbox a Tenant just above layout.MaxArtifactSize (valid YAML
// padded with an annotation). beta's pass goes on without reading it: the
// Tenant accepted before is kept with the file named FileTooLarge, alpha's
// Identity is unchanged, gamma's peering stays Ready, nothing is signed and
// beta's pins are as they were.
func TestAPeerArtifactAboveItsCapIsNotRead(t *testing.T) {
	t.Parallel()
	w := settled(t, twoWaySpec)
	before := w.signedAll()
	pinned := w.pinsOf("beta")
	identity := w.mustShow("clusters/alpha/inbox/beta/identity.yaml")
	alpha := w.clusters["alpha"].b.Signer()
	const tenant = "clusters/beta/inbox/alpha/tenant.yaml"
	w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: annotate the Tenant\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
		data := a.read(tenant)
		pad := "  annotations:\n    pad: " + strings.Repeat("a", layout.MaxArtifactSize) + "\n"
		data = []byte(strings.Replace(string(data), "metadata:\n", "metadata:\n"+pad, 1))
		if len(data) <= layout.MaxArtifactSize || len(data) > 2*layout.MaxArtifactSize {
			t.Fatalf("tenant.yaml of %d bytes, want just above %d", len(data), layout.MaxArtifactSize)
		}
		a.write(tenant, data)
		a.resign(alpha, "alpha", "clusters/beta/inbox/alpha")
	})

	w.pass("beta")
	w.pass("gamma")
	w.pass("beta")
	w.nothingSigned(before)
	ps := w.peering("beta", "alpha", "beta")
	assertContains(t, "beta's status of alpha → beta", describe(ps), tenant, reasons.FileTooLarge)
	if got := w.mustShow("clusters/alpha/inbox/beta/identity.yaml"); !bytes.Equal(got, identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	w.mustBeReady("gamma", "beta")
	w.mustBeReady("beta", "alpha")
	// alpha signed a new manifest for its inbox directory, so beta saw a
	// higher sequence there; what beta pinned of alpha is as it was.
	store, err := pins.Parse("beta's pins", pinned)
	if err != nil {
		t.Fatal(err)
	}
	was := store.Lookup("alpha")
	now, err := w.clusters["beta"].b.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := now.Lookup("alpha"); p.Fingerprint != was.Fingerprint || p.PublicKey != was.PublicKey || p.APIServer != was.APIServer || p.CA != was.CA || p.Damaged != "" {
		t.Fatalf("beta's pin of alpha changed: %+v\nwas %+v", p, was)
	}
}
