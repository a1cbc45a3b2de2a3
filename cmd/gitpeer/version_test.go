package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
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
	defer func(v string) { version = v }(version)
	version = "v1.2.3-4-gabcdef0-dirty"
	if got := strings.SplitN(versionText(), "\n", 2)[0]; got != "gitpeer: v1.2.3-4-gabcdef0-dirty" {
		t.Errorf("first line %q", got)
	}
}

// TestVersionAsJSONAndYAML: -o json and -o yaml print the versions of the
// text as one object, for scripts; another format is refused.
func TestVersionAsJSONAndYAML(t *testing.T) {
	_, text, _ := gitpeer(t, "version")
	want := map[string]string{}
	keys := map[string]string{"gitpeer": "gitpeer", "go": "go", "go-git": "goGit", "liqo": "liqo"}
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
		if code != 0 || err != nil || len(got) != 4 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("version -o %s: exit %d %v\n%s%s\nwant %v", format, code, err, out, stderr, want)
		}
	}
	if code, _, stderr := gitpeer(t, "version", "-o", "xml"); code != 1 || !strings.Contains(stderr, `-o: "xml" is not one of text, json, yaml`) {
		t.Errorf("version -o xml: exit %d %s", code, stderr)
	}
}
