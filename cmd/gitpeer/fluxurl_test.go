package main

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestInitPrintsAURLFluxTakes: a clone whose origin is scp-like
// (git@github.com:org/peering.git, as GitHub's "Clone with SSH" shows it),
// or such a --repo-url, gets a GitRepository with the ssh:// URL of the same
// repository, which source-controller takes (it refuses scp-like
// addresses), and a note on stderr saying so.
func TestInitPrintsAURLFluxTakes(t *testing.T) {
	for _, tc := range []struct {
		name, origin, repoURL, want string
	}{
		{"an scp-like origin", "git@github.com:example-org/peering.git", "", "ssh://git@github.com/example-org/peering.git"},
		{"an scp-like --repo-url", "", "git@gitlab.example.org:/srv/git/peering.git", "ssh://git@gitlab.example.org/srv/git/peering.git"},
		{"an ssh:// origin, as it is", "ssh://git@github.com/example-org/peering.git", "", "ssh://git@github.com/example-org/peering.git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			work := filepath.Join(root, "work")
			git(t, root, "init", "-q", work)
			if tc.origin != "" {
				git(t, work, "remote", "add", "origin", tc.origin)
			}
			args := []string{"init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
				"--state-dir", filepath.Join(root, "state"), "--repo", work}
			if tc.repoURL != "" {
				args = append(args, "--repo-url", tc.repoURL)
			}
			code, out, stderr := gitpeer(t, args...)
			if code != 0 {
				t.Fatalf("init: exit %d\n%s", code, stderr)
			}
			var url string
			for _, doc := range strings.Split(out, "---\n") {
				var m struct {
					Kind string `json:"kind"`
					Spec struct {
						URL string `json:"url"`
					} `json:"spec"`
				}
				if yaml.Unmarshal([]byte(doc), &m) == nil && m.Kind == "GitRepository" {
					url = m.Spec.URL
				}
			}
			if url != tc.want {
				t.Errorf("the printed GitRepository reads %q, want %q\n%s", url, tc.want, out)
			}
			scp := tc.origin + tc.repoURL
			note := "note: " + scp + " is an scp-like address, which Flux refuses: the printed GitRepository uses " + tc.want
			if converted := url != scp; converted != strings.Contains(stderr, note) {
				t.Errorf("stderr does not say (only) when the address was converted, want %q:\n%s", note, stderr)
			}
		})
	}
}

func TestFluxURL(t *testing.T) {
	for in, want := range map[string]string{
		"git@github.com:org/peering.git":       "ssh://git@github.com/org/peering.git",
		"git.example.org:peering.git":          "ssh://git.example.org/peering.git",
		"git@host:/abs/peering.git":            "ssh://git@host/abs/peering.git",
		"ssh://git@host:2222/org/peering.git":  "ssh://git@host:2222/org/peering.git",
		"https://github.com/org/peering.git":   "https://github.com/org/peering.git",
		"ssh://git@github.com/org/peering.git": "ssh://git@github.com/org/peering.git",
	} {
		if got, _ := fluxURL(in); got != want {
			t.Errorf("fluxURL(%q) = %q, want %q", in, got, want)
		}
	}
}
