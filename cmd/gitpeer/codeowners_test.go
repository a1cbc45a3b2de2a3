package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeownersGolden prints each case's CODEOWNERS for every host
// (testdata/codeowners/<case>/expected/CODEOWNERS.<host>).
func TestCodeownersGolden(t *testing.T) {
	for _, name := range goldenCases(t, "codeowners") {
		for _, host := range []string{"github", "gitlab", "gitea"} {
			t.Run(name+"/"+host, func(t *testing.T) {
				code, out, stderr := gitpeer(t, "codeowners", filepath.Join("testdata", "codeowners", name, "input"), "--host", host)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				golden(t, "codeowners", name, "CODEOWNERS."+host, []byte(out))
			})
		}
	}
}

func TestCodeownersWrite(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), `clusters: [{id: "alpha", owners: ["@ann"]}]`+"\n")
	code, out, stderr := gitpeer(t, "codeowners", dir, "--write", "--file", ".github/CODEOWNERS")
	file := filepath.Join(dir, ".github", "CODEOWNERS")
	if code != 0 || out != file+": written\n" {
		t.Fatalf("first --write: %d %q %s", code, out, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), "/clusters/alpha/ @ann\n") || !strings.Contains(string(data), "/.github/CODEOWNERS @ann\n") {
		t.Fatalf("written file: %v\n%s", err, data)
	}
	if code, out, _ := gitpeer(t, "codeowners", dir, "--write", "--file", ".github/CODEOWNERS"); code != 0 || out != file+": up to date\n" {
		t.Fatalf("second --write: %d %q", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an email address for Gitea", []string{"--host", "gitea"}, `--host gitea: clusters alpha: owners: owner "a@example.com": Gitea's CODEOWNERS takes only @user and @org/team`},
		{"an unknown host", []string{"--host", "gerrit"}, `host "gerrit" is not one of github, gitlab, gitea`},
		{"a file outside the repo", []string{"--write", "--file", "../CODEOWNERS"}, `--file: "../CODEOWNERS" is not a path inside the repo`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(t, filepath.Join(dir, "peering.cue"), `clusters: [{id: "alpha", owners: ["a@example.com"]}]`+"\n")
			code, _, stderr := gitpeer(t, append([]string{"codeowners", dir}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, tc.want)
			}
		})
	}
}
