package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

const identityFile = "clusters/alpha/inbox/beta/identity.yaml"

// settled is a two-cluster world whose peering is Ready on both sides.
func settled(t *testing.T) *world {
	t.Helper()
	w := newWorld(t, twoClusters)
	w.converge("beta", "alpha")
	if ps := w.status("alpha", "alpha", "beta"); ps == nil || ps.Step != layout.StepReady {
		t.Fatalf("not settled: %+v", ps)
	}
	return w
}

func conditionsOf(w *world, cluster, consumer, provider string) string {
	return fmt.Sprint(w.status(cluster, consumer, provider).Conditions)
}

func TestAnUnsignedEditIsIgnoredAndNamed(t *testing.T) {
	w := settled(t)
	identity := w.tree[identityFile].Data
	// A repo writer corrupts the Tenant alpha sent: the provider keeps the
	// peering, signs nothing, and names the file.
	w.tree["clusters/beta/inbox/alpha/tenant.yaml"] = &fstest.MapFile{Data: []byte("kind: Tenant\ngarbage")}
	signed := w.backends["beta"].signed
	w.pass("beta")
	if got := w.backends["beta"].signed; got != signed {
		t.Fatalf("beta signed %d certificates for an unsigned edit", got-signed)
	}
	if string(w.tree[identityFile].Data) != string(identity) {
		t.Fatal("the Identity was changed or withdrawn by an unsigned edit")
	}
	r := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "clusters/beta/inbox/alpha/tenant.yaml ("+reasons.UnsignedChange+")") {
		t.Fatalf("status does not name the ignored edit while staying Ready: %+v", r)
	}
	// alpha's next pass restores what it signed; the note goes away.
	w.converge("alpha", "beta")
	if c := conditionsOf(w, "beta", "alpha", "beta"); strings.Contains(c, reasons.UnsignedChange) {
		t.Fatalf("still reported after alpha restored its Tenant: %s", c)
	}
}

func TestAPlantedFileInAClustersTreeIsRemoved(t *testing.T) {
	w := settled(t)
	planted := "clusters/alpha/liqo/beta/clusterrolebinding-evil.yaml"
	w.tree[planted] = &fstest.MapFile{Data: []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n")}
	w.tree["clusters/alpha/README.md"] = &fstest.MapFile{Data: []byte("hi")}
	_, plan := w.pass("alpha")
	for _, f := range []string{planted, "clusters/alpha/README.md"} {
		if w.has(f) {
			t.Errorf("%s survived alpha's pass", f)
		}
	}
	if !strings.Contains(plan.Message, "remove README.md") {
		t.Errorf("commit message does not say what was removed: %q", plan.Message)
	}
}

func TestASwappedKeyIsKeyChangedAndNothingIsSigned(t *testing.T) {
	for _, spec := range []struct{ name, pin string }{{"without a spec pin", ""}, {"with the spec pin edited too", "x"}} {
		t.Run(spec.name, func(t *testing.T) {
			w := settled(t)
			identity := w.tree[identityFile].Data
			// A writer swaps alpha's cluster.yaml for its own key and signs
			// alpha's inbox with it.
			evil, _, err := file.Init(t.TempDir()+"/evil", file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: now})
			if err != nil {
				t.Fatal(err)
			}
			info, _ := evil.ClusterInfo()
			data, _ := info.Encode()
			w.tree["clusters/alpha/cluster.yaml"] = &fstest.MapFile{Data: data}
			if spec.pin != "" {
				w.setSpec(`clusters: [{id: "alpha", fingerprint: "` + info.Fingerprint + `"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]`)
			}
			w.files["alpha"] = evil
			w.backends["alpha"].Backend = evil
			w.pass("alpha")
			signed := w.backends["beta"].signed
			w.pass("beta")
			if w.backends["beta"].signed != signed {
				t.Fatal("beta signed a certificate for the swapped key")
			}
			if string(w.tree[identityFile].Data) != string(identity) {
				t.Fatal("the working Identity was withdrawn or changed")
			}
			st := condition(w.status("beta", "alpha", "beta"), meta.StalledCondition)
			if st == nil || st.Reason != reasons.KeyChanged || !strings.Contains(st.Message, "gitpeer trust --peer alpha") {
				t.Fatalf("Stalled %+v, want KeyChanged with the way out", st)
			}
		})
	}
}

