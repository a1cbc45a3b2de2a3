package schema

import (
	"bytes"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// Locator finds where values of a spec file are written, to report
// problems that only a reader of the repo can find (a slice over its
// class's caps, a fingerprint that is not the published key's) at a
// position, as Parse reports its own.
//
// It parses the file without evaluating it, so it costs what reading the
// file costs and is safe in the process that bounds evaluations
// ([LoadBounded]). Only values written out literally are found: one that a
// comprehension, a reference or a second declaration of a field produces
// has no position of its own, and its problems carry the path alone.
type Locator struct {
	file string
	root ast.Expr // nil when the file does not parse
}

// NewLocator parses data, the content of the spec file named file (as
// [Load] returns it, so that problems name it the same way). A file that
// does not parse gives a Locator that finds nothing.
func NewLocator(file string, data []byte) *Locator {
	l := &Locator{file: file}
	defer func() {
		// See Parse: CUE's parsers have panicked on odd input before.
		if recover() != nil {
			l.root = nil
		}
	}()
	if len(data) > maxSpecSize {
		return l
	}
	if strings.HasSuffix(file, ".cue") {
		f, err := parser.ParseFile(file, data)
		if err == nil {
			l.root = &ast.StructLit{Elts: f.Decls}
		}
		return l
	}
	data = []byte(yamlLineBreaks.Replace(string(data)))
	if expr, err := cueyaml.NewDecoder(file, bytes.NewReader(data)).Extract(); err == nil {
		l.root = expr
	}
	return l
}

// Problem is a problem at path (a CUE path as [Problem].Path writes it,
// e.g. `peerings[1].slices[0].resources."nvidia.com/gpu"`), positioned
// where the value at path is written, or at the nearest enclosing value
// written out literally, else without a line.
func (l *Locator) Problem(path, msg string) Problem {
	p := Problem{File: l.file, Path: path, Message: msg}
	parsed := cue.ParsePath(path)
	if l.root == nil || parsed.Err() != nil {
		return p
	}
	sels := parsed.Selectors()
	for n := len(sels); n >= 0; n-- {
		if pos := l.find(sels[:n]); pos.IsValid() && pos.Line() > 0 {
			p.Line, p.Column = pos.Line(), pos.Column()
			return p
		}
	}
	return p
}

// find is the position of the value at sels, or token.NoPos.
func (l *Locator) find(sels []cue.Selector) token.Pos {
	expr := l.root
	for _, sel := range sels {
		switch x := expr.(type) {
		case *ast.StructLit:
			expr = field(x.Elts, sel)
		case *ast.ListLit:
			expr = elem(x, sel)
		default:
			expr = nil
		}
		if expr == nil {
			return token.NoPos
		}
	}
	return expr.Pos()
}

// field is the value of the field of decls that sel names, when it is
// declared once, plainly.
func field(decls []ast.Decl, sel cue.Selector) ast.Expr {
	if sel.LabelType() != cue.StringLabel {
		return nil
	}
	var found ast.Expr
	for _, d := range decls {
		switch f := d.(type) {
		case *ast.Field:
			name, ok := labelName(f.Label)
			if !ok || name != sel.Unquoted() {
				continue
			}
			if found != nil {
				return nil // declared twice: unified, no single position
			}
			found = f.Value
		case *ast.EmbedDecl, *ast.Comprehension:
			return nil // may declare any field
		}
	}
	return found
}

// elem is the element sel indexes, when every element up to it is
// written out.
func elem(list *ast.ListLit, sel cue.Selector) ast.Expr {
	if sel.Type() != cue.IndexLabel {
		return nil
	}
	i := sel.Index()
	for j, e := range list.Elts {
		switch e.(type) {
		case *ast.Comprehension, *ast.Ellipsis:
			return nil
		}
		if j == i {
			return e
		}
	}
	return nil
}

// labelName is the name a field label declares, if it is a plain one.
func labelName(l ast.Label) (string, bool) {
	switch x := l.(type) {
	case *ast.Ident:
		return x.Name, true
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		if err != nil {
			// CUE's and YAML's quoting differ from Go's at the edges.
			return strings.Trim(x.Value, `"'`), true
		}
		return s, true
	}
	return "", false
}
