package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
