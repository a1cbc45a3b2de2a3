package artifact

import "testing"

// TestInboxArtifactIsTheWholeList: a provider sends nonce.yaml,
// identity.yaml and slice answers; a consumer tenant.yaml and slice
// requests; both sign manifest.yaml, which also stays when the spec ends
// their parts (a tombstone of the withdrawn folder). Anything else (a ClusterRoleBinding, a
// kustomization, a file in a subfolder, another part's artifact) is not an
// artifact, whoever writes it.
func TestInboxArtifactIsTheWholeList(t *testing.T) {
	provider, consumer, both, none := Sender{Provider: true}, Sender{Consumer: true}, Sender{true, true}, Sender{}
	for _, tc := range []struct {
		name string
		want [4]bool // provider, consumer, both, none
	}{
		{"manifest.yaml", [4]bool{true, true, true, true}},
		{"nonce.yaml", [4]bool{true, false, true, false}},
		{"identity.yaml", [4]bool{true, false, true, false}},
		{"resourceslice-pool.status.yaml", [4]bool{true, false, true, false}},
		{"tenant.yaml", [4]bool{false, true, true, false}},
		{"resourceslice-pool.yaml", [4]bool{false, true, true, false}},
		{"clusterrolebinding-evil.yaml", [4]bool{}},
		{"kustomization.yaml", [4]bool{}},
		{"README.md", [4]bool{}},
		{"resourceslice-.yaml", [4]bool{}},
		{"resourceslice-a.b.yaml", [4]bool{}},
		{"sub/nonce.yaml", [4]bool{}},
		{"sub/resourceslice-pool.yaml", [4]bool{}},
		{"Nonce.yaml", [4]bool{}},
		{"nonce.yml", [4]bool{}},
	} {
		for i, from := range []Sender{provider, consumer, both, none} {
			if got := InboxArtifact(tc.name, from); got != tc.want[i] {
				t.Errorf("InboxArtifact(%q, %+v) = %t, want %t", tc.name, from, got, tc.want[i])
			}
		}
	}
}

func TestInboxArtifactsNamesThePart(t *testing.T) {
	for _, tc := range []struct {
		from       Sender
		names, who string
	}{
		{Sender{Provider: true}, "nonce.yaml, identity.yaml, resourceslice-<name>.status.yaml", "beta's provider"},
		{Sender{Consumer: true}, "tenant.yaml, resourceslice-<name>.yaml", "beta's consumer"},
		{Sender{true, true}, "nonce.yaml, identity.yaml, resourceslice-<name>.status.yaml, tenant.yaml, resourceslice-<name>.yaml", "beta's provider and consumer"},
		{Sender{}, "none", "no peer of beta"},
	} {
		if got := InboxArtifacts(tc.from); got != tc.names {
			t.Errorf("InboxArtifacts(%+v) = %q, want %q", tc.from, got, tc.names)
		}
		if got := tc.from.Part("beta"); got != tc.who {
			t.Errorf("Part(%+v) = %q, want %q", tc.from, got, tc.who)
		}
	}
}
