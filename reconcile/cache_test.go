package reconcile_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gitpeer/gitpeer/reconcile"
)

// A cluster that keeps a Cache across its passes computes, at every pass,
// exactly what a pass without one computes: through the handshake, a
// settled repo, and a repo writer's unsigned edit of a peer's artifact (the
// cache knew the signed one).
func TestPassWithACacheWritesWhatAPassWithoutOneWrites(t *testing.T) {
	w := newWorld(t, twoClusters)
	caches := map[string]*reconcile.Cache{"alpha": reconcile.NewCache(), "beta": reconcile.NewCache()}
	compare := func(step int, id string) {
		t.Helper()
		sameWithACache(t, w, caches[id], step, id)
	}
	order := []string{"beta", "alpha", "beta", "alpha", "beta", "alpha"}
	for i, id := range order {
		compare(i, id)
		w.pass(id)
	}
	// A repo writer edits alpha's signed tenant without alpha's key.
	const tenant = "clusters/beta/inbox/alpha/tenant.yaml"
	w.tree[tenant] = &fstest.MapFile{Data: append(slices.Clone(w.tree[tenant].Data), "# edited\n"...)}
	for i, id := range []string{"beta", "alpha"} {
		compare(len(order)+i, id)
		w.pass(id)
	}
	// The certificates the caches verified expire: past their validity
	// each check is made again, and they are renewed as without a cache.
	w.now = w.now.Add(reconcile.DefaultCertificateLifetime + time.Hour)
	for i, id := range []string{"beta", "alpha", "beta", "alpha"} {
		compare(len(order)+2+i, id)
		w.pass(id)
	}
	// A repo writer swaps the API server in beta's cluster.yaml, which
	// alpha's cache parsed and accepted before (alpha pinned beta's; beta's
	// own pass now refuses to act, which no cache changes).
	const info = "clusters/beta/cluster.yaml"
	w.tree[info] = &fstest.MapFile{Data: bytes.Replace(w.tree[info].Data, []byte("https://"), []byte("https://x"), 1)}
	compare(len(order)+6, "alpha")
	w.pass("alpha")
}

// sameWithACache runs id's pass on w without a cache, twice, and with
// cache, and fails t unless the cached pass writes the same files with the
// same bytes (but for those two plain passes already differ in: a
// certificate signed anew has a new serial).
func sameWithACache(t *testing.T, w *world, cache *reconcile.Cache, step int, id string) *reconcile.Output {
	t.Helper()
	in := reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends[id], Now: w.now, Pins: w.pins[id]}
	plain, err := reconcile.Pass(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// A provider issuing a certificate signs a new one (new serial) at
	// every pass: such files differ between any two passes.
	again, err := reconcile.Pass(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	in.Cache = cache
	cached, err := reconcile.Pass(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(cached.Files)), slices.Sorted(maps.Keys(plain.Files)); !slices.Equal(got, want) {
		t.Fatalf("step %d (%s): with a cache the pass writes %v, without %v", step, id, got, want)
	}
	for p, data := range plain.Files {
		if string(again.Files[p]) == string(data) && string(cached.Files[p]) != string(data) {
			t.Errorf("step %d (%s): %s differs with a cache:\n%s\nwithout:\n%s", step, id, p, cached.Files[p], data)
		}
	}
	if got, want := cached.Republished, plain.Republished; got != want {
		t.Errorf("step %d (%s): with a cache the pass republishes %q, without %q", step, id, got, want)
	}
	return cached
}

// The root manifests a pass reads outside the signed view (a peer's, on
// first trust; its own, to know its cluster.yaml is its own) are taken from
// the cache only for the exact bytes and key that verified before: a root
// manifest re-signed by another key, or a pin dropped and trusted again,
// reads as without a cache.
func TestRootManifestChecksWithACacheAreThoseWithout(t *testing.T) {
	w := settled(t)
	caches := map[string]*reconcile.Cache{"alpha": reconcile.NewCache(), "beta": reconcile.NewCache()}
	step := 0
	pass := func(id string) *reconcile.Output {
		t.Helper()
		out := sameWithACache(t, w, caches[id], step, id)
		step++
		w.pass(id)
		return out
	}
	dropPin := func(id, peer string) {
		t.Helper()
		store := w.pins[id].Clone()
		delete(store.Peers, peer)
		w.pins[id] = store
	}
	// Warm: both caches hold both root manifests.
	pass("alpha")
	pass("beta")
	// alpha trusts beta anew with beta's root manifest in its cache.
	dropPin("alpha", "beta")
	if out := pass("alpha"); out.Pins.Lookup("beta") == nil {
		t.Fatal("beta is not pinned again")
	}
	// beta's root manifest, cached as verified with beta's key, is
	// re-signed by alpha's key: a first trust must not take it.
	w.resign("alpha", "clusters/beta/cluster.yaml")
	dropPin("alpha", "beta")
	if out := pass("alpha"); out.Pins.Lookup("beta") != nil {
		t.Fatal("beta is pinned from a manifest alpha's key signed")
	}
	// alpha's own root manifest re-signed by beta's key: alpha republishes
	// its cluster.yaml, with a cache as without.
	w.resign("beta", "clusters/alpha/cluster.yaml")
	if out := pass("alpha"); out.Republished == "" {
		t.Fatal("alpha did not republish a cluster.yaml beta's key signed")
	}
}
