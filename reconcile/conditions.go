package reconcile

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// peeringObject adapts a PeeringStatus to fluxcd/pkg/runtime/conditions,
// which works on client.Objects: the status keeps Flux's kstatus semantics
// (Ready, Reconciling, Stalled; transition times kept while a condition holds).
type peeringObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	status *layout.PeeringStatus
	// prevStep is the step the previous status.yaml gave the peering
	// (StepPending when none): a peering nothing is read of this pass
	// stays where it was.
	prevStep layout.Step
}

func (p *peeringObject) GetConditions() []metav1.Condition  { return p.status.Conditions }
func (p *peeringObject) SetConditions(c []metav1.Condition) { p.status.Conditions = c }
func (p *peeringObject) DeepCopyObject() runtime.Object {
	st := *p.status
	st.Conditions = append([]metav1.Condition(nil), p.status.Conditions...)
	return &peeringObject{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy(), status: &st}
}

// progress marks a peering as moving on: Ready=False with why, Reconciling=True.
func progress(o *peeringObject, step layout.Step, reason, format string, a ...any) {
	o.status.Step = step
	conditions.MarkFalse(o, meta.ReadyCondition, reason, format, a...)
	conditions.MarkReconciling(o, reasons.Progressing, format, a...)
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

// stampTransitions dates every condition of status that changed since prev
// (new, or another Status) at now, the pass's clock: Flux's conditions
// package dates them with the wall clock, which would put a test's or a
// plan's injected time and the status file's times out of step. A condition
// whose Status held keeps its time from prev.
func stampTransitions(status, prev *layout.ClusterStatus, now time.Time) {
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	for i := range status.Peerings {
		ps := &status.Peerings[i]
		old := prev.Find(ps.Consumer, ps.Provider)
		for j := range ps.Conditions {
			c := &ps.Conditions[j]
			if old != nil {
				if was := apimeta.FindStatusCondition(old.Conditions, c.Type); was != nil && was.Status == c.Status {
					c.LastTransitionTime = was.LastTransitionTime
					continue
				}
			}
			c.LastTransitionTime = at
		}
	}
}
