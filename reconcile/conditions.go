package reconcile

import (
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitpeer/gitpeer/layout"
)

// peeringObject adapts a PeeringStatus to fluxcd/pkg/runtime/conditions,
// which works on client.Objects: the status keeps Flux's kstatus semantics
// (Ready, Reconciling, Stalled; transition times kept while a condition holds).
type peeringObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	status *layout.PeeringStatus
}

func (p *peeringObject) GetConditions() []metav1.Condition  { return p.status.Conditions }
func (p *peeringObject) SetConditions(c []metav1.Condition) { p.status.Conditions = c }
func (p *peeringObject) DeepCopyObject() runtime.Object {
	st := *p.status
	st.Conditions = append([]metav1.Condition(nil), p.status.Conditions...)
	return &peeringObject{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy(), status: &st}
}

// Condition reasons for the handshake's progress (refusals use artifact.Reason*).
const (
	ReasonWaitingForCluster  = "WaitingForCluster"
	ReasonInvalidClusterInfo = "InvalidClusterInfo"
	ReasonWaitingForNonce    = "WaitingForNonce"
	ReasonWaitingForTenant   = "WaitingForTenant"
	ReasonWaitingForIdentity = "WaitingForIdentity"
	ReasonIdentityIssued     = "IdentityIssued"
	ReasonIdentityAccepted   = "IdentityAccepted"
	ReasonProgressing        = meta.ProgressingReason
)

// progress marks a peering as moving on: Ready=False with why, Reconciling=True.
func progress(o *peeringObject, step layout.Step, reason, format string, a ...any) {
	o.status.Step = step
	conditions.MarkFalse(o, meta.ReadyCondition, reason, format, a...)
	conditions.MarkReconciling(o, ReasonProgressing, format, a...)
}

// stall marks a peering as stuck on something a human must fix.
func stall(o *peeringObject, step layout.Step, reason, format string, a ...any) {
	o.status.Step = step
	conditions.MarkFalse(o, meta.ReadyCondition, reason, format, a...)
	conditions.MarkStalled(o, reason, format, a...)
}

// ready marks this side of a peering as done.
func ready(o *peeringObject, step layout.Step, reason, format string, a ...any) {
	o.status.Step = step
	conditions.Delete(o, meta.ReconcilingCondition)
	conditions.Delete(o, meta.StalledCondition)
	conditions.MarkTrue(o, meta.ReadyCondition, reason, format, a...)
}
