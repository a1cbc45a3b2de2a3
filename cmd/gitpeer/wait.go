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

// waitOptions are wait's flags: where to read the repo, which peerings to
// wait for, and for how long.
type waitOptions struct {
	source            sourceFlags
	sel               peeringSelector
	forCond           string
	timeout, interval time.Duration
}

func newWaitCmd() *cobra.Command {
	o := &waitOptions{}
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
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(2, err) })
	f := cmd.Flags()
	f.StringVar(&o.forCond, "for", "condition=Ready", "the condition to wait for: condition=Ready")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait before giving up (exit 1); 0 reads once")
	f.DurationVar(&o.interval, "interval", 5*time.Second, "time between reads of the repo")
	o.sel.register(f, "wait for")
	o.source.register(f)
	addSpecLimitFlags(cmd)
	return cmd
}

// run is wait's body: nil once every peering selected is Ready,
// errTimedOut (exit 1) when --timeout passes first, an error exiting 2 when
// the flags or the first read are wrong.
func (o *waitOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkCondition(o.forCond); err != nil {
		return withCode(2, err)
	}
	if o.timeout < 0 {
		return withCode(2, fmt.Errorf("--timeout %s is negative", o.timeout))
	}
	if o.interval <= 0 {
		return withCode(2, fmt.Errorf("--interval %s is not positive", o.interval))
	}
	target := dirArg(args)
	peerings, err := o.read(cmd, target)
	if err != nil {
		return withCode(2, err)
	}
	return o.poll(cmd, target, peerings)
}

// read reads the repo once: the selected peerings, or an error; the spec
// is read anew each time, as status would.
func (o *waitOptions) read(cmd *cobra.Command, target string) ([]peerstatus.Peering, error) {
	src, err := o.source.open(cmd, target)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	spec, _, _, err := loadSpec(cmd, src)
	if err != nil {
		return nil, err
	}
	if err := o.sel.check(spec); err != nil {
		return nil, err
	}
	all, err := peerstatus.Collect(src.Tree, spec)
	if err != nil {
		return nil, err
	}
	return o.sel.peerings(all), nil
}

// poll reads target every --interval until peerings, the last read, are
// all Ready or --timeout passes, on waitClock.
func (o *waitOptions) poll(cmd *cobra.Command, target string, peerings []peerstatus.Peering) error {
	clk := waitClock
	deadline := clk.Now().Add(o.timeout)
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
			printNotReady(cmd, o.timeout, peerings, lastErr)
			return errTimedOut
		}
		t := clk.NewTimer(min(o.interval, left))
		select {
		case <-cmd.Context().Done():
			t.Stop()
			return cmd.Context().Err()
		case <-t.C():
		}
		// A failed read (the host down for a moment, a spec being
		// edited) is retried until the timeout, which names it; the
		// peerings last read are kept for the message. What a read
		// prints (an invalid spec's problems, a note on the worktree) is
		// said once, at the first read, or with the timeout, not at
		// every poll.
		var said bytes.Buffer
		out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
		cmd.SetOut(&said)
		cmd.SetErr(&said)
		ps, err := o.read(cmd, target)
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
