package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/schema"
)

func newValidateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check the peering spec of a repo against the schema",
		Long: `validate loads DIR/peering.cue (or peering.yaml) and checks it against the
embedded CUE schema: cluster IDs are DNS-1123 labels of at most 51 characters,
every peering names two different declared clusters, no peering is declared
twice, pinned fingerprints are well-formed. Each problem is printed as
file:line:col: path: message. Exit status: 0 valid, 1 problems found.

A spec whose evaluation takes longer than --spec-timeout or more memory than
--spec-memory is refused, here and by every command that reads it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, file, err := loadSpec(cmd, dirArg(args))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d clusters, %d peerings)\n", file, len(spec.Clusters), len(spec.Peerings))
			return nil
		},
	}
	addSpecLimitFlags(cmd)
	return cmd
}

// loadSpec loads the spec of dir within the limits of cmd's flags (see
// addSpecLimitFlags), printing its problems one per line and returning
// errProblems (exit 1) when it is invalid.
func loadSpec(cmd *cobra.Command, dir string) (*schema.Spec, string, error) {
	lim, err := specLimits(cmd)
	if err != nil {
		return nil, "", err
	}
	spec, file, err := schema.LoadBounded(cmd.Context(), dir, lim)
	var se *schema.Error
	if errors.As(err, &se) {
		for _, p := range se.Problems {
			fmt.Fprintln(cmd.OutOrStdout(), p.String())
		}
		return nil, file, errProblems
	}
	return spec, file, err
}
