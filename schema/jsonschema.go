package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/jsonschema"
)

// jsonSchemaTitle names the schema in editors' hover and completion UIs.
const jsonSchemaTitle = "gitpeer peering spec"

var jsonSchemaOnce = sync.OnceValues(generateJSONSchema)

// JSONSchema returns a JSON Schema (draft 2020-12) of the spec, generated
// from the embedded CUE schema, as indented JSON. It is meant for editors
// validating peering.yaml as it is typed, e.g. with a
// "# yaml-language-server: $schema=<url>" comment. It carries the shape
// rules (closed objects, required fields, the cluster ID pattern and its
// 51-character limit, the fingerprint pattern), not the cross-references
// that only [Parse] checks. The caller owns the returned slice.
//
// An error means the embedded schema cannot be exported: a bug of this
// package, not of any input.
func JSONSchema() ([]byte, error) {
	b, err := jsonSchemaOnce()
	return slices.Clone(b), err
}

func generateJSONSchema() ([]byte, error) {
	ctx := cuecontext.New()
	def, err := compileSchema(ctx)
	if err != nil {
		return nil, err
	}
	expr, err := jsonschema.Generate(def, nil)
	if err != nil {
		return nil, fmt.Errorf("generate json schema: %w", err)
	}
	if st, ok := expr.(*ast.StructLit); ok {
		st.Elts = slices.Insert(st.Elts, min(1, len(st.Elts)), ast.Decl(&ast.Field{
			Label: ast.NewString("title"),
			Value: ast.NewString(jsonSchemaTitle),
		}))
	}
	v := ctx.BuildExpr(expr)
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("build json schema: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode json schema: %w", err)
	}
	return append(b, '\n'), nil
}
