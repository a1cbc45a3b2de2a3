// Package peerstatus summarises the peerings of a repo from both sides'
// status.yaml: how far each handshake has come and what each side reports.
package peerstatus

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/schema"
)

// Peering is one peering as both clusters see it: an item of status's
// PeeringStatusList (-o json|yaml), a documented format. Fields are only
// ever added to it.
type Peering struct {
	Consumer string `json:"consumer"`
	Provider string `json:"provider"`
	// Step is the furthest step either side reports; Revoking for a
	// peering removed from the spec whose provider has not withdrawn it yet.
	Step layout.Step `json:"step"`
	// Ready is true when the peering is Peered and every one of its slices
	// is Accepted: what wait --for=condition=Ready and status --exit-code
	// wait for. A slice Denied or still Pending keeps it false.
	Ready bool `json:"ready"`
	// Peered is true when the handshake is complete: both sides report
	// Ready=True and the step is Ready, whatever the slices.
	Peered bool `json:"peered"`
	// State is the peering's state in kstatus's words: Ready, Stalled (a
	// side reports Stalled=True, or a slice is Denied: a human must act)
	// or Reconciling.
	State      State       `json:"state"`
	Conditions []Condition `json:"conditions"`
	// Slices are the peering's ResourceSlices, as the consumer reports them
	// (the provider's view until the consumer has one).
	Slices []layout.SliceStatus `json:"slices,omitempty"`
	// RevokingSince is when the provider drained the Tenant of a peering
	// removed from the spec (Step Revoking), as its signed status says.
	RevokingSince *metav1.Time `json:"revokingSince,omitempty"`
	// WithdrawnAfter is when the provider withdraws a Revoking peering's
	// artifacts: RevokingSince plus the provider's drainPeriod under the
	// spec read; its first pass after that time withdraws them.
	WithdrawnAfter *metav1.Time `json:"withdrawnAfter,omitempty"`
	// Message is the row's message: for a peering not Ready, Next's message
	// then what the sides report; else the Ready message of a side.
	Message string `json:"message,omitempty"`
	// Next says who must act for the peering to progress, and how; nil
	// when it is Ready.
	Next *Next `json:"next,omitempty"`
}

// Condition is one side's condition on a peering.
type Condition struct {
	Cluster string `json:"cluster"`
	metav1.Condition
}

// Options are what Read knows besides the tree and the spec.
type Options struct {
	// SpecFile is the spec's file name (peering.cue), for messages that
	// ask to edit it; empty: "the spec".
	SpecFile string
	// Proposals are branches not merged into the branch read (review
	// branches of reconcilers with --push-branch, a pull request's head
	// with a cluster.yaml): a peering waiting for one of them says to
	// merge it.
	Proposals []Proposal
}

// Proposal is an unmerged branch as Read looks at it.
type Proposal struct {
	// Branch is the branch's name, as a user merges it (gitpeer/beta).
	Branch string
	// Tree is the tree of its tip.
	Tree fs.FS
}

// Collect is Read without options.
func Collect(tree fs.FS, spec *schema.Spec) ([]Peering, error) {
	return Read(tree, spec, Options{})
}

// Read reads every declared cluster's status.yaml and returns the spec's
// peerings in spec order, then the peerings the spec no longer holds that
// a provider still reports Revoking (withdrawn after WithdrawnAfter). Only a
// status.yaml its cluster signed (manifest verified with the key in its
// cluster.yaml) counts: anyone who can push could write one saying Ready,
// and an unsigned one reads as absent, which the peering's Next names. A
// malformed signed status.yaml is an error naming it.
func Read(tree fs.FS, spec *schema.Spec, opts Options) ([]Peering, error) {
	main, err := readSnapshot(tree, spec)
	if err != nil {
		return nil, err
	}
	r := &reader{spec: spec, opts: opts, main: main}
	for _, pr := range opts.Proposals {
		// A proposal whose files do not parse proposes nothing status can
		// name; the branch read is what counts.
		if snap, err := readSnapshot(pr.Tree, spec); err == nil {
			r.proposals = append(r.proposals, proposalSnapshot{branch: pr.Branch, snapshot: snap})
		}
	}
	out := make([]Peering, 0, len(spec.Peerings))
	for _, p := range spec.Peerings {
		out = append(out, main.peering(p.Consumer, p.Provider))
	}
	out = append(out, main.revoking(spec)...)
	for i := range out {
		p := &out[i]
		if p.Step == layout.StepRevoking {
			r.deadline(p)
		}
		p.State = p.state()
		if !p.Ready {
			p.Next = r.next(p)
		}
		p.Message = p.message()
	}
	return out, nil
}

