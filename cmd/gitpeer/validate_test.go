package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/test/testgit"
)

func TestValidateChecksSlicesAgainstTheProvidersClasses(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), `clusters: [
	{id: "alpha"},
	{id: "beta"},
	{id: "gamma", provider: {classes: [{name: "gpu", caps: {cpu: "16", "nvidia.com/gpu": "2"}}]}},
]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [
		{name: "web", resources: {cpu: "2", memory: "4Gi"}},
		{name: "big", resources: {cpu: "32", memory: "4Gi", "nvidia.com/gpu": "1"}},
		{name: "fast", class: "fast", resources: {cpu: "1"}},
	]},
	{consumer: "alpha", provider: "gamma", slices: [
		{name: "train", class: "gpu", resources: {cpu: "8", "nvidia.com/gpu": "4"}},
		{name: "plain", resources: {cpu: "1"}},
	]},
]
`)
	code, out, stderr := gitpeer(t, "validate", dir)
	file := filepath.Join(dir, "peering.cue")
	want := []string{
		file + `:9:34: peerings[0].slices[1].resources.cpu: beta would deny slice big: requested 32 exceeds the cap 4 of class default`,
		file + `:9:73: peerings[0].slices[1].resources."nvidia.com/gpu": beta would deny slice big: class default has no cap for it`,
		file + `:10:25: peerings[0].slices[2].class: beta would deny slice fast: class "fast" is not offered (offered: default)`,
		file + `:13:73: peerings[1].slices[0].resources."nvidia.com/gpu": gamma would deny slice train: requested 4 exceeds the cap 2 of class gpu`,
		file + `:14:3: peerings[1].slices[1]: gamma would deny slice plain: class "default" is not offered (offered: gpu)`,
	}
	if code != 1 || out != strings.Join(want, "\n")+"\n" {
		t.Fatalf("exit %d, want 1; output:\n%s%s\nwant:\n%s", code, out, stderr, strings.Join(want, "\n"))
	}
}

func TestValidateChecksTheClassTotalsOfEachPeering(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), `clusters: [{id: "alpha"}, {id: "delta"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [
		{name: "a", resources: {cpu: "3"}},
		{name: "b", resources: {cpu: "2", memory: "1Gi"}},
		{name: "c", resources: {cpu: "1"}},
		{name: "a", resources: {cpu: "1"}},
	]},
	{consumer: "delta", provider: "beta", slices: [{name: "a", resources: {cpu: "4"}}]},
]
`)
	code, out, stderr := gitpeer(t, "validate", dir)
	file := filepath.Join(dir, "peering.cue")
	want := []string{
		file + `:5:3: peerings[0].slices[1]: beta would deny slice b: SliceOverClassTotal: cpu: 2 requested and 3 already granted in class default make 5, over its cap 4 (the slices listed before it are granted first)`,
		file + `:7:10: peerings[0].slices[3].name: slice a is listed twice for alpha → beta: beta grants only the first`,
	}
	if code != 1 || out != strings.Join(want, "\n")+"\n" {
		t.Fatalf("exit %d, want 1; output:\n%s%s\nwant:\n%s", code, out, stderr, strings.Join(want, "\n"))
	}
}

