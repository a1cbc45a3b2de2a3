package main

import (
	"os"
	"os/exec"
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

	peer := readmeWalkthrough(t)
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

// readmeWalkthrough runs README's "The same flow by hand" and returns its
// $PEER: peering.git, the clone work, and alpha's and beta's state dirs,
// the peering Ready.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
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
	return peer
}

// TestREADMEUnsignedFileInOwnTree checks what README's "Ownership" says of
// a file committed unsigned into a cluster's own tree, after README's
// walkthrough: gitpeer status never shows it, alpha's next pass removes it
// with a commit saying so, and gitpeer verify names it (UnsignedChange)
// before and after, with the commit that wrote it: failing before,
// resolved after (Repaired, by the commit that removed it; --strict still
// fails).
func TestREADMEUnsignedFileInOwnTree(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const removed = "alpha: remove planted.yaml"
	if !strings.Contains(string(data), "`"+removed+"`") {
		t.Fatalf("README.md does not say a pass removes an unsigned file with the commit %q", removed)
	}
	peer := readmeWalkthrough(t)
	work := filepath.Join(peer, "work")
	git(t, work, "pull", "-q")
	write(t, filepath.Join(work, "clusters", "alpha", "planted.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: default}\n")
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "plant a ConfigMap in alpha's tree")
	planted := strings.TrimSpace(git(t, work, "rev-parse", "--short=12", "HEAD"))
	git(t, work, "push", "-q", "origin", "main")

	check := func(when string, repaired string) {
		t.Helper()
		if code, out, stderr := gitpeer(t, "status", work); code != 0 || strings.Contains(out+stderr, "planted") {
			t.Errorf("status %s: exit %d, it names the planted file or fails:\n%s%s", when, code, out, stderr)
		}
		code, out, stderr := gitpeer(t, "verify", work)
		want := "clusters/alpha/planted.yaml: not listed with this content in clusters/alpha/manifest.yaml, signed by alpha (UnsignedChange, commit " + planted + ")"
		wantCode := 1
		if repaired != "" {
			want += "; resolved: removed since, and clusters/alpha/manifest.yaml, signed by alpha, no longer lists it (Repaired, commit " + repaired + ")"
			wantCode = 0
			if code, _, _ := gitpeer(t, "verify", "--strict", work); code != 1 {
				t.Errorf("verify --strict %s: exit %d, want 1", when, code)
			}
		}
		if code != wantCode || !strings.Contains(out, want) {
			t.Errorf("verify %s: exit %d, want %d and %q:\n%s%s", when, code, wantCode, want, out, stderr)
		}
	}
	check("with the file planted", "")
	code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "alpha", "--repo", filepath.Join(peer, "peering.git"), "--state-dir", filepath.Join(peer, "alpha"))
	if code != 0 || !strings.HasPrefix(out, removed+" (") {
		t.Fatalf("alpha's next pass: exit %d, want a commit %q:\n%s%s", code, removed, out, stderr)
	}
	git(t, work, "pull", "-q")
	if _, err := os.Stat(filepath.Join(work, "clusters", "alpha", "planted.yaml")); !os.IsNotExist(err) {
		t.Errorf("clusters/alpha/planted.yaml is still on main after alpha's pass (%v)", err)
	}
	check("after alpha's pass removed it", strings.TrimSpace(git(t, work, "rev-parse", "--short=12", "HEAD")))
}

// TestREADMETryItSaysWhatMakeDemoRuns: README's "Try it" says that make demo
// runs make deps, which may install openssh-server and gnupg as root, how
// to run the demo without it, and how long make test takes; make's dry run
// of demo shows that it does.
func TestREADMETryItSaysWhatMakeDemoRuns(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tryIt, _ := strings.Cut(string(data), "\n## Try it\n")
	tryIt, _, _ = strings.Cut(tryIt, "\n## ")
	for _, want := range []string{"make deps", "installs `openssh-server` or `gnupg`", "go run ./cmd/gitpeer demo", "CPU-minutes",
		"GITPEER_REQUIRE_GPG=1", "`make test` takes about"} {
		if !strings.Contains(tryIt, want) {
			t.Errorf("README's Try it does not say %q", want)
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-n", "--no-print-directory", "-C", "../..", "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	for _, want := range []string{"apt-get install -y -qq openssh-server", "apt-get install -y -qq gnupg", "mod download", "demo"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make demo does not run %q (what README says it runs):\n%s", want, out)
		}
	}
}
