package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/jsonschema"
	cueyaml "cuelang.org/go/encoding/yaml"
)

func TestJSONSchemaShape(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Schema               string             `json:"$schema"`
		Title                string             `json:"title"`
		Ref                  string             `json:"$ref"`
		Type                 string             `json:"type"`
		Pattern              string             `json:"pattern"`
		MaxLength            *int               `json:"maxLength"`
		Required             []string           `json:"required"`
		AdditionalProperties *bool              `json:"additionalProperties"`
		Properties           map[string]schema  `json:"properties"`
		Items                *schema            `json:"items"`
		Defs                 map[string]*schema `json:"$defs"`
	}
	var s schema
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("JSONSchema is not JSON: %v\n%s", err, b)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", s.Schema)
	}
	if s.Title == "" {
		t.Error("no title")
	}
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("root: type %q, additionalProperties %v; want a closed object", s.Type, s.AdditionalProperties)
	}
	if got := s.Properties["clusters"].Items; got == nil || got.Ref != "#/$defs/Cluster" {
		t.Errorf("clusters items = %+v, want $ref Cluster", got)
	}
	if got := s.Properties["peerings"].Items; got == nil || got.Ref != "#/$defs/Peering" {
		t.Errorf("peerings items = %+v, want $ref Peering", got)
	}
	id := s.Defs["ClusterID"]
	if id == nil || id.Type != "string" || id.Pattern != clusterIDPattern.String() || id.MaxLength == nil || *id.MaxLength != 51 {
		t.Errorf("$defs.ClusterID = %+v, want string, pattern %s, maxLength 51", id, clusterIDPattern)
	}
	cl := s.Defs["Cluster"]
	if cl == nil || strings.Join(cl.Required, ",") != "id" || cl.AdditionalProperties == nil || *cl.AdditionalProperties ||
		cl.Properties["id"].Ref != "#/$defs/ClusterID" || cl.Properties["fingerprint"].Pattern != fingerprintPattern.String() {
		t.Errorf("$defs.Cluster = %+v", cl)
	}
	if got := cl.Properties["owners"].Items; got == nil || got.Ref != "#/$defs/Owner" {
		t.Errorf("$defs.Cluster.owners items = %+v, want $ref Owner", got)
	}
	if got := s.Properties["owners"].Items; got == nil || got.Ref != "#/$defs/Owner" {
		t.Errorf("owners items = %+v, want $ref Owner", got)
	}
	if o := s.Defs["Owner"]; o == nil || o.Type != "string" || o.Pattern != ownerPattern.String() {
		t.Errorf("$defs.Owner = %+v, want string, pattern %s", o, ownerPattern)
	}
	pe := s.Defs["Peering"]
	if pe == nil || strings.Join(pe.Required, ",") != "consumer,provider" || pe.AdditionalProperties == nil || *pe.AdditionalProperties ||
		pe.Properties["consumer"].Ref != "#/$defs/ClusterID" || pe.Properties["provider"].Ref != "#/$defs/ClusterID" {
		t.Errorf("$defs.Peering = %+v", pe)
	}
	if !bytes.Contains(b, []byte(`"description"`)) {
		t.Error("no descriptions: editors show them on hover")
	}
}

func TestJSONSchemaReturnsACopy(t *testing.T) {
	a, _ := JSONSchema()
	a[0] = 'x'
	b, _ := JSONSchema()
	if b[0] != '{' {
		t.Error("JSONSchema returned its cached slice")
	}
}

// TestJSONSchemaAgreesWithParse reads the exported JSON Schema back with
// CUE's JSON Schema decoder and checks that it accepts and rejects YAML
// specs as Parse does, for the rules a JSON Schema can express.
func TestJSONSchemaAgreesWithParse(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	f, err := jsonschema.Extract(ctx.CompileBytes(b, cue.Filename("peering.schema.json")), &jsonschema.Config{})
	if err != nil {
		t.Fatalf("extract JSON Schema: %v", err)
	}
	fromJSONSchema := ctx.BuildFile(f)
	if err := fromJSONSchema.Err(); err != nil {
		t.Fatalf("build JSON Schema as CUE: %v", err)
	}

	tests := []struct {
		name, src string
		valid     bool
		// onlyParse marks rules that a JSON Schema cannot express.
		onlyParse bool
	}{
		{"demo", demoYAML, true, false},
		{"empty", "{}", true, false},
		{"51-character id", "clusters: [{id: " + id51 + "}]", true, false},
		{"52-character id", "clusters: [{id: " + id52 + "}]", false, false},
		{"uppercase id", "clusters: [{id: Alpha}]", false, false},
		{"uppercase consumer", "peerings: [{consumer: Alpha, provider: beta}]", false, false},
		{"bad fingerprint", "clusters: [{id: a, fingerprint: 'sha256:00'}]", false, false},
		{"unknown field", "clusters: [{id: a, name: x}]", false, false},
		{"unknown top-level field", "cluster: []", false, false},
		{"missing id", "clusters: [{fingerprint: '" + fpBeta + "'}]", false, false},
		{"missing provider", "peerings: [{consumer: a}]", false, false},
		{"wrong type", "clusters: {id: a}", false, false},
		{"provider terms and slices", `clusters: [{id: a, provider: {certificateLifetime: 720h, classes: [{name: small, caps: {cpu: "4", nvidia.com/gpu: "1"}}]}}, {id: b}]
peerings: [{consumer: b, provider: a, policy: open, slices: [{name: s, class: small, resources: {cpu: 500m}}]}]`, true, false},
		{"bad duration", "clusters: [{id: a, provider: {nonceLifetime: 1 week}}]", false, false},
		{"bad quantity", "clusters: [{id: a, provider: {classes: [{name: c, caps: {cpu: lots}}]}}]", false, false},
		{"bad resource name", "clusters: [{id: a, provider: {classes: [{name: c, caps: {CPU!: '1'}}]}}]", false, false},
		{"bad policy", "peerings: [{consumer: a, provider: b, policy: loose}]", false, false},
		{"owners", "owners: ['@org/platform']\nclusters: [{id: a, owners: ['@ann', '@org/a-team', a@example.com]}]", true, false},
		{"bad owner", "clusters: [{id: a, owners: [ann]}]", false, false},
		{"bad spec owner", "owners: ['@org team']", false, false},
		{"owners not a list", "clusters: [{id: a, owners: '@ann'}]", false, false},
		{"slice without resources", "peerings: [{consumer: a, provider: b, slices: [{name: s}]}]", false, false},
		{"unknown cluster", "peerings: [{consumer: a, provider: b}]", false, true},
		{"duplicate cluster", "clusters: [{id: a}, {id: a}]", false, true},
		{"self-peering", "clusters: [{id: a}]\npeerings: [{consumer: a, provider: a}]", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, perr := Parse("peering.yaml", []byte(tt.src))
			if got := perr == nil; got != tt.valid {
				t.Fatalf("Parse valid = %v, want %v (%v)", got, tt.valid, perr)
			}
			yf, err := cueyaml.Extract("peering.yaml", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			jerr := ctx.BuildFile(yf).Unify(fromJSONSchema).Validate(cue.Concrete(true))
			want := tt.valid || tt.onlyParse
			if got := jerr == nil; got != want {
				t.Errorf("JSON Schema valid = %v, want %v (%v)", got, want, jerr)
			}
		})
	}
}
