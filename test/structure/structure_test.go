// Package structure keeps the repository's shape as docs/design.md draws
// it: the package map lists every Go package once, the top level holds
// only the packages the design names, and no production package imports a
// test harness. It has no code of its own.
package structure

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gitpeer/gitpeer/"

// root is the repository root, two levels above this package.
var root = filepath.Join("..", "..")

// goPackages lists the directories (slash-separated, relative to root)
// holding .go files, as `go list ./...` would see them: testdata, dot or
// underscore directories and other modules (a go.mod of their own) are not
// packages of this one.
func goPackages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() && p != root {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// mapRow is a row of the package map: "| layer | `path` | what |".
var mapRow = regexp.MustCompile("^\\| [^|]+ \\| `([a-z0-9/._-]+)` \\| ")

func TestPackageMapListsEveryPackageOnce(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := mapRow.FindStringSubmatch(line); m != nil {
			listed[m[1]]++
		}
	}
	for _, p := range goPackages(t) {
		switch n := listed[p]; n {
		case 1:
		case 0:
			t.Errorf("package %s is not in docs/design.md's package map", p)
		default:
			t.Errorf("package %s is listed %d times in docs/design.md's package map", p, n)
		}
		delete(listed, p)
	}
	for p := range listed {
		t.Errorf("docs/design.md's package map lists %s, which is no Go package of the tree", p)
	}
}

// topLevel are the Go packages the design names at the top level.
var topLevel = map[string]bool{"cmd": true, "schema": true, "reconcile": true, "gitsync": true, "examples": true, "manifests": true, "internal": true, "test": true, "hack": true}

func TestTopLevelHoldsTheDesignsPackagesOnly(t *testing.T) {
	for _, p := range goPackages(t) {
		if top, _, _ := strings.Cut(p, "/"); !topLevel[top] {
			t.Errorf("package %s sits at the top level; the design puts it under internal/ (docs/design.md, the package map)", p)
		}
	}
}

func TestNoProductionPackageImportsATestHarness(t *testing.T) {
	for _, p := range goPackages(t) {
		if strings.HasPrefix(p, "test/") || strings.HasPrefix(p, "hack/") {
			continue // the suites, and the tools that serve them
		}
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, module+"test/") {
					t.Errorf("%s imports %s: production code never imports a test harness", f, path)
				}
			}
		}
	}
}

// layerRow is a row of the package map with a numbered layer:
// "| 4 core | `path` | what |".
var layerRow = regexp.MustCompile("^\\| ([0-9]+) [^|]+ \\| `([a-z0-9/._-]+)` \\| ")

// TestImportsRunDownTheLayers keeps the package map's layers an
// architecture rather than labels: a production file imports only
// packages of its own layer or a lower one (a higher number). Test files
// are free to reach up, as test/attack does.
func TestImportsRunDownTheLayers(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	layer := map[string]int{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := layerRow.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			layer[m[2]] = n
		}
	}
	if len(layer) == 0 {
		t.Fatal("docs/design.md's package map numbers no layer")
	}
	for pkg, n := range layer {
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, ok := strings.CutPrefix(path, module)
				if !ok {
					continue
				}
				m, numbered := layer[dep]
				if !numbered {
					t.Errorf("%s imports %s, which has no layer in docs/design.md's package map", f, dep)
				} else if m < n {
					t.Errorf("%s (layer %d) imports %s of layer %d, above it: move one of them, or the row in docs/design.md's package map", f, n, dep, m)
				}
			}
		}
	}
}
