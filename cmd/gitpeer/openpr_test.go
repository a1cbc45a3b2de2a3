package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenPullRequestRefusesBadInputBeforeAnyPass: every mistake in the
// pull request flags is said up front, naming the flag, with a non-zero
// exit: before the state dir (which does not exist here) is read or the
// repo (unreachable here) fetched.
func TestOpenPullRequestRefusesBadInputBeforeAnyPass(t *testing.T) {
	t.Setenv(forgeTokenEnv, "")
	state := filepath.Join(t.TempDir(), "state")
	noToken := t.TempDir() // a credentials directory without a token
	if err := os.WriteFile(filepath.Join(noToken, "username"), []byte("bot"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"reconcile", "--once", "--cluster", "alpha", "--state-dir", state}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"without --push-branch", []string{"--repo", "https://github.com/o/r", "--open-pull-request"}, "t",
			"--open-pull-request needs --push-branch"},
		{"--forge alone", []string{"--repo", "https://github.com/o/r", "--forge", "gitea"}, "t",
			"--forge and --forge-url need --open-pull-request"},
		{"an unknown forge", []string{"--repo", "https://git.example.org/o/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request", "--forge", "bitbucket"}, "t",
			`--forge: unknown forge "bitbucket": one of github, gitlab, gitea`},
		{"an unknown host", []string{"--repo", "https://git.example.org/o/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request"}, "t",
			"cannot tell which API git.example.org serves: give --forge github, gitlab or gitea"},
		{"a local repo", []string{"--repo", "/srv/peering.git", "--push-branch", "gitpeer/{cluster}", "--open-pull-request"}, "t",
			"--open-pull-request: --repo: /srv/peering.git is a local path"},
		{"a URL naming no owner/repo", []string{"--repo", "https://github.com/peering", "--push-branch", "gitpeer/{cluster}", "--open-pull-request"}, "t",
			"--open-pull-request: --repo: https://github.com/peering names no owner/repo"},
		{"three segments on gitea", []string{"--repo", "https://git.example.org/a/b/c", "--push-branch", "gitpeer/{cluster}", "--open-pull-request", "--forge", "gitea"}, "t",
			"a/b/c names no owner/repo on gitea"},
		{"gitea over ssh without --forge-url", []string{"--repo", "ssh://git@git.example.org/o/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request", "--forge", "gitea"}, "t",
			"--forge-url: needed for --forge gitea with a ssh --repo"},
		{"a plain http --forge-url", []string{"--repo", "https://git.example.org/o/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request", "--forge", "gitea", "--forge-url", "http://git.example.org"}, "t",
			"--forge-url http://git.example.org: must be https://"},
		{"no token anywhere", []string{"--repo", "https://github.com/o/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request"}, "",
			"--open-pull-request: no API token for github o/r at github.com: set $GITPEER_FORGE_TOKEN, or give --git-credentials DIR with a bearerToken file"},
		{"no token in the credentials", []string{"--repo", "https://gitlab.com/g/r", "--push-branch", "gitpeer/{cluster}", "--open-pull-request", "--git-credentials", noToken}, "",
			"no API token for gitlab g/r at gitlab.com: set $GITPEER_FORGE_TOKEN, or add bearerToken (or, for an https:// --repo, password) to --git-credentials " + noToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(forgeTokenEnv, tc.env)
			code, out, stderr := gitpeer(t, append(base, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant it to say %q (stdout: %s)", code, stderr, tc.want, out)
			}
		})
	}
}
