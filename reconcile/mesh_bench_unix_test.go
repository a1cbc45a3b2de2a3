//go:build unix

package reconcile_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/backend/file"
	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/pins"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// meshSize is the mesh BenchmarkHandshakeMesh peers: GITPEER_BENCH_MESH as
// "<clusters>x<peerings>" (1000x10000 is the target size of issue 11), else
// 20x200 so that make bench stays short.
func meshSize(b *testing.B) (clusters, peerings int) {
	clusters, peerings = 20, 200
	if s := os.Getenv("GITPEER_BENCH_MESH"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &clusters, &peerings); err != nil || clusters < 2 || peerings < clusters {
			b.Fatalf("GITPEER_BENCH_MESH=%q: want <clusters>x<peerings>, peerings a multiple of clusters", s)
		}
	}
	return clusters, peerings
}

// meshSpec peers n clusters m times: cluster i consumes from the m/n
// clusters after it (mod n), so each takes part in 2m/n peerings.
func meshSpec(n, m int) string {
	var b strings.Builder
	b.WriteString("clusters: [\n")
	for i := range n {
		fmt.Fprintf(&b, "\t{id: \"c%04d\"},\n", i)
	}
	b.WriteString("]\npeerings: [\n")
	for i := range n {
		for j := 1; j <= m/n; j++ {
			fmt.Fprintf(&b, "\t{consumer: \"c%04d\", provider: \"c%04d\"},\n", i, (i+j)%n)
		}
	}
	b.WriteString("]\n")
	return b.String()
}

// BenchmarkHandshakeMesh measures the pass time of a whole handshake of a
// mesh (meshSize): every cluster's passes, providers first, in rounds until
// a round changes nothing, on a checkout on disk read through layout.Tree
// as the runner reads it. Git is not in it (gitsync's benchmarks are).
// Metrics are CPU time (the process's, so GC included; wall time on a
// shared machine says little): cpu-s/handshake (reconcile.Pass plus Diff,
// summed over all passes), cpu-ms/peering, and crypto-ratio: pass CPU per
// peering over the CPU of the handshake's crypto primitives for one
// peering measured in the same run (nonce signature and check, CSR and its
// check, CA signature, certificate check).
func BenchmarkHandshakeMesh(b *testing.B) {
	n, m := meshSize(b)
	spec, err := schema.Parse("peering.cue", []byte(meshSpec(n, m)))
	if err != nil {
		b.Fatal(err)
	}
	order := make([]string, n)
	for i := range n {
		order[i] = fmt.Sprintf("c%04d", i)
	}
	primitives := cryptoPerPeering(b)
	var total time.Duration
	passes := 0
	for b.Loop() {
		b.StopTimer()
		root := b.TempDir()
		tree := layout.NewTree(filepath.Join(root, "repo"))
		backends := map[string]*file.Backend{}
		stores := map[string]*pins.Store{}
		// One cache per cluster, as each cluster's runner keeps its own.
		caches := map[string]*reconcile.Cache{}
		for _, id := range order {
			be, _, err := file.Init(filepath.Join(root, "state", id), file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".example:6443", Now: now})
			if err != nil {
				b.Fatal(err)
			}
			be.Now = func() time.Time { return now }
			backends[id] = be
			caches[id] = reconcile.NewCache()
			info, err := be.ClusterInfo()
			if err != nil {
				b.Fatal(err)
			}
			files, err := layout.PublishFiles(tree, info)
			if err != nil {
				b.Fatal(err)
			}
			writeTree(b, root, files, nil)
		}
		b.StartTimer()
		for round := 0; ; round++ {
			if round == 10 {
				b.Fatal("no convergence in 10 rounds")
			}
			changed := false
			for _, id := range order {
				c0 := processCPU()
				out, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: spec, Tree: tree, Backend: backends[id], Now: now, Pins: stores[id], Cache: caches[id]})
				if err != nil {
					b.Fatal(err)
				}
				plan, err := reconcile.Diff(tree, id, out.Files)
				if err != nil {
					b.Fatal(err)
				}
				total += processCPU() - c0
				passes++
				stores[id] = out.Pins
				if !plan.Empty() {
					changed = true
					b.StopTimer()
					writeTree(b, root, plan.Writes, plan.Deletes)
					b.StartTimer()
				}
			}
			if !changed {
				break
			}
		}
	}
	perHandshake := total / time.Duration(b.N)
	perPeering := perHandshake / time.Duration(m)
	b.ReportMetric(perHandshake.Seconds(), "cpu-s/handshake")
	b.ReportMetric(float64(perPeering.Microseconds())/1000, "cpu-ms/peering")
	b.ReportMetric(float64(passes/b.N), "passes/handshake")
	b.ReportMetric(float64(perPeering)/float64(primitives), "crypto-ratio")
}

// writeTree applies writes and deletes (repo paths) to the checkout in
// root/repo.
func writeTree(b *testing.B, root string, writes map[string][]byte, deletes []string) {
	b.Helper()
	for _, p := range deletes {
		if err := os.RemoveAll(filepath.Join(root, "repo", filepath.FromSlash(p))); err != nil {
			b.Fatal(err)
		}
	}
	for p, data := range writes {
		full := filepath.Join(root, "repo", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// cryptoPerPeering times the handshake's crypto primitives for one peering
// (Ed25519 keys, as gitpeer's file backend makes them), averaged over runs.
func cryptoPerPeering(b *testing.B) time.Duration {
	b.Helper()
	dir := b.TempDir()
	cons, _, err := file.Init(filepath.Join(dir, "c"), file.InitOptions{ClusterID: "consumer", APIServer: "https://c.example:6443", Now: now})
	if err != nil {
		b.Fatal(err)
	}
	prov, _, err := file.Init(filepath.Join(dir, "p"), file.InitOptions{ClusterID: "provider", APIServer: "https://p.example:6443", Now: now})
	if err == nil {
		prov.Now = func() time.Time { return now }
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pubDER, err := x509.MarshalPKIXPublicKey(cons.Signer().Public())
	if err != nil {
		b.Fatal(err)
	}
	const runs = 50
	c0 := processCPU()
	for range runs {
		nonce := handshake.DeriveNonce([]byte("0123456789abcdef0123456789abcdef"), "consumer", 1)
		sig, err := handshake.SignNonce(cons.Signer(), nonce)
		if err != nil {
			b.Fatal(err)
		}
		if err := handshake.VerifyNonce(cons.Signer().Public(), nonce, sig); err != nil {
			b.Fatal(err)
		}
		csr, err := handshake.ControlPlaneCSR(cons.Signer(), "consumer")
		if err != nil {
			b.Fatal(err)
		}
		if err := handshake.CheckControlPlaneCSR(csr, pubDER, "consumer"); err != nil {
			b.Fatal(err)
		}
		cert, err := prov.SignCSR(ctx, csr, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if err := handshake.VerifyClientCertificate(cert, prov.CABundle(), pubDER, "consumer", "liqo.io", now); err != nil {
			b.Fatal(err)
		}
	}
	return (processCPU() - c0) / runs
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
