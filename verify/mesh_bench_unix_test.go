//go:build unix

package verify_test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/verify"
)

// verifyMeshSize is the mesh BenchmarkVerifyMesh checks:
// GITPEER_BENCH_MESH as "<clusters>x<peerings>" (1000x10000 is the target
// of issue 11), else 20x200 so that make bench stays short.
func verifyMeshSize(b *testing.B) (clusters, peerings int) {
	clusters, peerings = 20, 200
	if s := os.Getenv("GITPEER_BENCH_MESH"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &clusters, &peerings); err != nil || clusters < 2 || peerings < clusters || peerings%clusters != 0 {
			b.Fatalf("GITPEER_BENCH_MESH=%q: want <clusters>x<peerings>, peerings a multiple of clusters", s)
		}
	}
	return clusters, peerings
}

// BenchmarkVerifyMesh runs gitpeer verify's checks on a converged mesh
// (verifyMeshSize; see convergedMesh): CheckTree alone ("tree"), Check
// with the commit checks, as gitpeer verify runs by default ("history"),
// and with the private-material scan of every blob too ("scan",
// --history). Metrics are the process's CPU time (user + system, GC
// included) per run and per peering; ns/op is wall time, which a shared
// machine inflates. Every run must find nothing.
func BenchmarkVerifyMesh(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git CLI not installed")
	}
	n, m := verifyMeshSize(b)
	// GITPEER_BENCH_VERIFY_DIR keeps the mesh for the next run.
	dir, spec := convergedMesh(b, os.Getenv("GITPEER_BENCH_VERIFY_DIR"), n, m)
	opts := verify.Options{Now: benchNow, RequireManifests: true}
	for _, mode := range []string{"tree", "history", "scan"} {
		b.Run(mode, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				c0 := benchCPU()
				var findings []verify.Finding
				if mode == "tree" {
					findings = verify.CheckTree(layout.NewSnapshotTree(dir), spec, opts)
				} else {
					o := opts
					o.History = mode == "scan"
					var err error
					if findings, err = verify.Check(dir, spec, o); err != nil {
						b.Fatal(err)
					}
				}
				cpu += benchCPU() - c0
				if len(findings) > 0 {
					b.Fatalf("%d findings in a converged mesh, first: %v", len(findings), findings[0])
				}
			}
			per := cpu / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "cpu-s")
			b.ReportMetric(float64(per.Microseconds())/1000/float64(m), "cpu-ms/peering")
		})
	}
}

// benchCPU is the CPU time this process has used, user and system.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
