package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one validation failure, at a position of the user's spec file
// (never of the embedded schema).
type Problem struct {
	// File is the spec file's name, as passed to Parse.
	File string
	// Line is 1-based; 0 when unknown.
	Line int
	// Column is 1-based; 0 when unknown. It counts bytes in CUE files and
	// characters in YAML files, as their parsers do.
	Column int
	// Path is the CUE path of the offending value, e.g.
	// "peerings[1].provider"; empty for problems of the whole file, such as
	// syntax errors.
	Path string
	// Message says what is wrong, in lowercase, without the position.
	Message string
}

// String formats p as compilers do, so that editors can jump to it:
// "peering.cue:12:15: peerings[1].provider: unknown cluster ..." or, when
// the line is unknown, "peering.cue: peerings[1].provider: ...". The path
// part is left out when empty, the column when unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is the set of problems found in one spec, sorted by file, line and
// column (then path and message, so that the order is stable). Parse and
// Load return it as *Error; use errors.As to get at the problems.
type Error struct {
	Problems []Problem
}

// Error returns the problems, one per line, as formatted by Problem.String.
func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return "invalid peering spec"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (e *Error) sort() {
	slices.SortStableFunc(e.Problems, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Message, b.Message),
		)
	})
}
