// Package meshbench builds the converged handshake of a synthetic mesh on
// disk, for benchmarks: every cluster's reconcile.Pass in rounds, providers
// first, reading the tree from Git objects as the runner does
// (gitsync.MemoryTree: in memory, no commit per pass), the checkout on
// disk following. What it leaves (the repo directory,
// one file backend per cluster holding its keys and pins) is what a real
// mesh's checkout and state dirs hold once every peering is Ready, so
// benchmarks of Git passes and of verify can start from it without running
// thousands of pushes.
package meshbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Size is the mesh a benchmark peers: GITPEER_BENCH_MESH as
// "<clusters>x<peerings>" (1000x10000 is the target size of issue 11),
// else def (e.g. "20x200", so that make bench stays short).
func Size(tb testing.TB, def string) (clusters, peerings int) {
	s := def
	if env := os.Getenv("GITPEER_BENCH_MESH"); env != "" {
		s = env
	}
	if _, err := fmt.Sscanf(s, "%dx%d", &clusters, &peerings); err != nil || clusters < 2 || peerings < clusters || peerings%clusters != 0 {
		tb.Fatalf("GITPEER_BENCH_MESH=%q: want <clusters>x<peerings>, peerings a multiple of clusters", s)
	}
	return clusters, peerings
}

// Spec is the peering.cue of a mesh of n clusters (c0000…) and m
// peerings, as the demo's mesh peers them (demo.MeshSpec): cluster i
// consumes from the m/n clusters after it (mod n), so each takes part in
// 2m/n peerings.
func Spec(n, m int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ID(i)
	}
	return demo.MeshSpec(ids, m)
}

// ID is the cluster ID of the i-th cluster of a Spec mesh.
func ID(i int) string { return fmt.Sprintf("c%04d", i) }

// Mesh is a converged handshake on disk.
type Mesh struct {
	// Repo is the checkout: peering.cue at its root and every cluster's
	// artifacts, as the remote's tip would hold them.
	Repo string
	// IDs are the cluster IDs in turn order.
	IDs  []string
	Spec *schema.Spec
	// Backends hold each cluster's keys and pins (state dir under the
	// root's state/<id>), their clock fixed at the mesh's now.
	Backends map[string]*file.Backend
	// Passes is how many passes the handshake took, over all clusters.
	Passes int
	// PassCPU is the CPU time of reconcile.Pass plus Diff, summed over all
	// passes (the process's, so GC included): pins, setup and the writes to
	// disk are not in it.
	PassCPU time.Duration
	// RoundCPU is PassCPU by round, in order: the last round is the one that
	// changed nothing (every cluster's idle pass on the converged tree).
	RoundCPU []time.Duration
}

// Options are how Build builds a mesh.
type Options struct {
	// Root is the directory to build in (repo/, state/); "" is a new
	// tb.TempDir(). A Root already holding a mesh of the same size (its
	// marker file says so) is reused as it is, without Backends: building
	// a mesh of thousands of peerings takes minutes.
	Root string
	// Commit commits the repo with the git CLI after every round
	// (unsigned commits; the files carry the reconcilers' signed
	// manifests), so that the mesh has a history, as verify reads one.
	Commit bool
}

