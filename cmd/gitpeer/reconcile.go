package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// reconcileOptions are reconcile's flags: a pass's (plan's too), and how
// passes run (once or as a daemon, pushing or proposing for review).
type reconcileOptions struct {
	pass                                             passFlags
	branch, gitCredentials                           string
	checkout, pushBranch, reviewScope                string
	pr                                               prFlags
	daemon                                           daemonFlags
	once, watch, wait                                bool
	waitTimeout, interval, pushTimeout, rolloverWait time.Duration
}

func newReconcileCmd() *cobra.Command {
	o := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "reconcile --cluster ID --repo URL (--state-dir DIR | --backend kubernetes) [--once | --interval D]",
		Short: "Run this cluster's reconciler against the peering repo",
		Long: `reconcile runs passes of one cluster's reconciler. A pass fetches the repo,
computes every file this cluster owns from the spec, the repo and its state
dir, and commits the difference with a message naming the cluster, the steps
and the peers, then pushes. A rejected push (another cluster pushed first)
is retried on the new tip, backing off by how many commits beat it and how
long an attempt takes, until --push-timeout passes with no commit from a
writer new to the pass (a burst of clusters drains while it waits its turn),
and never past 10 push timeouts in all:
the pass's change is re-applied there (the clusters' paths never overlap),
never merged, never force-pushed; if the commits that won changed a path this
cluster owns, the pass stops and says which. A pass with nothing to do makes
no commit. The provider signs only after the consumer's Tenant
passes every check; the consumer trusts an Identity only after its checks.
Kubeconfigs obtained as a consumer never go to Git: the file backend writes
them to <state-dir>/kubeconfigs/, the kubernetes backend to the Secret Liqo
would write (kubeconfig-controlplane-<provider> in liqo-tenant-<provider>).
When a peering is removed from the spec, the provider first drains the
Tenant and unbinds its RBAC, then both sides withdraw every artifact.

--repo is a URL (https://, ssh://, file://) or a local path. --once runs one
pass and exits; otherwise passes repeat every --interval until interrupted.

--git-credentials DIR authenticates to the repo's host with files named as
the keys of Flux's Git Secret (in a Pod, the mounted Secret; the same Secret
serves Flux's GitRepository): identity (an SSH deploy key; password is its
passphrase if encrypted) and known_hosts (required: host keys are always
checked) for ssh://; username and password, or bearerToken, and ca.crt for a
private CA, for https://. They are read again at every pass, so a rotated
Secret needs no restart, and are never written anywhere. A URL with
credentials in it is refused.

Commits are signed with the cluster key, --signing-format ssh (default;
Flux's GitRepository.spec.verify checks them) or openpgp (Argo CD's
AppProject sourceIntegrity checks them; Flux too), the words of git's
gpg.format. A commit carries one signature: pick the one your GitOps engine
checks. With openpgp, each pass also publishes the cluster's OpenPGP key in
clusters/<id>/openpgp.asc (gitpeer allowed-signers --format openpgp checks
and prints it); with ssh, a pass removes that file.

Only one reconcile at a time uses a checkout: it holds a lock next to it
(<checkout>.lock) for as long as it runs, the whole life of a daemon.
Another one fails naming the holder's process, or with --wait waits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.pass.register(cmd)
	cmd.Flags().StringVar(&o.branch, "branch", "main", "branch to reconcile; it must exist on the remote, holding the peering spec")
	cmd.Flags().StringVar(&o.gitCredentials, "git-credentials", "", "directory of Git credentials named as Flux's Git Secret keys (identity, known_hosts, password, username, bearerToken, ca.crt)")
	f := cmd.Flags()
	f.StringVar(&o.checkout, "checkout", "", "clone of the repo, without a worktree: read what a pass wrote with git -C DIR log or show, or gitpeer status DIR (default <state-dir>/checkout)")
	f.StringVar(&o.pushBranch, "push-branch", "", "propose each pass's commit on this branch for review instead of pushing to --branch; {cluster} is this cluster's ID, e.g. gitpeer/{cluster}")
	f.StringVar(&o.reviewScope, "review-scope", runner.ReviewAll, "with --push-branch, what is proposed for review: all (every change) or applied (what the cluster applies, clusters/<id>/ but its inbox; handshake artifacts in peers' inboxes go to --branch directly)")
	o.pr.register(f)
	f.BoolVar(&o.wait, "wait", false, "wait for another process using the checkout to finish, instead of failing")
	f.DurationVar(&o.waitTimeout, "wait-timeout", defaultWaitTimeout, "with --wait, how long to wait for the checkout before failing (a daemon holds it as long as it runs)")
	f.BoolVar(&o.once, "once", false, "run one pass and exit")
	f.BoolVar(&o.watch, "watch", false, "also run a pass as soon as the branch moves (repos on this machine's filesystem only)")
	f.DurationVar(&o.interval, "interval", time.Minute, "time between passes")
	f.DurationVar(&o.pushTimeout, "push-timeout", gitsync.DefaultPushTimeout, "how long a pass retries pushes rejected because other writers pushed first, counted from the last commit of a writer new to the pass; at most 10 times it in all")
	f.DurationVar(&o.rolloverWait, "key-rollover-wait", runner.DefaultKeyRolloverWait, "how long a key staged by rotate-key is announced at least before it signs (time for Flux to apply the announcement, or to import the staged OpenPGP key into Argo CD); the kubernetes backend also waits until Flux's verify Secret holds it; 0: no wait")
	o.daemon.register(cmd)
	cmd.Long += pushBranchHelp + openPRHelp
	for _, name := range []string{"cluster", "repo"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// run is reconcile's body: it checks the flags, opens the backend and the
// checkout, and runs one pass or the daemon.
func (o *reconcileOptions) run(cmd *cobra.Command) error {
	if o.once && cmd.Flags().Changed("interval") {
		return errors.New("--once and --interval are exclusive")
	}
	if o.pushTimeout <= 0 {
		return fmt.Errorf("--push-timeout must be positive, got %s", o.pushTimeout)
	}
	switch {
	case o.rolloverWait < 0:
		return fmt.Errorf("--key-rollover-wait must not be negative, got %s (0 switches to a staged key as soon as it is announced: for a cluster no Flux applies)", o.rolloverWait)
	case o.rolloverWait == 0:
		o.rolloverWait = runner.NoKeyRolloverWait
	}
	format, err := o.pass.format()
	if err != nil {
		return err
	}
	if err := checkRemote(o.pass.repoURL); err != nil {
		return err
	}
	var review *reviewFlow
	if cmd.Flags().Changed("push-branch") {
		b, err := expandPushBranch(o.pushBranch, o.pass.cluster, o.branch)
		if err != nil {
			return err
		}
		review = &reviewFlow{branch: b, target: o.branch, repoURL: o.pass.repoURL}
	}
	reviewed, err := runner.Reviewed(o.reviewScope, o.pass.cluster)
	switch {
	case err != nil:
		return fmt.Errorf("--review-scope: %w", err)
	case review == nil && cmd.Flags().Changed("review-scope"):
		return errors.New("--review-scope needs --push-branch: without a review branch every change goes to --branch")
	}
	lim, err := specLimits(cmd)
	if err != nil {
		return err
	}
	creds, err := gitauth.New(o.gitCredentials, o.pass.repoURL)
	if err != nil {
		return fmt.Errorf("--repo, --git-credentials: %w", err)
	}
	warnUnknownCredentials(cmd.ErrOrStderr(), creds)
	opener, err := o.pr.opener(review, creds)
	if err != nil {
		return err
	}
	if opener != nil {
		review.pr = opener
	}
	b, err := o.pass.backend.open(cmd.Context(), o.pass.cluster)
	if err != nil {
		return err
	}
	if o.checkout == "" {
		o.checkout = o.pass.backend.defaultCheckout(o.pass.cluster)
	}
	lock, err := lockCheckout(cmd.Context(), o.checkout, o.wait, o.waitTimeout, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer lock.Unlock()
	gopts := gitsync.Options{URL: o.pass.repoURL, Dir: o.checkout, Branch: o.branch, BranchMustExist: true, Credentials: creds, Push: gitsync.PushRetry{Timeout: o.pushTimeout}}
	if review != nil {
		gopts.Review = gitsync.Review{Branch: review.branch, Paths: reviewed}
	}
	opts, err := runner.Signed(gopts, b, format)
	if err != nil {
		return err
	}
	repo, err := gitsync.Open(cmd.Context(), opts)
	if err != nil {
		return branchFlagError(err)
	}
	r := &runner.Runner{Repo: repo, Backend: b, CertificateLifetime: o.pass.lifetime, LiqoClusterRoles: o.pass.clusterRoles,
		LoadSpec: boundedSpecLoader(lim), KeyRolloverWait: o.rolloverWait}
	if o.once {
		return passOnce(cmd.Context(), r, review, cmd.OutOrStdout())
	}
	var pushed <-chan struct{}
	if o.watch {
		refs, err := localRefs(o.pass.repoURL)
		if err != nil {
			return fmt.Errorf("--watch: %w", err)
		}
		if pushed, err = gitsync.Watch(cmd.Context(), refs, 200*time.Millisecond); err != nil {
			return fmt.Errorf("--watch: %w", err)
		}
	}
	refs := []string{"refs/heads/" + o.branch, "refs/heads/" + layout.AppliedBranch(o.pass.cluster)}
	return o.daemon.run(cmd.Context(), r, &o.pass.backend, o.interval, pushed, review, refs)
}

// branchFlagError names --branch in an error saying that the branch does
// not exist on the remote, or says what to do about an empty remote; other
// errors are returned as they are.
func branchFlagError(err error) error {
	var nf *gitsync.BranchNotFoundError
	switch {
	case !errors.As(err, &nf):
		return err
	case nf.Empty:
		return fmt.Errorf("%w; push the peering spec to %s first", err, nf.Branch)
	}
	return fmt.Errorf("--branch: %w", err)
}

// checkCertificateLifetime refuses a --certificate-lifetime under the
// shortest a provider signs, before anything is opened or fetched.
func checkCertificateLifetime(d time.Duration) error {
	if d < schema.MinCertificateLifetime {
		return fmt.Errorf("--certificate-lifetime %s is shorter than %s, the shortest certificate lifetime a provider signs", d, schema.MinCertificateLifetime)
	}
	return nil
}

// lockCheckout takes the checkout's lock for this process's lifetime, or
// says who holds it; with wait it waits, saying so once on log, at most
// timeout: a daemon holds its checkout for as long as it runs, so an
// unbounded wait behind one never ends.
func lockCheckout(ctx context.Context, checkout string, wait bool, timeout time.Duration, log io.Writer) (*gitsync.CheckoutLock, error) {
	if wait && timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var holder *gitsync.LockedError
	lock, err := gitsync.LockCheckout(ctx, checkout, wait, func(held *gitsync.LockedError) {
		holder = held
		fmt.Fprintf(log, "gitpeer: waiting: %v; giving up after %s (--wait-timeout): a reconcile daemon holds its checkout for as long as it runs\n", held, timeout)
	})
	var held *gitsync.LockedError
	switch {
	case errors.As(err, &held) && !wait:
		// Waiting suits a --once run, which ends after its pass; never a
		// daemon, which the wait would only time out behind.
		return nil, fmt.Errorf("%w; use --wait to wait for a reconcile --once to finish (at most --wait-timeout, %s); "+
			"a reconcile daemon holds its checkout for its whole life: stop it, or give this run a checkout of its own (--checkout DIR)", err, defaultWaitTimeout)
	case holder != nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%v, still after %s (--wait-timeout): if it is a reconcile daemon (--watch, or the Deployment), it holds the checkout for its whole life; "+
			"stop it, or give this run a checkout of its own (--checkout DIR)", holder, timeout)
	}
	return lock, err
}

// defaultWaitTimeout bounds reconcile --wait: longer than a pass takes
// (which is what a --once run holds the checkout for), shorter than
// anyone waits for a daemon to stop by itself.
const defaultWaitTimeout = 10 * time.Minute

// reviewFlow is a --push-branch: where proposals go, for which branch, and
// the repo they are compared in; pr opens their pull request
// (--open-pull-request), when set.
type reviewFlow struct {
	branch, target, repoURL string
	pr                      *prOpener
}

// compare is where to review the branch: its pull request, once
// --open-pull-request opened it, else the compare hint.
func (f *reviewFlow) compare() string {
	if f.pr != nil && f.pr.last != "" {
		return f.pr.last
	}
	return compareHint(f.repoURL, f.target, f.branch)
}

func passOnce(ctx context.Context, r *runner.Runner, review *reviewFlow, w io.Writer) error {
	res, err := r.Pass(ctx)
	id := r.Backend.ClusterID()
	if res != nil && res.AppliedRestored != "" {
		// Even when the pass then failed: it happened first.
		fmt.Fprintf(w, "%s: warning: %s was at %s, not at the newest seal: restored it (only this cluster's reconciler may push it)\n",
			id, layout.AppliedBranch(id), res.AppliedRestored)
	}
	if err != nil {
		return err
	}
	if review != nil && res.Commit != "" {
		// --review-scope applied: the handshake part went to the target
		// branch without review.
		fmt.Fprintf(w, "%s: pushed %d handshake changes to %s without review (--review-scope applied): %s (%s)\n", id, len(res.CommitFiles), review.target, strings.Join(res.Steps, "; "), res.Commit[:12])
		for _, f := range res.CommitFiles {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	switch {
	case res.Proposed != "":
		fmt.Fprintf(w, "%s: proposed %d changes on branch %s; compare: %s\n", id, len(res.Files), res.PushBranch, review.compare())
		fmt.Fprintf(w, "  %s (%s)\n", strings.Join(res.Steps, "; "), res.Proposed[:12])
		for _, f := range res.Files {
			fmt.Fprintf(w, "  %s\n", f)
		}
	case res.Withdrawn:
		fmt.Fprintf(w, "%s: up to date; deleted branch %s: nothing left to propose\n", id, res.PushBranch)
	case res.Commit == "":
		fmt.Fprintf(w, "%s: up to date\n", id)
	case review != nil:
		// Printed above; nothing is left to propose.
		fmt.Fprintf(w, "%s: nothing to propose on branch %s\n", id, res.PushBranch)
	default:
		fmt.Fprintf(w, "%s: %s (%s, %d push attempt(s))\n", id, strings.Join(res.Steps, "; "), res.Commit[:12], res.Attempts)
		for _, f := range res.Files {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, p := range res.Output.Status.Peerings {
		msg := ""
		for _, c := range p.Conditions {
			if c.Type == "Ready" {
				msg = c.Message
			}
		}
		fmt.Fprintf(w, "  %s → %s: %s %s\n", p.Consumer, p.Provider, p.Step, msg)
	}
	for provider, where := range res.Kubeconfigs {
		fmt.Fprintf(w, "  kubeconfig for %s: %s\n", provider, where)
	}
	for _, provider := range res.AwaitingMerge {
		fmt.Fprintf(w, "  kubeconfig for %s: once the proposal on %s is merged\n", provider, res.PushBranch)
	}
	for _, st := range res.Stuck {
		fmt.Fprintf(w, "  warning: %s: %s\n", st.Object, st.Message)
	}
	if res.KeyRollover != "" {
		fmt.Fprintf(w, "  %s\n", res.KeyRollover)
	}
	if res.Source != "" {
		fmt.Fprintf(w, "  %s pinned to seal %s\n", res.Source, res.Applied)
	}
	if review != nil && review.pr != nil {
		return review.pr.ensure(ctx, id, res, w)
	}
	return nil
}

// localRefs is the refs directory of a repository on this machine (bare or
// not) that --watch observes: a push renames a file into it.
func localRefs(repoURL string) (string, error) {
	dir := strings.TrimPrefix(repoURL, "file://")
	if strings.Contains(dir, "://") || strings.Contains(dir, "@") && strings.Contains(dir, ":") {
		return "", fmt.Errorf("%s is not a repository on this machine's filesystem", repoURL)
	}
	for _, refs := range []string{filepath.Join(dir, "refs"), filepath.Join(dir, ".git", "refs")} {
		if fi, err := os.Stat(refs); err == nil && fi.IsDir() {
			return refs, nil
		}
	}
	return "", fmt.Errorf("%s: no refs directory: not a Git repository", dir)
}
