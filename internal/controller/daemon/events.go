package daemon

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// Annotations of a peering's events, for `kubectl get events -o yaml` and
// event routers; `kubectl describe` shows the reason and message.
const (
	AnnotationConsumer = "gitpeer.io/consumer"
	AnnotationProvider = "gitpeer.io/provider"
	AnnotationRole     = "gitpeer.io/role"
	AnnotationStep     = "gitpeer.io/step"
	AnnotationRevision = "gitpeer.io/revision"
)

// maxMessage is the length an event message is cut to (in bytes, on a rune
// boundary): the events.k8s.io API refuses notes over 1 kB.
const maxMessage = 1024

// Event is something an admin must see: a peering's Ready condition changed
// (Type Warning when the peering is Stalled on something a human must fix),
// its peer's inbox folder holds files that are not artifacts (Warning
// UnexpectedArtifact, when they appear or change), or a pass failed.
type Event struct {
	Type        string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason      string // UpperCamelCase, as a condition reason
	Message     string
	Annotations map[string]string
}

// EventSink publishes events, e.g. as Kubernetes Events (KubeEvents). A sink
// reports its own failures (in its log): an event lost never fails a pass.
type EventSink interface {
	Publish(ctx context.Context, events []Event)
}

// peeringKey is a peering seen from this cluster's side.
type peeringKey struct {
	consumer, provider string
	role               layout.Role
}

// peeringState is what of a peering's status makes an event when it
// changes: a message alone that changes does not (it may carry times).
type peeringState struct {
	status  metav1.ConditionStatus
	reason  string
	stalled bool
}

// tracker remembers what the passes of this process reported, so that only
// changes make events: a peering seen for the first time or whose Ready
// condition changed status or reason, the first failure (or a different
// error), and the first good pass after failures.
type tracker struct {
	peerings map[peeringKey]peeringState
	// unexpected is, per peering, the message of its UnexpectedArtifacts
	// condition (the files the pass ignored in the peer's inbox folder):
	// a Warning when it appears or names other files.
	unexpected map[peeringKey]string
	failure    string // the last pass's error, "" after a good pass
	// stuck are the objects the last good pass reported stuck
	// (runner.Result.Stuck): a Warning when one appears, once.
	stuck map[string]bool
}

// observe returns the events of a pass's outcome, and remembers it.
func (t *tracker) observe(res *runner.Result, err error) []Event {
	var restored []Event
	if res != nil && res.AppliedRestored != "" {
		restored = []Event{{Type: corev1.EventTypeWarning, Reason: reasons.AppliedBranchRestored, Message: truncate(fmt.Sprintf(
			"the applied branch was at %s, not at the newest seal %s: restored it; only this cluster's reconciler may push it", res.AppliedRestored, appliedOf(res)))}}
	}
	events := t.outcome(res, err)
	return append(restored, events...)
}

// appliedOf is the seal res left the applied branch at, when it says.
func appliedOf(res *runner.Result) string {
	if res.Applied == "" {
		return "recorded"
	}
	return res.Applied
}

// outcome returns the events of a pass's outcome but a restored applied
// branch, and remembers it.
func (t *tracker) outcome(res *runner.Result, err error) []Event {
	if err != nil {
		msg := err.Error()
		if msg == t.failure {
			return nil
		}
		t.failure = msg
		reason := reasons.ReconciliationFailed
		if errors.Is(err, gitsync.ErrPushConflict) {
			reason = reasons.PushRejected
		}
		if errors.Is(err, runner.ErrDuplicateReconciler) {
			reason = reasons.DuplicateReconciler
		}
		return []Event{{Type: corev1.EventTypeWarning, Reason: reason, Message: truncate(msg)}}
	}
	var events []Event
	if t.failure != "" {
		t.failure = ""
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: reasons.ReconciliationSucceeded, Message: "pass succeeded after failed passes"})
	}
	if res == nil {
		return events
	}
	stuck := map[string]bool{}
	for _, st := range res.Stuck {
		stuck[st.Object] = true
		if !t.stuck[st.Object] {
			events = append(events, Event{Type: corev1.EventTypeWarning, Reason: reasons.RevocationStuck, Message: truncate(st.Object + ": " + st.Message)})
		}
	}
	t.stuck = stuck
	if res.Output == nil || res.Output.Status == nil {
		return events
	}
	next := map[peeringKey]peeringState{}
	for _, p := range res.Output.Status.Peerings {
		key := peeringKey{p.Consumer, p.Provider, p.Role}
		ready := apimeta.FindStatusCondition(p.Conditions, meta.ReadyCondition)
		if ready == nil {
			continue
		}
		st := peeringState{status: ready.Status, reason: ready.Reason, stalled: apimeta.IsStatusConditionTrue(p.Conditions, meta.StalledCondition)}
		next[key] = st
		if prev, ok := t.peerings[key]; ok && prev == st {
			continue
		}
		typ := corev1.EventTypeNormal
		if st.stalled {
			typ = corev1.EventTypeWarning
		}
		events = append(events, Event{
			Type: typ, Reason: ready.Reason, Annotations: peeringAnnotations(p, res.Commit),
			Message: truncate(fmt.Sprintf("%s → %s (%s, %s): %s", p.Consumer, p.Provider, p.Role, p.Step, ready.Message)),
		})
	}
	// Then the files a pass ignored in a peer's inbox folder, when they
	// appear or change (the message holds no time).
	unexpected := map[peeringKey]string{}
	for _, p := range res.Output.Status.Peerings {
		c := apimeta.FindStatusCondition(p.Conditions, layout.ConditionUnexpectedArtifacts)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		key := peeringKey{p.Consumer, p.Provider, p.Role}
		unexpected[key] = c.Message
		if t.unexpected[key] != c.Message {
			events = append(events, Event{
				Type: corev1.EventTypeWarning, Reason: c.Reason, Annotations: peeringAnnotations(p, res.Commit),
				Message: truncate(fmt.Sprintf("%s → %s (%s, %s): %s", p.Consumer, p.Provider, p.Role, p.Step, c.Message)),
			})
		}
	}
	t.peerings, t.unexpected = next, unexpected
	return events
}

// peeringAnnotations are the annotations of an event about peering p,
// reported by a pass that committed commit ("" when it committed nothing).
func peeringAnnotations(p layout.PeeringStatus, commit string) map[string]string {
	ann := map[string]string{
		AnnotationConsumer: p.Consumer, AnnotationProvider: p.Provider,
		AnnotationRole: string(p.Role), AnnotationStep: string(p.Step),
	}
	if commit != "" {
		ann[AnnotationRevision] = commit
	}
	return ann
}

// truncate cuts s to maxMessage bytes on a rune boundary.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	const ellipsis = "…"
	cut := maxMessage - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
