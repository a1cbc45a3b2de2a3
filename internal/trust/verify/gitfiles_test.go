package verify_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

const gitfilesSpec = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "gpu", resources: {cpu: "1"}}]}]
`

// TestFilesThatChangeWhatACheckoutSees: each file that makes a checkout
// (CI's, a reviewer's, Argo CD's) or Flux's artifact differ from the
// committed tree is named with its reason, and the harmless look-alikes
// are not.
func TestFilesThatChangeWhatACheckoutSees(t *testing.T) {
	t.Parallel()
	spec, err := schema.Parse("peering.cue", []byte(gitfilesSpec))
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ file, field, reason string }
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  []want // nil: no finding of these reasons
	}{
		{"a filter and eol on every cluster's files", fstest.MapFS{".gitattributes": {Data: []byte("# hi\n\nclusters/** filter=evil eol=crlf\n")}},
			[]want{{".gitattributes", "line 3", reasons.AttributesRewrite}}},
		{"ident on the spec", fstest.MapFS{".gitattributes": {Data: []byte("*.md text\n/peering.cue ident\n")}},
			[]want{{".gitattributes", "line 2", reasons.AttributesRewrite}}},
		{"text=auto on everything", fstest.MapFS{".gitattributes": {Data: []byte("* text=auto\n")}},
			[]want{{".gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"a rule on a file not written yet (a slice answer)", fstest.MapFS{".gitattributes": {Data: []byte("*.status.yaml working-tree-encoding=UTF-16\n")}},
			[]want{{".gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"a macro", fstest.MapFS{".gitattributes": {Data: []byte("[attr]quiet filter=evil -diff\nclusters/*/inbox/** quiet\n")}},
			[]want{{".gitattributes", "line 2", reasons.AttributesRewrite}}},
		{"a bracket Go reads otherwise than Git", fstest.MapFS{".gitattributes": {Data: []byte("clusters/[!z]*/** ident\n")}},
			[]want{{".gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"a quoted pattern, upper case", fstest.MapFS{".gitattributes": {Data: []byte(`"Clusters/**" IDENT` + "\n")}},
			[]want{{".gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"export-ignore on a kustomization", fstest.MapFS{".gitattributes": {Data: []byte("kustomization.yaml export-ignore\n")}},
			[]want{{".gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"a .gitattributes inside a cluster's tree", fstest.MapFS{"clusters/alpha/.gitattributes": {Data: []byte("*.yaml eol=crlf\n")}},
			[]want{{"clusters/alpha/.gitattributes", "line 1", reasons.AttributesRewrite}}},
		{"harmless attributes", fstest.MapFS{".gitattributes": {Data: []byte("clusters/** -text linguist-generated diff=yaml\n*.md text eol=lf\ndocs/** ident\nclusters/ ident\n* binary\n!clusters/** ident\n")}}, nil},
		{"rules below another folder", fstest.MapFS{"docs/.gitattributes": {Data: []byte("* ident eol=crlf\n")}}, nil},
		{"a root .sourceignore", fstest.MapFS{".sourceignore": {Data: []byte("clusters/alpha/kustomization.yaml\n")}},
			[]want{{".sourceignore", "", reasons.SourceIgnore}}},
		{"a .sourceignore in a cluster's tree", fstest.MapFS{"clusters/alpha/.sourceignore": {Data: []byte("*\n")}},
			[]want{{"clusters/alpha/.sourceignore", "", reasons.SourceIgnore}}},
		{"a .sourceignore below another folder", fstest.MapFS{"docs/.sourceignore": {Data: []byte("*\n")}}, nil},
		{"submodules", fstest.MapFS{".gitmodules": {Data: []byte("[submodule \"x\"]\n")}, "vendor/x": {Mode: fs.ModeIrregular}},
			[]want{{".gitmodules", "", reasons.Submodule}, {"vendor/x", "", reasons.Submodule}}},
		{"links", fstest.MapFS{"README.md": {Data: []byte("../etc/passwd"), Mode: fs.ModeSymlink}, "clusters/alpha/liqo": {Data: []byte("../beta"), Mode: fs.ModeSymlink}},
			[]want{{"README.md", "", reasons.SymbolicLink}, {"clusters/alpha/liqo", "", reasons.SymbolicLink}}},
		{"a path 600 directories deep, named once", fstest.MapFS{"docs/" + strings.Repeat("a/", 600) + "x.yaml": {Data: []byte("x")}},
			[]want{{"docs/" + strings.Repeat("a/", 510) + "a", "", reasons.UncheckoutablePath}}},
		{"a 300-byte name", fstest.MapFS{"docs/" + strings.Repeat("n", 300): {Data: []byte("x")}},
			[]want{{"docs/" + strings.Repeat("n", 300), "", reasons.UncheckoutablePath}}},
		{"names Windows refuses", fstest.MapFS{"docs/AUX.yaml": {Data: []byte("x")}, "docs/com1": {Data: []byte("x")}, "notes./x": {Data: []byte("x")},
			"clusters/alpha/a b ": {Data: []byte("x")}, "docs/what?": {Data: []byte("x")}},
			[]want{{"docs/AUX.yaml", "", reasons.UncheckoutablePath}, {"docs/com1", "", reasons.UncheckoutablePath}, {"notes.", "", reasons.UncheckoutablePath},
				{"clusters/alpha/a b ", "", reasons.UncheckoutablePath}, {"docs/what?", "", reasons.UncheckoutablePath}}},
		{"names Windows takes", fstest.MapFS{"docs/auxiliary.yaml": {Data: []byte("x")}, "docs/com10": {Data: []byte("x")}, "docs/.hidden": {Data: []byte("x")},
			"docs/" + strings.Repeat("n", 255): {Data: []byte("x")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.files["peering.cue"] = &fstest.MapFile{Data: []byte(gitfilesSpec)}
			findings := verify.CheckTree(tc.files, spec, verify.Options{Now: time.Now()})
			var got []verify.Finding
			for _, f := range findings {
				switch f.Reason {
				case reasons.AttributesRewrite, reasons.SourceIgnore, reasons.Submodule, reasons.SymbolicLink, reasons.UncheckoutablePath:
					got = append(got, f)
				}
			}
			for _, w := range tc.want {
				if !hasFinding(got, w.file, w.field, w.reason) {
					t.Errorf("no %s finding at %s %s in:\n%s", w.reason, w.file, w.field, list(findings))
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d findings, want %d:\n%s", len(got), len(tc.want), list(got))
			}
			for _, f := range got {
				if f.Reason == reasons.AttributesRewrite && !strings.Contains(f.Message, "remove the rule") {
					t.Errorf("the message does not say what to do: %s", f)
				}
			}
		})
	}
}
