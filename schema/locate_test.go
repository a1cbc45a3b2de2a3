package schema

import "testing"

func TestLocatorPositionsProblemsAsParseDoes(t *testing.T) {
	const cueSpec = `package peering

_ids: ["x", "y"]
clusters: [
	{id: "alpha"},
	{id: "beta", fingerprint: "` + fpBeta + `"},
	for i in _ids {id: i},
]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [
		{name: "gpu", class: "gpu", resources: {cpu: "8", "nvidia.com/gpu": "1"}},
	]},
]
`
	const yamlSpec = `clusters:
  - id: alpha
  - id: beta
    fingerprint: "` + fpBeta + `"
peerings:
  - consumer: alpha
    provider: beta
    slices:
      - name: gpu
        resources: {cpu: "8", nvidia.com/gpu: "1"}
`
	tests := []struct {
		file, src, path, want string
	}{
		{"peering.cue", cueSpec, "clusters[1].fingerprint", "peering.cue:6:28: clusters[1].fingerprint: m"},
		{"peering.cue", cueSpec, `peerings[0].slices[0].resources."nvidia.com/gpu"`, `peering.cue:11:71: peerings[0].slices[0].resources."nvidia.com/gpu": m`},
		{"peering.cue", cueSpec, "peerings[0].slices[0].class", "peering.cue:11:24: peerings[0].slices[0].class: m"},
		// Not written out: the enclosing value that is.
		{"peering.cue", cueSpec, "peerings[0].slices[0].resources.memory", "peering.cue:11:42: peerings[0].slices[0].resources.memory: m"},
		// Produced by a comprehension: the list holding it.
		{"peering.cue", cueSpec, "clusters[2].id", "peering.cue:4:11: clusters[2].id: m"},
		{"peering.yaml", yamlSpec, "clusters[1].fingerprint", "peering.yaml:4:18: clusters[1].fingerprint: m"},
		{"peering.yaml", yamlSpec, `peerings[0].slices[0].resources."nvidia.com/gpu"`, `peering.yaml:10:47: peerings[0].slices[0].resources."nvidia.com/gpu": m`},
		{"peering.yaml", "clusters: [", "clusters[0].id", "peering.yaml: clusters[0].id: m"},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.path, func(t *testing.T) {
			if got := NewLocator(tt.file, []byte(tt.src)).Problem(tt.path, "m").String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
