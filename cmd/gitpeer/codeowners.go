package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/review/codeowners"
)

// codeownersOptions are codeowners's flags: the host's syntax, the
// revision to read, and whether and where to write the file.
type codeownersOptions struct {
	host, file, ref string
	write           bool
}

func newCodeownersCmd() *cobra.Command {
	o := &codeownersOptions{}
	cmd := &cobra.Command{
		Use:   "codeowners [DIR]",
		Short: "Print (or --write) a CODEOWNERS file giving each cluster's paths to its owners",
		Long: `codeowners reads the spec of DIR and prints a CODEOWNERS file in which the
owners a cluster names in the spec (owners: ["@org/team", "@user"]) own what
that cluster writes: clusters/<id>/ and clusters/*/inbox/<id>/. The spec
file and the CODEOWNERS file itself are owned by the spec's own owners
(a top-level owners list), or else by every cluster's owners together.
Clusters naming no owners are listed in a comment; no line covers their
paths.

--host picks the syntax: github (the default) and gitlab take
gitignore-style patterns, where the last matching line wins; gitea takes
anchored Go regular expressions, where every matching line's owners are
asked, so its patterns exclude the inboxes from each cluster's tree. An
owner the host cannot express (an email address for Gitea, a nested group
for GitHub or Gitea) is an error.

--write writes the file to DIR/--file (default CODEOWNERS at the root,
which all three hosts read) and says whether it changed.

` + committedTreeHelp + ` --write writes into the worktree all the same,
for the change to be committed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	hosts := make([]string, len(codeowners.Hosts))
	for i, h := range codeowners.Hosts {
		hosts[i] = string(h)
	}
	f := cmd.Flags()
	f.StringVar(&o.host, "host", string(codeowners.GitHub), "CODEOWNERS syntax: "+strings.Join(hosts, ", "))
	f.BoolVar(&o.write, "write", false, "write the file into DIR instead of printing it")
	f.StringVar(&o.ref, "ref", "", refFlagUsage)
	f.StringVar(&o.file, "file", codeowners.DefaultFile, "with --write, the file's path in the repo (e.g. .github/CODEOWNERS)")
	addSpecLimitFlags(cmd)
	return cmd
}

// run is codeowners's body: it renders the CODEOWNERS file of the spec of
// args and prints it, or with --write keeps it in the worktree.
func (o *codeownersOptions) run(cmd *cobra.Command, args []string) error {
	dir := dirArg(args)
	if filepath.IsAbs(o.file) || !filepath.IsLocal(o.file) {
		return fmt.Errorf("--file: %q is not a path inside the repo", o.file)
	}
	src, err := openLocal(dir, o.ref, "--ref")
	if err != nil {
		return err
	}
	defer src.Close()
	spec, specPath, _, err := loadSpec(cmd, src)
	if err != nil {
		return err
	}
	specFile, err := filepath.Rel(dir, specPath)
	if err != nil {
		return err
	}
	out, err := codeowners.Render(spec, codeowners.Options{
		SpecFile: filepath.ToSlash(specFile), File: filepath.ToSlash(o.file), Host: codeowners.Host(o.host),
	})
	if err != nil {
		return fmt.Errorf("--host %s: %w", o.host, err)
	}
	if !o.write {
		_, err := cmd.OutOrStdout().Write(out)
		return err
	}
	changed, err := writeIfChanged(filepath.Join(dir, o.file), out)
	if err != nil {
		return err
	}
	state := "up to date"
	if changed {
		state = "written"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", filepath.Join(dir, o.file), state)
	return nil
}

// writeIfChanged writes data to path (0644, creating its directory) unless
// the file already holds exactly data, and reports whether it wrote, so
// that a CI job committing the result commits only a change.
func writeIfChanged(path string, data []byte) (bool, error) {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	return true, atomicfile.Write(path, data, 0o644)
}
