package schema

import (
	"errors"
	"strings"
	"testing"
)

// The bad-input suite for the peering spec: files a reviewer could merge by
// mistake or a repo writer could push. Each is refused with a *Error whose
// problem names the spec file, the line, the CUE path at fault (when there
// is one) and the reason, and Parse never panics (a recovered panic would
// show as an "internal error" problem). The table also seeds FuzzParse.

// badSpec is one malformed spec.
type badSpec struct {
	name  string
	cue   bool // peering.cue; else peering.yaml
	input string
	path  string // CUE path of the problem; "" for the whole file
	line  int    // line of the problem; 0 when the file has no position
	says  string // a part of the problem's message
}

func badSpecs() []badSpec {
	// Nine levels of nine aliases: 9^9 nodes once expanded.
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		prev := "*a" + string(rune('0'+i-1))
		bomb.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 8) + prev + "]\n")
	}
	bomb.WriteString("clusters: []\n")
	return []badSpec{
		// Syntax and encoding.
		{name: "a CUE spec cut in the middle", cue: true, input: "clusters: [\n\t{id: \"alpha\"},\n\t{id: \"be", line: 3, says: "string literal not terminated"},
		{name: "a YAML spec with a bad indentation", input: "clusters:\n  - id: alpha\n - id: beta\n", line: 3, says: "did not find expected"},
		{name: "a YAML spec with a duplicate top-level key", input: "clusters:\n- id: alpha\npeerings: []\nclusters:\n- id: beta\n", line: 4, says: `duplicate key "clusters" (first at line 1)`},
		{name: "a YAML spec with a duplicate key whose values would merge", input: "clusters:\n- id: alpha\n  provider: {nonceLifetime: 1h}\n  provider: {certificateLifetime: 1h}\n", line: 4, says: `duplicate key "provider" (first at line 3)`},
		{name: "a YAML spec with an alias bomb", input: bomb.String(), says: "alias"},
		{name: "a spec with invalid UTF-8", input: "clusters:\n- id: al\xffpha\n", line: 2, says: "invalid UTF-8"},
		{name: "a spec larger than 1 MiB", input: "clusters: []\n# " + strings.Repeat("x", maxSpecSize), says: "larger than 1 MiB"},
		{name: "two YAML documents", input: "clusters:\n- id: alpha\n---\nclusters:\n- id: beta\n", says: "document"},
		{name: "a CUE spec of another package", cue: true, input: "package infra\nclusters: []\n", line: 1, says: "package"},

		// Schema: wrong shapes and unknown fields.
		{name: "a list at the top", input: "- id: alpha\n", line: 1, says: "expected struct, got list"},
		{name: "an unknown top-level field", input: "clusters: []\napiVersion: gitpeer.io/v1\n", path: "apiVersion", line: 2, says: "not allowed"},
		{name: "an unknown cluster field", input: "clusters:\n- id: alpha\n  apiServer: https://x\n", path: "clusters[0].apiServer", line: 3, says: "not allowed"},
		{name: "a cluster without id", input: "clusters:\n- fingerprint: \"" + fpBeta + "\"\n", path: "clusters[0].id", says: "required"},
		{name: "a cluster ID that is a number", input: "clusters:\n- id: 42\n", path: "clusters[0].id", line: 2, says: "string"},

		// Cluster IDs and other values.
		{name: "a cluster ID with capitals (not DNS-1123)", input: "clusters:\n- id: Alpha\n", path: "clusters[0].id", line: 2, says: "DNS-1123"},
		{name: "a cluster ID of 52 characters", input: "clusters:\n- id: " + id52 + "\n", path: "clusters[0].id", line: 2, says: "51"},
		{name: "a cluster ID that climbs out of clusters/ with ../", input: "clusters:\n- id: ../beta\n", path: "clusters[0].id", line: 2, says: "DNS-1123"},
		{name: "a cluster ID with a slash (a path into another cluster)", input: "clusters:\n- id: beta/inbox\n", path: "clusters[0].id", line: 2, says: "DNS-1123"},
		{name: "a cluster ID with a dot", input: "clusters:\n- id: alpha.example\n", path: "clusters[0].id", line: 2, says: "DNS-1123"},
		{name: "a fingerprint of another hash", input: "clusters:\n- id: alpha\n  fingerprint: \"md5:00\"\n", path: "clusters[0].fingerprint", line: 3, says: "sha256:"},
		{name: "a duplicate cluster ID", input: "clusters:\n- id: alpha\n- id: alpha\n", path: "clusters[1].id", line: 3, says: "duplicate"},
		{name: "a peering with an undeclared cluster", input: "clusters:\n- id: alpha\npeerings:\n- consumer: alpha\n  provider: gamma\n", path: "peerings[0].provider", line: 5, says: "gamma"},
		{name: "a cluster peering with itself", input: "clusters:\n- id: alpha\npeerings:\n- consumer: alpha\n  provider: alpha\n", path: "peerings[0].provider", line: 5, says: "cannot peer with itself"},
		{name: "a certificate lifetime that is not a duration", input: "clusters:\n- id: alpha\n  provider:\n    certificateLifetime: 30days\n", path: "clusters[0].provider.certificateLifetime", line: 4, says: "duration"},

		// CUE evaluation.
		{name: "conflicting values for a cluster ID", cue: true, input: "clusters: [{id: \"alpha\" & \"beta\"}]\n", path: "clusters[0].id", line: 1, says: "conflicting values"},
		{name: "a reference cycle", cue: true, input: "_a: _b\n_b: _a\nclusters: [{id: _a}]\n", path: "clusters[0].id", says: "incomplete"},
		{name: "a structural cycle", cue: true, input: "_x: {next: _x}\nclusters: [{id: \"alpha\", provider: _x}]\n", path: "_x.next", says: "structural cycle"},
		{name: "an undefined reference", cue: true, input: "clusters: [{id: alpha}]\n", line: 1, says: "reference \"alpha\" not found"},
		{name: "an import of a package that does not exist", cue: true, input: "import \"example.com/evil\"\nclusters: []\n", line: 1, says: "import"},
	}
}

// TestBadInputSpecs: every malformed spec is refused with a *Error whose
// problems name the file, and one of them the expected path, line and
// reason; no problem is a recovered panic.
func TestBadInputSpecs(t *testing.T) {
	for _, c := range badSpecs() {
		t.Run(c.name, func(t *testing.T) {
			file := "peering.yaml"
			if c.cue {
				file = "peering.cue"
			}
			spec, err := Parse(file, []byte(c.input))
			if err == nil {
				t.Fatalf("accepted: %+v", spec)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %T %v, want a *schema.Error", err, err)
			}
			t.Log(err)
			found := false
			for _, p := range perr.Problems {
				if p.File != file {
					t.Errorf("problem %q names file %q, want %q", p, p.File, file)
				}
				if strings.HasPrefix(p.Message, internalErrorPrefix) {
					t.Errorf("Parse panicked: %s", p)
				}
				if p.Path == c.path && (c.line == 0 || p.Line == c.line) && strings.Contains(p.Message, c.says) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem at path %q, line %d, saying %q", c.path, c.line, c.says)
			}
		})
	}
}