// snapshot is what one tree says: each declared cluster's signed status,
// whether it published its cluster.yaml, and why a status.yaml present in
// the tree was not read.
type snapshot struct {
	statuses  map[string]*layout.ClusterStatus
	published map[string]bool
	// ignored is, per cluster whose status.yaml is in the tree but not in
	// the signed view, the reason and detail (dirmanifest.Ignored).
	ignored map[string]dirmanifest.Ignored
}

func readSnapshot(tree fs.FS, spec *schema.Spec) (*snapshot, error) {
	s := &snapshot{statuses: map[string]*layout.ClusterStatus{}, published: map[string]bool{}, ignored: map[string]dirmanifest.Ignored{}}
	keys := dirmanifest.Keys{}
	for _, c := range spec.Clusters {
		if ci, err := layout.ReadClusterInfo(tree, c.ID); err == nil {
			s.published[c.ID] = true
			if key, err := ci.Key(); err == nil {
				keys[c.ID] = key
			}
		}
	}
	signed := dirmanifest.NewView(tree, keys)
	for _, c := range spec.Clusters {
		st, err := layout.ReadStatus(signed, c.ID)
		if err != nil {
			return nil, err
		}
		s.statuses[c.ID] = st
		file := layout.ClusterPath(c.ID, layout.StatusFile)
		if _, err := fs.Stat(tree, file); err != nil {
			continue
		}
		for _, ig := range signed.Audit(c.ID, layout.ClusterPath(c.ID)) {
			if ig.Path == file {
				s.ignored[c.ID] = ig
			}
		}
	}
	return s, nil
}

// peering is the (consumer, provider) peering as the snapshot's statuses
// tell it, without its State, Next and Message.
func (s *snapshot) peering(consumer, provider string) Peering {
	pr := Peering{Consumer: consumer, Provider: provider, Step: layout.StepPending, Conditions: []Condition{}}
	readySides := 0
	for _, side := range []string{provider, consumer} {
		st := s.statuses[side]
		if st == nil {
			continue
		}
		ps := st.Find(consumer, provider)
		if ps == nil {
			continue
		}
		if layout.StepOrder(ps.Step) > layout.StepOrder(pr.Step) {
			pr.Step = ps.Step
		}
		if len(ps.Slices) > 0 && (side == consumer || pr.Slices == nil) {
			pr.Slices = ps.Slices
		}
		sideReady := false
		for _, c := range ps.Conditions {
			pr.Conditions = append(pr.Conditions, Condition{Cluster: side, Condition: c})
			if c.Type == meta.ReadyCondition && c.Status == metav1.ConditionTrue {
				sideReady = true // a side counts once, however often it says so
			}
		}
		if sideReady {
			readySides++
		}
	}
	pr.Peered = readySides == 2 && pr.Step == layout.StepReady
	pr.Ready = pr.Peered && pr.slicesGranted()
	return pr
}

// revoking are the peerings the spec lacks that a declared provider still
// reports Revoking in its signed status, in spec order of the providers:
// a revocation stays visible until its artifacts are withdrawn.
func (s *snapshot) revoking(spec *schema.Spec) []Peering {
	var out []Peering
	for _, c := range spec.Clusters {
		for _, ps := range s.statuses[c.ID].Peerings {
			if ps.Step != layout.StepRevoking || ps.Provider != c.ID || spec.HasPeering(ps.Consumer, ps.Provider) {
				continue
			}
			pr := Peering{Consumer: ps.Consumer, Provider: ps.Provider, Step: layout.StepRevoking, Conditions: []Condition{}, RevokingSince: ps.RevokingSince}
			for _, cond := range ps.Conditions {
				pr.Conditions = append(pr.Conditions, Condition{Cluster: c.ID, Condition: cond})
			}
			out = append(out, pr)
		}
	}
	return out
}

