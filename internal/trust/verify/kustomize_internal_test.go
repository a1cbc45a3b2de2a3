package verify

import (
	"github.com/gitpeer/gitpeer/internal/reasons"
	"testing"
)

func TestReferencesKustomizeWouldFetchAreRemote(t *testing.T) {
	remote := []string{
		"https://github.com/mallory/manifests//evil?ref=main",
		"HTTP://example.com/crb.yaml",
		"github.com/mallory/manifests/evil",
		"GitHub.com:mallory/manifests",
		"git::https://example.com/repo.git",
		"ssh://git@example.com/repo.git",
		"git@github.com:mallory/manifests.git",
		"file:///etc/kubernetes",
		"example.com/mallory/manifests?ref=v1",
		"example.com/mallory/repo//path",
	}
	for _, r := range remote {
		if !isRemote(r) {
			t.Errorf("%q is not taken for remote", r)
		}
	}
	local := []string{"liqo/alpha/tenant-alpha.yaml", "../base", "liqo", "./a.yaml", "liqo/beta/identity-resourceslice-web.yaml"}
	for _, r := range local {
		if isRemote(r) {
			t.Errorf("%q is taken for remote", r)
		}
	}
}

func TestReferencesAreResolvedInsideTheClusterTree(t *testing.T) {
	cases := []struct {
		dir, ref, reason string
	}{
		{"clusters/alpha", "liqo/beta/identity.yaml", ""},
		{"clusters/alpha/overlay", "../liqo", ""},
		{"clusters/alpha", "inbox/beta/identity.yaml", reasons.OutsideReference},
		{"clusters/alpha/overlay", "../inbox", reasons.OutsideReference},
		{"clusters/alpha", "../beta/liqo", reasons.OutsideReference},
		{"clusters/alpha", "../alpha-evil/x.yaml", reasons.OutsideReference},
		{"clusters/alpha", "/etc/passwd", reasons.OutsideReference},
		{"clusters/alpha", "github.com/mallory/x", reasons.RemoteBase},
	}
	for _, tc := range cases {
		if _, reason, _ := classifyRef("clusters/alpha", tc.dir, tc.ref); reason != tc.reason {
			t.Errorf("%s in %s: %q, want %q", tc.ref, tc.dir, reason, tc.reason)
		}
	}
}
