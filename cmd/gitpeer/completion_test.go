package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCompletionOffersTheSpecsNames is an admin pressing TAB: --cluster
// and --peer complete the spec's cluster IDs, --peering its peerings, read
// from the repo the command line names (a DIR argument or --repo) or from
// the checkout in the working directory, as cobra's __complete (what the
// shell scripts of gitpeer completion call) prints them.
func TestCompletionOffersTheSpecsNames(t *testing.T) {
	three, err := os.ReadFile(filepath.Join("..", "..", "examples", "three-clusters", "peering.cue"))
	if err != nil {
		t.Fatal(err)
	}
	_, remote, work := peeringRepo(t, string(three))
	complete := func(args ...string) string {
		t.Helper()
		code, out, stderr := gitpeer(t, append([]string{cobra.ShellCompRequestCmd}, args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: exit %d\n%s", args, code, stderr)
		}
		return out
	}
	noFiles := ":4\n" // cobra.ShellCompDirectiveNoFileComp
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", work, "--peering", ""}, "alpha/beta\nalpha/gamma\ndelta/gamma\n"},
		{[]string{"wait", work, "--peering", "alpha/"}, "alpha/beta\nalpha/gamma\n"},
		{[]string{"status", work, "--cluster", "g"}, "gamma\n"},
		{[]string{"plan", work, "--cluster", ""}, "alpha\ndelta\nbeta\ngamma\n"},
		{[]string{"rotate-key", "--repo", remote, "--cluster", "d"}, "delta\n"},
	} {
		if got := complete(c.args...); got != c.want+noFiles {
			t.Errorf("__complete %v:\n%s\nwant:\n%s%s", c.args, got, c.want, noFiles)
		}
	}

	// From inside the checkout, with no DIR: the working directory's spec.
	t.Chdir(work)
	if got := complete("token", "generate", "--cluster", "gamma", "--peer", ""); got != "alpha\ndelta\nbeta\n"+noFiles {
		t.Errorf("__complete token generate --cluster gamma --peer '':\n%s", got)
	}
	if got := complete("trust", "--peer", "b"); got != "beta\n"+noFiles {
		t.Errorf("__complete trust --peer b:\n%s", got)
	}
	// Outside any peering repo: nothing, and no file names either.
	t.Chdir(t.TempDir())
	if got := complete("status", "--cluster", ""); got != noFiles {
		t.Errorf("__complete status --cluster '' outside a repo:\n%s", got)
	}
}

// TestEveryCommandHasExamples: every command's help shows examples, and
// every gitpeer command in them resolves as the CLI would run it (the
// subcommand exists, takes those flags and that many arguments).
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRootCmd(nil, nil)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		ran := 0
		for _, line := range strings.Split(c.Example, "\n") {
			// A pipe or a redirection ends the gitpeer command.
			line = strings.NewReplacer(" | ", " ; ", " > ", " ; ", " < ", " ; ").Replace(line)
			for _, words := range commands(line) {
				if words[0] == "gitpeer" {
					checkCommand(t, words[1:])
					ran++
				}
			}
		}
		if c.Example != "" && ran == 0 {
			t.Errorf("%s's examples run no gitpeer command:\n%s", c.CommandPath(), c.Example)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
