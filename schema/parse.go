package schema

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cueyaml "cuelang.org/go/encoding/yaml"
	"k8s.io/apimachinery/pkg/api/resource"
)

//go:embed schema.cue
var schemaSource []byte

// schemaFile names the embedded schema in CUE positions. It is not a name a
// spec file can have on disk, so positions in the schema are never taken
// for positions in the user's file.
const schemaFile = "<gitpeer>/schema.cue"

// internalErrorPrefix starts the message of a problem that is a bug of
// this package or of CUE rather than of the spec.
const internalErrorPrefix = "internal error, please report it"

// packageName is the only package clause a peering.cue may have, so that
// the spec can live next to other CUE files of the repository's package
// without being mistaken for one of them.
const packageName = "peering"

// maxSpecSize bounds the input Parse accepts, in bytes. A spec of a
// thousand clusters and peerings takes about 50 KiB and 0.1 s to check;
// the bound keeps a stray huge file from costing the evaluator minutes.
const maxSpecSize = 1 << 20

// MaxSpecSize is the largest spec Parse accepts, in bytes: a reader of a
// spec file or stream needs read no more than one byte beyond it.
const MaxSpecSize = maxSpecSize

// maxClusterIDLength is Liqo's limit: the tenant namespace
// "liqo-tenant-<id>" must fit the 63 characters of a DNS-1123 label.
const maxClusterIDLength = 63 - len("liqo-tenant-")

// These mirror the constraints of schema.cue. The schema decides what is
// valid; these only explain to the user why a value the schema rejected is
// wrong (see explainers). TestExplainersAgreeWithSchema keeps them in step.
var (
	clusterIDPattern   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	fingerprintPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	ownerPattern       = regexp.MustCompile(`^(@[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*|[^@\s#]+@[^@\s#]+)$`)
)

// Source returns the embedded CUE schema text (package "peering", with
// #Spec as the spec's definition). The caller owns the returned slice.
func Source() []byte {
	return slices.Clone(schemaSource)
}

// compileSchema returns #Spec built in ctx. Parse compiles it afresh in a
// new context each time: that costs about 0.2 ms (a third of parsing a
// small spec) and avoids sharing one *cue.Context, which is not safe for
// concurrent use and keeps every label it ever saw.
func compileSchema(ctx *cue.Context) (cue.Value, error) {
	v := ctx.CompileBytes(schemaSource, cue.Filename(schemaFile))
	if err := v.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("compile embedded schema: %w", err)
	}
	def := v.LookupPath(cue.ParsePath("#Spec"))
	if err := def.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("embedded schema: #Spec: %w", err)
	}
	return def, nil
}

