package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that its problems are well
// formed, and that whatever it accepts satisfies the spec's invariants and
// decodes the same after a round trip through JSON.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		cue  bool
		data string
	}{
		{true, demoCUE},
		{false, demoYAML},
		{true, ""},
		{false, ""},
		{true, `clusters: [{id: "Alpha"}, {fingerprint: "sha256:00"}, {id: 5, x: 1}]`},
		{true, `clusters: [{id: "a"}, {id: "a"}]` + "\npeerings: [{consumer: \"a\", provider: \"a\"}, {consumer: \"a\", provider: \"b\"}]"},
		{true, `clusters: [{id: "a"}, {id: "b"}]` + "\npeerings: [{consumer: \"a\", provider: \"b\"}, {provider: \"b\", consumer: \"a\"}]"},
		{true, "package infra\nimport \"strings\"\nclusters: [{id: strings.ToLower(\"A\")}]"},
		{true, "_ids: [\"a\", \"b\"]\nclusters: [for x in _ids {id: x}]\npeerings: [{consumer: _ids[0], provider: _ids[1]}]"},
		{true, "clusters: [\n\t{id: \"alpha\"\n]"},
		{true, "x: y"},
		{true, "[1, 2]"},
		{false, "clusters:\n  - id: alpha\n - id: beta\n"},
		{false, "clusters:\n- id: 42\n- id: a\n  fingerprint: true\n- id:\n"},
		{false, "a: 1\n---\nb: 2\n"},
		{false, "clusters: [{id: " + id52 + "}]\npeerings: [{consumer: " + id51 + ", provider: x}]"},
		{false, "- id: alpha\n"},
		{false, "clusters:\n- id: hub\n  provider:\n    certificateLifetime: 720h\n    classes:\n    - name: small\n      caps: {cpu: \"4\", memory: 8Gi}\n- id: edge\npeerings:\n- consumer: edge\n  provider: hub\n  policy: open\n  tenantCondition: Drained\n  slices:\n  - name: s1\n    class: small\n    resources: {cpu: 500m, nvidia.com/gpu: \"1\"}\n    createVirtualNode: false\n"},
		{false, "clusters: [{id: a, provider: {nonceLifetime: 5, classes: [{caps: {CPU!: 1, cpu: 2x}}]}}]\npeerings: [{consumer: a, provider: a, policy: loose, slices: [{resources: {}, x: 1}]}]"},
		{true, "clusters: [{id: \"hub\", provider: classes: [{name: \"c\", caps: {cpu: \"1\"}}]}, {id: \"e\"}]\npeerings: [{consumer: \"e\", provider: \"hub\", slices: [{name: \"s\", resources: cpu: \"1\"}]}]"},
		{false, "clusters: &c [{id: a}]\npeerings: [{consumer: a, provider: a}]\n"},
		{false, `{"clusters": [{"id": "a"}, {"id": "b", "fingerprint": "` + fpBeta + `"}], "peerings": [{"consumer": "b", "provider": "a"}]}`},
	}
	for _, s := range seeds {
		f.Add(s.cue, []byte(s.data))
	}
	for _, c := range badSpecs() {
		f.Add(c.cue, []byte(c.input))
	}
	f.Fuzz(func(t *testing.T, isCUE bool, data []byte) {
		name := "peering.yaml"
		if isCUE {
			name = "peering.cue"
		}
		spec, err := Parse(name, data)
		if err != nil {
			checkProblems(t, name, data, err)
			return
		}
		checkInvariants(t, spec)

		// What Parse accepts and decodes, it accepts again as JSON.
		b, jerr := json.Marshal(spec)
		if jerr != nil {
			t.Fatal(jerr)
		}
		again, err := Parse("peering.json", b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if !sameSpec(spec, again) {
			t.Fatalf("round trip changed the spec:\n%+v\n%+v", spec, again)
		}
	})
}

func checkProblems(t *testing.T, name string, data []byte, err error) {
	t.Helper()
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error is %T, want *Error: %v", err, err)
	}
	if len(perr.Problems) == 0 || err.Error() == "" {
		t.Fatalf("error without problems: %#v", perr)
	}
	text := string(data)
	if strings.HasSuffix(name, ".yaml") {
		text = yamlLineBreaks.Replace(text)
	}
	lines := strings.Count(text, "\n") + 1
	notAllowed := map[string]bool{}
	for _, p := range perr.Problems {
		if strings.HasPrefix(p.Message, internalErrorPrefix) {
			t.Errorf("Parse recovered from a panic: %s", p)
		}
		// CUE's own "field not allowed" must give way to ours.
		if strings.HasPrefix(p.Message, "field not allowed") {
			if notAllowed[p.Path] {
				t.Errorf("%s reported twice: %v", p.Path, err)
			}
			notAllowed[p.Path] = true
		}
		if p.File != name || p.Message == "" || p.Line < 0 || p.Column < 0 || p.Line > lines || (p.Line == 0 && p.Column != 0) {
			t.Errorf("malformed problem %#v (file has %d lines)", p, lines)
		}
	}
}

func checkInvariants(t *testing.T, spec *Spec) {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range spec.Clusters {
		if !isDNSLabel(c.ID) || len(c.ID) > 51 {
			t.Errorf("accepted cluster id %q", c.ID)
		}
		if ids[c.ID] {
			t.Errorf("accepted duplicate cluster id %q", c.ID)
		}
		ids[c.ID] = true
		if fp := c.Fingerprint; fp != "" && (!strings.HasPrefix(fp, "sha256:") || len(fp) != len("sha256:")+64 || strings.Trim(fp[len("sha256:"):], "0123456789abcdef") != "") {
			t.Errorf("accepted fingerprint %q", fp)
		}
	}
	pairs := map[Pair]bool{}
	for _, p := range spec.Peerings {
		pair := p.Pair()
		if !ids[p.Consumer] || !ids[p.Provider] || p.Consumer == p.Provider || pairs[pair] {
			t.Errorf("accepted peering %+v of clusters %v", p, ids)
		}
		pairs[pair] = true
	}
}

// isDNSLabel is written out rather than a regular expression, to check
// the schema by other means than its own.
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

func sameSpec(a, b *Spec) bool {
	norm := func(s *Spec) Spec {
		n := *s
		if len(n.Clusters) == 0 {
			n.Clusters = nil
		}
		if len(n.Peerings) == 0 {
			n.Peerings = nil
		}
		return n
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
