package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/examples"
	"github.com/gitpeer/gitpeer/internal/demo"
)

// demoOptions are demo's flags: demo.Run's options.
type demoOptions struct {
	demo demo.Options
}

func newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	opts := &o.demo
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--example NAME | --clusters N [--peerings M] [--concurrent] [--rounds R]]",
		Short: "Run a whole peering on this machine through a real Git repo",
		Long: fmt.Sprintf(`demo makes a bare repo DIR/remote.git from an embedded example, creates a
file backend per cluster in DIR/state/<id>, publishes each cluster, then runs
the clusters' reconcilers in turn until every peering is Ready, printing each
commit as it lands (cluster, message, files), the final status and where each
consumer's kubeconfig was written. DIR defaults to a fresh temporary directory.

Examples: %v

--clusters N seeds a synthetic mesh instead: clusters c01…cN and --peerings M
peerings (default 3N, at most N(N-1)), cluster i consuming from i+1, i+2, …
(wrapping), the same for the same N and M. The clusters then run rounds, one
pass each per round, until every peering is Ready or --rounds rounds have
run; with --concurrent all N passes of a round run at once, racing for the
branch as a daemon per cluster does after a spec change. It prints a line
per round and the totals (rounds, commits, push retries, failed passes,
time), then runs verify over the whole history.`, examples.Names()),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the demo (empty or absent); default: a new temp dir")
	cmd.Flags().StringVar(&opts.Example, "example", "two-clusters", "example peering repo to start from")
	cmd.Flags().IntVar(&opts.Clusters, "clusters", 0, "seed a synthetic mesh of this many clusters instead of an example")
	cmd.Flags().IntVar(&opts.Peerings, "peerings", 0, "peerings of the synthetic mesh (default 3 per cluster)")
	cmd.Flags().BoolVar(&opts.Concurrent, "concurrent", false, "run every cluster's pass of a round at once")
	cmd.Flags().IntVar(&opts.MaxRounds, "rounds", 10, "with --clusters, give up after this many rounds")
	return cmd
}

// run is demo's body: it checks the flags of a synthetic mesh, makes the
// demo's directory if none is given, and runs the demo.
func (o *demoOptions) run(cmd *cobra.Command) error {
	opts, f := &o.demo, cmd.Flags()
	if opts.Clusters == 0 {
		for _, name := range []string{"clusters", "peerings", "concurrent", "rounds"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s needs --clusters N (N ≥ 2)", name)
			}
		}
	} else {
		if f.Changed("example") {
			return errors.New("--example and --clusters are exclusive: --clusters seeds a synthetic mesh")
		}
		if !f.Changed("peerings") {
			opts.Peerings = min(3*opts.Clusters, opts.Clusters*(opts.Clusters-1))
		}
		if f.Changed("rounds") && opts.MaxRounds < 1 {
			return fmt.Errorf("--rounds must be at least 1, got %d", opts.MaxRounds)
		}
		// Refused before a temporary directory is made for it.
		if _, err := demo.Mesh(opts.Clusters, opts.Peerings); err != nil {
			return err
		}
	}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "gitpeer-demo-")
		if err != nil {
			return err
		}
		opts.Dir = d
	}
	_, err := demo.Run(cmd.Context(), *opts, cmd.OutOrStdout())
	return err
}
