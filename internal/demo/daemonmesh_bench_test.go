package demo_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

var daemonMesh = flag.Int("daemons", 0, "BenchmarkDaemonMesh's cluster count, one `gitpeer reconcile` daemon each (3 peerings per cluster); 0 skips it; make bench-daemons runs 20")

// BenchmarkDaemonMesh is issue 32's mesh of daemons: N clusters, each a
// `gitpeer reconcile` process with the default flags (--interval 1m,
// --poll-interval 5s; file backend, --metrics-addr to watch it), against
// one bare repo served over smart HTTP on loopback (git http-backend, as
// hack/gitserve). The daemons start on a spec of clusters and no peering;
// once each has run a pass that changed nothing, one commit (the merge)
// adds 3N peerings, and the benchmark reports the seconds from that push
// until every peering is Ready on both sides (gitpeer_peering_ready on
// every daemon), the passes that failed, the commits and push retries.
func BenchmarkDaemonMesh(b *testing.B) {
	n := *daemonMesh
	if n == 0 {
		b.Skip("-daemons 0: run with make bench-daemons")
	}
	if n < 4 {
		b.Fatalf("-daemons %d: at least 4, so that the mesh's %d peerings are distinct pairs", n, 3*n)
	}
	gp, err := e2eharness.GitpeerBinary(context.Background(), filepath.Join("..", ".."), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := runDaemonMesh(b, gp, n)
		b.ReportMetric(r.ready.Seconds(), "merge-to-all-Ready-s")
		b.ReportMetric(r.firstReady.Seconds(), "merge-to-first-Ready-s")
		b.ReportMetric(r.failed, "failed")
		b.ReportMetric(r.commits, "commits")
		b.ReportMetric(r.retries, "retries")
	}
}

type daemonMeshResult struct {
	ready, firstReady        time.Duration
	failed, commits, retries float64
}

func runDaemonMesh(b *testing.B, gp string, n int) daemonMeshResult {
	root := b.TempDir()
	ids := demo.MeshClusterIDs(n)
	peerings := 3 * n
	git := func(dir string, args ...string) string { return testgit.Git(b, dir, args...) }

	bare := filepath.Join(root, "srv", "peering.git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		b.Fatal(err)
	}
	testgit.Bare(b, bare)
	handler, err := testgit.HTTPBackend(filepath.Join(root, "srv"), "", true, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	url := srv.URL + "/peering.git"

	work := filepath.Join(root, "work")
	git(root, "init", "--quiet", "--initial-branch=main", work)
	writeSpec := func(p int) {
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(demo.MeshSpec(ids, p)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	writeSpec(0)
	state := func(id string) string { return filepath.Join(root, "state", id) }
	for _, id := range ids {
		if out, err := exec.Command(gp, "init", "--cluster", id, "--api-server", "https://"+id+".example:6443",
			"--state-dir", state(id), "--repo", work).CombinedOutput(); err != nil {
			b.Fatalf("gitpeer init %s: %v\n%s", id, err, out)
		}
	}
	git(work, "add", "-A")
	git(work, "commit", "--quiet", "-m", "the clusters")
	git(work, "push", "--quiet", url, "main")

	type daemon struct {
		id, metrics, log string
		exited           chan struct{}
	}
	ds := make([]*daemon, len(ids))
	for i, id := range ids {
		d := &daemon{id: id, metrics: testgit.FreeLoopbackAddr(b), log: filepath.Join(root, id+".log"), exited: make(chan struct{})}
		f, err := os.Create(d.log)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(gp, "reconcile", "--cluster", id, "--repo", url, "--state-dir", state(id), "--metrics-addr", d.metrics)
		cmd.Stdout, cmd.Stderr = f, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() { _ = cmd.Wait(); f.Close(); close(d.exited) }()
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-d.exited
			}
		}()
		ds[i] = d
	}
	client := &http.Client{Timeout: 5 * time.Second}
	series := regexp.MustCompile(`(?m)^(gitpeer_[a-z_]+)(\{[^}]*\})? (\S+)$`)
	// sum adds up, over the daemon's /metrics, the series named name whose
	// labels contain label (and value 1 only, when ones).
	scrape := func(d *daemon) string {
		resp, err := client.Get("http://" + d.metrics + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	sum := func(body, name, label string) float64 {
		var s float64
		for _, m := range series.FindAllStringSubmatch(body, -1) {
			if m[1] == name && strings.Contains(m[2], label) {
				v, _ := strconv.ParseFloat(m[3], 64)
				s += v
			}
		}
		return s
	}
	each := func(f func(d *daemon, body string)) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, d := range ds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := scrape(d)
				mu.Lock()
				defer mu.Unlock()
				f(d, body)
			}()
		}
		wg.Wait()
	}
	alive := func() {
		for _, d := range ds {
			select {
			case <-d.exited:
				log, _ := os.ReadFile(d.log)
				b.Fatalf("daemon %s exited:\n%s", d.id, log)
			default:
			}
		}
	}

	// Settled: every daemon has run a pass that changed nothing (its own
	// first commit is behind it, and it has seen the others' polls).
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		alive()
		settled := 0
		each(func(_ *daemon, body string) {
			if sum(body, "gitpeer_passes_total", `result="unchanged"`) >= 1 {
				settled++
			}
		})
		if settled == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d daemons settled in 5 minutes", settled, n)
		}
	}
	var failed0, commits0, retries0 float64
	each(func(_ *daemon, body string) {
		failed0 += sum(body, "gitpeer_passes_total", `result="failed"`)
		commits0 += sum(body, "gitpeer_commits_total", "")
		retries0 += sum(body, "gitpeer_push_retries_total", "")
	})
	load0, _ := os.ReadFile("/proc/loadavg")

	// The merge, on top of the daemons' first commits.
	git(work, "pull", "--quiet", "--ff-only", url, "main")
	writeSpec(peerings)
	git(work, "commit", "--quiet", "-am", fmt.Sprintf("peer the mesh: %d peerings", peerings))
	merged := time.Now()
	git(work, "push", "--quiet", url, "main")

	var r daemonMeshResult
	want := float64(2 * peerings) // each peering's consumer and provider side
	for deadline := merged.Add(10 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		alive()
		var ready float64
		each(func(_ *daemon, body string) {
			ready += sum(body, "gitpeer_peering_ready", "")
		})
		if ready > 0 && r.firstReady == 0 {
			r.firstReady = time.Since(merged)
		}
		if ready >= want {
			r.ready = time.Since(merged)
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%v of %v peering sides Ready 10 minutes after the merge", ready, want)
		}
	}
	each(func(_ *daemon, body string) {
		r.failed += sum(body, "gitpeer_passes_total", `result="failed"`)
		r.commits += sum(body, "gitpeer_commits_total", "")
		r.retries += sum(body, "gitpeer_push_retries_total", "")
	})
	r.failed -= failed0
	r.commits -= commits0
	r.retries -= retries0
	load1, _ := os.ReadFile("/proc/loadavg")
	b.Logf("%d daemons, %d peerings: all Ready %.1f s after the merge (first side Ready %.1f s), %v failed passes, %v commits, %v push retries; load %s -> %s",
		n, peerings, r.ready.Seconds(), r.firstReady.Seconds(), r.failed, r.commits, r.retries,
		strings.Join(strings.Fields(string(load0))[:3], " "), strings.Join(strings.Fields(string(load1))[:3], " "))
	return r
}
