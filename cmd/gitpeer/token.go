package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage tokens for the token acceptance policy (never stored in Git)",
		Long: `Under policy "token", a provider accepts a consumer's Tenant only if it carries
proof (an HMAC bound to the nonce) of a token the two admins shared out of band,
as Liqo v0.2's token authentication did. The provider's admin runs
"gitpeer token generate --cluster <provider> --peer <consumer> ..." and hands the
printed token over; the consumer's admin stores it with
"gitpeer token set --cluster <consumer> --peer <provider> ... < token". Tokens live
only in the backends: <state-dir>/tokens/ or Secret gitpeer-tokens of the Liqo
namespace.`,
	}
	cmd.AddCommand(newTokenGenerateCmd(), newTokenSetCmd())
	return cmd
}

// tokenCommand is what both token subcommands share: flags, and opening the
// backend of --cluster as a token store.
type tokenCommand struct {
	clusterFlags
	peer string
}

func (tc *tokenCommand) register(cmd *cobra.Command) {
	tc.clusterFlags.register(cmd)
	cmd.Flags().StringVar(&tc.peer, "peer", "", "the cluster ID the token is shared with")
	_ = cmd.MarkFlagRequired("peer")
}

func (tc *tokenCommand) store(ctx context.Context) (backend.TokenStore, error) {
	if err := layout.CheckClusterID(tc.peer); err != nil {
		return nil, fmt.Errorf("--peer: %w", err)
	}
	b, err := tc.backend.open(ctx, tc.cluster)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func newTokenGenerateCmd() *cobra.Command {
	var tc tokenCommand
	cmd := &cobra.Command{
		Use:   "generate --cluster ID --peer ID (--state-dir DIR | --backend kubernetes)",
		Short: "Create a token for a consumer, store it and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := tc.store(cmd.Context())
			if err != nil {
				return err
			}
			tok, err := backend.NewToken()
			if err != nil {
				return err
			}
			if err := store.SetToken(cmd.Context(), tc.peer, []byte(tok)); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	tc.register(cmd)
	return cmd
}

func newTokenSetCmd() *cobra.Command {
	var tc tokenCommand
	cmd := &cobra.Command{
		Use:   "set --cluster ID --peer ID (--state-dir DIR | --backend kubernetes) < token",
		Short: "Store the token a provider's admin handed over (read from standard input)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := tc.store(cmd.Context())
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
			return store.SetToken(cmd.Context(), tc.peer, []byte(strings.TrimSpace(line)))
		},
	}
	tc.register(cmd)
	return cmd
}
