package structure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryReasonIsDocumented keeps the one registry of reasons
// (internal/reasons) and the docs in step: every reason a program may
// branch on has its line in docs/ (a table row or a sentence naming it in
// backquotes), so that an operator who meets it can look it up.
func TestEveryReasonIsDocumented(t *testing.T) {
	var docs strings.Builder
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	files, err := filepath.Glob(filepath.Join(root, "internal", "reasons", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for _, name := range vs.Names {
					n++
					if vs.Doc == nil {
						t.Errorf("%s: reason %s has no doc line", filepath.Base(f), name.Name)
					}
					if !strings.Contains(docs.String(), "`"+name.Name+"`") {
						t.Errorf("%s: reason %s is in no doc of docs/", filepath.Base(f), name.Name)
					}
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("found %d reasons in internal/reasons: the registry moved?", n)
	}
}
