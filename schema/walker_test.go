package schema

import (
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
)

// TestValidateOtherSchemas runs the checks against schemas other than the
// embedded one, so that the walker's handling of CUE constructs (pattern
// fields, nested definitions) is tested whatever the spec's schema grows
// into.
func TestValidateOtherSchemas(t *testing.T) {
	tests := []struct {
		name, schema, doc string
		want              []string
	}{
		{"pattern fields are allowed and checked",
			`#S: {tags!: {[=~"^[a-z]+$"]: =~"^[0-9]+$"}}`,
			`tags: {cpu: "4", memory: 8, "Bad!": "1"}`,
			[]string{
				`x.cue:1:26: tags.memory: expected string, got int`,
				`x.cue:1:29: tags."Bad!": field "Bad!" not allowed`,
			}},
		{"fixed and pattern fields together",
			`#S: {name!: string, labels?: {[string]: string}}`,
			`name: "a", labels: {any: "x", thing: "y"}, other: 1`,
			[]string{
				`x.cue:1:44: other: field not allowed (allowed: name, labels)`,
			}},
		{"nested required fields",
			`#S: {a?: [...{b!: {c!: int}}]}`,
			`a: [{b: {}}, {}]`,
			[]string{
				`x.cue:1:9: a[0].b.c: field is required but not present`,
				`x.cue:1:14: a[1].b: field is required but not present`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := cuecontext.New()
			def := ctx.CompileString(tt.schema).LookupPath(cue.ParsePath("#S"))
			if err := def.Err(); err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile("x.cue", tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			c := &checker{file: "x.cue", doc: ctx.BuildFile(f)}
			c.validate(def)
			var got []string
			e := c.err().(*Error)
			for _, p := range e.Problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}
