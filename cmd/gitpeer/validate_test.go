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
