package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/backend/file"
	"github.com/gitpeer/gitpeer/layout"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage tokens for the token acceptance policy (never stored in Git)",
		Long: `Under policy "token", a provider accepts a consumer's Tenant only if it carries
proof (an HMAC bound to the nonce) of a token the two admins shared out of band,
as Liqo v0.2's token authentication did. The provider's admin runs
"gitpeer token generate --peer <consumer>" and hands the printed token over; the
consumer's admin stores it with "gitpeer token set --peer <provider>". Tokens
live in the state directories only.`,
	}
	cmd.AddCommand(newTokenGenerateCmd(), newTokenSetCmd())
	return cmd
}

// openTokens checks --peer and opens the state dir keeping the tokens.
func openTokens(peer, stateDir string) (*file.Backend, error) {
	if err := layout.CheckClusterID(peer); err != nil {
		return nil, fmt.Errorf("--peer: %w", err)
	}
	return file.Open(stateDir)
}

func tokenFlags(cmd *cobra.Command, peer, stateDir *string) {
	cmd.Flags().StringVar(peer, "peer", "", "the cluster ID the token is shared with")
	cmd.Flags().StringVar(stateDir, "state-dir", "", "this cluster's state dir (file backend)")
	_ = cmd.MarkFlagRequired("peer")
	_ = cmd.MarkFlagRequired("state-dir")
}

func newTokenGenerateCmd() *cobra.Command {
	var peer, stateDir string
	cmd := &cobra.Command{
		Use:   "generate --peer ID --state-dir DIR",
		Short: "Create a token for a consumer, store it and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := openTokens(peer, stateDir)
			if err != nil {
				return err
			}
			tok, err := b.GenerateToken(peer)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	tokenFlags(cmd, &peer, &stateDir)
	return cmd
}

func newTokenSetCmd() *cobra.Command {
	var peer, stateDir string
	cmd := &cobra.Command{
		Use:   "set --peer ID --state-dir DIR < token",
		Short: "Store the token a provider's admin handed over (read from standard input)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := openTokens(peer, stateDir)
			if err != nil {
				return err
			}
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if strings.TrimSpace(line) == "" {
				if err == nil {
					err = errors.New("empty line")
				}
				return fmt.Errorf("read token from standard input: %w", err)
			}
			return b.SetToken(peer, []byte(strings.TrimSpace(line)))
		},
	}
	tokenFlags(cmd, &peer, &stateDir)
	return cmd
}
