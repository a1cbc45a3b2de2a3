package codeowners

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

var spec = &schema.Spec{
	Owners: []string{"@acme/platform"},
	Clusters: []schema.Cluster{
		{ID: "alpha", Owners: []string{"@acme/alpha", "@ann"}},
		{ID: "inbox", Owners: []string{"@acme/inbox"}}, // a cluster named like the directory
		{ID: "in", Owners: []string{"@acme/in"}},
		{ID: "gamma"},
	},
}

// paths are files each cluster may write, and a few nobody does.
var paths = []string{
	"peering.cue", "CODEOWNERS", "README.md",
	"clusters/alpha/cluster.yaml", "clusters/alpha/liqo/inbox/tenant-inbox.yaml", "clusters/alpha/inboxes/x",
	"clusters/alpha/in/x", "clusters/alpha/inbo", "clusters/alpha/i/x",
	"clusters/alpha/inbox/in/nonce.yaml", "clusters/alpha/inbox/inbox/tenant.yaml", "clusters/alpha/inbox/gamma/tenant.yaml",
	"clusters/inbox/status.yaml", "clusters/inbox/inbox/alpha/identity.yaml", "clusters/inbox/inbox/gamma/nonce.yaml",
	"clusters/in/liqo/alpha/identity-controlplane-alpha.yaml", "clusters/in/inbox/alpha/nonce.yaml",
	"clusters/gamma/status.yaml", "clusters/gamma/inbox/alpha/nonce.yaml",
}

// want is who should own p: the spec's owners for the spec and this file,
// else the owners of the cluster that may write p (layout.Writable).
func want(p string, host Host) []string {
	if p == "peering.cue" || p == "CODEOWNERS" {
		return spec.Owners
	}
	for _, c := range spec.Clusters {
		if layout.Writable(c.ID, p) {
			if len(c.Owners) == 0 {
				// GitLab lets an unowned writer's inbox fall to the tree's owner.
				if _, from, _, _ := layout.Split(p); host == GitLab && from != "" {
					cluster, _, _, _ := layout.Split(p)
					owners := must(spec.Cluster(cluster)).Owners
					return owners
				}
			}
			return c.Owners
		}
	}
	return nil
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("not found")
	}
	return v
}

// TestOwnersAreTheWriters reads each host's file back as that host does and
// checks that every path is owned by the owners of the cluster that writes it.
func TestOwnersAreTheWriters(t *testing.T) {
	for _, host := range Hosts {
		t.Run(string(host), func(t *testing.T) {
			out, err := Render(spec, Options{SpecFile: "peering.cue", Host: host})
			if err != nil {
				t.Fatal(err)
			}
			owners := readGlobs
			if host == Gitea {
				owners = readGitea
			}
			for _, p := range paths {
				got, err := owners(string(out), p)
				if err != nil {
					t.Fatal(err)
				}
				if w := want(p, host); !reflect.DeepEqual(got, w) && !(len(got) == 0 && len(w) == 0) {
					t.Errorf("%s: owned by %v, want %v\n%s", p, got, w, out)
				}
			}
		})
	}
}

// readGlobs is GitHub's and GitLab's reading, for the patterns Render
// writes: the last matching line's owners.
func readGlobs(file, p string) ([]string, error) {
	var owners []string
	for _, l := range strings.Split(file, "\n") {
		fields := strings.Fields(l)
		if len(fields) == 0 || strings.HasPrefix(l, "#") {
			continue
		}
		pat, ok := strings.CutPrefix(fields[0], "/")
		if !ok {
			return nil, fmt.Errorf("unanchored pattern %q", fields[0])
		}
		var match bool
		if dir, isDir := strings.CutSuffix(pat, "/"); isDir {
			segs := strings.Split(dir, "/")
			ps := strings.Split(p, "/")
			if len(ps) > len(segs) {
				m, err := path.Match(dir, strings.Join(ps[:len(segs)], "/"))
				if err != nil {
					return nil, err
				}
				match = m
			}
		} else {
			m, err := path.Match(pat, p)
			if err != nil {
				return nil, err
			}
			match = m
		}
		if match {
			owners = fields[1:]
		}
	}
	return owners, nil
}

// readGitea is Gitea's reading: each line's first token unescaped ("\\" is
// one backslash, "\ " and "\#" a space and a hash) and anchored as ^…$;
// every matching line's owners, in order, each once.
func readGitea(file, p string) ([]string, error) {
	var owners []string
	for _, l := range strings.Split(file, "\n") {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		fields := strings.Fields(l)
		re, err := regexp.Compile("^" + strings.NewReplacer(`\\`, `\`, `\ `, " ", `\#`, "#").Replace(fields[0]) + "$")
		if err != nil {
			return nil, err
		}
		if re.MatchString(p) {
			for _, o := range fields[1:] {
				if !slices.Contains(owners, o) {
					owners = append(owners, o)
				}
			}
		}
	}
	return owners, nil
}

func TestNotSegment(t *testing.T) {
	re := regexp.MustCompile("^(" + notSegment("inbox") + ")$")
	for _, s := range []string{"i", "in", "inb", "inbo", "inboxes", "x", "liqo", "status.yaml", "inbax", "ibox"} {
		if !re.MatchString(s) {
			t.Errorf("%q is not inbox, but does not match", s)
		}
	}
	for _, s := range []string{"inbox", "", "a/b", "inbox/x"} {
		if re.MatchString(s) {
			t.Errorf("%q matches", s)
		}
	}
}

func TestRenderEscapesFileNames(t *testing.T) {
	s := &schema.Spec{Owners: []string{"@o"}}
	for _, tc := range []struct {
		host Host
		file string
		line string
	}{
		{GitHub, "docs/CODE OWNERS", `/docs/CODE\ OWNERS @o`},
		{GitHub, "#CODEOWNERS", `/#CODEOWNERS @o`},
		{Gitea, ".gitea/CODEOWNERS", `\\.gitea/CODEOWNERS @o`},
	} {
		out, err := Render(s, Options{SpecFile: "peering.cue", File: tc.file, Host: tc.host})
		if err != nil || !strings.Contains(string(out), "\n"+tc.line+"\n") {
			t.Errorf("%s %q: %v, want line %q in\n%s", tc.host, tc.file, err, tc.line, out)
		}
	}
}

func TestRenderRefusesOwnersAHostCannotName(t *testing.T) {
	for _, tc := range []struct {
		host  Host
		owner string
		ok    bool
	}{
		{GitHub, "@org/team", true}, {GitHub, "a@example.com", true}, {GitHub, "@group/sub/team", false},
		{GitLab, "@group/sub/team", true}, {GitLab, "a@example.com", true},
		{Gitea, "@org/team", true}, {Gitea, "a@example.com", false}, {Gitea, "@group/sub/team", false},
	} {
		_, err := Render(&schema.Spec{Clusters: []schema.Cluster{{ID: "a", Owners: []string{tc.owner}}}}, Options{SpecFile: "peering.cue", Host: tc.host})
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok=%v", tc.host, tc.owner, err, tc.ok)
		}
	}
}