func TestARotationSignedByThePinnedKeyIsAccepted(t *testing.T) {
	w := settled(t)
	info := rotateAlpha(t, w)
	w.converge("alpha", "beta")
	if ps := w.status("beta", "alpha", "beta"); ps == nil || ps.Step != layout.StepIdentityIssued {
		t.Fatalf("rotation refused: %+v", ps)
	}
	id, _ := liqo.DecodeIdentity(w.tree[identityFile].Data)
	_, der, _ := handshake.ParsePublicKey([]byte(info.PublicKey))
	if err := handshake.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, w.files["beta"].CABundle(), der, "alpha", "liqo.io", w.now); err != nil {
		t.Fatalf("the Identity is not for the rotated key: %v", err)
	}
	if pin := w.pins["beta"].Lookup("alpha"); pin.Fingerprint != info.Fingerprint {
		t.Fatalf("pin %s, want the rotated %s", pin.Fingerprint, info.Fingerprint)
	}
}

func TestARotationSignedByAnotherKeyIsRefused(t *testing.T) {
	w := settled(t)
	evil, _, err := file.Init(t.TempDir()+"/evil", file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := evil.ClusterInfo()
	if err := layout.SignRotation(info, evil.Signer()); err != nil { // self-signed "rotation"
		t.Fatal(err)
	}
	data, _ := info.Encode()
	w.tree["clusters/alpha/cluster.yaml"] = &fstest.MapFile{Data: data}
	w.pass("beta")
	if st := condition(w.status("beta", "alpha", "beta"), meta.StalledCondition); st == nil || st.Reason != reasons.KeyChanged {
		t.Fatalf("Stalled %+v, want KeyChanged", st)
	}
}

func TestAProvidersSwappedCAOrAPIServerIsRefusedByTheConsumer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*layout.ClusterInfo)
	}{
		{"API server", func(ci *layout.ClusterInfo) { ci.APIServer = "https://evil.example:6443" }},
		{"CA", func(ci *layout.ClusterInfo) {
			ca, _, _ := handshake.NewCA("evil", now, time.Hour)
			ci.CA = string(ca.CertPEM)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := settled(t)
			ci, err := layout.ReadClusterInfo(w.tree, "beta")
			if err != nil {
				t.Fatal(err)
			}
			tc.change(ci)
			data, _ := ci.Encode()
			w.tree["clusters/beta/cluster.yaml"] = &fstest.MapFile{Data: data}
			rendered := "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"
			before := w.tree[rendered].Data
			w.pass("alpha")
			if string(w.tree[rendered].Data) != string(before) {
				t.Fatal("alpha changed its Identity after its provider's cluster.yaml was swapped")
			}
			st := condition(w.status("alpha", "alpha", "beta"), meta.StalledCondition)
			if st == nil || st.Reason != reasons.KeyChanged {
				t.Fatalf("Stalled %+v, want KeyChanged", st)
			}
		})
	}
}

func TestATenantOverANonceNeverIssuedIsNonceReplayed(t *testing.T) {
	w := newWorld(t, twoClusters)
	w.pass("beta")
	w.pass("alpha")
	// alpha (or a writer holding its push credential and key) answers an
	// epoch it made up, re-signing everything.
	tamperTenant(t, w, func(tn *authv1beta1.Tenant) {
		tn.Annotations["gitpeer.io/nonce-epoch"] = "12345"
	})
	signed := w.backends["beta"].signed
	w.pass("beta")
	if w.backends["beta"].signed != signed {
		t.Fatal("beta signed for a replayed nonce")
	}
	st := condition(w.status("beta", "alpha", "beta"), meta.StalledCondition)
	if st == nil || st.Reason != reasons.NonceReplayed {
		t.Fatalf("Stalled %+v, want NonceReplayed", st)
	}
}

