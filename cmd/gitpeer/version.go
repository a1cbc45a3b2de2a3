package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is gitpeer's version, set at build time with
// -ldflags "-X main.version=$(git describe --always --dirty)" (make build
// does). Without it, the module version go install recorded, else "dev".
var version = "dev"

// revision is the full hash of the commit gitpeer was built from, set at
// build time with -ldflags "-X main.revision=$(git rev-parse HEAD)" (make
// build and make image do: the Makefile builds with -buildvcs=false, so the
// Go toolchain records none). Without it, buildRevision reads the build info.
var revision = ""

// versionModules are the dependencies whose versions decide what gitpeer
// writes and speaks: go-git (the Git protocol and repository format) and
// Liqo (the API objects of the handshake); key is their field in -o json.
var versionModules = []struct{ name, key, path string }{
	{"go-git", "goGit", "github.com/go-git/go-git/v5"},
	{"liqo", "liqo", "github.com/liqotech/liqo"},
}

// pseudoVersion matches a Go module pseudo-version (go.dev/ref/mod,
// "Pseudo-versions"): its last part is the commit's 12-hex-digit prefix.
var pseudoVersion = regexp.MustCompile(`^v\d+\.(?:0\.0-|\d+\.\d+-(?:[^+]*\.)?0\.)\d{14}-([0-9a-f]{12})(?:\+[0-9A-Za-z.-]+)?$`)

// buildVersion is version, or the main module's version from the build
// info when no -X flag set it.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return resolveVersion(version, bi)
}

// buildRevision is the commit gitpeer was built from, as resolveRevision
// finds it in this binary.
func buildRevision() string {
	bi, _ := debug.ReadBuildInfo()
	return resolveRevision(revision, bi)
}

// resolveVersion is v (the -X value) unless it is "dev", else the main
// module's version in bi (a tag, or a pseudo-version after
// `go install github.com/gitpeer/gitpeer/cmd/gitpeer@<commit>`), else "dev".
func resolveVersion(v string, bi *debug.BuildInfo) string {
	if v != "dev" {
		return v
	}
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return v
}

// resolveRevision is the commit a binary was built from, first found of:
// rev (the -X value); the toolchain's vcs.revision in bi (a build in a Git
// checkout with -buildvcs), with "-dirty" when vcs.modified says the
// worktree had uncommitted changes; the 12-hex-digit commit prefix of a
// pseudo-version main module (go install …@<commit>); "unknown". A tagged
// release installed with go install records no commit: its tag names one.
func resolveRevision(rev string, bi *debug.BuildInfo) string {
	if rev != "" {
		return rev
	}
	if bi == nil {
		return "unknown"
	}
	var vcsRev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vcsRev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if vcsRev != "" {
		if modified {
			return vcsRev + "-dirty"
		}
		return vcsRev
	}
	if m := pseudoVersion.FindStringSubmatch(bi.Main.Version); m != nil {
		return m[1]
	}
	return "unknown"
}

// moduleVersions are the versions of versionModules, in their order, from
// runtime/debug.ReadBuildInfo ("unknown" for a module the build info lacks).
func moduleVersions() []string {
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			deps[m.Path] = m.Version
		}
	}
	out := make([]string, len(versionModules))
	for i, m := range versionModules {
		if out[i] = deps[m.path]; out[i] == "" {
			out[i] = "unknown"
		}
	}
	return out
}

// versionText is what `gitpeer version` and `gitpeer --version` print: one
// "name: version" line each for gitpeer, its revision (the commit), Go and
// versionModules.
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitpeer: %s\n", buildVersion())
	fmt.Fprintf(&b, "revision: %s\n", buildRevision())
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	for i, v := range moduleVersions() {
		fmt.Fprintf(&b, "%s: %s\n", versionModules[i].name, v)
	}
	return b.String()
}

// versionObject is what `gitpeer version -o json|yaml` prints, the same
// versions as versionText as one object: {"gitpeer", "revision", "go",
// "goGit", "liqo"} (an object, as kubectl version -o json prints one, not a
// list).
func versionObject() map[string]string {
	out := map[string]string{"gitpeer": buildVersion(), "revision": buildRevision(), "go": runtime.Version()}
	for i, v := range moduleVersions() {
		out[versionModules[i].key] = v
	}
	return out
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print the versions of gitpeer, Go, go-git and Liqo, and the commit built",
		Long: `version prints the versions of gitpeer, of Go and of the go-git and Liqo
modules it was built with, and the revision: the commit gitpeer was built
from ("unknown" when the build did not record one; "-dirty" when its
checkout had uncommitted changes). One "name: value" line each, or with
-o json or yaml one object {gitpeer, revision, go, goGit, liqo}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, listFormats); err != nil {
				return err
			}
			if output != "text" {
				return writeObject(cmd.OutOrStdout(), output, versionObject())
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: "+strings.Join(listFormats, ", "))
	return cmd
}
