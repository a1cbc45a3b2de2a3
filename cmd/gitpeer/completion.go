package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/schema"
)

// completionSpecTimeout bounds the evaluation of the spec a completion
// reads: a shell waits for it on every TAB.
const completionSpecTimeout = 5 * time.Second

// registerCompletions makes every command under root complete --cluster
// and --peer with the cluster IDs, and --peering with the
// CONSUMER/PROVIDER pairs, of the spec of the repo the command line names
// (see completionSpec).
func registerCompletions(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for flag, fn := range map[string]cobra.CompletionFunc{
			"cluster": completeClusters,
			"peer":    completeClusters,
			"peering": completePeerings,
		} {
			if c.Flags().Lookup(flag) != nil {
				// Registered once per command: the error is a duplicate.
				_ = c.RegisterFlagCompletionFunc(flag, fn)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeClusters completes the spec's cluster IDs (for --peer, other
// than --cluster's).
func completeClusters(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	spec := completionSpec(cmd, args)
	if spec == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	self, _ := cmd.Flags().GetString("cluster")
	var out []string
	for _, c := range spec.Clusters {
		if cmd.Flags().Lookup("peer") != nil && c.ID == self && self != toComplete {
			continue
		}
		if strings.HasPrefix(c.ID, toComplete) {
			out = append(out, c.ID)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePeerings completes the spec's peerings as CONSUMER/PROVIDER.
func completePeerings(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	spec := completionSpec(cmd, args)
	if spec == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, p := range spec.Peerings {
		if id := p.Consumer + "/" + p.Provider; strings.HasPrefix(id, toComplete) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionSpec is the spec a completion offers names from, read as the
// readers read it (openLocal: a checkout or bare repository at HEAD, a
// plain directory as it stands) from the first directory of: the
// command's [DIR] argument, its --repo when that is a local directory, and
// ".". nil when there is none or it does not parse: a completion says
// nothing rather than an error.
func completionSpec(cmd *cobra.Command, args []string) *schema.Spec {
	dir := "."
	repo, _ := cmd.Flags().GetString("repo")
	switch {
	case len(args) > 0 && isDir(args[0]):
		dir = args[0]
	case repo != "" && isDir(repo):
		dir = repo
	}
	src, err := openLocal(dir, "", "--ref")
	if err != nil {
		return nil
	}
	defer src.Close()
	file, data, err := schema.FindSpec(src.Tree, src.Dir)
	if err != nil {
		return nil
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	spec, err := schema.ParseBounded(ctx, file, data, schema.Limits{Timeout: completionSpecTimeout})
	if err != nil {
		return nil
	}
	return spec
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