// Build runs the handshake of Spec(n, m) at now until a round changes
// nothing; it fails tb when ten rounds do not converge.
func Build(tb testing.TB, n, m int, now time.Time, opts Options) *Mesh {
	tb.Helper()
	ctx := context.Background()
	root := opts.Root
	if root == "" {
		root = tb.TempDir()
	}
	mesh := &Mesh{Repo: filepath.Join(root, "repo"), Backends: map[string]*file.Backend{}}
	text := Spec(n, m)
	spec, err := schema.Parse("peering.cue", []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	mesh.Spec = spec
	for i := range n {
		mesh.IDs = append(mesh.IDs, ID(i))
	}
	marker := filepath.Join(root, "mesh")
	// The marker names the generator's layout too: a mesh an older Spec
	// built (its peerings in another order) is built again.
	size := fmt.Sprintf("%dx%d commit=%v spec=demo.MeshSpec\n", n, m, opts.Commit)
	if got, err := os.ReadFile(marker); err == nil && string(got) == size {
		mesh.Backends = nil
		return mesh
	}
	for _, dir := range []string{mesh.Repo, filepath.Join(root, "state"), marker} {
		if err := os.RemoveAll(dir); err != nil {
			tb.Fatal(err)
		}
	}
	git := func(args ...string) {
		tb.Helper()
		testgit.Git(tb, "", append([]string{"-C", mesh.Repo, "-c", "user.name=meshbench", "-c", "user.email=meshbench@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	}
	commit := func(message string) {
		if opts.Commit {
			git("add", "-A")
			git("commit", "-q", "-m", message)
		}
	}
	disk := layout.NewTree(mesh.Repo)
	// Passes read the tree from Git objects, as the runner's do
	// (gitobj.TreeFS); the checkout on disk follows for what is built on
	// it (a history, a bare repo).
	tree := gitsync.NewMemoryTree()
	// guards is the guard cache of the cluster whose pass made a change,
	// handed to the commit's check as the runner hands it (Change.Guard):
	// nil for the set-up writes, which no pass inspected.
	apply := func(writes map[string][]byte, deletes []string, guards *guard.Cache) {
		tb.Helper()
		write(tb, mesh.Repo, writes, deletes)
		if err := tree.Apply(&gitsync.Change{Writes: writes, Deletes: deletes, Message: "pass", Guard: guards}); err != nil {
			tb.Fatal(err)
		}
	}
	apply(map[string][]byte{"peering.cue": []byte(text)}, nil, nil)
	if opts.Commit {
		git("init", "-q", "-b", "main")
	}
	// One cache per cluster, as each cluster's runner keeps its own.
	caches := map[string]*reconcile.Cache{}
	for _, id := range mesh.IDs {
		be, _, err := file.Init(filepath.Join(root, "state", id), file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".example:6443", Now: now})
		if err != nil {
			tb.Fatal(err)
		}
		be.Now = func() time.Time { return now }
		mesh.Backends[id] = be
		caches[id] = reconcile.NewCache()
		info, err := be.ClusterInfo()
		if err != nil {
			tb.Fatal(err)
		}
		files, err := layout.PublishFiles(disk, info)
		if err != nil {
			tb.Fatal(err)
		}
		apply(files, nil, nil)
	}
	for round := 0; ; round++ {
		if round == 10 {
			tb.Fatal("no convergence in 10 rounds")
		}
		changed := false
		before := mesh.PassCPU
		// The passes carry the round as a profiler label
		// (go tool pprof -tagfocus round=3), so that a profile tells
		// the idle round from the working ones.
		labels := pprof.Labels("round", strconv.Itoa(round))
		for _, id := range mesh.IDs {
			be := mesh.Backends[id]
			stored, err := be.LoadPins(ctx)
			if err != nil {
				tb.Fatal(err)
			}
			c0 := ProcessCPU()
			tip := tree.FS()
			var (
				out  *reconcile.Output
				plan *reconcile.Plan
			)
			pprof.Do(ctx, labels, func(ctx context.Context) {
				out, err = reconcile.Pass(ctx, reconcile.Input{Spec: spec, Tree: tip, Backend: be, Now: now, Pins: stored, Cache: caches[id]})
				if err == nil {
					plan, err = reconcile.Diff(tip, id, out)
				}
			})
			if err != nil {
				tb.Fatal(err)
			}
			mesh.PassCPU += ProcessCPU() - c0
			mesh.Passes++
			if err := be.SavePins(ctx, out.Pins); err != nil {
				tb.Fatal(err)
			}
			if !plan.Empty() {
				changed = true
				apply(plan.Writes, plan.Deletes, caches[id].Guard())
			}
		}
		mesh.RoundCPU = append(mesh.RoundCPU, mesh.PassCPU-before)
		if !changed {
			break
		}
		commit(fmt.Sprintf("round %d", round))
	}
	if err := os.WriteFile(marker, []byte(size), 0o644); err != nil {
		tb.Fatal(err)
	}
	return mesh
}

// write applies writes and deletes (repo paths) to the checkout dir.
func write(tb testing.TB, dir string, writes map[string][]byte, deletes []string) {
	tb.Helper()
	for _, p := range deletes {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			tb.Fatal(err)
		}
	}
	testgit.WriteTree(tb, dir, writes)
}
