//go:build unix

package verify_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/meshbench"
	"github.com/gitpeer/gitpeer/test/testgit"
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

// BenchmarkVerifyMeshPullRequest runs gitpeer verify --base on a pull
// request on top of the converged mesh of BenchmarkVerifyMesh: the spec
// adds a peering of c0000 consuming from the last cluster (which consumes
// from c0000 already), and
// c0000 rewrites its status.yaml and signs its directory again (with its
// key, as its reconciler would). "scoped" is verify --base main, "full"
// is verify --base main --full: both judge only the pull request's commit;
// scoped checks the trees of the clusters the change touches and those
// depending on them (the two clusters, and their peers' keys), full the
// whole tree. Metrics as BenchmarkVerifyMesh's; every run must find
// nothing.
func BenchmarkVerifyMeshPullRequest(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git CLI not installed")
	}
	n, m := verifyMeshSize(b)
	dir, spec := convergedMesh(b, os.Getenv("GITPEER_BENCH_VERIFY_DIR"), n, m)
	const branch = "gitpeer-bench-pr"
	git, wt := meshWorktree(b, dir, branch)
	self, peer := meshbench.ID(0), meshbench.ID(n-1) // c0000 consumes from the m/n after it
	specFile := filepath.Join(wt, "peering.cue")
	text, err := os.ReadFile(specFile)
	if err != nil {
		b.Fatal(err)
	}
	added := strings.Replace(string(text), "peerings: [\n", fmt.Sprintf("peerings: [\n\t{consumer: %q, provider: %q},\n", self, peer), 1)
	writeFile(b, specFile, added)
	prSpec, err := schema.Parse("peering.cue", []byte(added))
	if err != nil {
		b.Fatal(err)
	}
	if len(prSpec.Peerings) != len(spec.Peerings)+1 {
		b.Fatalf("%s and %s peer already", self, peer)
	}
	be, err := file.Open(filepath.Join(filepath.Dir(dir), "state", self))
	if err != nil {
		b.Fatal(err)
	}
	appendTo(b, filepath.Join(wt, "clusters", self, layout.StatusFile), "# rewritten\n")
	sealed, err := dirmanifest.Reseal(layout.NewTree(wt), be.Signer(), self, layout.ClusterPath(self), nil, benchNow)
	if err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(wt, "clusters", self, dirmanifest.FileName), string(sealed))
	git(wt, "commit", "-q", "-am", "a pull request")

	for _, mode := range []string{"scoped", "full"} {
		b.Run(mode, func(b *testing.B) {
			opts := verify.Options{Now: benchNow, RequireManifests: true, Base: "main", Ref: branch, Full: mode == "full"}
			var scope verify.Scope
			opts.OnScope = func(s verify.Scope) { scope = s }
			var cpu time.Duration
			for b.Loop() {
				c0 := benchCPU()
				findings, err := verify.Check(dir, prSpec, opts)
				if err != nil {
					b.Fatal(err)
				}
				cpu += benchCPU() - c0
				if len(findings) > 0 {
					b.Fatalf("%d findings in a clean pull request, first: %v", len(findings), findings[0])
				}
			}
			b.Log(scope)
			per := cpu / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "cpu-s")
			b.ReportMetric(float64(per.Microseconds())/1000/float64(m), "cpu-ms/peering")
		})
	}
}

// BenchmarkVerifyMeshCheckpoint runs gitpeer verify on a branch three
// commits past the converged mesh of BenchmarkVerifyMesh (in each, c0000
// rewrites its status.yaml and signs its directory again, as its
// reconciler would; the mesh has no applied branch): "full" checks
// everything, as verify does without a
// checkpoint; "checkpoint" starts from the checkpoint a green full run
// recorded at the mesh's main (verify --checkpoint), so it judges the
// three commits and the trees of c0000 and the clusters depending on it.
// Metrics as BenchmarkVerifyMesh's; every run must find nothing.
func BenchmarkVerifyMeshCheckpoint(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git CLI not installed")
	}
	n, m := verifyMeshSize(b)
	dir, spec := convergedMesh(b, os.Getenv("GITPEER_BENCH_VERIFY_DIR"), n, m)
	const branch = "gitpeer-bench-checkpoint"
	git, wt := meshWorktree(b, dir, branch)
	self := meshbench.ID(0)
	be, err := file.Open(filepath.Join(filepath.Dir(dir), "state", self))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 3 {
		appendTo(b, filepath.Join(wt, "clusters", self, layout.StatusFile), fmt.Sprintf("# pass %d\n", i))
		sealed, err := dirmanifest.Reseal(layout.NewTree(wt), be.Signer(), self, layout.ClusterPath(self), nil, benchNow)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, filepath.Join(wt, "clusters", self, dirmanifest.FileName), string(sealed))
		git(wt, "commit", "-q", "-am", fmt.Sprintf("%s: pass %d", self, i))
	}
	var cp *verify.Checkpoint
	base := verify.Options{Now: benchNow, RequireManifests: true, Ref: "main", OnCheckpoint: func(c *verify.Checkpoint) { cp = c }}
	if findings, err := verify.Check(dir, spec, base); err != nil || len(findings) > 0 || cp == nil {
		b.Fatalf("the checkpoint's run: %v, %d findings", err, len(findings))
	}
	for _, mode := range []string{"full", "checkpoint"} {
		b.Run(mode, func(b *testing.B) {
			opts := verify.Options{Now: benchNow, RequireManifests: true, Ref: branch}
			var scope *verify.Scope
			var notes []string
			if mode == "checkpoint" {
				opts.Checkpoint = cp
				opts.OnScope = func(s verify.Scope) { scope = &s }
				opts.OnNote = func(s string) { notes = append(notes, s) }
			}
			var cpu time.Duration
			for b.Loop() {
				c0 := benchCPU()
				findings, err := verify.Check(dir, spec, opts)
				if err != nil {
					b.Fatal(err)
				}
				cpu += benchCPU() - c0
				if len(findings) > 0 {
					b.Fatalf("%d findings, first: %v", len(findings), findings[0])
				}
			}
			if mode == "checkpoint" && (scope == nil || len(notes) > 0) {
				b.Fatalf("not run from the checkpoint: %q", notes)
			}
			if scope != nil {
				b.Log(scope)
			}
			per := cpu / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "cpu-s")
			b.ReportMetric(float64(per.Microseconds())/1000/float64(m), "cpu-ms/peering")
		})
	}
}

// meshWorktree adds a worktree of the mesh's main on a new branch, so
// that the mesh's checkout is kept as it is for the next run, removed
// with the branch when b ends; git runs the git CLI as a bench author.
func meshWorktree(b *testing.B, dir, branch string) (git func(dir string, args ...string), wt string) {
	git = func(dir string, args ...string) {
		b.Helper()
		testgit.Git(b, dir, append([]string{"-c", "user.name=bench", "-c", "user.email=bench@example.com"}, args...)...)
	}
	wt = filepath.Join(b.TempDir(), "wt")
	// Whatever an earlier run left behind; these fail when it left nothing.
	testgit.Command(dir, "worktree", "prune").Run()
	testgit.Command(dir, "branch", "-D", branch).Run()
	git(dir, "worktree", "add", "-q", "-b", branch, wt, "main")
	b.Cleanup(func() {
		testgit.Command(dir, "worktree", "remove", "--force", wt).Run()
		testgit.Command(dir, "branch", "-D", branch).Run()
	})
	return git, wt
}
