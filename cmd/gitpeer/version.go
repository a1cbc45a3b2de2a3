package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is gitpeer's version, set at build time with
// -ldflags "-X main.version=$(git describe --always --dirty)" (make build
// does). Without it, the module version go install recorded, else "dev".
var version = "dev"

// versionModules are the dependencies whose versions decide what gitpeer
// writes and speaks: go-git (the Git protocol and repository format) and
// Liqo (the API objects of the handshake); key is their field in -o json.
var versionModules = []struct{ name, key, path string }{
	{"go-git", "goGit", "github.com/go-git/go-git/v5"},
	{"liqo", "liqo", "github.com/liqotech/liqo"},
}

// buildVersion is version, or the main module's version from the build
// info when no -X flag set it.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
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
// "name: version" line each for gitpeer, Go and versionModules.
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitpeer: %s\n", buildVersion())
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	for i, v := range moduleVersions() {
		fmt.Fprintf(&b, "%s: %s\n", versionModules[i].name, v)
	}
	return b.String()
}

// versionObject is what `gitpeer version -o json|yaml` prints, the same
// versions as versionText as one object: {"gitpeer", "go", "goGit",
// "liqo"} (an object, as kubectl version -o json prints one, not a list).
func versionObject() map[string]string {
	out := map[string]string{"gitpeer": buildVersion(), "go": runtime.Version()}
	for i, v := range moduleVersions() {
		out[versionModules[i].key] = v
	}
	return out
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print the versions of gitpeer, Go, go-git and Liqo",
		Long: `version prints the versions of gitpeer, of Go and of the go-git and Liqo
modules it was built with: one "name: version" line each, or with -o json
or yaml one object {gitpeer, go, goGit, liqo}.`,
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
