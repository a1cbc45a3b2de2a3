package reconcile_test

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// BenchmarkPassOverAFolderOfManyEntries measures one pass of a provider
// (reconcile.Pass and Diff, reading the tree from Git objects as the
// runner does) whose inbox folder of its settled consumer holds n unsigned
// files sharing one blob, as a repo writer committed them (issue 28, case
// 5: a million cost 330–430 s and ~880 MB a pass). The folder is above its
// entry cap (layout.MaxFolderEntries), so the pass refuses it from its
// tree object and stalls that peering alone: its cost must not follow n.
// The figures are per pass, each on a fresh TreeFS (decoded trees shared,
// as across a reconciler's passes).
func BenchmarkPassOverAFolderOfManyEntries(b *testing.B) {
	for _, n := range []int{20000, 200000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			w := newWorld(&testing.T{}, twoClusters)
			w.t = &testing.T{}
			w.converge("beta", "alpha")
			mt := gitsync.NewMemoryTree()
			ch := &gitsync.Change{Writes: map[string][]byte{}, Message: "settled\n"}
			for f, file := range w.tree {
				ch.Writes[f] = file.Data
			}
			dir := layout.ClusterPath("beta", layout.InboxDir, "alpha")
			for i := 0; i < n; i++ {
				ch.Writes[path.Join(dir, fmt.Sprintf("f%07d.yaml", i))] = []byte("kind: ConfigMap\n")
			}
			if err := mt.Apply(ch); err != nil {
				b.Fatal(err)
			}
			runtime.GC() // the setup's garbage is not the pass's
			in := reconcile.Input{Spec: w.spec, Backend: w.backends["beta"], Now: w.now, Pins: w.pins["beta"]}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				in.Tree = mt.FS()
				out, err := reconcile.Pass(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := reconcile.Diff(in.Tree, "beta", out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
