package gitsync

import (
	"context"
	"fmt"
	"testing"
)

// benchRepo seeds a remote with files spread over 20 cluster directories, the
// shape of a peering repo with a few dozen peerings.
func benchRepo(b *testing.B, files int) *Repo {
	b.Helper()
	bare := newBare(b)
	seed := map[string][]byte{}
	for i := range files {
		seed[fmt.Sprintf("clusters/cl-%02d/inbox/cl-%02d/artifact-%03d.yaml", i%20, (i/20)%10, i)] =
			[]byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a%d\ndata:\n  n: %q\n", i, fmt.Sprint(i)))
	}
	if _, err := Seed(context.Background(), testOptions(b, bare, "seed"), seed, "seed"); err != nil {
		b.Fatal(err)
	}
	return openRepo(b, bare, "bench")
}

// BenchmarkSync measures one full pass that changes one file: fetch, reset,
// pass, guard, commit and push (git-receive-pack over file://).
func BenchmarkSync(b *testing.B) {
	r := benchRepo(b, 200)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := r.SyncTree(context.Background(), writes("status", map[string]string{
			"clusters/cl-00/status.yaml": fmt.Sprintf("generation: %d\n", i),
		}))
		if err != nil || res.Commit == "" {
			b.Fatalf("Sync = %+v, %v", res, err)
		}
	}
}

// BenchmarkSyncNoChange measures the common steady-state pass: fetch and
// reset, a pass rewriting 20 identical files, and no commit.
func BenchmarkSyncNoChange(b *testing.B) {
	r := benchRepo(b, 200)
	same := map[string]string{}
	for i := range 20 {
		same[fmt.Sprintf("clusters/cl-%02d/inbox/cl-%02d/artifact-%03d.yaml", i%20, (i/20)%10, i)] =
			fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a%d\ndata:\n  n: %q\n", i, fmt.Sprint(i))
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := r.SyncTree(context.Background(), writes("noop", same))
		if err != nil || res.Commit != "" {
			b.Fatalf("Sync = %+v, %v", res, err)
		}
	}
}

// BenchmarkSyncTreeBySize measures, on repos of growing size, what a
// SyncTree pass costs that changes nothing (idle) and one that changes 20
// files of one cluster (working): both should follow the change, not the
// repo.
func BenchmarkSyncTreeBySize(b *testing.B) {
	for _, files := range []int{2000, 20000} {
		r := benchRepo(b, files)
		idle := func(context.Context, *TreeFS) (*Change, error) { return nil, nil }
		if _, err := r.SyncTree(context.Background(), idle); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("files=%d/idle", files), func(b *testing.B) {
			for b.Loop() {
				if res, err := r.SyncTree(context.Background(), idle); err != nil || res.Commit != "" {
					b.Fatalf("SyncTree = %+v, %v", res, err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/working", files), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				res, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
					ch := &Change{Writes: map[string][]byte{}, Message: "status"}
					for j := range 20 {
						ch.Writes[fmt.Sprintf("clusters/cl-00/liqo/p%02d/status.yaml", j)] = fmt.Appendf(nil, "generation: %d\n", i)
					}
					return ch, nil
				})
				if err != nil || res.Commit == "" {
					b.Fatalf("SyncTree = %+v, %v", res, err)
				}
			}
		})
	}
}