func TestAnOldSignedStateIsRolledBackNotReplayed(t *testing.T) {
	w := newWorld(t, twoClusters)
	w.pass("beta")
	w.pass("alpha")
	dir := "clusters/beta/inbox/alpha"
	old := map[string][]byte{}
	for p, f := range w.tree {
		if strings.HasPrefix(p, dir+"/") {
			old[p] = f.Data
		}
	}
	w.converge("beta", "alpha")
	w.now = w.now.Add(time.Hour)
	// alpha moves on (a slice is added): a new sequence.
	w.setSpec(`clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]}]`)
	w.converge("beta", "alpha")
	// A writer puts alpha's old, validly signed inbox back.
	for p := range w.tree {
		if strings.HasPrefix(p, dir+"/") {
			delete(w.tree, p)
		}
	}
	for p, data := range old {
		w.tree[p] = &fstest.MapFile{Data: data}
	}
	w.pass("beta")
	r := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, reasons.ManifestRolledBack) {
		t.Fatalf("a rolled-back inbox is not named, or the peering was dropped: %+v", r)
	}
}

func TestAHostilePeerCannotStallTheProvidersOtherPeerings(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]},
           {consumer: "gamma", provider: "beta"}]
`)
	w.converge("beta", "alpha", "gamma")
	// alpha puts a private key into its slice request; beta's answer would
	// echo it into beta's commit.
	req := "clusters/beta/inbox/alpha/resourceslice-pool.yaml"
	rs, err := liqo.DecodeResourceSlice(w.tree[req].Data)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := handshake.GenerateKey()
	pemKey, _ := handshake.MarshalPrivateKey(key)
	rs.Annotations = map[string]string{"note": string(pemKey)}
	data, _ := liqo.Encode(rs)
	w.tree[req] = &fstest.MapFile{Data: data}
	w.resign("alpha", req)
	w.now = w.now.Add(time.Minute)
	out, plan := w.pass("beta")
	for f, d := range plan.Writes {
		if err := guard.Check(f, d); err != nil {
			t.Fatalf("beta would commit the hostile key: %v", err)
		}
	}
	if st := condition(peering(t, out, "alpha", "beta"), meta.StalledCondition); st == nil || st.Reason != reasons.PeerContentRefused {
		t.Fatalf("alpha's peering: %+v, want PeerContentRefused", st)
	}
	if r := condition(peering(t, out, "gamma", "beta"), meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
		t.Fatalf("gamma's peering was affected: %+v", r)
	}
}

func TestASettledRepoWithManifestsMakesNoCommit(t *testing.T) {
	w := settled(t)
	w.now = w.now.Add(time.Hour)
	for _, id := range []string{"alpha", "beta", "alpha"} {
		if _, plan := w.pass(id); !plan.Empty() {
			t.Fatalf("%s committed %v on a settled repo", id, plan.Steps)
		}
	}
	// Pins alone, reloaded, change nothing either.
	if _, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["beta"], Now: w.now, Pins: w.pins["beta"]}); err != nil {
		t.Fatal(err)
	}
}

func TestRemovingAPlantedObjectIsNotCalledARevocation(t *testing.T) {
	w := settled(t)
	w.tree["clusters/beta/liqo/alpha/clusterrolebinding-pwn.yaml"] = &fstest.MapFile{Data: []byte("kind: ClusterRoleBinding\n")}
	_, plan := w.pass("beta")
	if strings.Contains(plan.Message, "remove objects for alpha") || !strings.Contains(plan.Message, "remove liqo/alpha/clusterrolebinding-pwn.yaml") {
		t.Fatalf("commit message %q: the planted file's removal reads as something else", plan.Message)
	}
}

// TestADamagedPinStallsOnlyItsPeerUntilARepin: beta's pin store, written
// by an earlier version, holds an API server for alpha that is no URL.
// Loaded, the pin is Damaged; beta's pass goes on, refuses alpha with
// PinDamaged naming the fix, signs nothing, never trusts alpha anew, and
// once an admin re-pins alpha (gitpeer trust) the peering is Ready again.
func TestADamagedPinStallsOnlyItsPeerUntilARepin(t *testing.T) {
	w := settled(t)
	data, err := w.pins["beta"].Encode()
	if err != nil {
		t.Fatal(err)
	}
	damaged := strings.Replace(string(data), "apiServer: https://alpha.", "apiServer: ftp://alpha.", 1)
	if damaged == string(data) {
		t.Fatalf("beta pinned no API server for alpha:\n%s", data)
	}
	store, err := pins.Parse("pins.yaml", []byte(damaged))
	if err != nil {
		t.Fatalf("a store with a damaged pin: %v", err)
	}
	w.pins["beta"] = store
	identity := w.tree[identityFile].Data
	signed := w.backends["beta"].signed
	w.pass("beta")
	if got := w.backends["beta"].signed; got != signed {
		t.Fatalf("beta signed %d certificates for a peer whose pin is damaged", got-signed)
	}
	ps := w.status("beta", "alpha", "beta")
	if c := condition(ps, meta.StalledCondition); c == nil || c.Reason != reasons.PinDamaged ||
		!strings.Contains(c.Message, "gitpeer trust --cluster beta --peer alpha --fingerprint") || !strings.Contains(c.Message, "apiServer") {
		t.Fatalf("beta's status of alpha: %+v, want Stalled PinDamaged saying the fix", ps.Conditions)
	}
	if string(w.tree[identityFile].Data) != string(identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	if p := w.pins["beta"].Lookup("alpha"); p.Damaged == "" || p.APIServer != "" {
		t.Fatalf("beta's pin of alpha after the pass: %+v", p)
	}

	// gitpeer trust --peer alpha --fingerprint <alpha's>.
	p := w.pins["beta"].Peer("alpha")
	p.Repin = true
	w.converge("beta", "alpha")
	if c := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("after a re-pin: %+v", c)
	}
	if p := w.pins["beta"].Lookup("alpha"); p.Damaged != "" || !strings.HasPrefix(p.APIServer, "https://alpha.") {
		t.Fatalf("beta's pin of alpha after the re-pin: %+v", p)
	}
}

// twoWay: alpha and beta provide for each other.
const twoWay = `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "beta", provider: "alpha"}]
`

// TestPinsTakeOnlySignedValuesWhateverTheOrderOfRoles: a repo writer edits
// the API server in alpha's cluster.yaml without alpha's signature. Where
// alpha is only beta's consumer, beta's peering goes on and its pin keeps
// the signed API server; where alpha is also beta's provider, both of beta's
// peerings with alpha are KeyChanged, although beta serves alpha as a
// provider (and would have refreshed the pin) before it consumes from it.
func TestPinsTakeOnlySignedValuesWhateverTheOrderOfRoles(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		peerings   []schema.Pair
		refused    bool
	}{
		{"alpha only consumes from beta", twoClusters, []schema.Pair{{Consumer: "alpha", Provider: "beta"}}, false},
		{"alpha and beta provide for each other", twoWay, []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.spec)
			w.converge("beta", "alpha")
			pinned := *w.pins["beta"].Lookup("alpha")
			if !strings.HasPrefix(pinned.APIServer, "https://") {
				t.Fatalf("beta pinned no API server for alpha: %+v", pinned)
			}
			file := layout.ClusterPath("alpha", layout.ClusterFile)
			edited := strings.Replace(string(w.tree[file].Data), pinned.APIServer, "https://evil.example:6443", 1)
			w.tree[file] = &fstest.MapFile{Data: []byte(edited)}
			w.pass("beta")
			if got := w.pins["beta"].Lookup("alpha"); got.APIServer != pinned.APIServer || got.CA != pinned.CA || got.Fingerprint != pinned.Fingerprint {
				t.Fatalf("beta's pin of alpha took the unsigned edit: %+v", got)
			}
			for _, pr := range tc.peerings {
				ps := w.status("beta", pr.Consumer, pr.Provider)
				stalled := condition(ps, meta.StalledCondition)
				switch {
				case tc.refused && (stalled == nil || stalled.Reason != reasons.KeyChanged || !strings.Contains(stalled.Message, "apiServer")):
					t.Errorf("beta's view of %s → %s: %+v, want Stalled KeyChanged naming apiServer", pr.Consumer, pr.Provider, ps.Conditions)
				case !tc.refused && stalled != nil && stalled.Status == metav1.ConditionTrue:
					t.Errorf("beta's view of %s → %s: %+v, want it to go on", pr.Consumer, pr.Provider, ps.Conditions)
				}
			}
		})
	}
}
