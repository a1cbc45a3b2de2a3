//go:build unix

package schema

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkParseLargeSpec validates the largest spec we expect (1,000
// clusters, 10,000 peerings; largeSpecs) in this process, as validate and
// every pass do inside the bounded evaluator: time per evaluation and the
// peak of the Go heap it reached (peak-heap-MiB), and the CPU time per
// evaluation (cpu-s, GC included), which a busy machine does not inflate
// as it does wall time.
func BenchmarkParseLargeSpec(b *testing.B) {
	// Measure what Parse costs outside the tests (walk_accepted_test.go).
	defer func(old bool) { walkAccepted = old }(walkAccepted)
	walkAccepted = false
	for name, src := range largeSpecs() {
		b.Run(name, func(b *testing.B) {
			var peak uint64
			c0 := cpuTime()
			for b.Loop() {
				runtime.GC()
				spec, err := Parse(name, []byte(src))
				if err != nil || len(spec.Peerings) != 10000 {
					b.Fatalf("Parse: %d peerings, %v", len(spec.Peerings), err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapSys)
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
