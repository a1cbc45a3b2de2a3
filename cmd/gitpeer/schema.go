package main

import (
	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/schema"
)

func newSchemaCmd() *cobra.Command {
	var jsonSchema bool
	cmd := &cobra.Command{
		Use:   "schema [--json-schema]",
		Short: "Print the peering spec's CUE schema (or its JSON Schema, for editors)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := schema.Source()
			if jsonSchema {
				var err error
				if out, err = schema.JSONSchema(); err != nil {
					return err
				}
			}
			_, err := cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().BoolVar(&jsonSchema, "json-schema", false, "print JSON Schema 2020-12 (for yaml-language-server) instead of CUE")
	return cmd
}
