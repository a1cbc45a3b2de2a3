package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/reconcile"
)

// errChanges is plan's exit 1: the diff is printed, nothing more to say.
var errChanges = &exitError{code: 1, err: errors.New("the pass would change the repo"), silent: true}

// planOptions are plan's flags: a pass's (reconcile's) and how to read
// [DIR | URL] (status's).
type planOptions struct {
	pass   passFlags
	source sourceFlags
}

func newPlanCmd() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --cluster ID [DIR | URL] (--state-dir DIR | --backend kubernetes)",
		Short: "Show, as a diff, what this cluster's next pass would write",
		Long: `plan runs one pass of the cluster's reconciler read-only and prints what it
would commit: the commit message, then a unified diff per file it would add,
change or delete (manifest.yaml included). It never commits, pushes, saves
pins, stores or removes a kubeconfig, and signs no certificate with the
cluster's CA: an Identity it would issue carries a placeholder certificate
from a throwaway CA, as the pass would sign a fresh one anyway.

The repo is DIR (default "."), a checkout read at --ref (default HEAD) from
its Git objects, never its worktree, as the pass reads the tip: commit a
spec change locally to see what it would do before pushing it;
.gitattributes (ident, eol, text, filters), a smudge filter or an
uncommitted edit change nothing of what plan reads. A directory that is not
a Git repository is read as it stands (no attribute applies there). Or a
URL or bare repository (also as --repo, as reconcile takes it), cloned
read-only at --branch's tip into a temporary directory with
--git-credentials, its tip read from Git objects. The cluster's backend flags are reconcile's: its pins,
tokens and keys are read, never written.

With a key staged by rotate-key, plan shows the pass that announces it; a
pass whose rollover wait is over switches to it instead (reconcile prints
where a rollover stands).

Exit status, as flux diff's: 0 nothing to do, 1 the pass would change
something, 2 plan could not tell (bad flags or spec, unreadable repo or
backend, a pass that would fail).`,
		Args: func(cmd *cobra.Command, args []string) error { return withCode(2, cobra.MaximumNArgs(1)(cmd, args)) },
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.run(cmd, args)
			if err == errChanges {
				return err
			}
			return withCode(2, err)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(2, err) })
	o.pass.register(cmd)
	o.source.register(cmd.Flags())
	return cmd
}

// run is plan's body: nil when the pass would change nothing, errChanges
// when it would, another error when it cannot tell.
func (o *planOptions) run(cmd *cobra.Command, args []string) error {
	target, cluster := dirArg(args), o.pass.cluster
	switch {
	case cluster == "":
		return errors.New("--cluster is required")
	case o.pass.repoURL != "" && len(args) > 0:
		return errors.New("give the repo as DIR | URL or as --repo, not both")
	case o.pass.repoURL != "":
		target = o.pass.repoURL
	}
	format, err := o.pass.format()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	b, err := o.pass.backend.open(ctx, cluster)
	if err != nil {
		return err
	}
	stored, err := b.LoadPins(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: pins: %w", cluster, err)
	}
	next, err := runner.StagedKey(ctx, b)
	if err != nil {
		return fmt.Errorf("cluster %s: staged key: %w", cluster, err)
	}
	src, err := o.source.open(cmd, target)
	if err != nil {
		return err
	}
	defer src.Close()
	spec, _, _, err := loadSpec(cmd, src)
	if err != nil {
		return err
	}
	tree := src.Tree
	readOnly := newPlanBackend(b)
	// out.Pins, out.Identities and out.Revoked are what the runner would
	// save, store and remove after the push: plan drops them.
	out, plan, err := runner.Compute(ctx, reconcile.Input{
		Spec: spec, Tree: tree, Backend: readOnly, Now: time.Now(), CertificateLifetime: o.pass.lifetime,
		LiqoClusterRoles: o.pass.clusterRoles, Pins: stored, StagedKey: next,
	}, format)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", cluster, err)
	}
	// The commit would be refused as a whole (gitsync): say so, as the
	// pass would fail.
	for _, name := range sortedKeys(plan.Writes) {
		if err := guard.Check(name, plan.Writes[name]); err != nil {
			return fmt.Errorf("cluster %s: the pass would fail: %w", cluster, err)
		}
	}
	w := cmd.OutOrStdout()
	if plan.Empty() {
		fmt.Fprintf(w, "%s: up to date\n", cluster)
		return nil
	}
	if err := writePlan(w, tree, plan); err != nil {
		return err
	}
	if readOnly.placeholders() > 0 {
		fmt.Fprintf(w, "\nnote: %d certificate(s) above are placeholders from a throwaway CA: plan signs nothing with %s's CA, the pass will\n", readOnly.placeholders(), cluster)
	}
	for _, provider := range out.Revoked {
		fmt.Fprintf(w, "\nonce pushed: the kubeconfig for %s would be removed from the backend\n", provider)
	}
	return errChanges
}