func TestValidateChecksFingerprintsAgainstClusterYAML(t *testing.T) {
	_, _, work := peeringRepo(t, spec)
	data, err := os.ReadFile(filepath.Join(work, "clusters", "beta", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	published := regexp.MustCompile(`fingerprint: (sha256:[0-9a-f]{64})`).FindStringSubmatch(string(data))[1]
	other := "sha256:" + strings.Repeat("0", 64)

	// validate reads the committed tree, as the reconcilers do: each
	// edit is committed.
	write(t, filepath.Join(work, "peering.cue"), `clusters: [{id: "alpha"}, {id: "beta", fingerprint: "`+published+`"}, {id: "gamma", fingerprint: "`+other+`"}]`+"\n")
	git(t, work, "commit", "-qam", "pin")
	if code, out, _ := gitpeer(t, "validate", work); code != 0 {
		t.Fatalf("the published fingerprint, and one of a cluster not published yet: exit %d\n%s", code, out)
	}

	write(t, filepath.Join(work, "peering.yaml"), "clusters:\n- id: alpha\n  fingerprint: "+other+"\n- id: beta\n")
	if err := os.Remove(filepath.Join(work, "peering.cue")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "yaml")
	code, out, _ := gitpeer(t, "validate", work)
	want := filepath.Join(work, "peering.yaml") + ":3:16: clusters[0].fingerprint: " + other + " is not the key alpha publishes in clusters/alpha/cluster.yaml (sha256:"
	if code != 1 || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "): a provider pinning it would refuse alpha's Tenant\n") {
		t.Fatalf("exit %d, want 1; output:\n%s\nwant it to start with %s", code, out, want)
	}

	write(t, filepath.Join(work, "clusters", "alpha", "cluster.yaml"), strings.Replace(string(data), "clusterID: beta", "clusterID: alpha", 1)+"extra: 1\n")
	git(t, work, "commit", "-qam", "break alpha")
	code, out, _ = gitpeer(t, "validate", work)
	if want := filepath.Join(work, "clusters", "alpha", "cluster.yaml") + `: error unmarshaling JSON: while decoding JSON: json: unknown field "extra"`; code != 1 || strings.TrimSpace(out) != want {
		t.Fatalf("a malformed cluster.yaml: exit %d\n%s\nwant %s", code, out, want)
	}
}

// TestValidateNamesWhatASpecChangeDoesToLivePeerings is the Friday
// afternoon edit: a misspelled cluster ID, a removed peering, a cluster not
// published yet, each named by validate and by verify --base.
func TestValidateNamesWhatASpecChangeDoesToLivePeerings(t *testing.T) {
	_, _, work := peeringRepo(t, spec)
	commit := func(specSrc, msg string) {
		t.Helper()
		write(t, filepath.Join(work, "peering.cue"), specSrc)
		git(t, work, "add", "-A")
		git(t, work, "commit", "-m", msg)
	}

	// A misspelling of a published cluster: an error, with did-you-mean.
	commit(`clusters: [{id: "alpah"}, {id: "beta"}]
peerings: [{consumer: "alpah", provider: "beta"}]
`, "typo")
	code, out, stderr := gitpeer(t, "validate", work)
	if code != 1 || !strings.Contains(out, `clusters[0].id: alpah has no clusters/alpah/cluster.yaml; did you mean alpha, whose clusters/alpha/cluster.yaml is published and which the spec no longer declares?`) ||
		!strings.Contains(out, "removes alpha's peerings") {
		t.Errorf("validate does not name the misspelling: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = gitpeer(t, "verify", "--base", "HEAD~1", work)
	if code != 1 || !strings.Contains(out, "did you mean alpha") || !strings.Contains(out, "(MisspelledCluster)") {
		t.Errorf("verify --base does not name the misspelling: %d\n%s%s", code, out, stderr)
	}
	// Against the base the rename also revokes alpha → beta: said.
	if !strings.Contains(stderr, "WARNING: this spec REVOKES 1 live peering(s)") || !strings.Contains(stderr, "  - alpha → beta (in the spec at HEAD~1)") {
		t.Errorf("verify --base does not warn of the revocation:\n%s", stderr)
	}
	git(t, work, "reset", "--hard", "HEAD~1")

	// A removed peering: deliberate, so exit 0, but loud.
	commit(`clusters: [{id: "alpha"}, {id: "beta"}]
peerings: []
`, "unpeer")
	code, out, stderr = gitpeer(t, "validate", "--base", "HEAD~1", work)
	if code != 0 || !strings.Contains(out, "valid (2 clusters, 0 peerings), revokes 1 live peering(s): see the WARNING") ||
		!strings.Contains(stderr, "WARNING: this spec REVOKES 1 live peering(s): each provider drains the consumer's Tenant") ||
		!strings.Contains(stderr, "  - alpha → beta (in the spec at HEAD~1)") {
		t.Errorf("validate --base does not name the revocation: %d\n%s%s", code, out, stderr)
	}
	// Without --base, what the clusters report live is the reference.
	code, out, stderr = gitpeer(t, "validate", work)
	if code != 0 || strings.Contains(out+stderr, "REVOKES") {
		t.Errorf("validate warns of a revocation with nothing live: %d\n%s%s", code, out, stderr)
	}
	write(t, filepath.Join(work, "clusters/beta/status.yaml"), `apiVersion: gitpeer.io/v1alpha1
kind: ClusterStatus
clusterID: beta
peerings:
- consumer: alpha
  provider: beta
  role: provider
  step: Ready
`)
	git(t, work, "add", "-A")
	git(t, work, "commit", "-m", "status")
	code, out, stderr = gitpeer(t, "validate", work)
	if code != 0 || !strings.Contains(out, "revokes 1 live peering(s)") || !strings.Contains(stderr, "  - alpha → beta (Ready in clusters/beta/status.yaml)") {
		t.Errorf("validate does not compare with the live status: %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = gitpeer(t, "verify", "--base", "HEAD~2", work)
	if !strings.Contains(stderr, "  - alpha → beta (in the spec at HEAD~2)") {
		t.Errorf("verify --base does not warn of the revocation: %d\n%s", code, stderr)
	}

	// A cluster not published yet: a note, not an error.
	commit(`clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma-west"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma-west", provider: "beta"}]
`, "gamma")
	code, out, stderr = gitpeer(t, "validate", work)
	if code != 0 || !strings.Contains(stderr, "note: gamma-west has no clusters/gamma-west/cluster.yaml published yet: its peerings wait until `gitpeer init --cluster gamma-west` runs on that cluster") {
		t.Errorf("validate does not name the unpublished cluster: %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(stderr, "REVOKES") {
		t.Errorf("validate warns of a revocation the spec does not make:\n%s", stderr)
	}
}

func TestClosestClusterID(t *testing.T) {
	published := map[string]bool{"alpha": true, "prod-eu-1": true, "a": true}
	for id, want := range map[string]string{
		"alpah":     "alpha",
		"alhpa":     "alpha",
		"prod-eu-2": "prod-eu-1",
		"prod-us-2": "",
		"b":         "",
		"alpha":     "",
		"gamma":     "",
	} {
		if got := closest(id, published); got != want {
			t.Errorf("closest(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestValidateBaseNeedsARepository(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), spec)
	code, out, stderr := gitpeer(t, "validate", "--base", "main", dir)
	if code == 0 || !strings.Contains(stderr, "--base main: "+dir+" is not a Git repository (a checkout's root or a bare repository): there is no base to compare with") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr)
	}
	_, _, work := peeringRepo(t, spec)
	code, out, stderr = gitpeer(t, "validate", "--base", "no-such-ref", work)
	if code == 0 || !strings.Contains(stderr, "--base no-such-ref: ") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr)
	}
}

// gitpeerWithInput is gitpeer with stdin.
func gitpeerWithInput(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runWithInput(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// badPeering is the edit an admin is about to commit: a peering with a
// cluster the spec does not declare.
const badPeering = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "gamma"}]
`

// TestValidateChecksTheEditAsOnDisk is an admin editing peering.cue in a
// clone before committing it: validate FILE and validate - read the edit,
// and validate of the checkout checks both the edit and HEAD, saying
// which is which and failing if either is invalid. --ref reads the commit
// alone, as CI does.
func TestValidateChecksTheEditAsOnDisk(t *testing.T) {
	_, _, work := peeringRepo(t, spec)
	head := strings.TrimSpace(git(t, work, "rev-parse", "--short=12", "HEAD"))
	t.Chdir(work)
	write(t, "peering.cue", badPeering)
	const problem = `peering.cue:2:42: peerings[0].provider: unknown cluster "gamma" (known: alpha, beta)` + "\n"

	code, out, stderr := gitpeer(t, "validate", "peering.cue")
	if code != 1 || out != problem {
		t.Errorf("validate peering.cue: exit %d, want 1 and\n%s\ngot:\n%s%s", code, problem, out, stderr)
	}

	code, out, stderr = gitpeer(t, "validate")
	want := problem + "peering.cue (worktree, not committed): 1 problem(s)\n" +
		"peering.cue at HEAD (" + head + "): valid (2 clusters, 1 peerings)\n"
	if code != 1 || out != want || !strings.Contains(stderr, "note: peering.cue in the worktree is not the one committed at HEAD ("+head+"): an uncommitted edit") {
		t.Errorf("validate in the checkout: exit %d, want 1 and\n%s\ngot:\n%s%s", code, want, out, stderr)
	}

	// CI names its revision: the commit alone is read, the edit noted.
	code, out, stderr = gitpeer(t, "validate", "--ref", "HEAD")
	if code != 0 || out != "peering.cue at HEAD ("+head+"): valid (2 clusters, 1 peerings)\n" || !strings.Contains(stderr, "gitpeer validate peering.cue checks it as on disk") {
		t.Errorf("validate --ref HEAD: exit %d\n%s%s", code, out, stderr)
	}

	// The staged spec, through stdin, as the pre-commit hook reads it.
	code, out, stderr = gitpeerWithInput(t, badPeering, "validate", "-")
	if code != 1 || out != problem+"peering.cue (stdin): 1 problem(s)\n" {
		t.Errorf("validate -: exit %d\n%s%s", code, out, stderr)
	}
	yamlSpec := "clusters:\n- id: alpha\n- id: beta\npeerings:\n- {consumer: alpha, provider: beta}\n"
	code, out, stderr = gitpeerWithInput(t, yamlSpec, "validate", "--stdin-name", "peering.yaml", "-")
	if code != 0 || out != "peering.yaml (stdin): valid (2 clusters, 1 peerings)\n" {
		t.Errorf("validate --stdin-name peering.yaml -: exit %d\n%s%s", code, out, stderr)
	}

	// Several files: each checked, any invalid one fails.
	write(t, "other.cue", spec)
	code, out, stderr = gitpeer(t, "validate", "other.cue", "peering.cue")
	if code != 1 || out != "other.cue: valid (2 clusters, 1 peerings)\n"+problem+"peering.cue: 1 problem(s)\n" {
		t.Errorf("validate other.cue peering.cue: exit %d\n%s%s", code, out, stderr)
	}

	// An edit that fixes HEAD's problem still names both, and passes.
	write(t, "peering.cue", "clusters: [{id: \"alpha\"}, {id: \"beta\"}]\npeerings: []\n")
	code, out, stderr = gitpeer(t, "validate")
	want = "peering.cue (worktree, not committed): valid (2 clusters, 0 peerings)\n" +
		"peering.cue at HEAD (" + head + "): valid (2 clusters, 1 peerings)\n"
	if code != 0 || out != want {
		t.Errorf("a valid edit: exit %d, want 0 and\n%s\ngot:\n%s%s", code, want, out, stderr)
	}
}

// TestPreCommitExampleRefusesAnInvalidSpec installs examples/ci/pre-commit
// as its header says, with gitpeer on PATH, in a new peering repo: the
// first commit of an invalid spec is refused with the problem, the fixed
// spec commits, and so does a commit that leaves the spec alone.
func TestPreCommitExampleRefusesAnInvalidSpec(t *testing.T) {
	hook, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", "pre-commit"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join("..", "..", "examples", "ci", "pre-commit"))
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("examples/ci/pre-commit is not executable: %v %v", fi.Mode(), err)
	}
	// gitpeer on PATH: this test binary, which runs main() (TestMain).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	write(t, filepath.Join(bin, "gitpeer"), "#!/bin/sh\n"+runMainEnv+"=1 exec "+exe+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "gitpeer"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	work := t.TempDir()
	git(t, work, "init", "-q", "--initial-branch=main")
	write(t, filepath.Join(work, ".git", "hooks", "pre-commit"), string(hook))
	if err := os.Chmod(filepath.Join(work, ".git", "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	commit := func(msg string) (string, error) {
		out, err := testgit.Command(work, "commit", "-qm", msg).CombinedOutput()
		return string(out), err
	}
	write(t, filepath.Join(work, "peering.cue"), badPeering)
	git(t, work, "add", "peering.cue")
	// The worktree holds a fix that is not staged: the staged spec is
	// what the commit would hold, so it is the one checked.
	write(t, filepath.Join(work, "peering.cue"), spec)
	out, err := commit("peer alpha with gamma")
	if err == nil || !strings.Contains(out, `peering.cue:2:42: peerings[0].provider: unknown cluster "gamma" (known: alpha, beta)`) {
		t.Fatalf("the hook let an invalid spec be committed (%v):\n%s", err, out)
	}
	if _, err := testgit.Command(work, "rev-parse", "--verify", "-q", "HEAD").Output(); err == nil {
		t.Fatal("a commit was made")
	}
	git(t, work, "add", "peering.cue")
	if out, err := commit("peer alpha with beta"); err != nil {
		t.Fatalf("the hook refused a valid spec: %v\n%s", err, out)
	}
	write(t, filepath.Join(work, "README.md"), "peering repo\n")
	git(t, work, "add", "README.md")
	if out, err := commit("readme"); err != nil {
		t.Fatalf("the hook refused a commit that leaves the spec alone: %v\n%s", err, out)
	}
}