// slicesGranted is true when every slice is Accepted.
func (p Peering) slicesGranted() bool {
	for _, s := range p.Slices {
		if sliceState(s) != "Accepted" {
			return false
		}
	}
	return true
}

// State is a peering's or a cluster's state, as kstatus names them.
type State string

// States, from best to worst.
const (
	StateReady       State = "Ready"
	StateReconciling State = "Reconciling"
	StateStalled     State = "Stalled"
)

// rank orders states from best to worst.
func (s State) rank() int {
	switch s {
	case StateReady:
		return 0
	case StateReconciling:
		return 1
	}
	return 2
}

func (p Peering) state() State {
	for _, c := range p.Conditions {
		if c.Type == meta.StalledCondition && c.Status == metav1.ConditionTrue {
			return StateStalled
		}
	}
	if len(p.DeniedSlices()) > 0 {
		return StateStalled // the spec asks for what the provider refuses: a human must act
	}
	if p.Ready {
		return StateReady
	}
	return StateReconciling
}

// Cluster is one cluster of the spec as status shows it.
type Cluster struct {
	ID string `json:"id"`
	// Published is true when the cluster's cluster.yaml is in the repo
	// and well-formed: gitpeer init ran and its pull request merged.
	Published bool `json:"published"`
	// State is the worst state of its peerings; empty when it has none.
	State State `json:"state,omitempty"`
}

// Clusters are the spec's clusters, in spec order, each with the worst
// state of its peerings among peerings (as Collect returns them).
func Clusters(tree fs.FS, spec *schema.Spec, peerings []Peering) []Cluster {
	out := make([]Cluster, 0, len(spec.Clusters))
	for _, c := range spec.Clusters {
		_, err := layout.ReadClusterInfo(tree, c.ID)
		cl := Cluster{ID: c.ID, Published: err == nil}
		for _, p := range peerings {
			if p.Consumer != c.ID && p.Provider != c.ID {
				continue
			}
			if cl.State == "" || p.State.rank() > cl.State.rank() {
				cl.State = p.State
			}
		}
		out = append(out, cl)
	}
	return out
}

// DeniedSlices are the peering's slices a provider denied.
func (p Peering) DeniedSlices() []layout.SliceStatus {
	var out []layout.SliceStatus
	for _, s := range p.Slices {
		if sliceState(s) == "Denied" {
			out = append(out, s)
		}
	}
	return out
}

func sliceState(s layout.SliceStatus) string {
	switch {
	case s.Authentication == "Denied" || s.Resources == "Denied":
		return "Denied"
	case s.Authentication == "Pending" || s.Resources == "Pending":
		return "Pending"
	}
	return "Accepted"
}

// SliceSummary is "name:Accepted name:Denied(reason)" for a table cell.
func (p Peering) SliceSummary() string {
	parts := make([]string, 0, len(p.Slices))
	for _, s := range p.Slices {
		parts = append(parts, s.Name+":"+sliceState(s))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// Unexpected are the conditions, True, in which a side reports files of
// its inbox folder of the other that are not artifacts and that it ignores
// (layout.ConditionUnexpectedArtifacts), in the order of Conditions.
func (p Peering) Unexpected() []Condition {
	var out []Condition
	for _, c := range p.Conditions {
		if c.Type == layout.ConditionUnexpectedArtifacts && c.Status == metav1.ConditionTrue {
			out = append(out, c)
		}
	}
	return out
}

// Summary is the one-line message of a peering: the Ready message of the side
// that has to act next, or of whichever side reports one.
func (p Peering) Summary() string {
	for _, c := range p.Conditions {
		if c.Type == meta.StalledCondition && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("%s: %s", c.Cluster, c.Message)
		}
	}
	var last string
	for _, c := range p.Conditions {
		if c.Type == meta.ReadyCondition {
			last = fmt.Sprintf("%s: %s", c.Cluster, c.Message)
			if c.Status != metav1.ConditionTrue {
				return last
			}
		}
	}
	return last
}
