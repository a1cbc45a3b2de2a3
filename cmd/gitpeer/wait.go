package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
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
	deleting          map[string]bool // --for=delete: the peerings selected at the first read
	forCond           string
	cond              waitCondition // forCond, parsed
	timeout, interval time.Duration
}

func newWaitCmd() *cobra.Command {
	o := &waitOptions{}
	cmd := &cobra.Command{
		Use:   "wait [DIR | URL] --for=condition=Ready [--cluster ID] [--peering CONSUMER/PROVIDER] [--timeout D]",
		Short: "Wait until the selected peerings are Ready (or deleted), as kubectl wait does",
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

--for takes, as kubectl wait does:
  condition=Ready (the default; =True may follow): the handshake is
    complete on both sides and every slice of the peering is Accepted: a
    slice Denied or still Pending keeps a peering from Ready;
  condition=Peered: the handshake alone, whatever the slices;
  delete: the peerings are gone: removed from the spec and withdrawn by
    their provider (a revocation shows as Revoking until then).
A Stalled peering (one that a human must act on, e.g. a refused Tenant, a
denied slice) is waited for as any other, and the timeout names it with
its reason. A peering being revoked is never Ready: wait for it
--for=delete; without --peering, conditions wait for the spec's peerings.

Exit status: 0 when the condition holds for every peering selected, saying
"peering CONSUMER/PROVIDER condition met" (or "deleted") for each; 1 when
--timeout (default 30s, as kubectl wait; 0 reads once) passes first,
naming on stderr each peering that is not there yet, its step and state
and who must act next, and what: merge a branch, run a cluster's
reconciler, publish a cluster, edit the spec (or the last error reading
the repo); 2 when the first read fails (no such repository, branch or
spec, a bad flag, a condition a revoked peering never reaches).`,
		Args: func(cmd *cobra.Command, args []string) error { return withCode(2, cobra.MaximumNArgs(1)(cmd, args)) },
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(2, err) })
	f := cmd.Flags()
	f.StringVar(&o.forCond, "for", "condition=Ready", "what to wait for: condition=Ready, condition=Peered or delete")
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
	cond, err := parseCondition(o.forCond)
	if err != nil {
		return withCode(2, err)
	}
	o.cond = cond
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
	spec, specPath, _, err := loadSpec(cmd, src)
	if err != nil {
		return nil, err
	}
	all, err := readPeerings(cmd.Context(), src, spec, filepath.Base(specPath), target, o.source.gitCredentials)
	if err != nil {
		return nil, err
	}
	if o.cond == waitDelete {
		// A peering deleted is one no longer read: the selector names
		// what the spec or a revocation held at the first read.
		if o.deleting == nil {
			// As kubectl wait --for=delete, a peering already gone is
			// deleted: it is not an error that it is not read.
			if err := o.sel.check(spec, all); err != nil && !errors.Is(err, errUnknownPeering) {
				return nil, err
			}
			o.deleting = map[string]bool{}
			if o.sel.peering != "" {
				o.deleting[o.sel.peering] = true
			}
			for _, p := range o.sel.peerings(all) {
				o.deleting[p.Consumer+"/"+p.Provider] = true
			}
		}
		var left []peerstatus.Peering
		for _, p := range all {
			if o.deleting[p.Consumer+"/"+p.Provider] {
				left = append(left, p)
			}
		}
		return left, nil
	}
	if err := o.sel.check(spec, all); err != nil {
		return nil, err
	}
	var out []peerstatus.Peering
	for _, p := range o.sel.peerings(all) {
		if !spec.HasPeering(p.Consumer, p.Provider) {
			if o.sel.peering != "" {
				return nil, fmt.Errorf("--peering %s is being revoked (removed from the spec; %s): it never becomes %s; wait --for=delete waits until it is withdrawn", o.sel.peering, p.Message, o.cond)
			}
			continue // a revocation: not what a condition waits for
		}
		out = append(out, p)
	}
	return out, nil
}

// poll reads target every --interval until peerings, the last read, are
// all Ready or --timeout passes, on waitClock.
func (o *waitOptions) poll(cmd *cobra.Command, target string, peerings []peerstatus.Peering) error {
	clk := waitClock
	deadline := clk.Now().Add(o.timeout)
	var lastErr error
	for {
		if lastErr == nil && o.met(peerings) {
			if o.cond == waitDelete {
				for _, name := range deletedNames(o.deleting) {
					fmt.Fprintf(cmd.OutOrStdout(), "peering %s deleted\n", name)
				}
				return nil
			}
			for _, p := range peerings {
				fmt.Fprintf(cmd.OutOrStdout(), "peering %s/%s condition met\n", p.Consumer, p.Provider)
			}
			return nil
		}
		left := deadline.Sub(clk.Now())
		if left <= 0 {
			o.printNotMet(cmd, peerings, lastErr)
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

// waitCondition is what wait waits for (--for).
type waitCondition string

// The values of --for, as kubectl wait spells them.
const (
	waitReady  waitCondition = "Ready"  // condition=Ready: Peered and every slice Accepted
	waitPeered waitCondition = "Peered" // condition=Peered: the handshake alone
	waitDelete waitCondition = "delete" // delete: withdrawn and out of the spec
)

// parseCondition reads --for in kubectl wait's spelling: condition=NAME,
// optionally =True, NAME matched without regard to case as kubectl does,
// or delete.
func parseCondition(s string) (waitCondition, error) {
	if s == "delete" {
		return waitDelete, nil
	}
	cond, ok := strings.CutPrefix(s, "condition=")
	name, value, hasValue := strings.Cut(cond, "=")
	if ok && (!hasValue || strings.EqualFold(value, "True")) {
		for _, c := range []waitCondition{waitReady, waitPeered} {
			if strings.EqualFold(name, string(c)) {
				return c, nil
			}
		}
	}
	return "", fmt.Errorf("--for: %q is not condition=Ready (the handshake done and every slice Accepted), condition=Peered (the handshake alone) or delete (withdrawn and out of the spec)", s)
}

// met reports whether the condition holds for ps, the selected peerings
// last read (for delete, those still there).
func (o *waitOptions) met(ps []peerstatus.Peering) bool {
	switch o.cond {
	case waitDelete:
		return len(ps) == 0
	case waitPeered:
		for _, p := range ps {
			if !p.Peered {
				return false
			}
		}
		return true
	}
	return allReady(ps)
}

func allReady(ps []peerstatus.Peering) bool {
	for _, p := range ps {
		if !p.Ready {
			return false
		}
	}
	return true
}

func deletedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// printNotMet says on stderr, after a timeout, which peerings do not meet
// the condition and who must act, one line each, and the last read's error
// if it failed.
func (o *waitOptions) printNotMet(cmd *cobra.Command, ps []peerstatus.Peering, lastErr error) {
	w := cmd.ErrOrStderr()
	what := "condition " + string(o.cond)
	if o.cond == waitDelete {
		what = "deletion"
	}
	fmt.Fprintf(w, "gitpeer: timed out after %s waiting for %s\n", o.timeout, what)
	for _, p := range ps {
		switch {
		case o.cond == waitDelete && p.Step != layout.StepRevoking:
			fmt.Fprintf(w, "peering %s/%s is not deleted: the spec still holds it (step %s)\n", p.Consumer, p.Provider, p.Step)
			continue
		case o.cond == waitDelete:
		case o.cond == waitPeered && p.Peered, o.cond == waitReady && p.Ready:
			continue
		}
		step := p.Step
		if step == "" {
			step = layout.StepPending
		}
		state := "is not " + string(o.cond)
		if o.cond == waitDelete {
			state = "is not withdrawn yet"
		}
		why := p.Message
		if o.cond == waitPeered && p.Peered {
			why = p.Summary()
		}
		fmt.Fprintf(w, "peering %s/%s %s: step %s, %s: %s\n", p.Consumer, p.Provider, state, step, p.State, why)
	}
	if lastErr != nil {
		fmt.Fprintf(w, "the last read of the repo failed: %v\n", lastErr)
	}
}
