package peerstatus_test

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
)

// TestUnexpectedArtifactsAreShown: a side that reports files of its inbox
// it ignores (UnexpectedArtifacts) gets a row under the peering in the
// table, and its message in the page, while the peering stays Ready.
func TestUnexpectedArtifactsAreShown(t *testing.T) {
	msg := "ignored clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml: not artifacts beta sends as alpha's provider (nonce.yaml, identity.yaml, resourceslice-<name>.status.yaml)"
	peerings := []peerstatus.Peering{{Consumer: "alpha", Provider: "beta", Step: layout.StepReady, Ready: true, State: peerstatus.StateReady,
		Conditions: []peerstatus.Condition{
			{Cluster: "beta", Condition: metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "IdentityIssued", Message: "issued"}},
			{Cluster: "alpha", Condition: metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "IdentityAccepted", Message: "accepted"}},
			{Cluster: "alpha", Condition: metav1.Condition{Type: layout.ConditionUnexpectedArtifacts, Status: metav1.ConditionTrue, Reason: "UnexpectedArtifact", Message: msg}},
		}}}
	var table strings.Builder
	if err := peerstatus.WriteTable(&table, peerings); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "accepted") || !strings.HasSuffix(lines[2], "alpha:UnexpectedArtifact  "+msg) {
		t.Errorf("table:\n%s", table.String())
	}
	var page strings.Builder
	if err := peerstatus.WritePage(&page, "peering.cue", nil, peerings); err != nil {
		t.Fatal(err)
	}
	if want := "| alpha: accepted<br>alpha: UnexpectedArtifact: ignored clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml: not artifacts beta sends as alpha's provider (nonce.yaml, identity.yaml, resourceslice-&lt;name&gt;.status.yaml) |"; !strings.Contains(page.String(), want) {
		t.Errorf("page lacks %q:\n%s", want, page.String())
	}
}
