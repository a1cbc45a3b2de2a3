package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/demo"
	"github.com/gitpeer/gitpeer/examples"
)

func newDemoCmd() *cobra.Command {
	var opts demo.Options
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--example NAME]",
		Short: "Run a whole peering on this machine through a real Git repo",
		Long: fmt.Sprintf(`demo makes a bare repo DIR/remote.git from an embedded example, creates a
file backend per cluster in DIR/state/<id>, publishes each cluster, then runs
the clusters' reconcilers in turn until every peering is Ready, printing each
commit as it lands (cluster, message, files), the final status and where each
consumer's kubeconfig was written. DIR defaults to a fresh temporary directory.

Examples: %v`, examples.Names()),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Dir == "" {
				d, err := os.MkdirTemp("", "gitpeer-demo-")
				if err != nil {
					return err
				}
				opts.Dir = d
			}
			_, err := demo.Run(cmd.Context(), opts, cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the demo (empty or absent); default: a new temp dir")
	cmd.Flags().StringVar(&opts.Example, "example", "two-clusters", "example peering repo to start from")
	return cmd
}
