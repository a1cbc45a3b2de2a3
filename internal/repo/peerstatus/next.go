package peerstatus

import (
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// Next is who must act for a peering that is not Ready to progress, and
// what: the first of, in this order, a revocation's withdrawal, a cluster
// that has not published its cluster.yaml, a status.yaml its cluster did
// not sign, an unmerged proposal that holds the next step, a side's stall,
// a denied slice, and the reconciler whose turn it is in the handshake.
type Next struct {
	// Cluster is whose reconciler or admins must act; empty when it is the
	// repo's writers (editing the spec, merging a branch nobody signed).
	Cluster string `json:"cluster,omitempty"`
	// Action is one of the Action constants.
	Action string `json:"action"`
	// Branch is the branch to merge (MergeProposal).
	Branch string `json:"branch,omitempty"`
	// File is the repo file concerned: the spec to edit (EditSpec), the
	// cluster.yaml to publish (PublishCluster), the status.yaml not signed
	// (RunReconciler).
	File string `json:"file,omitempty"`
	// Message says it in a sentence: "run beta's reconciler: it sends
	// alpha a nonce".
	Message string `json:"message"`
}

// Actions of Next.
const (
	// ActionRunReconciler: the cluster's reconciler takes the next step at
	// its next pass; run it (reconcile --once) if no daemon does.
	ActionRunReconciler = "RunReconciler"
	// ActionMergeProposal: Branch, not merged into the branch read, holds
	// the next step.
	ActionMergeProposal = "MergeProposal"
	// ActionPublishCluster: the cluster has no valid cluster.yaml on the
	// branch read: gitpeer init, then merge it.
	ActionPublishCluster = "PublishCluster"
	// ActionIntervene: a side is Stalled; its message says what its admins
	// must do.
	ActionIntervene = "Intervene"
	// ActionEditSpec: a slice the spec asks for is denied by its provider:
	// the spec must ask for less, or the provider's class allow more.
	ActionEditSpec = "EditSpec"
)

// reader is Read's state: the branch read and the proposals beside it.
type reader struct {
	spec      *schema.Spec
	opts      Options
	main      *snapshot
	proposals []proposalSnapshot
}

type proposalSnapshot struct {
	branch string
	*snapshot
}

// deadline sets a Revoking peering's WithdrawnAfter: the provider's pass
// withdraws its artifacts once its drain period has passed since it drained
// the Tenant (reconcile's drain), under the spec read.
func (r *reader) deadline(p *Peering) {
	if p.RevokingSince == nil {
		return
	}
	d, err := reconcile.DrainPeriod(r.spec, p.Provider)
	if err != nil {
		return // the provider's pass fails on it too; its status says so
	}
	p.WithdrawnAfter = &metav1.Time{Time: p.RevokingSince.Add(d).UTC()}
}

func (r *reader) specFile() string {
	if r.opts.SpecFile == "" {
		return "the spec"
	}
	return r.opts.SpecFile
}

// next is who must act on p, not Ready, and what (see Next).
func (r *reader) next(p *Peering) *Next {
	c, pv := p.Consumer, p.Provider
	if p.Step == layout.StepRevoking {
		n := &Next{Cluster: pv, Action: ActionRunReconciler}
		if p.WithdrawnAfter != nil {
			n.Message = fmt.Sprintf("removed from the spec: %s's reconciler withdraws it at its first pass after %s", pv, p.WithdrawnAfter.UTC().Format(time.RFC3339))
		} else {
			n.Message = fmt.Sprintf("removed from the spec: %s's reconciler withdraws it once its drain period has passed", pv)
		}
		return n
	}
	for _, side := range []string{pv, c} {
		if r.main.published[side] {
			continue
		}
		file := layout.ClusterPath(side, layout.ClusterFile)
		for _, pr := range r.proposals {
			if pr.published[side] {
				return &Next{Cluster: side, Action: ActionMergeProposal, Branch: pr.branch, File: file,
					Message: fmt.Sprintf("merge branch %s: it publishes %s", pr.branch, file)}
			}
		}
		return &Next{Cluster: side, Action: ActionPublishCluster, File: file,
			Message: fmt.Sprintf("publish %s: %s is not on the branch read (run gitpeer init --cluster %s --repo <checkout>, then commit and merge clusters/%s/)", side, file, side, side)}
	}
	for _, side := range []string{pv, c} {
		if ig, ok := r.main.ignored[side]; ok {
			return &Next{Cluster: side, Action: ActionRunReconciler, File: ig.Path, Message: ignoredMessage(side, ig)}
		}
	}
	for _, pr := range r.proposals {
		for _, side := range []string{pv, c} {
			if theirs := pr.statuses[side].Find(c, pv); theirs != nil && differs(theirs, r.main.statuses[side].Find(c, pv)) {
				return &Next{Cluster: side, Action: ActionMergeProposal, Branch: pr.branch,
					Message: fmt.Sprintf("merge branch %s: %s's proposal takes this peering to %s there", pr.branch, side, theirs.Step)}
			}
		}
	}
	for _, cond := range p.Conditions {
		if cond.Type == meta.StalledCondition && cond.Status == metav1.ConditionTrue {
			return &Next{Cluster: cond.Cluster, Action: ActionIntervene,
				Message: fmt.Sprintf("%s is stalled, a human must act: %s", cond.Cluster, cond.Message)}
		}
	}
	if denied := p.DeniedSlices(); len(denied) > 0 {
		var what []string
		for _, s := range denied {
			what = append(what, fmt.Sprintf("slice %s is denied by %s (%s)", s.Name, pv, sliceReason(s)))
		}
		return &Next{Action: ActionEditSpec, File: r.opts.SpecFile,
			Message: fmt.Sprintf("edit %s: %s; ask for less, remove the slice, or raise %s's class caps", r.specFile(), strings.Join(what, "; "), pv)}
	}
	run := func(side, what string) *Next {
		return &Next{Cluster: side, Action: ActionRunReconciler, Message: fmt.Sprintf("run %s's reconciler: it %s", side, what)}
	}
	switch p.Step {
	case layout.StepPending:
		if r.main.statuses[pv].Find(c, pv) == nil {
			return run(pv, fmt.Sprintf("sends %s a nonce (%s has not reported this peering on the branch read)", c, pv))
		}
		return run(pv, "sends "+c+" a nonce")
	case layout.StepNonceSent:
		return run(c, fmt.Sprintf("answers %s's nonce with its Tenant", pv))
	case layout.StepTenantSent:
		return run(pv, fmt.Sprintf("checks %s's Tenant and issues its Identity", c))
	case layout.StepIdentityIssued:
		return run(c, fmt.Sprintf("accepts %s's Identity", pv))
	}
	// Step Ready: a side not Ready yet, or slices still to decide.
	for _, side := range []string{pv, c} {
		if !sideReady(r.main.statuses[side].Find(c, pv)) {
			return run(side, "reports this peering Ready once it has checked its side")
		}
	}
	for _, s := range p.Slices {
		if sliceState(s) != "Pending" {
			continue
		}
		if theirs := r.main.statuses[pv].Find(c, pv); theirs != nil && providerDecided(theirs.Slices, s.Name) {
			return run(c, fmt.Sprintf("takes %s's decision on slice %s", pv, s.Name))
		}
		return run(pv, fmt.Sprintf("decides on slice %s", s.Name))
	}
	return run(pv, "reports this peering")
}

// ignoredMessage says why side's status.yaml was not read and what repairs
// it: the reconciler rewrites, at its next pass, every file of its own tree
// that it did not sign.
func ignoredMessage(side string, ig dirmanifest.Ignored) string {
	why := "it is not the file " + side + "'s reconciler signed (edited by hand?)"
	if ig.Reason != reasons.UnsignedChange {
		why = fmt.Sprintf("clusters/%s/manifest.yaml does not vouch for it (%s)", side, ig.Detail)
	}
	return fmt.Sprintf("run %s's reconciler: %s is not signed by %s (%s: %s), so status reads it as absent, as the reconcilers do; %s's next pass rewrites it",
		side, ig.Path, side, ig.Reason, why, side)
}

// differs reports whether a proposal's view of a peering from one side is
// another than the branch read's: another step, Ready condition or slice
// decision.
func differs(theirs, ours *layout.PeeringStatus) bool {
	if ours == nil {
		return true
	}
	if theirs.Step != ours.Step || sideReady(theirs) != sideReady(ours) || len(theirs.Slices) != len(ours.Slices) {
		return true
	}
	for i := range theirs.Slices {
		if sliceState(theirs.Slices[i]) != sliceState(ours.Slices[i]) {
			return true
		}
	}
	return false
}

func sideReady(ps *layout.PeeringStatus) bool {
	if ps == nil {
		return false
	}
	for _, c := range ps.Conditions {
		if c.Type == meta.ReadyCondition && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func providerDecided(slices []layout.SliceStatus, name string) bool {
	for _, s := range slices {
		if s.Name == name {
			return sliceState(s) != "Pending"
		}
	}
	return false
}

// message is the row's message: Next's, then what the sides report; the
// Summary alone when Ready.
func (p Peering) message() string {
	sum := p.Summary()
	if p.Next == nil {
		return sum
	}
	// A stall's message is Next's; once both sides are Ready, what they
	// report says nothing of what is left (a slice).
	if sum == "" || p.Next.Action == ActionIntervene || p.Peered {
		return p.Next.Message
	}
	return p.Next.Message + "; " + sum
}
