package layout

import (
	"errors"
	"fmt"
	"io/fs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/yamljson"
)

// StatusKind is the kind of status.yaml.
const StatusKind = "ClusterStatus"

// Step is how far a peering's handshake has come.
type Step string

// Handshake steps, in order.
const (
	StepPending        Step = "Pending"        // declared; nothing exchanged yet
	StepNonceSent      Step = "NonceSent"      // provider wrote the nonce
	StepTenantSent     Step = "TenantSent"     // consumer answered with its Tenant
	StepIdentityIssued Step = "IdentityIssued" // provider verified it and signed the CSR
	StepReady          Step = "Ready"          // consumer verified the Identity
	StepRevoking       Step = "Revoking"       // removed from the spec: Tenant drained, artifacts go next
)

// StepOrder ranks steps so the furthest of two views of a peering wins.
func StepOrder(s Step) int {
	switch s {
	case StepNonceSent:
		return 1
	case StepTenantSent:
		return 2
	case StepIdentityIssued:
		return 3
	case StepReady:
		return 4
	}
	return 0
}

// ConditionUnexpectedArtifacts is the type of a peering's condition that
// is True, with reason UnexpectedArtifact, while the reporting cluster's
// inbox folder of its peer holds files that are not artifacts the peer
// sends in its part: the reconciler ignores them and names them in the
// message. Like kstatus's Stalled and Reconciling it is present only while
// it holds; it changes neither Ready nor the step.
const ConditionUnexpectedArtifacts = "UnexpectedArtifacts"

// Role is the part a cluster plays in a peering.
type Role string

// Roles.
const (
	RoleConsumer Role = "consumer"
	RoleProvider Role = "provider"
)

// ClusterStatus is clusters/<id>/status.yaml: one cluster's view of each of
// its peerings, with kstatus-style conditions (Ready, Reconciling, Stalled).
type ClusterStatus struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	ClusterID  string          `json:"clusterID"`
	Peerings   []PeeringStatus `json:"peerings"`
}

// PeeringStatus is one peering seen from one side.
type PeeringStatus struct {
	Consumer   string             `json:"consumer"`
	Provider   string             `json:"provider"`
	Role       Role               `json:"role"`
	Step       Step               `json:"step"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// RevokingSince is when the provider first drained the Tenant of a
	// peering removed from the spec (Step Revoking): its artifacts are
	// withdrawn once the provider's drain period has passed since.
	RevokingSince *metav1.Time `json:"revokingSince,omitempty"`
	// Slices are the peering's ResourceSlices and the provider's decisions.
	Slices []SliceStatus `json:"slices,omitempty"`
}

// SliceStatus is one ResourceSlice's state, in Liqo's words: Authentication
// and Resources are "Accepted", "Denied" or "Pending" (no decision yet for
// the current request).
type SliceStatus struct {
	Name           string `json:"name"`
	Authentication string `json:"authentication"`
	Resources      string `json:"resources"`
	Reason         string `json:"reason,omitempty"`
	Message        string `json:"message,omitempty"`
}

// Find returns the status of the (consumer, provider) peering, or nil.
func (s *ClusterStatus) Find(consumer, provider string) *PeeringStatus {
	for i := range s.Peerings {
		if s.Peerings[i].Consumer == consumer && s.Peerings[i].Provider == provider {
			return &s.Peerings[i]
		}
	}
	return nil
}

// Encode renders the status as YAML.
func (s *ClusterStatus) Encode() ([]byte, error) { return yamljson.Marshal(s) }

// ReadStatus reads clusters/<id>/status.yaml. A missing file gives an empty
// status and no error; a malformed one, or one above MaxStatusSize (not
// read), a *FieldError.
func ReadStatus(tree fs.FS, id string) (*ClusterStatus, error) {
	if err := checkDirID(id, StatusFile); err != nil {
		return nil, err
	}
	file := ClusterPath(id, StatusFile)
	empty := &ClusterStatus{APIVersion: APIVersion, Kind: StatusKind, ClusterID: id}
	data, err := ReadFileLimit(tree, file, MaxStatusSize)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return nil, &FieldError{File: file, Reason: err.Error(), Err: err}
	}
	var s ClusterStatus
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, &FieldError{File: file, Reason: err.Error()}
	}
	switch {
	case s.Kind != StatusKind:
		return nil, &FieldError{File: file, Field: "kind", Reason: fmt.Sprintf("is %q, want %q", s.Kind, StatusKind)}
	case s.ClusterID != id:
		return nil, &FieldError{File: file, Field: "clusterID", Reason: fmt.Sprintf("is %q but the file is under clusters/%s", s.ClusterID, id)}
	}
	return &s, nil
}
