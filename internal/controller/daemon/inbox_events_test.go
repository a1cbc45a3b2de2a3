package daemon

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TestFilesIgnoredInAnInboxAreAWarning: a pass that reports files of a
// peer's inbox folder that are not artifacts (UnexpectedArtifacts) makes a
// Warning UnexpectedArtifact naming them, once; another set of files makes
// another; a clean folder makes none, and files coming back make one again.
// The peering's Ready events are as before.
func TestFilesIgnoredInAnInboxAreAWarning(t *testing.T) {
	issued := peeringStatus("alpha", "beta", layout.RoleProvider, layout.StepIdentityIssued, metav1.ConditionTrue, "IdentityIssued", "identity issued to alpha", false)
	with := func(msg string) layout.PeeringStatus {
		p := issued
		p.Conditions = append(append([]metav1.Condition(nil), issued.Conditions...),
			metav1.Condition{Type: layout.ConditionUnexpectedArtifacts, Status: metav1.ConditionTrue, Reason: "UnexpectedArtifact", Message: msg})
		return p
	}
	one := with("ignored clusters/beta/inbox/alpha/clusterrolebinding-evil.yaml: not artifacts alpha sends as beta's consumer")
	two := with("ignored clusters/beta/inbox/alpha/a.yaml, clusters/beta/inbox/alpha/b.yaml: not artifacts alpha sends as beta's consumer")
	var tr tracker
	// An event as "Type Reason", and a file its message must name ("" for
	// any message).
	type event struct{ kind, names string }
	for _, s := range []struct {
		name string
		p    layout.PeeringStatus
		want []event
	}{
		{"a peering first seen with an extra file", one, []event{{"Normal IdentityIssued", ""}, {"Warning UnexpectedArtifact", "clusterrolebinding-evil.yaml"}}},
		{"the same files make none", one, nil},
		{"other files make one", two, []event{{"Warning UnexpectedArtifact", "a.yaml"}}},
		{"a clean folder makes none", issued, nil},
		{"files coming back make one", one, []event{{"Warning UnexpectedArtifact", "clusterrolebinding-evil.yaml"}}},
	} {
		got := tr.observe(withPeerings("c1", s.p), nil)
		if len(got) != len(s.want) {
			t.Fatalf("%s: events %+v, want %+v", s.name, got, s.want)
		}
		for i, e := range got {
			if e.Type+" "+e.Reason != s.want[i].kind || !strings.Contains(e.Message, s.want[i].names) {
				t.Errorf("%s: event %+v, want %+v", s.name, e, s.want[i])
			}
			if e.Annotations[AnnotationConsumer] != "alpha" || e.Annotations[AnnotationRevision] != "c1" {
				t.Errorf("%s: annotations %v", s.name, e.Annotations)
			}
		}
	}
}
