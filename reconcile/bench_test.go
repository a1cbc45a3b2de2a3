package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/reconcile"
)

// BenchmarkProviderPassHub measures one pass of a hub provider over n settled
// peerings (each with one granted slice): the steady state a long-running
// reconciler spends its time in. Nothing is signed in the measured passes.
func BenchmarkProviderPassHub(b *testing.B) {
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("consumers=%d", n), func(b *testing.B) {
			var clusters, peerings []string
			order := []string{"hub"}
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("c%03d", i)
				clusters = append(clusters, fmt.Sprintf(`{id: %q}`, id))
				peerings = append(peerings, fmt.Sprintf(`{consumer: %q, provider: "hub", slices: [{name: "s", resources: {cpu: "1"}}]}`, id))
				order = append(order, id)
			}
			spec := fmt.Sprintf("clusters: [{id: \"hub\"}, %s]\npeerings: [%s]\n", strings.Join(clusters, ", "), strings.Join(peerings, ", "))
			w := newWorld(&testing.T{}, spec)
			w.t = &testing.T{}
			w.converge(order...)
			in := reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["hub"], Now: w.now}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, err := reconcile.Pass(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				if plan, _ := reconcile.Diff(w.tree, "hub", out); !plan.Empty() {
					b.Fatal("steady state changed")
				}
			}
		})
	}
}
