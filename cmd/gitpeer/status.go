package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/controller/daemon"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
)

// statusFormats are the values of status -o.
var statusFormats = []string{"table", "json", "yaml", "mermaid"}

// errNotReady is status --exit-code's 1: printed, nothing more to say.
var errNotReady = &exitError{code: 1, err: errors.New("some peering is not Ready"), silent: true}

// statusOptions are status's flags: where to read the repo, which
// peerings to show, and how.
type statusOptions struct {
	source       sourceFlags
	sel          peeringSelector
	output, page string
	exitCode     bool
}

func newStatusCmd() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [DIR | URL] [--cluster ID] [--peering CONSUMER/PROVIDER]",
		Short: "Show each peering's handshake step and conditions",
		Long: `status reads the spec and every cluster's signed status.yaml and prints,
for each peering, the furthest step of its handshake (Pending, NonceSent,
TenantSent, IdentityIssued, Ready), whether it is Ready (both sides Ready
and every slice Accepted), its slices and the conditions each side
reports. A peering removed from the spec shows as Revoking, with the time
its provider withdraws it after, until it has.

Each peering not Ready says who must act next, and what: run a cluster's
reconciler (whose turn it is in the handshake), merge a branch (a review
branch holding the next step, a cluster.yaml not merged yet: the repo's
other branches are read for that), publish a cluster (gitpeer init), edit
the spec (a slice its provider denies), or a stalled side's own message. A
status.yaml that its cluster did not sign (edited by hand) is read as
absent, as the reconcilers read it, and the row says so.

DIR is a checkout (default "."), read at --ref (default HEAD) from its
Git objects, never its worktree, as the reconcilers read the repo:
.gitattributes (ident, eol, text, filters), a smudge filter or an
uncommitted edit change nothing of what status shows. A directory that is
not a Git repository is read as it stands (no attribute applies there).
Anything else is a repository to clone read-only into a temporary
directory (--branch, default main), whose tip is read from Git objects:
an https://, ssh:// or file:// URL, or a local bare repository, with
--git-credentials DIR as reconcile takes it.

--cluster ID shows only the peerings ID takes part in (as consumer or
provider), --peering CONSUMER/PROVIDER only that one; a cluster or a
peering the spec lacks is an error (exit 2), not an empty list.

-o table (default): one row per peering, and under it the reason of each
slice not Accepted. -o json or yaml: a PeeringStatusList (apiVersion
gitpeer.io/v1alpha1, kind PeeringStatusList, items), as kubectl prints a
list, each item a peering with its state (Ready, Reconciling, Stalled),
step, conditions and slices, peered (the handshake alone), message and
next (cluster, action, branch, file, message): jq '.items[]' iterates them. -o mermaid: a
Mermaid flowchart, clusters and peerings coloured by state.

--write FILE also keeps FILE (e.g. STATUS.md) as a Markdown page with the
graph and the table, rewritten only when the status changed (it holds no
time nor commit), for a CI job to commit.

On a checkout a daemon (reconcile without --once) reconciles, the table
is followed by its last pass, from <checkout>.status.json: e.g. "failed
(PushRejected) ... after 23 push attempts, failing since ...; next pass at
...": a pass that lost every push to other writers, which the repo cannot
show.

Exit status: 0; with --exit-code, 1 while any peering shown is not Ready
(as git diff --exit-code; kubectl get and flux get exit 0 whatever the
state, and so does status without it); 2 when status could not read the
repo. To wait until peerings are Ready, gitpeer wait.`,
		Args: func(cmd *cobra.Command, args []string) error { return withCode(2, cobra.MaximumNArgs(1)(cmd, args)) },
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(2, err) })
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(statusFormats, ", "))
	f.BoolVar(&o.exitCode, "exit-code", false, "exit 1 while any peering shown is not Ready")
	o.sel.register(f, "show only")
	f.StringVar(&o.page, "write", "", "also write a Markdown page (graph and table) to this file, when it changed")
	o.source.register(f)
	addSpecLimitFlags(cmd)
	return cmd
}

// run is status's body: errNotReady (exit 1) when --exit-code finds a
// peering shown not Ready, an error exiting 2 when it cannot read the repo.
func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkFormat(o.output, statusFormats); err != nil {
		return withCode(2, err)
	}
	src, err := o.source.open(cmd, dirArg(args))
	if err != nil {
		return withCode(2, err)
	}
	defer src.Close()
	spec, specPath, _, err := loadSpec(cmd, src)
	if err != nil {
		return withCode(2, err)
	}
	tree := src.Tree
	all, err := readPeerings(cmd.Context(), src, spec, filepath.Base(specPath), dirArg(args), o.source.gitCredentials)
	if err != nil {
		return withCode(2, err)
	}
	if err := o.sel.check(spec, all); err != nil {
		return withCode(2, err)
	}
	peerings := o.sel.peerings(all)
	clusters := o.sel.clusters(peerstatus.Clusters(tree, spec, all), peerings)
	if err := printStatus(cmd, o.output, clusters, peerings); err != nil {
		return withCode(2, err)
	}
	if o.output == "table" && !src.Cloned {
		printReconciler(cmd, src.Dir)
	}
	if o.page != "" {
		if err := o.writePage(cmd, filepath.Base(specPath), clusters, peerings); err != nil {
			return withCode(2, err)
		}
	}
	if o.exitCode {
		for _, p := range peerings {
			if !p.Ready {
				return errNotReady
			}
		}
	}
	return nil
}

// writePage keeps --write's Markdown page, rewritten only when it changed,
// and says on stderr which.
func (o *statusOptions) writePage(cmd *cobra.Command, specFile string, clusters []peerstatus.Cluster, peerings []peerstatus.Peering) error {
	var b bytes.Buffer
	if err := peerstatus.WritePage(&b, specFile, clusters, peerings); err != nil {
		return err
	}
	changed, err := writeIfChanged(o.page, b.Bytes())
	if err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	state := "up to date"
	if changed {
		state = "written"
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", o.page, state)
	return nil
}

func printStatus(cmd *cobra.Command, output string, clusters []peerstatus.Cluster, peerings []peerstatus.Peering) error {
	w := cmd.OutOrStdout()
	switch output {
	case "json", "yaml":
		return writeList(w, output, kindPeeringStatusList, peerings)
	case "mermaid":
		return peerstatus.WriteMermaid(w, clusters, peerings)
	}
	return peerstatus.WriteTable(w, peerings)
}

// printReconciler prints the last pass of the daemon whose checkout dir is,
// when there is one (daemon.StatusFile); an unreadable file is said, not
// an error: the peerings were printed.
func printReconciler(cmd *cobra.Command, dir string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	file := daemon.StatusFile(abs)
	ps, err := daemon.ReadStatusFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		fmt.Fprintf(cmd.OutOrStdout(), "\nreconciler: cannot read its last pass: %v\n", err)
		return
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nreconciler %s, last pass: %s\n", ps.Cluster, ps.Summary())
}
