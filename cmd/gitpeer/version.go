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
// Liqo (the API objects of the handshake).
var versionModules = []struct{ name, path string }{
	{"go-git", "github.com/go-git/go-git/v5"},
	{"liqo", "github.com/liqotech/liqo"},
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

// versionText is what `gitpeer version` and `gitpeer --version` print: one
// "name: version" line each for gitpeer, Go and versionModules, from
// runtime/debug.ReadBuildInfo ("unknown" for a module the build info lacks).
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitpeer: %s\n", buildVersion())
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			deps[m.Path] = m.Version
		}
	}
	for _, m := range versionModules {
		v := deps[m.path]
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(&b, "%s: %s\n", m.name, v)
	}
	return b.String()
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of gitpeer, Go, go-git and Liqo",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText())
			return err
		},
	}
}
