package demo_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/demo"
)

var meshSizes = flag.String("mesh", "8", "comma-separated cluster counts of BenchmarkMesh (3 peerings per cluster); make bench-contention runs 20,50")

// BenchmarkMesh runs the mesh demo (gitpeer demo --clusters N --peerings
// 3N) through one bare repo on this machine, its reconcilers in turn and
// all at once, and reports per run the rounds until every peering was
// Ready, the commits, the push retries and the failed passes; ns/op is
// the whole run (publication, rounds, verify).
func BenchmarkMesh(b *testing.B) {
	var sizes []int
	for _, s := range strings.Split(*meshSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatalf("-mesh %q: %v", *meshSizes, err)
		}
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		for _, concurrent := range []bool{false, true} {
			mode := "in-turn"
			if concurrent {
				mode = "concurrent"
			}
			b.Run(fmt.Sprintf("clusters=%d/%s", n, mode), func(b *testing.B) {
				var tot demo.Totals
				for b.Loop() {
					rep, err := demo.Run(context.Background(), demo.Options{
						Dir: b.TempDir(), Clusters: n, Peerings: 3 * n, Concurrent: concurrent,
					}, io.Discard)
					if rep == nil {
						b.Fatal(err)
					}
					tot = rep.Totals()
					if err != nil {
						b.Errorf("%d clusters %s: %v (%+v)", n, mode, err, tot)
					}
				}
				b.ReportMetric(float64(tot.Rounds), "rounds")
				b.ReportMetric(float64(tot.Commits), "commits")
				b.ReportMetric(float64(tot.Retries), "retries")
				b.ReportMetric(float64(tot.Failed), "failed")
				b.ReportMetric(tot.Elapsed.Seconds(), "rounds-s")
			})
		}
	}
}
