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
		in.Cache = caches[id]
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
