package schema

import (
	"reflect"
	"testing"

	"cuelang.org/go/cue/cuecontext"
)

// Every Parse in this package's tests also walks the specs CUE accepts and
// panics (an internal-error problem, which fails the test) if the walker
// flags one: validate skips the walk on them.
func init() { walkAccepted = true }

// Parse decodes a valid spec from the file's value alone, which equals its
// unification with the schema only while the schema sets no defaults: a
// spec leaving every optional field out must decode the same both ways.
func TestDecodingTheFileAloneMissesNoSchemaDefault(t *testing.T) {
	src := `clusters: [{id: "a", provider: {classes: [{name: "c", caps: {cpu: "1"}}]}}, {id: "b"}]
peerings: [{consumer: "b", provider: "a", slices: [{name: "s", resources: {cpu: "1"}}]}]
`
	ctx := cuecontext.New()
	def, err := compileSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc := ctx.CompileString(src)
	var alone, unified Spec
	if err := doc.Decode(&alone); err != nil {
		t.Fatal(err)
	}
	if err := doc.Unify(def).Decode(&unified); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(alone, unified) {
		t.Fatalf("the schema adds defaults: decoded alone %+v, with the schema %+v", alone, unified)
	}
}
