package layout_test

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

func TestPathsAreBuiltUnderClusters(t *testing.T) {
	cases := []struct{ got, want string }{
		{layout.ClusterPath("alpha", layout.ClusterFile), "clusters/alpha/cluster.yaml"},
		{layout.ClusterPath("alpha"), "clusters/alpha"},
		{layout.InboxPath("alpha", "beta", layout.NonceFile), "clusters/alpha/inbox/beta/nonce.yaml"},
		{layout.PeerDir("beta", "alpha"), "clusters/beta/liqo/alpha"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSplitNamesTheOwningTreeAndTheSender(t *testing.T) {
	cases := []struct {
		name                string
		path                string
		cluster, from, rest string
		ok                  bool
	}{
		{"a file of the cluster's own tree", "clusters/alpha/cluster.yaml", "alpha", "", "cluster.yaml", true},
		{"a rendered object", "clusters/alpha/liqo/beta/tenant-beta.yaml", "alpha", "", "liqo/beta/tenant-beta.yaml", true},
		{"an inbox artifact", "clusters/alpha/inbox/beta/nonce.yaml", "alpha", "beta", "nonce.yaml", true},
		{"a nested inbox artifact", "clusters/alpha/inbox/beta/sub/x.yaml", "alpha", "beta", "sub/x.yaml", true},
		{"a path outside clusters/", "peering.cue", "", "", "", false},
		{"the clusters directory itself", "clusters/alpha", "", "", "", false},
		{"an empty cluster name", "clusters//cluster.yaml", "", "", "", false},
		{"an inbox without a sender", "clusters/alpha/inbox", "", "", "", false},
		{"a sender folder without a file", "clusters/alpha/inbox/beta", "", "", "", false},
		{"an empty sender name", "clusters/alpha/inbox//nonce.yaml", "", "", "", false},
		{"another top-level directory", "docs/alpha/cluster.yaml", "", "", "", false},
	}
	for _, tc := range cases {
		t.Run("splits "+tc.name, func(t *testing.T) {
			cluster, from, rest, ok := layout.Split(tc.path)
			if cluster != tc.cluster || from != tc.from || rest != tc.rest || ok != tc.ok {
				t.Errorf("Split(%q) = %q, %q, %q, %t; want %q, %q, %q, %t",
					tc.path, cluster, from, rest, ok, tc.cluster, tc.from, tc.rest, tc.ok)
			}
		})
	}
}

// TestOwnershipRule is the rule two concurrent reconcilers rely on: a
// cluster writes only under clusters/<self>/ except its own inbox, and in
// its own folder of every other cluster's inbox.
func TestOwnershipRule(t *testing.T) {
	cases := []struct {
		name     string
		self     string
		path     string
		writable bool
	}{
		{"its cluster.yaml is its own (carried over as published)", "alpha", "clusters/alpha/cluster.yaml", true},
		{"its kustomization is recomputed", "alpha", "clusters/alpha/kustomization.yaml", true},
		{"its status is recomputed", "alpha", "clusters/alpha/status.yaml", true},
		{"its rendered objects are recomputed", "alpha", "clusters/alpha/liqo/beta/tenant-beta.yaml", true},
		{"a human's file in its tree is its to remove", "alpha", "clusters/alpha/README.md", true},
		{"a file named like the liqo directory is its to remove", "alpha", "clusters/alpha/liqo.yaml", true},
		{"its folder in a peer's inbox is its own", "alpha", "clusters/beta/inbox/alpha/tenant.yaml", true},
		{"its own inbox is written by others", "alpha", "clusters/alpha/inbox/beta/nonce.yaml", false},
		{"its own folder in its own inbox is nobody's", "alpha", "clusters/alpha/inbox/alpha/nonce.yaml", false},
		{"another sender's folder in a peer's inbox is not its", "alpha", "clusters/beta/inbox/gamma/tenant.yaml", false},
		{"a peer's tree is not its", "alpha", "clusters/beta/status.yaml", false},
		{"a peer's cluster.yaml is not its", "alpha", "clusters/beta/cluster.yaml", false},
		{"the spec is humans'", "alpha", "peering.cue", false},
		{"a cluster whose name prefixes another's owns only its own", "alpha", "clusters/alpha2/status.yaml", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := layout.Writable(tc.self, tc.path); got != tc.writable {
				t.Errorf("Writable(%q, %q) = %t, want %t", tc.self, tc.path, got, tc.writable)
			}
		})
	}
}

// TestTwoClustersNeverOwnTheSamePath checks the rule's consequence over
// every path shape of a three-cluster repo.
func TestTwoClustersNeverOwnTheSamePath(t *testing.T) {
	ids := []string{"alpha", "beta", "gamma"}
	var paths []string
	for _, to := range ids {
		paths = append(paths,
			layout.ClusterPath(to, layout.ClusterFile),
			layout.ClusterPath(to, layout.KustomizationFile),
			layout.ClusterPath(to, layout.StatusFile),
			layout.PeerDir(to, "x")+"/obj.yaml")
		for _, from := range ids {
			paths = append(paths, layout.InboxPath(to, from, layout.TenantFile))
		}
	}
	for _, p := range paths {
		var owners []string
		for _, id := range ids {
			if layout.Writable(id, p) {
				owners = append(owners, id)
			}
		}
		_, from, _, _ := layout.Split(p)
		cluster, _, _, _ := layout.Split(p)
		switch {
		case from == cluster && len(owners) != 0:
			t.Errorf("%s (a cluster's folder in its own inbox) is writable by %v", p, owners)
		case from != cluster && len(owners) != 1:
			t.Errorf("%s is writable by %v, want exactly one cluster", p, owners)
		}
	}
}

func TestClusterIDs(t *testing.T) {
	cases := []struct {
		name  string
		id    string
		valid bool
	}{
		{"accepts a short lowercase ID", "alpha", true},
		{"accepts digits and inner hyphens", "cl-1-consumer", true},
		{"accepts 51 characters", strings.Repeat("a", 51), true},
		{"refuses 52 characters, since liqo-tenant-<id> would not fit 63", strings.Repeat("a", 52), false},
		{"refuses uppercase", "Alpha", false},
		{"refuses an underscore", "cl_consumer", false},
		{"refuses a dot", "cl.consumer", false},
		{"refuses a leading hyphen", "-alpha", false},
		{"refuses a trailing hyphen", "alpha-", false},
		{"refuses the empty ID", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := layout.CheckClusterID(tc.id)
			if (err == nil) != tc.valid {
				t.Fatalf("CheckClusterID(%q) = %v, want valid=%t", tc.id, err, tc.valid)
			}
			if err != nil && !strings.Contains(err.Error(), tc.id) {
				t.Errorf("error %q does not name the ID", err)
			}
		})
	}
}

func TestAPIServerURLs(t *testing.T) {
	cases := []struct {
		url   string
		valid bool
	}{
		{"https://alpha.example:6443", true},
		{"https://10.0.0.1", true},
		{"http://alpha.example:6443", false},
		{"alpha.example:6443", false},
		{"https://", false},
		{"", false},
		{"https://%zz", false},
	}
	for _, tc := range cases {
		if err := layout.CheckAPIServer(tc.url); (err == nil) != tc.valid {
			t.Errorf("CheckAPIServer(%q) = %v, want valid=%t", tc.url, err, tc.valid)
		}
	}
}
