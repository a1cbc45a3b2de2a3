package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/verify"
)

func newVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check every artifact of a peering repo checkout, offline",
		Long: `verify runs, over a checkout and with no private material, every check the
reconcilers make: each Tenant's signature over the nonce its provider
published, its CSR (CN = consumer ID, one O = liqo.io, the consumer's key) and
its key against the one pinned in clusters/<consumer>/cluster.yaml (and the
spec's fingerprint); each Identity's CA and API server against the provider's
cluster.yaml and its certificate against the consumer's key and subject; that
no Identity exists without a valid Tenant; that kustomizations apply only a
cluster's own rendered files; that no file holds private key material; and,
in a Git checkout, that no commit of a reconciler (Gitpeer-Cluster trailer)
touched a path outside what that cluster may write.

One line per problem (file: field: reason). Exit status: 0 when every check
holds, 1 otherwise.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			spec, _, err := loadSpec(cmd, dir)
			if err != nil {
				return err
			}
			problems := verify.Tree(layout.NewTree(dir), spec, time.Now())
			if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
				history, err := verify.History(dir)
				if err != nil {
					return err
				}
				problems = append(problems, history...)
			}
			for _, p := range problems {
				fmt.Fprintln(cmd.OutOrStdout(), p.String())
			}
			if len(problems) > 0 {
				return errProblems
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: every check holds (%d peerings)\n", dir, len(spec.Peerings))
			return nil
		},
	}
	addSpecLimitFlags(cmd)
	return cmd
}
