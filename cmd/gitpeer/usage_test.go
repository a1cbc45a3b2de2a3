package main

import (
	"strings"
	"testing"
)

// TestMistakesPointAtHelp: a mistyped command or flag, a bad flag value, a
// missing required flag or an argument a command does not take is said,
// with a did-you-mean when one is close, followed by the --help of the
// command that was meant, as kubectl says it; the exit status is the
// command's usual one for a usage error.
func TestMistakesPointAtHelp(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"reconcile", "--clustr", "alpha"}, 1,
			"gitpeer: unknown flag: --clustr\n\nDid you mean this?\n\t--cluster\n\nRun 'gitpeer reconcile --help' for usage.\n"},
		{[]string{"recncile"}, 1,
			"gitpeer: unknown command \"recncile\" for \"gitpeer\"\n\nDid you mean this?\n\treconcile\n\nRun 'gitpeer --help' for usage.\n"},
		{[]string{"nothing-like-it"}, 1,
			"gitpeer: unknown command \"nothing-like-it\" for \"gitpeer\"\nRun 'gitpeer --help' for usage.\n"},
		{[]string{"status", "--nope"}, 2, "gitpeer: unknown flag: --nope\nRun 'gitpeer status --help' for usage.\n"},
		{[]string{"status", "-x"}, 2, "gitpeer: unknown shorthand flag: 'x' in -x\nRun 'gitpeer status --help' for usage.\n"},
		{[]string{"verify", "--histroy"}, 2,
			"gitpeer: unknown flag: --histroy\n\nDid you mean this?\n\t--history\n\nRun 'gitpeer verify --help' for usage.\n"},
		{[]string{"wait", "--timeout", "soon"}, 2,
			"gitpeer: invalid argument \"soon\" for \"--timeout\" flag: time: invalid duration \"soon\"\nRun 'gitpeer wait --help' for usage.\n"},
		{[]string{"token", "set", "--peer", "beta"}, 1, "gitpeer: required flag(s) \"cluster\" not set\nRun 'gitpeer token set --help' for usage.\n"},
		{[]string{"version", "extra"}, 1, "gitpeer: unknown command \"extra\" for \"gitpeer version\"\nRun 'gitpeer version --help' for usage.\n"},
		{[]string{"token", "set", "--per", "beta"}, 1,
			"gitpeer: unknown flag: --per\n\nDid you mean this?\n\t--peer\n\nRun 'gitpeer token set --help' for usage.\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != tc.code || stderr != tc.stderr || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and stderr:\n%s", code, stdout, stderr, tc.code, tc.stderr)
			}
		})
	}
	// What a command found is not a usage mistake: no pointer to --help.
	if _, _, stderr := gitpeer(t, "status", t.TempDir()); !strings.Contains(stderr, "no peering spec") || strings.Contains(stderr, "--help") {
		t.Errorf("a repo status cannot read points at --help:\n%s", stderr)
	}
}
