//go:build unix

package runner_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/test/meshbench"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// BenchmarkIdlePass measures a pass that finds nothing to do, the daemon's
// every interval once a mesh has converged, on the repo of a converged mesh
// (meshbench, GITPEER_BENCH_MESH; issue 11's target is 1000x10000 ≤ 300
// ms): one cluster's full Runner.Pass (fetch from a local bare remote,
// checkout, spec, reconcile, Diff) against an unchanged tip. The first pass
// (the clone) is reported apart. Metrics are CPU (the process's; the
// transport of a file:// remote runs in it) and wall time per pass, and
// the CPU of building the mesh's handshake without Git.
func BenchmarkIdlePass(b *testing.B) {
	n, m := meshbench.Size(b, "100x1000")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mesh := meshbench.Build(b, n, m, now, meshbench.Options{})
	testgit.Git(b, mesh.Repo, "init", "--quiet", "--initial-branch=main")
	testgit.Git(b, mesh.Repo, "add", "-A")
	testgit.Git(b, mesh.Repo, "commit", "--quiet", "-m", "converged mesh")
	remote := filepath.Join(b.TempDir(), "remote.git")
	testgit.Git(b, mesh.Repo, "clone", "--quiet", "--bare", mesh.Repo, remote)
	files := testgit.Git(b, mesh.Repo, "ls-files")

	id := mesh.IDs[n/2]
	be := mesh.Backends[id]
	ctx := context.Background()
	opts, err := runner.Signed(gitsync.Options{URL: remote, Dir: filepath.Join(b.TempDir(), "checkout"), Clock: gitsync.ClockFunc(func() time.Time { return now })}, be, "ssh")
	if err != nil {
		b.Fatal(err)
	}
	c0, w0 := meshbench.ProcessCPU(), time.Now()
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	r := &runner.Runner{Repo: repo, Backend: be, Now: func() time.Time { return now }}
	pass := func() {
		res, err := r.Pass(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res.Commit != "" {
			b.Fatalf("pass of %s on the converged mesh committed %s: %v", id, res.Commit, res.Files)
		}
	}
	pass()
	first, firstWall := meshbench.ProcessCPU()-c0, time.Since(w0)

	var cpu time.Duration
	for b.Loop() {
		c := meshbench.ProcessCPU()
		pass()
		cpu += meshbench.ProcessCPU() - c
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/pass")
	b.ReportMetric(first.Seconds(), "first-cpu-s")
	b.ReportMetric(firstWall.Seconds(), "first-wall-s")
	b.ReportMetric(float64(countLines(files)), "files")
	// The mesh's handshake (reconcile.Pass and Diff, no Git), for the
	// record of the same run.
	b.ReportMetric(mesh.PassCPU.Seconds(), "handshake-cpu-s")
}

func countLines(s string) int {
	n := 1
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
