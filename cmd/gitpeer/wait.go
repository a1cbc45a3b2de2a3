package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/peerstatus"
)

// waitClock is the clock wait polls with; tests replace it with a fake
// (k8s.io/utils/clock/testing) and step it, sleeping no real time.
var waitClock clock.Clock = clock.RealClock{}

// errTimedOut is wait's exit 1: it has printed what is not Ready and why.
var errTimedOut = &exitError{code: 1, err: errors.New("timed out"), silent: true}

func newWaitCmd() *cobra.Command {
	var (
		forCond, branch, gitCredentials, ref string
		timeout, interval                    time.Duration
		sel                                  peeringSelector
	)
	cmd := &cobra.Command{
		Use:   "wait [DIR | URL] --for=condition=Ready [--cluster ID] [--peering CONSUMER/PROVIDER] [--timeout D]",
		Short: "Wait until the selected peerings are Ready, as kubectl wait does",
		Long: `wait reads the repo as gitpeer status does, every --interval, until every
peering selected is Ready: both clusters report Ready=True in their signed
status.yaml and the handshake's step is Ready. It is what a script or a CI
job runs after merging a peering, before using it:

  gitpeer wait https://git.example/peering.git --for=condition=Ready --peering alpha/beta --timeout 10m

--cluster ID selects the peerings ID takes part in (as consumer or
provider), --peering CONSUMER/PROVIDER that one, and both together the
peerings that match both; without them, every peering of the spec. A
cluster or a peering that the spec lacks at the first read is an error
(exit 2): wait for a peering once its pull request is merged.

A URL (or a local bare repository) is cloned anew, read-only, at each poll
(--branch, default main; --git-credentials DIR as reconcile takes it), so
the reconcilers' pushes are seen as they land. A checkout is read again at
each poll at --ref (default HEAD): that of a running reconciler moves with
each of its passes; a clone of yours moves only when you pull, so give the
URL instead.

--for takes condition=Ready (or condition=Ready=True), the one condition a
peering has as a whole; it is the default. A Stalled peering (one that a
human must act on, e.g. a refused Tenant) is waited for as any other, and
the timeout names it with its reason.

Exit status: 0 when the condition holds for every peering selected, saying
"peering CONSUMER/PROVIDER condition met" for each; 1 when --timeout
(default 30s, as kubectl wait; 0 reads once) passes first, naming on stderr
each peering that is not Ready, its step and state and the message of the
side that has to act (or the last error reading the repo); 2 when the
first read fails (no such repository, branch or spec, a bad flag).`,
		Args: func(cmd *cobra.Command, args []string) error { return withCode(2, cobra.MaximumNArgs(1)(cmd, args)) },
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkCondition(forCond); err != nil {
				return withCode(2, err)
			}
			if timeout < 0 {
				return withCode(2, fmt.Errorf("--timeout %s is negative", timeout))
			}
			if interval <= 0 {
				return withCode(2, fmt.Errorf("--interval %s is not positive", interval))
			}
			target := dirArg(args)
			// read reads the repo once: the selected peerings, or an
			// error; the spec is read anew each time, as status would.
			read := func() ([]peerstatus.Peering, error) {
				src, err := openSource(cmd.Context(), target, branch, gitCredentials, ref, cmd.ErrOrStderr())
				if err != nil {
					return nil, err
				}
				defer src.Close()
				spec, _, _, err := loadSpec(cmd, src)
				if err != nil {
					return nil, err
				}
				if err := sel.check(spec); err != nil {
					return nil, err
				}
				all, err := peerstatus.Collect(src.Tree, spec)
				if err != nil {
					return nil, err
				}
				return sel.peerings(all), nil
			}
			peerings, err := read()
			if err != nil {
				return withCode(2, err)
			}
			clk := waitClock
			deadline := clk.Now().Add(timeout)
			var lastErr error
			for {
				if lastErr == nil && allReady(peerings) {
					for _, p := range peerings {
						fmt.Fprintf(cmd.OutOrStdout(), "peering %s/%s condition met\n", p.Consumer, p.Provider)
					}
					return nil
				}
				left := deadline.Sub(clk.Now())
				if left <= 0 {
					printNotReady(cmd, timeout, peerings, lastErr)
					return errTimedOut
				}
				t := clk.NewTimer(min(interval, left))
				select {
				case <-cmd.Context().Done():
					t.Stop()
					return cmd.Context().Err()
				case <-t.C():
				}
				// A failed read (the host down for a moment, a
				// spec being edited) is retried until the
				// timeout, which names it; the peerings last read
				// are kept for the message. What a read prints (an
				// invalid spec's problems, a note on the worktree)
				// is said once, at the first read, or with the
				// timeout, not at every poll.
				var said bytes.Buffer
				out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
				cmd.SetOut(&said)
				cmd.SetErr(&said)
				ps, err := read()
				cmd.SetOut(out)
				cmd.SetErr(errw)
				switch {
				case errors.Is(err, errProblems):
					lastErr = fmt.Errorf("the spec is invalid:\n%s", strings.TrimSuffix(said.String(), "\n"))
				case err != nil:
					lastErr = err
				default:
					lastErr, peerings = nil, ps
				}
			}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(2, err) })
	f := cmd.Flags()
	f.StringVar(&forCond, "for", "condition=Ready", "the condition to wait for: condition=Ready")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait before giving up (exit 1); 0 reads once")
	f.DurationVar(&interval, "interval", 5*time.Second, "time between reads of the repo")
	f.StringVar(&sel.cluster, "cluster", "", "wait for the peerings this cluster ID takes part in")
	f.StringVar(&sel.peering, "peering", "", "wait for this peering, CONSUMER/PROVIDER")
	f.StringVar(&branch, "branch", "main", "branch to read, when the repo is cloned from a URL")
	f.StringVar(&ref, "ref", "", refFlagUsage+"; for a checkout (a URL is read at --branch)")
	f.StringVar(&gitCredentials, "git-credentials", "", "directory of Git credentials named as Flux's Git Secret keys, for a URL (see reconcile)")
	addSpecLimitFlags(cmd)
	return cmd
}

