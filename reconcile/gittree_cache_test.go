package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// gitMesh is a peering repo held as Git objects (gitsync.MemoryTree), as
// the runner's passes read it (gitobj.TreeFS, whose entries carry their
// object hashes), with one file backend and one Cache per cluster.
type gitMesh struct {
	t        *testing.T
	ids      []string
	spec     *schema.Spec
	tree     *gitsync.MemoryTree
	backends map[string]*file.Backend
	pins     map[string]*pins.Store
	caches   map[string]*reconcile.Cache
}

func newGitMesh(t *testing.T, ids []string, peerings [][2]string) *gitMesh {
	t.Helper()
	m := &gitMesh{t: t, ids: ids, tree: gitsync.NewMemoryTree(), backends: map[string]*file.Backend{}, pins: map[string]*pins.Store{}, caches: map[string]*reconcile.Cache{}}
	m.setSpec(peerings)
	dir := t.TempDir()
	for _, id := range ids {
		be, _, err := file.Init(filepath.Join(dir, id), file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".example:6443", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		be.Now = func() time.Time { return now }
		m.backends[id], m.caches[id] = be, reconcile.NewCache()
		info, err := be.ClusterInfo()
		if err != nil {
			t.Fatal(err)
		}
		files, err := layout.PublishFiles(m.tree.FS(), info)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(files, nil)
	}
	return m
}

// setSpec commits peering.cue with ids and peerings ({consumer, provider}).
func (m *gitMesh) setSpec(peerings [][2]string) {
	m.t.Helper()
	var b strings.Builder
	b.WriteString("clusters: [")
	for i, id := range m.ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %q}", id)
	}
	b.WriteString("]\npeerings: [")
	for i, p := range peerings {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{consumer: %q, provider: %q}", p[0], p[1])
	}
	b.WriteString("]\n")
	spec, err := schema.Parse("peering.cue", []byte(b.String()))
	if err != nil {
		m.t.Fatalf("spec: %v\n%s", err, b.String())
	}
	m.spec = spec
	m.apply(map[string][]byte{"peering.cue": []byte(b.String())}, nil)
}

func (m *gitMesh) apply(writes map[string][]byte, deletes []string) {
	m.t.Helper()
	if err := m.tree.Apply(&gitsync.Change{Writes: writes, Deletes: deletes, Message: "test"}); err != nil {
		m.t.Fatal(err)
	}
}

// pass runs id's pass and Diff on the tip three times, twice without a
// cache and once with id's Cache, fails m.t unless the cached plan is the
// uncached one (but for bytes the two uncached plans already differ in: a
// certificate signed anew has a new serial), and applies the cached plan.
// It reports whether the plan changed anything.
func (m *gitMesh) pass(step int, id string) bool {
	m.t.Helper()
	tip := m.tree.FS()
	run := func(cache *reconcile.Cache) (*reconcile.Output, *reconcile.Plan) {
		m.t.Helper()
		out, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: m.spec, Tree: tip, Backend: m.backends[id], Now: now, Pins: m.pins[id], Cache: cache})
		if err != nil {
			m.t.Fatalf("step %d: pass %s: %v", step, id, err)
		}
		plan, err := reconcile.Diff(tip, id, out)
		if err != nil {
			m.t.Fatalf("step %d: diff %s: %v", step, id, err)
		}
		return out, plan
	}
	plainOut, plain := run(nil)
	_, again := run(nil)
	out, cached := run(m.caches[id])
	if got, want := slices.Sorted(maps.Keys(cached.Writes)), slices.Sorted(maps.Keys(plain.Writes)); !slices.Equal(got, want) {
		m.t.Fatalf("step %d (%s): with a cache the plan writes %v, without %v", step, id, got, want)
	}
	if !slices.Equal(cached.Deletes, plain.Deletes) {
		m.t.Fatalf("step %d (%s): with a cache the plan deletes %v, without %v", step, id, cached.Deletes, plain.Deletes)
	}
	for p, data := range plain.Writes {
		if bytes.Equal(again.Writes[p], data) && !bytes.Equal(cached.Writes[p], data) {
			m.t.Errorf("step %d (%s): %s differs with a cache:\n%s\nwithout:\n%s", step, id, p, cached.Writes[p], data)
		}
	}
	if !slices.Equal(out.Revoked, plainOut.Revoked) {
		m.t.Errorf("step %d (%s): with a cache the pass revokes %v, without %v", step, id, out.Revoked, plainOut.Revoked)
	}
	m.pins[id] = out.Pins
	if cached.Empty() {
		return false
	}
	m.apply(cached.Writes, cached.Deletes)
	return true
}

// converge runs every cluster's pass in rounds until a round changes
// nothing.
func (m *gitMesh) converge(step *int) {
	m.t.Helper()
	for round := 0; ; round++ {
		if round == 10 {
			m.t.Fatal("no convergence in 10 rounds")
		}
		changed := false
		for _, id := range m.ids {
			*step++
			if m.pass(*step, id) {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// A pass whose Cache remembers which clusters' trees hold no folder for it
// (by tree hash) plans, on random meshes, exactly what a pass without one
// plans: through the handshake, a peering removed from the spec (the
// provider finds its folder in the consumer's inbox to withdraw), a
// writer's file planted in a folder of a cluster's inbox where there was
// none (its owner deletes it) and a whole planted folder for a cluster
// that is no peer (not a peering: nothing to do but delete it).
func TestPassAndDiffWithACacheOnAGitTreeAreThoseWithout(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 32))
			n := 4
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("k%d", i)
			}
			var peerings [][2]string
			for i := range ids {
				for j := range ids {
					if i != j && r.IntN(3) == 0 {
						peerings = append(peerings, [2]string{ids[i], ids[j]})
					}
				}
			}
			if len(peerings) == 0 {
				peerings = append(peerings, [2]string{ids[0], ids[1]})
			}
			m := newGitMesh(t, ids, peerings)
			step := 0
			m.converge(&step)
			// A peering leaves the spec.
			gone := peerings[r.IntN(len(peerings))]
			m.setSpec(slices.DeleteFunc(slices.Clone(peerings), func(p [2]string) bool { return p == gone }))
			m.converge(&step)
			// A writer plants a file in a folder of someone's inbox, and a
			// folder for a cluster that is no peer of the inbox's owner.
			var stranger [2]string // {inbox owner, folder}
			for _, a := range ids {
				for _, b := range ids {
					if a != b && !m.spec.HasPeering(a, b) && !m.spec.HasPeering(b, a) {
						stranger = [2]string{a, b}
					}
				}
			}
			planted := map[string][]byte{layout.InboxPath(gone[1], gone[0], "planted.yaml"): []byte("a: b\n")}
			if stranger[0] != "" {
				planted[layout.InboxPath(stranger[0], stranger[1], "planted.yaml")] = []byte("a: b\n")
			}
			m.apply(planted, nil)
			m.converge(&step)
			for p := range planted {
				if _, err := fs.Stat(m.tree.FS(), p); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
		})
	}
}
