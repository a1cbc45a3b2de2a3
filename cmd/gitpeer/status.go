package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/peerstatus"
)

func newStatusCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status [DIR]",
		Short: "Show each peering's handshake step and conditions",
		Long: `status reads the spec and every cluster's status.yaml in a checkout and
prints, for each peering, the furthest step of its handshake (Pending,
NonceSent, TenantSent, IdentityIssued, Ready), whether both sides are Ready,
and the conditions each side reports.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: %q is not one of table, json", output)
			}
			dir := dirArg(args)
			spec, _, err := loadSpec(cmd, dir)
			if err != nil {
				return err
			}
			peerings, err := peerstatus.Collect(layout.NewTree(dir), spec)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(peerings)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CONSUMER\tPROVIDER\tSTEP\tREADY\tSLICES\tMESSAGE")
			for _, p := range peerings {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\n", p.Consumer, p.Provider, p.Step, p.Ready, p.SliceSummary(), p.Summary())
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	addSpecLimitFlags(cmd)
	return cmd
}