// checkCondition accepts kubectl wait's spelling of the Ready condition:
// condition=Ready, optionally =True; the condition's name is matched
// without regard to case, as kubectl does.
func checkCondition(s string) error {
	cond, ok := strings.CutPrefix(s, "condition=")
	name, value, hasValue := strings.Cut(cond, "=")
	if !ok || !strings.EqualFold(name, "Ready") || (hasValue && !strings.EqualFold(value, "True")) {
		return fmt.Errorf("--for: %q is not condition=Ready (the one condition of a peering as a whole: both sides Ready)", s)
	}
	return nil
}

func allReady(ps []peerstatus.Peering) bool {
	for _, p := range ps {
		if !p.Ready {
			return false
		}
	}
	return true
}

// printNotReady says on stderr, after a timeout, which peerings are not
// Ready and why, one line each, and the last read's error if it failed.
func printNotReady(cmd *cobra.Command, timeout time.Duration, ps []peerstatus.Peering, lastErr error) {
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "gitpeer: timed out after %s waiting for condition Ready\n", timeout)
	for _, p := range ps {
		if p.Ready {
			continue
		}
		why := p.Summary()
		if why == "" {
			why = "no cluster has reported it yet (their reconcilers have not run, or their commits are not on what was read)"
		}
		step := p.Step
		if step == "" {
			step = layout.StepPending
		}
		fmt.Fprintf(w, "peering %s/%s is not Ready: step %s, %s: %s\n", p.Consumer, p.Provider, step, p.State, why)
	}
	if lastErr != nil {
		fmt.Fprintf(w, "the last read of the repo failed: %v\n", lastErr)
	}
}
