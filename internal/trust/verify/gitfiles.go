package verify

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/schema"
)

// Bounds of what a checkout holds (ReasonUncheckoutablePath): a name of
// at most MaxCheckoutName bytes (NAME_MAX of Linux, macOS and NTFS), a
// path from the repo's root of at most MaxCheckoutPath bytes (PATH_MAX of
// macOS, the least of the Unix systems, counting the checkout's own
// directory would only lower it). A path 512 directories deep is past it,
// so this bounds depth too.
const (
	MaxCheckoutName = 255
	MaxCheckoutPath = 1024
)

// maxAttributesFile is the largest .gitattributes verify reads (1 MiB);
// a larger one is a finding of its own rather than decoded.
const maxAttributesFile = 1 << 20

// checkoutFiles walks the whole tree for the files of the reasons
// SymbolicLink, Submodule, SourceIgnore,
// AttributesRewrite, UncheckoutablePath). Names are compared case-insensitively, as a checkout
// on a case-insensitive file system (macOS, Windows) reads them.
func (v *verifier) checkoutFiles() {
	var attributes []string
	var peering []string // every file under clusters/
	_ = fs.WalkDir(v.tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil // unreadable entries are Unreadable elsewhere
		}
		if !v.scope.checkout(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // scoped: unchanged since Base
		}
		if why := uncheckoutable(p, d.Name()); why != "" {
			v.add(p, "", reasons.UncheckoutablePath, "%s: Git cannot check it out (CI, a reviewer or a GitOps engine that checks out with the git CLI fails on the whole commit); gitpeer's readers read Git objects and are not stopped; rename or remove it", why)
			if d.IsDir() {
				return fs.SkipDir // one finding for what lies below
			}
			return nil
		}
		name := strings.ToLower(d.Name())
		dir := path.Dir(p)
		switch {
		case name == ".git":
			if dir != "." {
				v.add(dir, "", reasons.Submodule, "holds a nested Git repository (.git): a checkout sees another repository's content here, which nobody signed in this one")
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			v.add(p, "", reasons.SymbolicLink, "is a symbolic link: a checkout (CI's, a reviewer's, a GitOps engine's) follows it, gitpeer's readers do not; commit the file itself")
			return nil
		case d.Type()&fs.ModeIrregular != 0:
			v.add(p, "", reasons.Submodule, "is a submodule: a recursive clone (Argo CD's, a CI job's) fetches another repository's content here, which nobody signed in this one")
			return nil
		case d.IsDir():
			return nil
		case name == ".gitmodules":
			v.add(p, "", reasons.Submodule, "declares submodules: a recursive clone (Argo CD's, a CI job's) fetches other repositories' content, which nobody signed in this one")
		case name == ".sourceignore" && underPeering(dir):
			v.add(p, "", reasons.SourceIgnore, "Flux's source-controller leaves out of its artifact every path this file lists (e.g. a cluster's kustomization.yaml, so that every manifest of the folder, its inbox included, is applied); remove it")
		case name == ".gitattributes":
			attributes = append(attributes, p)
		}
		if underClusters(dir) {
			peering = append(peering, p)
		}
		return nil
	})
	if len(attributes) == 0 {
		return
	}
	candidates := v.peeringPaths(peering)
	macros := map[string][]gitAttr{}
	sort.Strings(attributes) // the root's first: it alone defines macros
	for _, file := range attributes {
		dir := path.Dir(file)
		if dir != "." && !underClusters(dir) {
			continue // its rules reach only below dir, outside the peering paths
		}
		data, err := fs.ReadFile(v.tree, file)
		if err != nil {
			continue // Unreadable, from the walks of files and privateMaterial
		}
		if len(data) > maxAttributesFile {
			v.add(file, "", reasons.AttributesRewrite, "is %d bytes, over the %d verify reads: Git may rewrite any file of the tree by it; remove it", len(data), maxAttributesFile)
			continue
		}
		for _, r := range parseAttributes(data) {
			if r.macro != "" {
				if dir == "." {
					macros[r.macro] = r.attrs
				}
				continue
			}
			rewrites := rewritingAttrs(r.attrs, macros, 0)
			if len(rewrites) == 0 {
				continue
			}
			var hits []string
			if dir == "." {
				hits = matchAll(r.pattern, candidates)
			} else {
				// Every path a rule under clusters/ reaches is a peering
				// path, whatever its pattern says.
				hits = []string{dir + "/…"}
			}
			if len(hits) == 0 {
				continue
			}
			more := ""
			if len(hits) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(hits)-1)
			}
			v.add(file, fmt.Sprintf("line %d", r.line), reasons.AttributesRewrite, "%q sets %s: Git rewrites %s%s in a checkout or archive, so CI, reviewers and GitOps engines that check out with the git CLI (Argo CD) read other bytes than those committed and signed; remove the rule, or confine its pattern outside clusters/ and the spec",
				r.pattern, strings.Join(rewrites, ", "), hits[0], more)
		}
	}
}

