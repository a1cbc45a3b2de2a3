package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReconcileOfAClusterNotPublishedOrNotInTheSpecSaysWhatToDo: a
// cluster whose own cluster.yaml is not on the branch yet (the spec names
// it before its init commit is merged), and one the spec does not name (a
// new cluster, or a mistyped --cluster), fail every pass; the error says
// what its admin does, not only what is missing.
func TestReconcileOfAClusterNotPublishedOrNotInTheSpecSaysWhatToDo(t *testing.T) {
	root, remote, _ := peeringRepo(t, `clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma", provider: "beta"}]
`)
	for _, tc := range []struct{ id, want string }{
		{"gamma", "gitpeer: cluster gamma: pass: own cluster info: clusters/gamma/cluster.yaml: cluster not published yet: " +
			"publish it with gitpeer init --cluster gamma --repo CLONE (with this cluster's state dir or kube context), commit clusters/gamma/ and get it merged"},
		{"delta", `gitpeer: cluster delta: pass: cluster "delta" is not declared in the spec: ` +
			`check the cluster ID (--cluster, or Liqo's), or add {id: "delta"} to the spec's clusters, with its peerings, and get that merged`},
	} {
		t.Run(tc.id, func(t *testing.T) {
			state := filepath.Join(root, "state", tc.id)
			// init without --repo: the cluster's state, nothing published.
			if code, _, stderr := gitpeer(t, "init", "--cluster", tc.id, "--api-server", "https://"+tc.id+".example:6443", "--state-dir", state); code != 0 {
				t.Fatalf("init %s: %s", tc.id, stderr)
			}
			code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", tc.id, "--repo", remote, "--state-dir", state)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("reconcile %s: exit %d, want non-zero and\n%s\ngot:\n%s%s", tc.id, code, tc.want, out, stderr)
			}
		})
	}
}
