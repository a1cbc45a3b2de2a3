package schema

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const (
	fpBeta  = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	id51    = "a23456789-123456789-123456789-123456789-12345678951"
	id52    = "a23456789-123456789-123456789-123456789-123456789512"
	idRules = "want a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
	fpRules = `want "sha256:" and 64 lowercase hex digits (the SHA-256 of the cluster's PKIX DER public key)`
)

const demoCUE = `// Peering spec for the demo.
package peering

clusters: [
	{id: "alpha"},
	{id: "beta", fingerprint: "` + fpBeta + `"},
]
peerings: [
	{consumer: "alpha", provider: "beta"}, // alpha offloads to beta
]
`

const demoYAML = `# Peering spec for the demo.
clusters:
  - id: alpha
  - id: beta
    fingerprint: "` + fpBeta + `"
peerings:
  - consumer: alpha # offloads to beta
    provider: beta
`

var demoSpec = &Spec{
	Clusters: []Cluster{{ID: "alpha"}, {ID: "beta", Fingerprint: fpBeta}},
	Peerings: []Peering{{Consumer: "alpha", Provider: "beta"}},
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            *Spec
	}{
		{"demo in CUE", "peering.cue", demoCUE, demoSpec},
		{"demo in YAML", "peering.yaml", demoYAML, demoSpec},
		{"demo in YAML flow style", "peering.yml",
			`{clusters: [{id: alpha}, {id: beta, fingerprint: "` + fpBeta + `"}], peerings: [{consumer: alpha, provider: beta}]}`,
			demoSpec},
		{"demo in JSON, read as YAML", "peering.json",
			`{"clusters": [{"id": "alpha"}, {"id": "beta", "fingerprint": "` + fpBeta + `"}], "peerings": [{"consumer": "alpha", "provider": "beta"}]}`,
			demoSpec},
		{"CUE without package clause", "peering.cue",
			"clusters: [{id: \"a\"}, {id: \"b\"}]\npeerings: [{consumer: \"b\", provider: \"a\"}]\n",
			&Spec{Clusters: []Cluster{{ID: "a"}, {ID: "b"}}, Peerings: []Peering{{Consumer: "b", Provider: "a"}}}},
		{"owners of the spec and of clusters; empty lists are nil", "peering.yaml",
			"owners: ['@org/platform']\nclusters: [{id: a, owners: ['@ann', a-team@example.com]}, {id: b, owners: []}]\n",
			&Spec{Owners: []string{"@org/platform"}, Clusters: []Cluster{{ID: "a", Owners: []string{"@ann", "a-team@example.com"}}, {ID: "b"}}}},
		{"CUE using references, comprehensions and helpers", "peering.cue", `
_ids: ["alpha", "beta", "gamma"]
#hub: "alpha"
clusters: [for x in _ids {id: x}]
peerings: [for x in _ids if x != #hub {consumer: x, provider: #hub}]
`, &Spec{
			Clusters: []Cluster{{ID: "alpha"}, {ID: "beta"}, {ID: "gamma"}},
			Peerings: []Peering{{Consumer: "beta", Provider: "alpha"}, {Consumer: "gamma", Provider: "alpha"}},
		}},
		{"CUE importing the standard library", "peering.cue", `
import "strings"
clusters: [{id: strings.ToLower("ALPHA")}]
`, &Spec{Clusters: []Cluster{{ID: "alpha"}}}},
		{"both directions are distinct peerings", "peering.yaml", `
clusters: [{id: a}, {id: b}]
peerings: [{consumer: a, provider: b}, {consumer: b, provider: a}]
`, &Spec{
			Clusters: []Cluster{{ID: "a"}, {ID: "b"}},
			Peerings: []Peering{{Consumer: "a", Provider: "b"}, {Consumer: "b", Provider: "a"}},
		}},
		{"provider terms, policies and slices", "peering.yaml", `
clusters:
  - id: hub
    provider:
      certificateLifetime: 720h
      nonceLifetime: 90m
      classes:
        - name: small
          caps: {cpu: "4", memory: 8Gi, nvidia.com/gpu: "1"}
  - id: edge
peerings:
  - consumer: edge
    provider: hub
    policy: token
    tenantCondition: Cordoned
    slices:
      - name: s1
        class: small
        resources: {cpu: 500m, memory: 2Gi}
        createVirtualNode: false
      - name: s2
        resources: {}
`, &Spec{
			Clusters: []Cluster{
				{ID: "hub", Provider: &ProviderSettings{
					CertificateLifetime: "720h",
					NonceLifetime:       "90m",
					Classes:             []SliceClass{{Name: "small", Caps: map[string]string{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}},
				}},
				{ID: "edge"},
			},
			Peerings: []Peering{{
				Consumer: "edge", Provider: "hub", Policy: PolicyToken, TenantCondition: "Cordoned",
				Slices: []Slice{
					{Name: "s1", Class: "small", Resources: map[string]string{"cpu": "500m", "memory": "2Gi"}, CreateVirtualNode: new(false)},
					{Name: "s2", Resources: map[string]string{}},
				},
			}},
		}},
		{"51-character id", "peering.yaml", "clusters: [{id: " + id51 + "}]", &Spec{Clusters: []Cluster{{ID: id51}}}},
		{"one-character and digit-only ids", "peering.yaml", "clusters: [{id: x}, {id: \"42\"}]",
			&Spec{Clusters: []Cluster{{ID: "x"}, {ID: "42"}}}},
		{"clusters without peerings", "peering.cue", `clusters: [{id: "solo"}]`, &Spec{Clusters: []Cluster{{ID: "solo"}}}},
		{"empty lists", "peering.cue", "clusters: []\npeerings: []\n", &Spec{}},
		{"empty CUE file", "peering.cue", "", &Spec{}},
		{"CUE file with only a comment and package", "peering.cue", "// nothing yet\npackage peering\n", &Spec{}},
		{"empty YAML file", "peering.yaml", "", &Spec{}},
		{"YAML file with only comments", "peering.yaml", "# nothing yet\n", &Spec{}},
		{"YAML empty document", "peering.yaml", "---\n", &Spec{}},
		{"YAML null", "peering.yaml", "~\n", &Spec{}},
		{"YAML empty mapping", "peering.yaml", "{}\n", &Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.file, []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			// Empty and nil slices mean the same to callers.
			if len(got.Clusters) == 0 {
				got.Clusters = nil
			}
			if len(got.Peerings) == 0 {
				got.Peerings = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

const lifetimeRules = "Kubernetes signs nothing shorter, and a renewed certificate must reach the consumer within a third of it"

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []string
	}{
		{"id with an underscore", "peering.cue", `clusters: [
	{id: "alpha_1"},
]`, []string{
			`peering.cue:2:7: clusters[0].id: invalid cluster id "alpha_1": ` + idRules,
		}},
		{"uppercase id", "peering.yaml", `clusters:
  - id: Alpha
`, []string{
			`peering.yaml:2:9: clusters[0].id: invalid cluster id "Alpha": ` + idRules,
		}},
		{"id starting with a dash", "peering.yaml", `clusters: [{id: -a}]`, []string{
			`peering.yaml:1:17: clusters[0].id: invalid cluster id "-a": ` + idRules,
		}},
		{"empty id", "peering.cue", `clusters: [{id: ""}]`, []string{
			`peering.cue:1:17: clusters[0].id: invalid cluster id "": ` + idRules,
		}},
		{"52-character id", "peering.cue", `clusters: [{id: "` + id52 + `"}]`, []string{
			`peering.cue:1:17: clusters[0].id: cluster id "` + id52 + `" is 52 characters long, more than 51: Liqo's tenant namespace "liqo-tenant-<id>" must fit in 63 characters`,
		}},
		{"owner without @", "peering.cue", `clusters: [{id: "alpha", owners: ["@ann", "ann"]}]`, []string{
			`peering.cue:1:43: clusters[0].owners[1]: invalid owner "ann": want "@user", "@org/team" or an email address, as CODEOWNERS writes them`,
		}},
		{"fingerprint with uppercase hex", "peering.yaml", `clusters:
- id: beta
  fingerprint: ` + strings.ToUpper(fpBeta) + `
`, []string{
			`peering.yaml:3:16: clusters[0].fingerprint: invalid fingerprint "` + strings.ToUpper(fpBeta) + `": ` + fpRules,
		}},
		{"fingerprint without algorithm", "peering.cue", `clusters: [{id: "beta", fingerprint: "` + fpBeta[len("sha256:"):] + `"}]`, []string{
			`peering.cue:1:38: clusters[0].fingerprint: invalid fingerprint "` + fpBeta[len("sha256:"):] + `": ` + fpRules,
		}},
		{"fingerprint too short", "peering.cue", `clusters: [{id: "beta", fingerprint: "sha256:abc"}]`, []string{
			`peering.cue:1:38: clusters[0].fingerprint: invalid fingerprint "sha256:abc": ` + fpRules,
		}},
		{"unknown consumer and provider", "peering.cue", `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta"},
	{consumer: "gamma",
	 provider: "delta"},
]`, []string{
			`peering.cue:4:13: peerings[1].consumer: unknown cluster "gamma" (known: alpha, beta)`,
			`peering.cue:5:13: peerings[1].provider: unknown cluster "delta" (known: alpha, beta)`,
		}},
		{"unknown cluster in a big fleet", "peering.yaml", `clusters: [{id: c01}, {id: c02}, {id: c03}, {id: c04}, {id: c05}, {id: c06}, {id: c07}, {id: c08}, {id: c09}, {id: c10}, {id: c11}, {id: c12}]
peerings: [{consumer: c01, provider: c13}]
`, []string{
			`peering.yaml:2:38: peerings[0].provider: unknown cluster "c13" (known: c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, and 2 more)`,
		}},
		{"peering without any cluster", "peering.yaml", `peerings:
- consumer: alpha
  provider: beta
`, []string{
			`peering.yaml:2:13: peerings[0].consumer: unknown cluster "alpha" (known: none declared)`,
			`peering.yaml:3:13: peerings[0].provider: unknown cluster "beta" (known: none declared)`,
		}},
		{"same consumer and provider", "peering.yaml", `clusters: [{id: alpha}]
peerings:
- consumer: alpha
  provider: alpha
`, []string{
			`peering.yaml:4:13: peerings[0].provider: consumer and provider are both "alpha": a cluster cannot peer with itself`,
		}},
		{"duplicate peering", "peering.cue", `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta"},
	{consumer: "beta", provider: "alpha"},
	{provider: "beta", consumer: "alpha"},
]`, []string{
			`peering.cue:5:2: peerings[2]: duplicate peering of consumer "alpha" and provider "beta" (first declared at line 3)`,
		}},
		{"duplicate peering in YAML", "peering.yaml", `clusters: [{id: alpha}, {id: beta}]
peerings:
- consumer: alpha
  provider: beta
- consumer: alpha
  provider: beta
`, []string{
			`peering.yaml:5:3: peerings[1]: duplicate peering of consumer "alpha" and provider "beta" (first declared at line 3)`,
		}},
		{"duplicate cluster", "peering.yaml", `clusters:
- id: alpha
- id: beta
- id: alpha
  fingerprint: "` + fpBeta + `"
`, []string{
			`peering.yaml:4:7: clusters[2].id: duplicate cluster id "alpha" (first declared at line 2)`,
		}},
		{"unknown top-level field", "peering.cue", `clusters: []
cluster: [{id: "alpha"}]
`, []string{
			`peering.cue:2:1: cluster: field not allowed (allowed: clusters, peerings, owners)`,
		}},
		{"unknown fields in elements", "peering.yaml", `clusters:
- id: alpha
  name: Alpha
- id: beta
peerings:
- consumer: alpha
  provider: beta
  "bandwidth limit": 10
`, []string{
			`peering.yaml:3:3: clusters[0].name: field not allowed (allowed: id, fingerprint, provider, owners)`,
			`peering.yaml:8:3: peerings[0]."bandwidth limit": field not allowed (allowed: consumer, provider, policy, tenantCondition, slices)`,
		}},
		{"unknown field next to a wrong type in the same struct", "peering.cue", `clusters: [{id: 7, extra: true}]`, []string{
			`peering.cue:1:17: clusters[0].id: expected string, got int`,
			`peering.cue:1:20: clusters[0].extra: field not allowed (allowed: id, fingerprint, provider, owners)`,
		}},
		{"provider terms", "peering.yaml", `clusters:
- id: hub
  provider:
    certificateLifetime: 30 days
    nonceLifetime: 5
    classes:
    - name: Small
      caps: {cpu: 4, memory: 8GB, CPU!: "1"}
    - caps: {}
`, []string{
			`peering.yaml:4:26: clusters[0].provider.certificateLifetime: "30 days" is not a duration (e.g. "720h", "90m")`,
			`peering.yaml:5:20: clusters[0].provider.nonceLifetime: expected string, got int: quote the value`,
			`peering.yaml:7:13: clusters[0].provider.classes[0].name: invalid name "Small": ` + idRules,
			`peering.yaml:8:19: clusters[0].provider.classes[0].caps.cpu: expected string, got int: quote the value`,
			`peering.yaml:8:30: clusters[0].provider.classes[0].caps.memory: "8GB" is not a Kubernetes quantity (e.g. "4", "500m", "8Gi")`,
			`peering.yaml:8:35: clusters[0].provider.classes[0].caps."CPU!": invalid resource name "CPU!": want a Kubernetes resource name such as cpu, memory, pods or nvidia.com/gpu`,
			`peering.yaml:9:7: clusters[0].provider.classes[1].name: field is required but not present`,
		}},
		{"certificate lifetimes too short to renew", "peering.yaml", `clusters:
- id: a
  provider: {certificateLifetime: 90s}
- id: b
  provider: {certificateLifetime: 0s}
- id: c
  provider: {certificateLifetime: 10m}
- id: d
  provider: {certificateLifetime: 9m59s}
`, []string{
			`peering.yaml:3:35: clusters[0].provider.certificateLifetime: "90s" is shorter than 10m, the shortest certificate lifetime: ` + lifetimeRules,
			`peering.yaml:5:35: clusters[1].provider.certificateLifetime: "0s" is shorter than 10m, the shortest certificate lifetime: ` + lifetimeRules,
			`peering.yaml:9:35: clusters[3].provider.certificateLifetime: "9m59s" is shorter than 10m, the shortest certificate lifetime: ` + lifetimeRules,
		}},
		{"peering policy, condition and slices", "peering.yaml", `clusters: [{id: hub}, {id: edge}]
peerings:
- consumer: edge
  provider: hub
  policy: loose
  tenantCondition: active
  slices:
  - name: s1
    class: Small
    resources: {cpu: 2x}
    createVirtualNode: "yes"
  - resources: {}
    extra: 1
`, []string{
			`peering.yaml:5:11: peerings[0].policy: policy "loose" is not one of pinned, open, token`,
			`peering.yaml:6:20: peerings[0].tenantCondition: tenantCondition "active" is not one of Active, Cordoned, Drained`,
			`peering.yaml:9:12: peerings[0].slices[0].class: invalid name "Small": ` + idRules,
			`peering.yaml:10:22: peerings[0].slices[0].resources.cpu: "2x" is not a Kubernetes quantity (e.g. "4", "500m", "8Gi")`,
			`peering.yaml:11:24: peerings[0].slices[0].createVirtualNode: expected bool, got string`,
			`peering.yaml:12:5: peerings[0].slices[1].name: field is required but not present`,
			`peering.yaml:13:5: peerings[0].slices[1].extra: field not allowed (allowed: name, class, resources, createVirtualNode)`,
		}},
		{"wrong types", "peering.cue", `clusters: {id: "alpha"}
peerings: [
	"alpha -> beta",
]`, []string{
			`peering.cue:1:11: clusters: expected list, got struct`,
			`peering.cue:3:2: peerings[0]: expected struct, got string`,
		}},
		{"unquoted number and bool in YAML", "peering.yaml", `clusters:
- id: 42
- id: alpha
  fingerprint: true
- id:
`, []string{
			`peering.yaml:2:7: clusters[0].id: expected string, got int: quote the value`,
			`peering.yaml:4:16: clusters[1].fingerprint: expected string, got bool: quote the value`,
			`peering.yaml:5:6: clusters[2].id: expected string, got null`,
		}},
		{"YAML list left empty", "peering.yaml", `clusters:
  # - id: alpha
`, []string{
			`peering.yaml:1:10: clusters: expected list, got null: write [] for an empty list`,
		}},
		{"top level is a list", "peering.yaml", `- id: alpha
`, []string{
			`peering.yaml:1:1: expected struct, got list`,
		}},
		{"top level is a scalar", "peering.cue", `"alpha"`, []string{
			`peering.cue:1:1: expected struct, got string`,
		}},
		{"missing required fields", "peering.cue", `clusters: [
	{id: "alpha"},
	{fingerprint: "` + fpBeta + `"},
]
peerings: [
	{consumer: "alpha"},
	{},
]`, []string{
			`peering.cue:3:2: clusters[1].id: field is required but not present`,
			`peering.cue:6:2: peerings[0].provider: field is required but not present`,
			`peering.cue:7:2: peerings[1].consumer: field is required but not present`,
			`peering.cue:7:2: peerings[1].provider: field is required but not present`,
		}},
		{"missing required field shown with other errors", "peering.yaml", `clusters:
- fingerprint: nope
- id: Beta
`, []string{
			`peering.yaml:2:3: clusters[0].id: field is required but not present`,
			`peering.yaml:2:16: clusters[0].fingerprint: invalid fingerprint "nope": ` + fpRules,
			`peering.yaml:3:7: clusters[1].id: invalid cluster id "Beta": ` + idRules,
		}},
		{"CUE syntax error", "peering.cue", `clusters: [
	{id: "alpha"
]`, []string{
			`peering.cue:3:1: expected operand, found ']'`,
		}},
		{"YAML syntax error", "peering.yaml", `clusters:
  - id: alpha
 - id: beta
`, []string{
			`peering.yaml:3: invalid YAML: did not find expected key`,
		}},
		{"YAML duplicate key", "peering.yaml", `clusters:
- id: alpha
  id: beta
`, []string{
			`peering.yaml:3:3: duplicate key "id" (first at line 2): YAML keys must be unique`,
		}},
		{"several YAML documents", "peering.yaml", `clusters: [{id: alpha}]
---
clusters: [{id: beta}]
`, []string{
			`peering.yaml:3:1: a peering spec is a single YAML document, found a second one`,
		}},
		{"CUE package other than peering", "peering.cue", `package infra

clusters: []
`, []string{
			`peering.cue:1:9: package "infra": a peering spec is in package "peering" or has no package clause`,
		}},
		{"CUE reference to nothing", "peering.cue", `clusters: [{id: alpha}]`, []string{
			// CUE gives a path without list indexes here, so none is shown.
			`peering.cue:1:17: reference "alpha" not found`,
		}},
		{"CUE value that is not concrete", "peering.cue", `clusters: [{id: string}, {id: "a" | "b"}]`, []string{
			`peering.cue:1:17: clusters[0].id: incomplete value string`,
			`peering.cue:1:31: clusters[1].id: incomplete value "a" | "b"`,
		}},
		{"CUE import of a module", "peering.cue", `import "example.com/fleet"

clusters: fleet.all
`, []string{
			`peering.cue:1:8: import "example.com/fleet": a peering spec can import only CUE's standard library`,
		}},
		{"CUE conflict in the file stops before the schema", "peering.cue", `clusters: [{id: "a"}]
clusters: [{id: "b", extra: 1}]
`, []string{
			`peering.cue:1:17: clusters[0].id: conflicting values "b" and "a"`,
		}},
		{"CRLF line ends", "peering.yaml", "clusters:\r\n- id: Alpha\r\n", []string{
			`peering.yaml:2:7: clusters[0].id: invalid cluster id "Alpha": ` + idRules,
		}},
		{"lone carriage returns", "peering.yaml", "\r\r0", []string{
			// Found by FuzzParse: CUE's YAML decoder panicked on this.
			`peering.yaml:3:1: expected struct, got int`,
		}},
		{"invalid UTF-8", "peering.cue", "clusters: [\n\t{id: \"a\xffb\"}]", []string{
			`peering.cue:2:9: invalid UTF-8: a peering spec is UTF-8 text`,
		}},
		{"file too large", "peering.yaml", "# " + strings.Repeat("x", maxSpecSize),
			[]string{`peering.yaml: file is larger than 1 MiB: this cannot be a peering spec`}},
		{"every kind of mistake at once, sorted by position", "peering.cue", `clusters: [
	{id: "alpha"},
	{id: "alpha"},
	{id: "Beta", extra: 1},
]
peerings: [
	{consumer: "alpha", provider: "alpha"},
	{consumer: "alpha", provider: "gamma"},
]
`, []string{
			`peering.cue:3:7: clusters[1].id: duplicate cluster id "alpha" (first declared at line 2)`,
			`peering.cue:4:7: clusters[2].id: invalid cluster id "Beta": ` + idRules,
			`peering.cue:4:15: clusters[2].extra: field not allowed (allowed: id, fingerprint, provider, owners)`,
			`peering.cue:7:32: peerings[0].provider: consumer and provider are both "alpha": a cluster cannot peer with itself`,
			`peering.cue:8:32: peerings[1].provider: unknown cluster "gamma" (known: alpha)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse(tt.file, []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want problems", spec)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse error is %T (%v), want *Error", err, err)
			}
			var got []string
			for _, p := range perr.Problems {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
			if err.Error() != strings.Join(got, "\n") {
				t.Errorf("Error() = %q, want the problems joined by newlines", err.Error())
			}
		})
	}
}

// TestProblemPointsAtToken checks that line:col of a problem lands on the
// offending text, which the table above only shows as numbers.
func TestProblemPointsAtToken(t *testing.T) {
	tests := []struct {
		file, src, token string
	}{
		{"peering.cue", "clusters: [{id: \"alpha\"}]\npeerings: [{consumer: \"alpha\", provider: \"gamma\"}]\n", `"gamma"`},
		{"peering.yaml", "clusters:\n  - id: alpha\npeerings:\n  - consumer: alpha\n    provider: gamma\n", `gamma`},
		{"peering.cue", "clusters: [{id: \"a\", nmae: \"x\"}]\n", `nmae`},
		{"peering.yaml", "clusters:\n  - id: a\n    nmae: x\n", `nmae`},
		{"peering.yaml", "clusters:\n  - id: a\n  - id: a\n", `a`},
		{"peering.cue", "clusters: [{id: \"ok\"}, {id: \"NOT_OK\"}]\n", `"NOT_OK"`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.file, []byte(tt.src))
		var perr *Error
		if !errors.As(err, &perr) || len(perr.Problems) != 1 {
			t.Errorf("%s %q: want one problem, got %v", tt.file, tt.src, err)
			continue
		}
		p := perr.Problems[0]
		lines := strings.Split(tt.src, "\n")
		if p.Line < 1 || p.Line > len(lines) || p.Column < 1 || p.Column > len(lines[p.Line-1]) {
			t.Errorf("%s: position %d:%d is outside the file", p, p.Line, p.Column)
			continue
		}
		if at := lines[p.Line-1][p.Column-1:]; !strings.HasPrefix(at, tt.token) {
			t.Errorf("%s: points at %q, want %q", p, at, tt.token)
		}
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{"peering.cue", 12, 15, "peerings[1].provider", `unknown cluster "gamma" (known: alpha, beta)`},
			`peering.cue:12:15: peerings[1].provider: unknown cluster "gamma" (known: alpha, beta)`},
		{Problem{"peering.cue", 0, 0, "clusters[0].id", "field is required but not present"},
			`peering.cue: clusters[0].id: field is required but not present`},
		{Problem{"peering.yaml", 3, 0, "", "invalid YAML: did not find expected key"},
			`peering.yaml:3: invalid YAML: did not find expected key`},
		{Problem{"repo/peering.cue", 1, 1, "", "expected struct, got list"},
			`repo/peering.cue:1:1: expected struct, got list`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorSortsProblems(t *testing.T) {
	e := &Error{Problems: []Problem{
		{File: "b.cue", Line: 1, Column: 1, Message: "4"},
		{File: "a.cue", Line: 2, Column: 1, Message: "3"},
		{File: "a.cue", Line: 1, Column: 9, Message: "2"},
		{File: "a.cue", Line: 0, Message: "0"},
		{File: "a.cue", Line: 1, Column: 2, Message: "1"},
	}}
	e.sort()
	var got string
	for _, p := range e.Problems {
		got += p.Message
	}
	if got != "01234" {
		t.Errorf("sorted order %q, want 01234", got)
	}
}

// TestExplainersAgreeWithSchema guards the Go copies of the schema's string
// rules: an explanation is only shown for values the schema rejects, and
// must say something for every value it rejects.
func TestExplainersAgreeWithSchema(t *testing.T) {
	ids := []string{"a", "0", "a-b", "a--b", "alpha-1", id51, id52, "", "-a", "a-", "A", "a_b", "a.b", "a b", "é", "a\n", strings.Repeat("é", 60)}
	for _, id := range ids {
		_, err := Parse("peering.yaml", []byte("clusters: [{id: "+quoteYAML(id)+"}]"))
		if rejected, explained := err != nil, explainClusterID(id) != ""; rejected != explained {
			t.Errorf("id %q: schema rejects: %v, Go explains: %v (%v)", id, rejected, explained, err)
		}
	}
	owners := []string{"@ann", "@org/team", "@group/sub/subsub", "@a.b_c-d", "ann@example.com", "ann", "@", "@/team", "@org/", "@org team", "a@b@c", "#@x", "@ann\n", ""}
	for _, o := range owners {
		_, err := Parse("peering.yaml", []byte("owners: ["+quoteYAML(o)+"]\nclusters: [{id: a, owners: ["+quoteYAML(o)+"]}]"))
		if rejected, explained := err != nil, explainOwner(o) != ""; rejected != explained {
			t.Errorf("owner %q: schema rejects: %v, Go explains: %v (%v)", o, rejected, explained, err)
		}
	}
	fps := []string{fpBeta, strings.ToUpper(fpBeta), "sha256:", fpBeta + "0", fpBeta[:len(fpBeta)-1], "sha512:" + fpBeta[7:], "SHA256:" + fpBeta[7:], fpBeta + "\n"}
	for _, fp := range fps {
		_, err := Parse("peering.yaml", []byte("clusters: [{id: a, fingerprint: "+quoteYAML(fp)+"}]"))
		if rejected, explained := err != nil, explainFingerprint(fp) != ""; rejected != explained {
			t.Errorf("fingerprint %q: schema rejects: %v, Go explains: %v (%v)", fp, rejected, explained, err)
		}
	}
}

// quoteYAML writes s as a YAML double-quoted scalar (JSON escapes are
// valid there).
func quoteYAML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestParseIsSafeForConcurrentUse(t *testing.T) {
	done := make(chan error)
	for range 4 {
		go func() {
			_, err := Parse("peering.cue", []byte(demoCUE))
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	var big strings.Builder
	big.WriteString("clusters:\n")
	for i := range 500 {
		big.WriteString("- id: c" + strings.Repeat("x", i%40) + strconv.Itoa(i) + "\n")
	}
	big.WriteString("peerings:\n")
	for i := range 499 {
		big.WriteString("- consumer: c" + strings.Repeat("x", i%40) + strconv.Itoa(i) + "\n  provider: c" + strings.Repeat("x", (i+1)%40) + strconv.Itoa(i+1) + "\n")
	}
	for _, bm := range []struct{ name, file, src string }{
		{"demo.cue", "peering.cue", demoCUE},
		{"demo.yaml", "peering.yaml", demoYAML},
		{"500clusters.yaml", "peering.yaml", big.String()},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(bm.file, []byte(bm.src)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
