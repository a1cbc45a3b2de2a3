//go:build unix

package reconcile_test

import (
	"context"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/test/meshbench"
)

// BenchmarkHandshakeMesh measures the pass time of a whole handshake of a
// mesh (meshbench.Size, default 20x200): every cluster's passes, providers
// first, in rounds until a round changes nothing, on a checkout on disk read
// through layout.Tree as the runner reads it. Git is not in it (gitsync's
// and runner's benchmarks are). Metrics are CPU time (the process's, so GC
// included; wall time on a shared machine says little): cpu-s/handshake
// (reconcile.Pass plus Diff, summed over all passes), cpu-ms/peering, and
// crypto-ratio: pass CPU per peering over the CPU of the handshake's crypto
// primitives for one peering measured in the same run (nonce signature and
// check, CSR and its check, CA signature, certificate check).
func BenchmarkHandshakeMesh(b *testing.B) {
	n, m := meshbench.Size(b, "20x200")
	primitives := cryptoPerPeering(b)
	var total, idle time.Duration
	passes := 0
	for b.Loop() {
		mesh := meshbench.Build(b, n, m, now, meshbench.Options{})
		total += mesh.PassCPU
		passes += mesh.Passes
		idle += mesh.RoundCPU[len(mesh.RoundCPU)-1]
	}
	perHandshake := total / time.Duration(b.N)
	perPeering := perHandshake / time.Duration(m)
	b.ReportMetric(perHandshake.Seconds(), "cpu-s/handshake")
	b.ReportMetric(float64(perPeering.Microseconds())/1000, "cpu-ms/peering")
	b.ReportMetric(float64(passes/b.N), "passes/handshake")
	b.ReportMetric(float64(perPeering)/float64(primitives), "crypto-ratio")
	b.ReportMetric(float64((idle/time.Duration(b.N*n)).Microseconds())/1000, "idle-cpu-ms/pass")
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
	c0 := meshbench.ProcessCPU()
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
	return (meshbench.ProcessCPU() - c0) / runs
}