// uncheckoutable says why the tree entry p (named name) cannot be checked
// out on some system, "" when it can: too long a path or name, or a name
// Git for Windows refuses (core.protectNTFS, on by default): a reserved
// device name with or without an extension, a name ending in a dot or a
// space, or one holding a character NTFS does not allow.
func uncheckoutable(p, name string) string {
	switch {
	case len(p) > MaxCheckoutPath:
		return fmt.Sprintf("the path is %d bytes long, over the %d a checkout holds (%d directories deep)", len(p), MaxCheckoutPath, strings.Count(p, "/"))
	case len(name) > MaxCheckoutName:
		return fmt.Sprintf("the name is %d bytes long, over the %d a file system holds", len(name), MaxCheckoutName)
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "):
		return "the name ends in a dot or a space, which Windows drops"
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || strings.ContainsRune(`<>:"|?*`, r) }):
		return fmt.Sprintf("the name %q holds a character Windows refuses", name)
	case windowsDevice(name):
		return fmt.Sprintf("the name %q is a Windows device name", name)
	}
	return ""
}

// windowsDevice reports whether name is reserved on Windows: a device name
// (aux, con, conin$, conout$, nul, prn, com1-9, lpt1-9), in any case,
// alone or followed by spaces, an extension or a stream (".", ":").
func windowsDevice(name string) bool {
	stem := strings.ToLower(name)
	if i := strings.IndexAny(stem, ".:"); i >= 0 {
		stem = stem[:i]
	}
	stem = strings.TrimRight(stem, " ")
	switch stem {
	case "aux", "con", "conin$", "conout$", "nul", "prn":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) {
		return stem[3] >= '1' && stem[3] <= '9'
	}
	return false
}

// underPeering reports whether a file in directory dir is read by a GitOps
// engine applying a cluster's folder: dir is the root, clusters/, or under
// it.
func underPeering(dir string) bool { return dir == "." || underClusters(dir) }

func underClusters(dir string) bool {
	d := strings.ToLower(dir)
	return d == layout.ClustersDir || strings.HasPrefix(d, layout.ClustersDir+"/")
}

