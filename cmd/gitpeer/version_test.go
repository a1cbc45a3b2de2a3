package main

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
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
