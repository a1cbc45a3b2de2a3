// Package peerstatus summarises the peerings of a repo from both sides'
// status.yaml: how far each handshake has come and what each side reports.
package peerstatus

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/manifest"
	"github.com/gitpeer/gitpeer/schema"
)

// Peering is one peering as both clusters see it.
type Peering struct {
	Consumer string `json:"consumer"`
	Provider string `json:"provider"`
	// Step is the furthest step either side reports.
	Step layout.Step `json:"step"`
	// Ready is true when both sides report Ready=True.
	Ready bool `json:"ready"`
	// State is the peering's state in kstatus's words: Ready, Stalled (a
	// side reports Stalled=True: a human must act) or Reconciling.
	State      State       `json:"state"`
	Conditions []Condition `json:"conditions"`
	// Slices are the peering's ResourceSlices, as the consumer reports them
	// (the provider's view until the consumer has one).
	Slices []layout.SliceStatus `json:"slices,omitempty"`
}

// Condition is one side's condition on a peering.
type Condition struct {
	Cluster string `json:"cluster"`
	metav1.Condition
}

// Collect reads every declared cluster's status.yaml and returns the spec's
// peerings in spec order. Only a status.yaml its cluster signed (manifest
// verified with the key in its cluster.yaml) counts: anyone who can push
// could write one saying Ready, and an unsigned one reads as absent. A
// malformed signed status.yaml is an error naming it.
func Collect(tree fs.FS, spec *schema.Spec) ([]Peering, error) {
	keys := manifest.Keys{}
	for _, c := range spec.Clusters {
		if ci, err := layout.ReadClusterInfo(tree, c.ID); err == nil {
			if key, err := ci.Key(); err == nil {
				keys[c.ID] = key
			}
		}
	}
	signed := manifest.NewView(tree, keys)
	statuses := map[string]*layout.ClusterStatus{}
	for _, c := range spec.Clusters {
		st, err := layout.ReadStatus(signed, c.ID)
		if err != nil {
			return nil, err
		}
		statuses[c.ID] = st
	}
	out := make([]Peering, 0, len(spec.Peerings))
	for _, p := range spec.Peerings {
		pr := Peering{Consumer: p.Consumer, Provider: p.Provider, Step: layout.StepPending, Conditions: []Condition{}}
		readySides := 0
		for _, side := range []string{p.Provider, p.Consumer} {
			ps := statuses[side].Find(p.Consumer, p.Provider)
			if ps == nil {
				continue
			}
			if layout.StepOrder(ps.Step) > layout.StepOrder(pr.Step) {
				pr.Step = ps.Step
			}
			if len(ps.Slices) > 0 && (side == p.Consumer || pr.Slices == nil) {
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
		pr.Ready = readySides == 2 && pr.Step == layout.StepReady
		pr.State = pr.state()
		out = append(out, pr)
	}
	return out, nil
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
