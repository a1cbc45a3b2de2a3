package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

var fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// trustOptions are trust's flags: whose pins, and the peer to re-pin or
// the listing to print.
type trustOptions struct {
	cluster, peer, fingerprint, output string
	list                               bool
	backend                            backendFlags
}

func newTrustCmd() *cobra.Command {
	o := &trustOptions{}
	cmd := &cobra.Command{
		Use:   "trust [--cluster ID] (--peer ID [--fingerprint sha256:…] | --list [-o text|json|yaml]) (--state-dir DIR | --backend kubernetes)",
		Short: "Re-pin a peer's key (after it changed without a rotation statement), or list the pins",
		Long: `Each cluster pins, in its backend and never in the repo, the key of every peer
(and a provider's CA and API server) when the peering is first approved. A
peer whose cluster.yaml later shows another key, CA or API server is refused
with KeyChanged, and the peering accepted before is kept as it was, unless the
new cluster.yaml carries a rotation statement signed by the pinned key
(gitpeer rotate-key writes one).

When a peer lost its key, or changed its CA without a rotation statement, its
admin tells you the new fingerprint out of band; then run, on your cluster:

  gitpeer trust --cluster <you> --peer <them> --fingerprint sha256:…

The next pass pins the peer's published cluster.yaml if its fingerprint is
that one, and refuses it otherwise. Without --fingerprint the next pass trusts
whatever the repo shows: only do that if you reviewed the cluster.yaml.
Editing the spec's fingerprint never overrides a pin.

A pin that an earlier version stored out of its bounds (a huge or malformed
API server or CA) is reported damaged (--list, and PinDamaged on the peering):
nothing of that peer is trusted until it is re-pinned the same way.

--list prints one line per peer: its ID, pinned fingerprint, API server
and state, tab-separated; -o json or yaml a PinList (apiVersion
gitpeer.io/v1alpha1, kind PinList, items), each item {peer, fingerprint,
apiServer, state: Pinned, Repin (at the next pass) or Damaged, damaged:
what is damaged}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "", "this cluster's ID (default: the one of --state-dir, or Liqo's cluster ID)")
	f.StringVar(&o.peer, "peer", "", "the peer to trust anew")
	f.StringVar(&o.fingerprint, "fingerprint", "", "the peer's new key fingerprint, sha256:<hex>, as its admin gave it to you")
	f.BoolVar(&o.list, "list", false, "print the pins: peer, fingerprint, API server, state")
	f.StringVarP(&o.output, "output", "o", "text", "output format of --list: "+strings.Join(listFormats, ", "))
	o.backend.register(f, false)
	return cmd
}

// run is trust's body: it checks the flags, opens the cluster's pins, and
// lists them or asks the next pass to re-pin --peer.
func (o *trustOptions) run(cmd *cobra.Command) error {
	if !o.list && o.peer == "" {
		return fmt.Errorf("give --peer ID (or --list)")
	}
	if err := checkFormat(o.output, listFormats); err != nil {
		return err
	}
	if !o.list && cmd.Flags().Changed("output") {
		return fmt.Errorf("-o applies to --list")
	}
	if o.peer != "" {
		if err := layout.CheckClusterID(o.peer); err != nil {
			return fmt.Errorf("--peer: %w", err)
		}
	}
	if o.fingerprint != "" && !fingerprintRE.MatchString(o.fingerprint) {
		return fmt.Errorf("--fingerprint: %q is not sha256:<64 hex digits> (cluster.yaml's fingerprint field)", o.fingerprint)
	}
	cluster := o.cluster
	if cluster == "" {
		// The state dir, or Liqo's cluster ID ConfigMap, says whose pins
		// these are: --cluster only checks it.
		var err error
		if cluster, err = o.backend.inferCluster(cmd.Context()); err != nil {
			return err
		}
	}
	b, err := o.backend.open(cmd.Context(), cluster)
	if err != nil {
		return err
	}
	store, err := b.LoadPins(cmd.Context())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.list {
		return o.printPins(out, store)
	}
	pin := store.Peer(o.peer)
	old := pin.Fingerprint
	pin.Repin, pin.Fingerprint = true, o.fingerprint
	if err := b.SavePins(cmd.Context(), store); err != nil {
		return err
	}
	if o.fingerprint == "" {
		fmt.Fprintf(out, "%s: the next pass trusts the key in clusters/%s/cluster.yaml, whatever it is (was %s)\n", o.peer, o.peer, orNone(old))
	} else {
		fmt.Fprintf(out, "%s: the next pass trusts clusters/%s/cluster.yaml only with key %s (was %s)\n", o.peer, o.peer, o.fingerprint, orNone(old))
	}
	return nil
}

// printPins prints store's pins to out, one peer a line by ID, or as a
// PinList in --output's format.
func (o *trustOptions) printPins(out io.Writer, store *pins.Store) error {
	ids := make([]string, 0, len(store.Peers))
	for id := range store.Peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	items := make([]pinItem, 0, len(ids))
	for _, id := range ids {
		p := store.Peers[id]
		item := pinItem{Peer: id, Fingerprint: p.Fingerprint, APIServer: p.APIServer, State: pinPinned}
		state := "pinned"
		switch {
		case p.Repin:
			state, item.State = "re-pin at the next pass", pinRepin
		case p.Damaged != "":
			state, item.State, item.Damaged = "damaged, not trusted until re-pinned: "+p.Damaged, pinDamaged, p.Damaged
		}
		items = append(items, item)
		if o.output == "text" {
			fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", id, orNone(p.Fingerprint), orNone(p.APIServer), state)
		}
	}
	if o.output != "text" {
		return writeList(out, o.output, kindPinList, items)
	}
	return nil
}

// listFormats are the values of -o of trust --list and version.
var listFormats = []string{"text", "json", "yaml"}

// pinItem is one peer's pins as trust --list -o json|yaml prints them: no
// key nor CA (the fingerprint names the key), nor the bookkeeping of
// sequences and nonces.
type pinItem struct {
	// Peer is the peer's cluster ID.
	Peer string `json:"peer"`
	// Fingerprint is "sha256:<hex>" of its pinned key, "" when none is.
	Fingerprint string `json:"fingerprint,omitempty"`
	// APIServer is its pinned API server URL, "" when none is.
	APIServer string `json:"apiServer,omitempty"`
	// State is pinPinned, pinRepin or pinDamaged.
	State string `json:"state"`
	// Damaged says which pinned value is damaged, with State pinDamaged.
	Damaged string `json:"damaged,omitempty"`
}

// States of a pinItem.
const (
	// pinPinned: the pins hold.
	pinPinned = "Pinned"
	// pinRepin: gitpeer trust asked the next pass to pin the peer anew.
	pinRepin = "Repin"
	// pinDamaged: a pinned value was out of its bounds; nothing of the
	// peer is trusted until it is re-pinned.
	pinDamaged = "Damaged"
)

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newRotateKeyCmd() *cobra.Command {
	var (
		cf              clusterFlags
		repo, apiServer string
	)
	cmd := &cobra.Command{
		Use:   "rotate-key --cluster ID (--state-dir DIR | --backend kubernetes) [--repo PATH] [--api-server URL]",
		Short: "Stage a new cluster key: the reconciler rolls over to it without Flux ever refusing a head",
		Long: `rotate-key stages a new cluster key beside the current one (the file backend's
cluster.key.next; the kubernetes backend's Secret gitpeer-next-authentication-keys),
with a new API server if --api-server is given. Nothing is committed by hand:
the cluster's reconciler rolls the key over in steps, as DNSSEC and TUF do.

  1. Its passes add the staged key to the keys the cluster's Flux verifies
     with (clusters/<id>/flux/, the Secret flux-system/gitpeer-signing),
     still signing with the current key, which so vouches for the new one.
  2. Once the cluster trusts the new key (the kubernetes backend reads Flux's
     verify Secret; the file backend waits --key-rollover-wait after the
     announcement), a pass switches: it signs with the new key, publishes
     cluster.yaml with it and a rotation statement signed by the old key
     (peers that pinned the old key follow with no admin re-pinning), and
     Flux trusts the new key alone from that revision on.

The key replaced is kept (cluster.key.previous; Secret
gitpeer-previous-authentication-keys) to sign the statement again if needed.
With --repo (a checkout or a bare repository, read at HEAD from Git objects
as every reader reads it), rotate-key first checks that the cluster.yaml
published there carries this backend's key (a wrong --context or
--state-dir is refused). Running it again while a key is staged changes
nothing. Each pass of 'gitpeer reconcile' prints where the rollover stands
("key rollover to sha256:…: announced …, signing with the current key
until …"), as do the daemon's /status and its status file (keyRollover);
'gitpeer status' reads the repo alone, where a staged key does not appear
(after the switch, a provider's status.yaml says KeyRotationInProgress
until the new key's Tenant verifies) (docs/deploy.md, "Rotating the
cluster key").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return stageKey(cmd.Context(), &cf.backend, cf.cluster, repo, apiServer, cmd.ErrOrStderr())
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "a checkout or bare repository of the peering repo (read at HEAD), to check that this backend's key is the one published (optional)")
	f.StringVar(&apiServer, "api-server", "", "a new https URL for this cluster's API server, published with the new key (default: unchanged)")
	return cmd
}
