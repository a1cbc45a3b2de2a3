package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEOutputAndMistakes runs the commands README.md shows under
// "Output and mistakes", as they are written there, on a repo where the
// README's walkthrough has left it ($PEER: peering.git, work, alpha and
// beta's state): the mistyped flag prints exactly what the README says it
// prints, and each command of the script exits 0 with what the prose says.
func TestREADMEOutputAndMistakes(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Output and mistakes\n")
	if !ok {
		t.Fatal(`README.md has no section "Output and mistakes"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("want 2 sh blocks in the section, found %d", len(blocks))
	}

	// The walkthrough, as README's "The same flow by hand" runs it.
	peer := t.TempDir()
	git(t, peer, "init", "-q", "--bare", "--initial-branch=main", filepath.Join(peer, "peering.git"))
	git(t, peer, "clone", "-q", filepath.Join(peer, "peering.git"), filepath.Join(peer, "work"))
	spec, err := os.ReadFile("../../examples/two-clusters/peering.cue")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(peer, "work", "peering.cue"), string(spec))
	for _, id := range []string{"alpha", "beta"} {
		if code, _, stderr := gitpeer(t, "init", "--cluster", id, "--api-server", "https://"+id+".example:6443", "--state-dir", filepath.Join(peer, id), "--repo", filepath.Join(peer, "work")); code != 0 {
			t.Fatalf("init %s: %s", id, stderr)
		}
	}
	git(t, filepath.Join(peer, "work"), "add", "-A")
	git(t, filepath.Join(peer, "work"), "commit", "-qm", "peer alpha with beta")
	git(t, filepath.Join(peer, "work"), "push", "-q", "origin", "main")
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", filepath.Join(peer, "peering.git"), "--state-dir", filepath.Join(peer, id)); code != 0 {
			t.Fatalf("reconcile %s: %s", id, stderr)
		}
	}
	t.Setenv("TMPDIR", t.TempDir()) // where status and wait clone

	// args are a README line's words after bin/gitpeer, $PEER expanded.
	args := func(line string) []string {
		t.Helper()
		words := strings.Fields(strings.ReplaceAll(line, "$PEER", peer))
		if len(words) == 0 || words[0] != "bin/gitpeer" {
			t.Fatalf("README line %q does not run bin/gitpeer", line)
		}
		return words[1:]
	}

	// The mistake: the comment lines under it are its stderr.
	lines := strings.Split(strings.TrimSuffix(blocks[0][1], "\n"), "\n")
	var want strings.Builder
	for _, l := range lines[1:] {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
		want.WriteString(l + "\n")
	}
	if code, out, stderr := gitpeer(t, args(lines[0])...); code == 0 || out != "" || stderr != want.String() {
		t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant as README shows:\n%s", lines[0], code, out, stderr, want.String())
	}

	// The script, each line exiting 0 with the output the prose names.
	wantOut := []string{
		"peering alpha/beta condition met\n",
		"apiVersion: gitpeer.io/v1alpha1\nitems:\n- ",
		`"kind": "PinList"`,
		`"goGit": `,
	}
	script := strings.Split(strings.TrimSuffix(blocks[1][1], "\n"), "\n")
	if len(script) != len(wantOut) {
		t.Fatalf("the README's script has %d lines, this test knows %d", len(script), len(wantOut))
	}
	for i, line := range script {
		code, out, stderr := gitpeer(t, args(line)...)
		if code != 0 || !strings.Contains(out, wantOut[i]) {
			t.Errorf("%s: exit %d\n%s%s\nwant output containing %q", line, code, out, stderr, wantOut[i])
		}
	}
}