// peeringPaths is the paths a root .gitattributes rule is tried on: the
// spec files, every file under clusters/ in the tree (found, from the
// walk), and every file a reconciler may write there later for the spec's
// clusters and peerings, so that a rule aimed at a file not written yet is
// found too.
func (v *verifier) peeringPaths(found []string) []string {
	set := map[string]bool{}
	for _, p := range found {
		set[p] = true
	}
	for _, name := range schema.SpecFiles {
		set[name] = true
	}
	add := func(elem ...string) { set[layout.ClusterPath(elem[0], elem[1:]...)] = true }
	if v.spec != nil {
		for _, c := range v.spec.Clusters {
			for _, f := range []string{layout.ClusterFile, layout.KustomizationFile, layout.StatusFile, layout.RepinsFile, layout.OpenPGPKeyFile, dirmanifest.FileName} {
				add(c.ID, f)
			}
		}
		for _, p := range v.spec.Peerings {
			// Each side's inbox holds what the other side addressed to it:
			// the pair as it is, then reversed.
			for _, pair := range []schema.Pair{p.Pair(), {Consumer: p.Provider, Provider: p.Consumer}} {
				to, from := pair.Consumer, pair.Provider
				for _, f := range []string{layout.NonceFile, layout.TenantFile, layout.IdentityFile, dirmanifest.FileName} {
					add(to, layout.InboxDir, from, f)
				}
				add(to, layout.LiqoDir, from, "object.yaml")
				for _, s := range p.Slices {
					add(to, layout.InboxDir, from, artifact.SliceFile(s.Name))
					add(to, layout.InboxDir, from, artifact.SliceAnswerFile(s.Name))
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// gitAttr is one attribute of a .gitattributes line: its name, and its
// state: set ("name"), unset ("-name"), unspecified ("!name") or a value
// ("name=value").
type gitAttr struct {
	name, value string
	set, unset  bool
}

// attrRule is one line of a .gitattributes: a pattern and its attributes,
// or (macro != "") a macro definition "[attr]name attrs…".
type attrRule struct {
	line    int
	pattern string
	macro   string
	attrs   []gitAttr
}

// parseAttributes reads a .gitattributes as Git does (gitattributes(5)):
// blank lines and # comments skipped, a pattern (C-quoted when it starts
// with a double quote) then attributes separated by white space. A
// negative pattern, which Git ignores, is left out; a quoted pattern that
// does not unquote is kept as "*", so that it is taken to match anything.
func parseAttributes(data []byte) []attrRule {
	var rules []attrRule
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var pattern, rest string
		if strings.HasPrefix(line, `"`) {
			end := closingQuote(line)
			if end < 0 {
				pattern, rest = "*", ""
			} else if p, err := strconv.Unquote(line[:end+1]); err == nil {
				pattern, rest = p, line[end+1:]
			} else {
				pattern, rest = "*", line[end+1:]
			}
		} else {
			pattern, rest, _ = strings.Cut(strings.Join(strings.Fields(line), " "), " ")
		}
		if strings.HasPrefix(pattern, "!") {
			continue
		}
		r := attrRule{line: i + 1, pattern: pattern}
		if name, ok := strings.CutPrefix(pattern, "[attr]"); ok {
			r.macro, r.pattern = strings.ToLower(name), ""
		}
		for _, f := range strings.Fields(rest) {
			a := gitAttr{set: true}
			switch {
			case strings.HasPrefix(f, "-"):
				a.name, a.set, a.unset = f[1:], false, true
			case strings.HasPrefix(f, "!"):
				a.name, a.set = f[1:], false
			default:
				a.name, a.value, _ = strings.Cut(f, "=")
			}
			a.name = strings.ToLower(a.name)
			r.attrs = append(r.attrs, a)
		}
		rules = append(rules, r)
	}
	return rules
}

// closingQuote is the index of the double quote closing the one line
// starts with, -1 if none.
func closingQuote(line string) int {
	for i := 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// rewritingAttrs names the attributes of attrs (macros expanded, up to a
// depth Git itself would not reach) that change the bytes of a checkout or
// an archive; unsetting one ("-text") changes nothing.
func rewritingAttrs(attrs []gitAttr, macros map[string][]gitAttr, depth int) []string {
	var out []string
	for _, a := range attrs {
		if !a.set {
			continue
		}
		switch a.name {
		case "text", "eol", "crlf", "ident", "filter", "working-tree-encoding", "export-subst", "export-ignore":
			s := a.name
			if a.value != "" {
				s += "=" + a.value
			}
			out = append(out, s)
		default:
			if m, ok := macros[a.name]; ok && depth < 8 {
				for _, s := range rewritingAttrs(m, macros, depth+1) {
					out = append(out, a.name+" ("+s+")")
				}
			}
		}
	}
	return out
}

// matchAll returns the candidates (paths from the root) the pattern of a
// root .gitattributes matches, case-insensitively as a checkout on a
// case-insensitive file system does. A pattern whose syntax verify does
// not model exactly (brackets, escapes, "**" inside a path element) is
// taken to match every candidate: a rule hidden in Git's glob dialect is
// still found.
func matchAll(pattern string, candidates []string) []string {
	pattern = strings.ToLower(pattern)
	if strings.ContainsAny(pattern, `[\`) {
		return candidates
	}
	anchored := strings.Contains(strings.TrimSuffix(pattern, "/"), "/")
	pattern = strings.Trim(pattern, "/")
	parts := strings.Split(pattern, "/")
	for _, p := range parts {
		if p != "**" && strings.Contains(p, "**") {
			return candidates
		}
	}
	var hits []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		var ok bool
		if anchored {
			ok = matchParts(parts, strings.Split(lc, "/"))
		} else {
			ok, _ = path.Match(pattern, path.Base(lc))
		}
		if ok {
			hits = append(hits, c)
		}
	}
	return hits
}

// matchParts matches a path's elements against a pattern's, where "**"
// stands for any number of elements (none included).
func matchParts(pattern, elems []string) bool {
	if len(pattern) == 0 {
		return len(elems) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(elems); i++ {
			if matchParts(pattern[1:], elems[i:]) {
				return true
			}
		}
		return false
	}
	if len(elems) == 0 {
		return false
	}
	ok, err := path.Match(pattern[0], elems[0])
	return (ok || err != nil) && matchParts(pattern[1:], elems[1:])
}
