package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := gitpeer(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			want := []*regexp.Regexp{
				regexp.MustCompile(`^gitpeer: \S+$`),
				regexp.MustCompile(`^revision: \S+$`),
				regexp.MustCompile(`^go: ` + regexp.QuoteMeta(runtime.Version()) + `$`),
				regexp.MustCompile(`^go-git: v5\.\d+\.\d+`),
				regexp.MustCompile(`^liqo: v\d+\.\d+\.\d+`),
			}
			if len(lines) != len(want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
			}
			for i, re := range want {
				if !re.MatchString(lines[i]) {
					t.Errorf("line %d %q does not match %s", i+1, lines[i], re)
				}
			}
		})
	}
}

func TestVersionSetAtBuildTime(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version = "v1.2.3-4-gabcdef0-dirty"
	revision = "abcdef0123456789abcdef0123456789abcdef01"
	lines := strings.SplitN(versionText(), "\n", 3)
	if lines[0] != "gitpeer: v1.2.3-4-gabcdef0-dirty" || lines[1] != "revision: abcdef0123456789abcdef0123456789abcdef01" {
		t.Errorf("first lines %q", lines[:2])
	}
	if got := versionObject(); got["gitpeer"] != version || got["revision"] != revision {
		t.Errorf("-o json's object: %v", got)
	}
}

// TestVersionNamesTheRevisionOfEveryBuild: whichever way gitpeer was built,
// version names the commit when the build recorded one: make build's -X
// flags; the toolchain's VCS stamp in a checkout (-buildvcs), "-dirty" with
// uncommitted changes; go install …@<commit>, whose pseudo-version carries
// the commit's prefix. A tagged go install names its tag and no commit.
func TestVersionNamesTheRevisionOfEveryBuild(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name             string
		xVersion, xRev   string
		bi               *debug.BuildInfo
		version, wantRev string
	}{
		{"make build (-X)", "6854991-dirty", sha, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "6854991-dirty", sha},
		{"go build -buildvcs in a clean checkout", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-0123456789ab"}, Settings: vcs(sha, "false")}, "v0.0.0-20260101120000-0123456789ab", sha},
		{"go build -buildvcs with uncommitted changes", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(sha, "true")}, "dev", sha + "-dirty"},
		{"go install module@commit", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260714093000-6854991c0ffe"}}, "v0.0.0-20260714093000-6854991c0ffe", "6854991c0ffe"},
		{"go install module@commit after a tag", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.1-0.20260714093000-6854991c0ffe"}}, "v0.2.1-0.20260714093000-6854991c0ffe", "6854991c0ffe"},
		{"go install module@tag", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0", "unknown"},
		{"go build -buildvcs=false", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "unknown"},
		{"no build info", "dev", "", nil, "dev", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolveVersion(tc.xVersion, tc.bi); got != tc.version {
				t.Errorf("version %q, want %q", got, tc.version)
			}
			if got := resolveRevision(tc.xRev, tc.bi); got != tc.wantRev {
				t.Errorf("revision %q, want %q", got, tc.wantRev)
			}
		})
	}
}

// TestVersionAsJSONAndYAML: -o json and -o yaml print the versions of the
// text as one object, for scripts; another format is refused.
func TestVersionAsJSONAndYAML(t *testing.T) {
	_, text, _ := gitpeer(t, "version")
	want := map[string]string{}
	keys := map[string]string{"gitpeer": "gitpeer", "revision": "revision", "go": "go", "go-git": "goGit", "liqo": "liqo"}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		name, v, _ := strings.Cut(line, ": ")
		want[keys[name]] = v
	}
	for _, format := range []string{"json", "yaml"} {
		code, out, stderr := gitpeer(t, "version", "-o", format)
		got := map[string]string{}
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(out), &got)
		} else {
			err = yaml.UnmarshalStrict([]byte(out), &got)
		}
		if code != 0 || err != nil || len(got) != 5 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("version -o %s: exit %d %v\n%s%s\nwant %v", format, code, err, out, stderr, want)
		}
	}
	if code, _, stderr := gitpeer(t, "version", "-o", "xml"); code != 1 || !strings.Contains(stderr, `-o: "xml" is not one of text, json, yaml`) {
		t.Errorf("version -o xml: exit %d %s", code, stderr)
	}
}