// Parse validates data as a peering spec and decodes it. data is CUE when
// filename ends in ".cue", YAML (or JSON) otherwise; an empty YAML file is
// an empty spec. filename is used as given in problem positions.
//
// Errors: a *[Error] listing every problem found (syntax, schema, and
// cross-references between peerings and clusters); a plain error only if
// the embedded schema itself is broken.
func Parse(filename string, data []byte) (spec *Spec, err error) {
	c := &checker{file: filename}
	defer func() {
		// CUE has panicked on odd input before (see yamlLineBreaks). A
		// controller reading specs from Git must not crash on one; the
		// fuzz test still catches these.
		if r := recover(); r != nil {
			c.add(token.NoPos, "", fmt.Sprintf("%s: %v", internalErrorPrefix, r))
			spec, err = nil, c.err()
		}
	}()
	if len(data) > maxSpecSize {
		c.add(token.NoPos, "", fmt.Sprintf("file is larger than %d MiB: this cannot be a peering spec", maxSpecSize>>20))
		return nil, c.err()
	}
	if !utf8.Valid(data) {
		// Found here rather than by the parsers, so that the position is
		// exact for YAML too.
		bad := 0
		for bad < len(data) {
			r, size := utf8.DecodeRune(data[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		line := bytes.Count(data[:bad], []byte("\n")) + 1
		col := bad - (bytes.LastIndexByte(data[:bad], '\n') + 1) + 1
		c.problems = append(c.problems, Problem{File: filename, Line: line, Column: col, Message: "invalid UTF-8: a peering spec is UTF-8 text"})
		return nil, c.err()
	}
	ctx := cuecontext.New()
	def, err := compileSchema(ctx)
	if err != nil {
		return nil, err
	}
	var doc cue.Value
	var ok bool
	if strings.HasSuffix(filename, ".cue") {
		doc, ok = c.buildCUE(ctx, data)
	} else {
		c.yaml = true
		doc, ok = c.buildYAML(ctx, data)
	}
	if !ok {
		return nil, c.err()
	}
	c.doc = doc
	c.validate(def)
	if len(c.problems) > 0 {
		return nil, c.err()
	}
	var out Spec
	// The file alone, not unified with the schema: valid, so every field of
	// it is concrete by itself (the open check) and the schema adds none
	// (it has no defaults); decoding it skips the schema's arcs, about a
	// tenth of Parse on a spec of 10,000 peerings.
	if err := c.doc.Decode(&out); err != nil {
		// Validation passed, so this is not expected; still report it as a
		// problem of the file rather than lose it.
		c.addCUE(err)
		if len(c.problems) == 0 {
			c.add(token.NoPos, "", err.Error())
		}
		return nil, c.err()
	}
	out.dropEmptyLists()
	return &out, nil
}

// checker accumulates the problems of one spec file.
type checker struct {
	file     string
	yaml     bool      // the file is YAML, not CUE
	doc      cue.Value // the user's file alone, without the schema
	unified  cue.Value // doc unified with the schema
	problems []Problem
}

func (c *checker) err() error {
	e := &Error{Problems: c.problems}
	e.sort()
	return e
}

func (c *checker) add(pos token.Pos, path, msg string) {
	c.problems = append(c.problems, c.problem(pos, path, msg))
}

// problem positions msg at pos if pos is in the user's file.
func (c *checker) problem(pos token.Pos, path, msg string) Problem {
	p := Problem{File: c.file, Path: path, Message: msg}
	if c.isUserPos(pos) {
		p.Line, p.Column = pos.Line(), pos.Column()
	}
	return p
}

func (c *checker) isUserPos(pos token.Pos) bool {
	return pos.IsValid() && pos.Filename() == c.file && pos.Line() > 0
}

func (c *checker) buildCUE(ctx *cue.Context, data []byte) (cue.Value, bool) {
	f, err := parser.ParseFile(c.file, data)
	if err != nil {
		c.addCUE(err)
		return cue.Value{}, false
	}
	for _, d := range f.Decls {
		if pkg, ok := d.(*ast.Package); ok && pkg.Name != nil && pkg.Name.Name != packageName {
			c.add(pkg.Name.Pos(), "", fmt.Sprintf("package %q: a peering spec is in package %q or has no package clause", pkg.Name.Name, packageName))
		}
	}
	// Only the standard library is at hand: Parse sees one file, not a
	// module. CUE's own error for this ("imported but not defined") does
	// not say so.
	ok := true
	for spec := range f.ImportSpecs() {
		if spec.Path == nil {
			continue
		}
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue // CUE reports it
		}
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			c.add(spec.Path.Pos(), "", fmt.Sprintf("import %q: a peering spec can import only CUE's standard library", path))
			ok = false
		}
	}
	if !ok {
		return cue.Value{}, false
	}
	return ctx.BuildFile(f), true
}

// yamlLineBreaks rewrites what go.yaml.in/yaml/v3 takes for a line break
// to '\n', which is all CUE counts when it maps the YAML parser's line
// numbers to offsets: cuelang.org/go v0.17.1 panics with an index out of
// range on "\r\r0" otherwise. The YAML reads the same either way.
var yamlLineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

func (c *checker) buildYAML(ctx *cue.Context, data []byte) (cue.Value, bool) {
	data = []byte(yamlLineBreaks.Replace(string(data)))
	dec := cueyaml.NewDecoder(c.file, bytes.NewReader(data))
	var docs []ast.Expr
	for {
		expr, err := dec.Extract()
		if err == io.EOF {
			break
		}
		if err != nil {
			c.addYAMLError(err, data)
			return cue.Value{}, false
		}
		docs = append(docs, expr)
	}
	if len(docs) > 1 {
		c.add(docs[1].Pos(), "", "a peering spec is a single YAML document, found a second one")
		return cue.Value{}, false
	}
	if len(docs) == 1 && !c.uniqueKeys(docs[0]) {
		return cue.Value{}, false
	}
	empty := ctx.CompileString("{}", cue.Filename(c.file))
	if len(docs) == 0 {
		return empty, true
	}
	doc := ctx.BuildExpr(docs[0])
	// An empty file (or one with only comments) decodes to null: treat it
	// as the empty spec, as it reads.
	if d, _ := doc.Default(); d.IsNull() {
		return empty, true
	}
	return doc, true
}

// addYAMLError turns a YAML syntax error into a problem. The YAML decoder's
// errors are plain strings shaped "file:line: message".
// uniqueKeys reports a problem for every key given twice in one YAML
// mapping. YAML requires keys to be unique, but the decoder hands them to
// CUE, which unifies the two values: a second "provider:" would be merged
// into the first, where a reviewer's YAML tool shows only one of them.
func (c *checker) uniqueKeys(doc ast.Expr) bool {
	ok := true
	ast.Walk(doc, func(n ast.Node) bool {
		st, isStruct := n.(*ast.StructLit)
		if !isStruct {
			return true
		}
		first := map[string]token.Pos{}
		for _, d := range st.Elts {
			f, isField := d.(*ast.Field)
			if !isField {
				continue
			}
			name, _, err := ast.LabelName(f.Label)
			if err != nil {
				continue
			}
			if pos, seen := first[name]; seen {
				c.add(f.Pos(), "", fmt.Sprintf("duplicate key %q (first at line %d): YAML keys must be unique", name, pos.Line()))
				ok = false
				continue
			}
			first[name] = f.Pos()
		}
		return true
	}, nil)
	return ok
}

func (c *checker) addYAMLError(err error, data []byte) {
	var ce cueerrors.Error
	if errors.As(err, &ce) {
		c.addCUE(err)
		return
	}
	p := Problem{File: c.file, Message: err.Error()}
	rest, ok := strings.CutPrefix(p.Message, c.file+":")
	if !ok {
		p.Message = "invalid YAML: " + strings.TrimPrefix(p.Message, "yaml: ")
		c.problems = append(c.problems, p)
		return
	}
	p.Message = strings.TrimSpace(rest)
	if n, after, ok := strings.Cut(rest, ":"); ok {
		if line, err := strconv.Atoi(n); err == nil && line > 0 {
			p.Line, p.Message = line, strings.TrimSpace(after)
		}
	}
	if yamlParserProblems[p.Message] {
		// go.yaml.in/yaml/v3 reports its parser's (not its scanner's)
		// errors with a 0-based line, and leaves the line out when it is 0.
		p.Line++
	}
	// It also counts a lone '\r' as a line break, and may point past the
	// end; editors and CUE count '\n' only.
	p.Line = min(p.Line, bytes.Count(data, []byte("\n"))+1)
	p.Message = "invalid YAML: " + p.Message
	c.problems = append(c.problems, p)
}

// yamlParserProblems are the messages of the errors raised by the parser
// of go.yaml.in/yaml/v3 (parserc.go), as opposed to its scanner. The line
// of these is the 0-based line of the token, or of the start of the
// enclosing block.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// addCUE adds one problem per CUE error in err.
func (c *checker) addCUE(err error) {
	c.problems = append(c.problems, c.fromCUE(err)...)
}

// fromCUE converts CUE errors to problems positioned in the user's file:
// at the first of the error's positions in that file, or else at the
// nearest value of the user's file on the error's path (a missing field has
// only the schema's position; its enclosing struct is the best we have).
func (c *checker) fromCUE(err error) []Problem {
	var out []Problem
	for _, e := range cueerrors.Errors(err) {
		path := joinErrorPath(e.Path())
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		pos := token.NoPos
		for _, p := range cueerrors.Positions(e) {
			if c.isUserPos(p) {
				pos = p
				break
			}
		}
		if !pos.IsValid() {
			pos = c.nearestPos(path)
		}
		out = append(out, c.problem(pos, path, msg))
	}
	return out
}

// joinErrorPath formats the path of a CUE error as cue.Path.String does:
// list indexes in brackets, labels dot-separated (already quoted by CUE
// when they need to be).
func joinErrorPath(elems []string) string {
	var b strings.Builder
	for _, e := range elems {
		if _, err := strconv.Atoi(e); err == nil {
			b.WriteString("[" + e + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

func (c *checker) nearestPos(path string) token.Pos {
	if !c.doc.Exists() {
		return token.NoPos
	}
	p := cue.ParsePath(path)
	if p.Err() != nil {
		return token.NoPos
	}
	for sels := p.Selectors(); ; sels = sels[:len(sels)-1] {
		v := c.doc.LookupPath(cue.MakePath(sels...))
		if pos := valuePos(v); v.Exists() && c.isUserPos(pos) {
			return pos
		}
		if len(sels) == 0 {
			return token.NoPos
		}
	}
}

// valuePos is where v is written: for a field, its value rather than its
// label, so that problems point at the offending token.
func valuePos(v cue.Value) token.Pos {
	if f, ok := v.Source().(*ast.Field); ok && f.Value != nil {
		return f.Value.Pos()
	}
	return v.Pos()
}

// validate checks c.doc against def and adds the problems found.
//
// CUE alone does not give a user the whole picture in one run: with hard
// errors present it hides "required but not present" errors, and a "field
// not allowed" next to a conflict in the same struct. So the structure
// (kinds, unknown and missing fields) is checked here by walking the user's
// value alongside the schema, and CUE's value errors are kept for the
// rest. The cross-reference checks follow, on values found valid so far.
func (c *checker) validate(def cue.Value) {
	// Mistakes within the user's file come first: conflicts, unresolved
	// references. A CUE error makes every enclosing value an error too, so
	// the structure cannot be walked until they are fixed.
	if err := c.doc.Validate(cue.All()); err != nil {
		for _, p := range c.fromCUE(err) {
			// Errors found before evaluation (an unresolved reference)
			// carry a path without list indexes; the position says more.
			if !c.doc.LookupPath(cue.ParsePath(p.Path)).Exists() {
				p.Path = ""
			}
			c.problems = append(c.problems, p)
		}
		c.problems = dedupe(c.problems)
		return
	}
	// Values left open in the file ("id: string").
	open := c.fromCUE(c.doc.Validate(cue.Concrete(true), cue.All()))
	// Against the schema.
	c.unified = c.doc.Unify(def)
	vsSchema := c.fromCUE(c.unified.Validate(cue.Concrete(true), cue.All()))

	w := &walker{c: c, cueAt: map[string][]*Problem{}, flagged: map[string]bool{}}
	for i := range vsSchema {
		w.cueAt[vsSchema[i].Path] = append(w.cueAt[vsSchema[i].Path], &vsSchema[i])
	}
	// The walker says better what CUE says of the structure, and finds what
	// CUE hides next to other errors; it finds nothing CUE accepts: a kind
	// the schema does not allow is a conflict, a field it does not allow a
	// closedness error, a missing required field an error of
	// Validate(Concrete). On a spec CUE accepts it is skipped: its Fields
	// calls cost a third of validating a spec of 10,000 peerings. The
	// package's tests walk every spec and panic if that ever fails to hold
	// (walkAccepted).
	cueAccepts := len(vsSchema) == 0 && len(open) == 0
	if !cueAccepts || walkAccepted {
		w.walk(c.doc, def, nil)
		if cueAccepts && len(w.problems) > 0 {
			panic(fmt.Sprintf("the walker flags %v in a spec CUE accepts", w.problems))
		}
	}

	var all []Problem
	all = append(all, open...)
	all = append(all, w.problems...)
	for _, p := range open {
		w.flagged[p.Path] = true
	}
	for _, p := range vsSchema {
		// The walker's message for the same path says the same thing
		// without quoting the schema, and an open value is best reported
		// as such.
		if !w.flagged[p.Path] {
			all = append(all, p)
		}
	}
	c.problems = append(c.problems, dedupe(all)...)
	c.checkReferences()
	c.checkLifetimes()
}

// walkAccepted makes validate walk specs CUE accepts too, and panic if the
// walker flags anything in one. Set by this package's tests.
var walkAccepted bool

// dedupe drops problems repeating the path and message of an earlier one,
// keeping a positioned one over an unpositioned one.
func dedupe(ps []Problem) []Problem {
	type key struct{ path, msg string }
	seen := map[key]int{}
	var out []Problem
	for _, p := range ps {
		k := key{p.Path, p.Message}
		if i, ok := seen[k]; ok {
			if out[i].Line == 0 && p.Line > 0 {
				out[i] = p
			}
			continue
		}
		seen[k] = len(out)
		out = append(out, p)
	}
	return out
}

// walker checks the structure of the user's value against the schema.
type walker struct {
	c        *checker
	cueAt    map[string][]*Problem // CUE's errors against the schema, by path
	flagged  map[string]bool       // paths the walker reported
	problems []Problem
}

func (w *walker) flag(pos token.Pos, path, msg string) {
	w.flagged[path] = true
	w.problems = append(w.problems, w.c.problem(pos, path, msg))
}

func (w *walker) walk(doc, sch cue.Value, sels []cue.Selector) {
	if doc.Err() != nil {
		return // an error of the user's file, reported as such
	}
	dk := doc.Kind()
	if dk == cue.BottomKind {
		return // not concrete: reported by the validation of the file alone
	}
	path := cue.MakePath(sels...).String()
	if sk := sch.IncompleteKind(); dk&sk == 0 {
		msg := fmt.Sprintf("expected %s, got %s", sk, dk)
		switch {
		case !w.c.yaml:
		case sk == cue.StringKind && dk&(cue.NumberKind|cue.BoolKind) != 0:
			// YAML reads 123 or true unquoted as a number or a bool.
			msg += ": quote the value"
		case sk == cue.ListKind && dk == cue.NullKind:
			// "peerings:" with every entry commented out.
			msg += ": write [] for an empty list"
		}
		w.flag(valuePos(doc), path, msg)
		return
	}
	switch dk {
	case cue.StructKind:
		w.walkStruct(doc, sch, sels)
	case cue.ListKind:
		w.walkList(doc, sch, sels)
	default:
		w.explain(doc, path, sels)
	}
}

func (w *walker) walkStruct(doc, sch cue.Value, sels []cue.Selector) {
	type field struct {
		name     string
		v        cue.Value
		required bool
	}
	var fields []field
	it, err := sch.Fields(cue.Optional(true))
	if err != nil {
		return
	}
	for it.Next() {
		sel := it.Selector()
		if sel.LabelType() != cue.StringLabel {
			continue
		}
		fields = append(fields, field{sel.Unquoted(), it.Value(), sel.ConstraintType() == cue.RequiredConstraint})
	}
	allowed := make([]string, len(fields))
	for i, f := range fields {
		allowed[i] = f.name
	}

	present := map[string]bool{}
	dit, err := doc.Fields()
	if err != nil {
		return
	}
	for dit.Next() {
		sel := dit.Selector()
		if sel.LabelType() != cue.StringLabel || sel.ConstraintType() >= cue.PatternConstraint {
			continue
		}
		name := sel.Unquoted()
		present[name] = true
		child := append(slices.Clip(sels), cue.Str(name))
		var fieldSchema cue.Value
		if i := slices.IndexFunc(fields, func(f field) bool { return f.name == name }); i >= 0 {
			fieldSchema = fields[i].v
		} else if sch.Allows(cue.Str(name)) {
			// A key of a map such as {[#ResourceName]: #Quantity}: its
			// schema is the pattern's value.
			fieldSchema = sch.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		} else {
			msg := fmt.Sprintf("field not allowed (allowed: %s)", strings.Join(allowed, ", "))
			switch {
			case len(sels) > 0 && mapFields[sels[len(sels)-1].String()]:
				msg = fmt.Sprintf("invalid resource name %q: want a Kubernetes resource name such as cpu, memory, pods or nvidia.com/gpu", name)
			case len(fields) == 0:
				msg = fmt.Sprintf("field %q not allowed", name)
			}
			// The label is the offending token here, not the value.
			w.flag(dit.Value().Pos(), cue.MakePath(child...).String(), msg)
			continue
		}
		if fieldSchema.Exists() {
			w.walk(dit.Value(), fieldSchema, child)
		}
	}
	for _, f := range fields {
		if f.required && !present[f.name] {
			child := append(slices.Clip(sels), cue.Str(f.name))
			w.flag(valuePos(doc), cue.MakePath(child...).String(), "field is required but not present")
		}
	}
}

func (w *walker) walkList(doc, sch cue.Value, sels []cue.Selector) {
	elem := sch.LookupPath(cue.MakePath(cue.AnyIndex))
	if !elem.Exists() {
		return
	}
	it, err := doc.List()
	if err != nil {
		return
	}
	for i := 0; it.Next(); i++ {
		w.walk(it.Value(), elem, append(slices.Clip(sels), cue.Index(i)))
	}
}

// explainers reword CUE's errors on the spec's string fields (which quote
// the regular expression or the builtin that failed) into what the rule is
// and why. They are keyed by path, with list indexes as [*].
var explainers = map[string]func(string) string{
	"clusters[*].id":                           explainClusterID,
	"clusters[*].fingerprint":                  explainFingerprint,
	"peerings[*].consumer":                     explainClusterID,
	"peerings[*].provider":                     explainClusterID,
	"peerings[*].policy":                       explainEnum("policy", "pinned", "open", "token"),
	"peerings[*].tenantCondition":              explainEnum("tenantCondition", "Active", "Cordoned", "Drained"),
	"peerings[*].slices[*].resources.*":        explainQuantity,
	"clusters[*].provider.classes[*].caps.*":   explainQuantity,
	"clusters[*].provider.certificateLifetime": explainDuration,
	"clusters[*].provider.nonceLifetime":       explainDuration,
	"clusters[*].provider.classes[*].name":     explainDNSLabel,
	"peerings[*].slices[*].name":               explainDNSLabel,
	"peerings[*].slices[*].class":              explainDNSLabel,
	"clusters[*].owners[*]":                    explainOwner,
	"owners[*]":                                explainOwner,
}

// mapFields are the maps keyed by resource name; explainers see their keys as *.
var mapFields = map[string]bool{"resources": true, "caps": true}

func explainEnum(field string, values ...string) func(string) string {
	return func(s string) string {
		return fmt.Sprintf("%s %q is not one of %s", field, s, strings.Join(values, ", "))
	}
}

func explainQuantity(s string) string {
	if _, err := resource.ParseQuantity(s); err != nil {
		return fmt.Sprintf("%q is not a Kubernetes quantity (e.g. \"4\", \"500m\", \"8Gi\")", s)
	}
	return ""
}

func explainDuration(s string) string {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Sprintf("%q is not a duration (e.g. \"720h\", \"90m\")", s)
	}
	return ""
}

func explainClusterID(id string) string {
	if !clusterIDPattern.MatchString(id) {
		return fmt.Sprintf("invalid cluster id %q: want a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)", id)
	}
	if n := utf8.RuneCountInString(id); n > maxClusterIDLength {
		return fmt.Sprintf("cluster id %q is %d characters long, more than %d: Liqo's tenant namespace \"liqo-tenant-<id>\" must fit in 63 characters", id, n, maxClusterIDLength)
	}
	return ""
}

func explainDNSLabel(name string) string {
	if !clusterIDPattern.MatchString(name) {
		return fmt.Sprintf("invalid name %q: want a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)", name)
	}
	if n := utf8.RuneCountInString(name); n > 63 {
		return fmt.Sprintf("name %q is %d characters long, more than 63", name, n)
	}
	return ""
}

func explainOwner(o string) string {
	if !ownerPattern.MatchString(o) {
		return fmt.Sprintf("invalid owner %q: want \"@user\", \"@org/team\" or an email address, as CODEOWNERS writes them", o)
	}
	return ""
}

func explainFingerprint(fp string) string {
	if !fingerprintPattern.MatchString(fp) {
		return fmt.Sprintf("invalid fingerprint %q: want \"sha256:\" and 64 lowercase hex digits (the SHA-256 of the cluster's PKIX DER public key)", fp)
	}
	return ""
}

// explain rewords CUE's errors at a string leaf the schema rejected. CUE
// remains the judge: a leaf it accepted is never reported from here.
func (w *walker) explain(doc cue.Value, path string, sels []cue.Selector) {
	errs := w.cueAt[path]
	if len(errs) == 0 {
		return
	}
	explainer, ok := explainers[wildcardPath(sels)]
	if !ok {
		return
	}
	s, err := doc.String()
	if err != nil {
		return
	}
	if msg := explainer(s); msg != "" {
		for _, p := range errs {
			p.Message = msg
		}
	}
}

func wildcardPath(sels []cue.Selector) string {
	var b strings.Builder
	for i, s := range sels {
		if s.Type() == cue.IndexLabel {
			b.WriteString("[*]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if i > 0 && mapFields[sels[i-1].String()] {
			b.WriteByte('*')
			continue
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// specRef is a string of the spec that refers to a cluster.
type specRef struct {
	value string
	path  string
	pos   token.Pos
}

// maxListedIDs is how many known cluster IDs an "unknown cluster" message
// lists at most.
const maxListedIDs = 10

// checkReferences adds the problems a schema cannot express: duplicate
// clusters, peerings naming unknown clusters or the same cluster twice,
// and duplicate peerings. Values that already have a problem are skipped,
// so that one mistake is reported once.
func (c *checker) checkReferences() {
	bad := map[string]bool{}
	for _, p := range c.problems {
		bad[p.Path] = true
	}
	// str returns the string at field of elem, the list element at sels,
	// if it is one and is not known bad. It looks field up in elem, not
	// from the root: a lookup by index scans the list, which made this
	// quadratic in the number of peerings.
	str := func(elem cue.Value, sels []cue.Selector, field string) (specRef, bool) {
		path := cue.MakePath(append(slices.Clip(sels), cue.Str(field))...)
		v := elem.LookupPath(cue.MakePath(cue.Str(field)))
		s, err := v.String()
		if err != nil || bad[path.String()] {
			return specRef{}, false
		}
		return specRef{s, path.String(), valuePos(v)}, true
	}

	clusters := cue.Str("clusters")
	known := map[string]specRef{}
	// allKnown is whether every cluster's ID could be read. When one
	// could not, a peering naming it would be reported as unknown too.
	allKnown := true
	if v := c.doc.LookupPath(cue.MakePath(clusters)); v.Exists() {
		it, err := v.List()
		allKnown = err == nil
		for i := 0; err == nil && it.Next(); i++ {
			elem := it.Value()
			if _, err := elem.LookupPath(cue.MakePath(cue.Str("id"))).String(); err != nil {
				allKnown = false
			}
			id, ok := str(elem, []cue.Selector{clusters, cue.Index(i)}, "id")
			if !ok {
				continue
			}
			if first, dup := known[id.value]; dup {
				c.add(id.pos, id.path, fmt.Sprintf("duplicate cluster id %q (first declared at %s)", id.value, c.where(first)))
				continue
			}
			known[id.value] = id
		}
	}
	knownList := "none declared"
	if len(known) > 0 {
		ids := make([]string, 0, len(known))
		for id := range known {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		// A message per bad reference, each listing a big fleet, would
		// bury the problems themselves.
		if len(ids) > maxListedIDs {
			ids = append(ids[:maxListedIDs], fmt.Sprintf("and %d more", len(ids)-maxListedIDs))
		}
		knownList = strings.Join(ids, ", ")
	}
	isKnown := func(r specRef) bool {
		if _, ok := known[r.value]; ok || !allKnown {
			return ok
		}
		c.add(r.pos, r.path, fmt.Sprintf("unknown cluster %q (known: %s)", r.value, knownList))
		return false
	}

	peerings := cue.Str("peerings")
	type pair struct{ consumer, provider string }
	seen := map[pair]specRef{}
	it, err := c.doc.LookupPath(cue.MakePath(peerings)).List()
	if err != nil {
		return
	}
	for i := 0; it.Next(); i++ {
		elem := []cue.Selector{peerings, cue.Index(i)}
		consumer, cok := str(it.Value(), elem, "consumer")
		provider, pok := str(it.Value(), elem, "provider")
		cok = cok && isKnown(consumer)
		pok = pok && isKnown(provider)
		if !cok || !pok {
			continue
		}
		if consumer.value == provider.value {
			c.add(provider.pos, provider.path, fmt.Sprintf("consumer and provider are both %q: a cluster cannot peer with itself", provider.value))
			continue
		}
		v := it.Value()
		here := specRef{path: cue.MakePath(elem...).String(), pos: valuePos(v)}
		k := pair{consumer.value, provider.value}
		if first, dup := seen[k]; dup {
			c.add(here.pos, here.path, fmt.Sprintf("duplicate peering of consumer %q and provider %q (first declared at %s)", k.consumer, k.provider, c.where(first)))
			continue
		}
		seen[k] = here
	}
}

// MinCertificateLifetime is the shortest certificateLifetime a provider
// may set. Kubernetes' CSR API (which the kubernetes backend signs through)
// refuses an expirationSeconds below 600, so a shorter lifetime could not be
// honoured there; and a renewed certificate has a third of the lifetime to
// travel: the provider's pass and push, the consumer's pass (every minute by
// default), Flux applying it. Ten minutes leaves a little over three. It also
// keeps Liqo's own renewal rule (ShouldRenewCertificate, a third of
// NotAfter - NotBefore left) from finding a certificate due when it is signed,
// as it does for anything under 2.5 minutes once NotBefore is backdated five.
const MinCertificateLifetime = 10 * time.Minute

// checkLifetimes adds what the schema's duration pattern cannot say: a
// certificateLifetime under MinCertificateLifetime (which includes zero).
// Values that already have a problem are skipped.
func (c *checker) checkLifetimes() {
	bad := map[string]bool{}
	for _, p := range c.problems {
		bad[p.Path] = true
	}
	it, err := c.doc.LookupPath(cue.ParsePath("clusters")).List()
	if err != nil {
		return
	}
	for i := 0; it.Next(); i++ {
		path := cue.MakePath(cue.Str("clusters"), cue.Index(i), cue.Str("provider"), cue.Str("certificateLifetime"))
		v := it.Value().LookupPath(cue.MakePath(cue.Str("provider"), cue.Str("certificateLifetime")))
		s, err := v.String()
		if err != nil || bad[path.String()] {
			continue
		}
		if d, err := time.ParseDuration(s); err == nil && d < MinCertificateLifetime {
			c.add(valuePos(v), path.String(), fmt.Sprintf("%q is shorter than %s, the shortest certificate lifetime: Kubernetes signs nothing shorter, and a renewed certificate must reach the consumer within a third of it", s, minLifetimeText))
		}
	}
}

// minLifetimeText is MinCertificateLifetime as a spec would write it.
var minLifetimeText = strings.TrimSuffix(MinCertificateLifetime.String(), "0s")

// where names the position of r for a message: its line when known (the
// file is the same), else its path.
func (c *checker) where(r specRef) string {
	if c.isUserPos(r.pos) {
		return fmt.Sprintf("line %d", r.pos.Line())
	}
	return r.path
}
