package structure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// gitHome is where each way of reaching Git belongs (docs/design.md, the
// package map): the git CLI in the test Git helpers, which run it
// hermetically (testgit.Command: no user or system config, the C locale,
// a fixed identity); go-git's opening, cloning and creating of
// repositories in the Git object layer and in gitsync, which owns the
// reconciler's clone. Everyone else goes through them (gitobj.Open,
// gitobj.OpenHistory, testgit.Git), so that how a repository is opened,
// and how Git is run in tests, is decided once.
var gitHome = map[string][]string{
	gitCLI:    {"test/testgit"},
	goGitOpen: {"internal/git/gitobj", "gitsync"},
}

const (
	gitCLI    = `exec.Command("git", …)`
	goGitOpen = "go-git's repository opening"
)

// gitInstead says what to call instead.
var gitInstead = map[string]string{
	gitCLI:    "run it with testgit.Git or testgit.Command",
	goGitOpen: "open it with gitobj.Open or gitobj.OpenHistory (create it with testgit.Git in a test)",
}

// gitExceptions are the files that reach Git outside its home, by kind,
// each with why it stays (none today). An exception that no longer occurs
// fails the test too: the list only shrinks.
var gitExceptions = map[string]map[string]string{
	gitCLI:    {},
	goGitOpen: {},
}

// goGitOpeners are go-git's functions that open, clone or create a
// repository.
var goGitOpeners = map[string]bool{
	"PlainOpen": true, "PlainOpenWithOptions": true, "Open": true,
	"PlainClone": true, "PlainCloneContext": true, "Clone": true, "CloneContext": true,
	"PlainInit": true, "PlainInitWithOptions": true, "Init": true,
}

func TestGitIsReachedFromItsHomeOnly(t *testing.T) {
	found := map[string]map[string][]string{gitCLI: {}, goGitOpen: {}}
	for _, p := range goPackages(t) {
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rel := p + "/" + filepath.Base(f)
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for kind, lines := range gitReaches(fset, file) {
				if !home(kind, p) {
					found[kind][rel] = append(found[kind][rel], lines...)
				}
			}
		}
	}
	for kind, files := range found {
		for _, rel := range sortedKeys(files) {
			if _, ok := gitExceptions[kind][rel]; !ok {
				t.Errorf("%s: %s at line %s, outside %s: %s",
					rel, kind, strings.Join(files[rel], ", "), strings.Join(gitHome[kind], " and "), gitInstead[kind])
			}
		}
		for rel := range gitExceptions[kind] {
			if _, ok := files[rel]; !ok {
				t.Errorf("%s is listed as an exception for %s, which it no longer has: drop it from gitExceptions", rel, kind)
			}
		}
	}
}

// home reports whether package p is where kind belongs.
func home(kind, p string) bool {
	for _, h := range gitHome[kind] {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// gitReaches finds in file the calls of each kind, by line: exec.Command
// or exec.CommandContext whose program is the literal "git", and calls of
// goGitOpeners on go-git's package, whatever name either is imported as.
func gitReaches(fset *token.FileSet, file *ast.File) map[string][]string {
	names := map[string]string{} // local name → import path
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "github.com/go-git/go-git/v5" {
			name = "git"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	out := map[string][]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		line := strconv.Itoa(fset.Position(call.Pos()).Line)
		switch names[pkg.Name] {
		case "os/exec":
			program := 0
			if sel.Sel.Name == "CommandContext" {
				program = 1
			} else if sel.Sel.Name != "Command" {
				return true
			}
			if len(call.Args) > program {
				if lit, ok := call.Args[program].(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Value == `"git"` {
					out[gitCLI] = append(out[gitCLI], line)
				}
			}
		case "github.com/go-git/go-git/v5":
			if goGitOpeners[sel.Sel.Name] {
				out[goGitOpen] = append(out[goGitOpen], line)
			}
		}
		return true
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