// writePlan prints plan's commit message, indented as git log does, then a
// unified diff of every file it adds, changes or deletes, by path.
func writePlan(w io.Writer, tree fs.FS, plan *reconcile.Plan) error {
	fmt.Fprintln(w, "commit message:")
	for _, l := range strings.Split(strings.TrimRight(plan.Message, "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight("    "+l, " "))
	}
	paths := sortedKeys(plan.Writes)
	paths = append(paths, plan.Deletes...)
	sort.Strings(paths)
	for _, name := range paths {
		old, err := fs.ReadFile(tree, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A link or a path through one: the pass replaces it.
			old = nil
		}
		from, to := "a/"+name, "b/"+name
		data, written := plan.Writes[name]
		header := fmt.Sprintf("\ndiff --git a/%s b/%s\n", name, name)
		switch {
		case written && old == nil:
			from, header = "/dev/null", header+"new file mode 100644\n"
		case !written:
			to, header = "/dev/null", header+"deleted file mode 100644\n"
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: splitLines(old), B: splitLines(data), FromFile: from, ToFile: to, Context: 3,
		})
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, header+diff); err != nil {
			return err
		}
	}
	return nil
}

// splitLines splits s into lines ending in "\n", marking a last line
// without one as git does.
func splitLines(s []byte) []string {
	if len(s) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(s), "\n")
	if last := lines[len(lines)-1]; last == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] = last + "\n\\ No newline at end of file\n"
	}
	return lines
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// planBackend is a cluster's backend for a read-only pass: it reads keys
// (the staged and previous ones too), nonces, pins and tokens as the pass
// does, but signs no certificate with the cluster's CA (with the
// kubernetes backend that would create and approve a
// CertificateSigningRequest in the cluster), and stores, stages, promotes
// or removes nothing.
type planBackend struct {
	backend.Backend

	once  sync.Once
	ca    *handshake.CA
	caErr error
	n     int
}

// SignCSR signs with a throwaway CA made for this plan, so the Identity the
// pass would issue has its shape, subject and lifetime, and no credential
// is minted.
func (b *planBackend) SignCSR(_ context.Context, csrPEM []byte, lifetime time.Duration) ([]byte, error) {
	b.once.Do(func() {
		b.ca, _, b.caErr = handshake.NewCA("gitpeer plan placeholder (not "+b.ClusterID()+"'s CA)", time.Now(), lifetime)
	})
	if b.caErr != nil {
		return nil, b.caErr
	}
	b.n++
	return b.ca.SignCSR(csrPEM, time.Now(), lifetime)
}

func (b *planBackend) placeholders() int { return b.n }

// StoreKubeconfig is never called by a pass; plan stores nothing anyway.
func (b *planBackend) StoreKubeconfig(context.Context, *authv1beta1.Identity) (string, error) {
	return "", errors.New("plan stores no kubeconfig")
}

// SetToken is never called by a pass; plan writes nothing.
func (b *planBackend) SetToken(context.Context, string, []byte) error {
	return errors.New("plan writes no token")
}

// RemoveKubeconfig is never called by a pass; plan removes nothing.
func (b *planBackend) RemoveKubeconfig(context.Context, string) error {
	return errors.New("plan removes no kubeconfig")
}

// StageKey, MarkAnnounced and PromoteNextKey are the runner's, never a
// pass's; plan rolls no key.
func (b *planBackend) StageKey(context.Context, string) (*backend.NextKey, error) {
	return nil, errPlanRollsNoKey
}

func (b *planBackend) MarkAnnounced(context.Context, time.Time) error { return errPlanRollsNoKey }

func (b *planBackend) PromoteNextKey(context.Context) (crypto.Signer, error) {
	return nil, errPlanRollsNoKey
}

var errPlanRollsNoKey = errors.New("plan rolls no key")

// newPlanBackend wraps b for a read-only pass.
func newPlanBackend(b backend.Backend) *planBackend { return &planBackend{Backend: b} }
