package daemon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

func TestTrackerPublishesChangesOfReadyWithTheirReasons(t *testing.T) {
	keyChanged := peeringStatus("beta", "alpha", layout.RoleProvider, layout.StepPending, metav1.ConditionFalse, "KeyChanged", "beta's key changed", true)
	badSig := peeringStatus("gamma", "alpha", layout.RoleProvider, layout.StepNonceSent, metav1.ConditionFalse, "SignatureVerificationFailed", "tenant of gamma: bad signature", true)
	issued := peeringStatus("beta", "alpha", layout.RoleProvider, layout.StepIdentityIssued, metav1.ConditionTrue, "IdentityIssued", "identity issued to beta", false)
	issuedLater := issued
	issuedLater.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "IdentityIssued", Message: "identity issued to beta; certificate valid until later"}}
	invalidCSR := peeringStatus("gamma", "alpha", layout.RoleProvider, layout.StepNonceSent, metav1.ConditionFalse, "InvalidCSR", "tenant of gamma: CSR", true)

	var tr tracker
	steps := []struct {
		name string
		res  *runner.Result
		err  error
		want []string // "Type Reason"
	}{
		{"every peering seen first makes an event", withPeerings("c1", keyChanged, badSig), nil,
			[]string{"Warning KeyChanged", "Warning SignatureVerificationFailed"}},
		{"the same conditions make none", withPeerings("", keyChanged, badSig), nil, nil},
		{"a changed reason makes one", withPeerings("c2", issued, badSig), nil, []string{"Normal IdentityIssued"}},
		{"a changed message alone makes none", withPeerings("", issuedLater, badSig), nil, nil},
		{"a failed pass makes one", nil, errors.New("cluster alpha: fetch: connection refused"), []string{"Warning ReconciliationFailed"}},
		{"the same failure again makes none", nil, errors.New("cluster alpha: fetch: connection refused"), nil},
		{"a rejected push is PushRejected", &runner.Result{}, pushConflict, []string{"Warning PushRejected"}},
		{"recovery is one event, peerings unchanged since make none", withPeerings("", issued, invalidCSR), nil,
			[]string{"Normal ReconciliationSucceeded", "Warning InvalidCSR"}},
		{"a removed peering makes none, and comes back as new", withPeerings("", issued), nil, nil},
		{"it comes back", withPeerings("", issued, invalidCSR), nil, []string{"Warning InvalidCSR"}},
		{"a restored applied branch is a warning, also when the pass then fails", restored(nil), errors.New("cluster alpha: cluster.yaml does not match"),
			[]string{"Warning AppliedBranchRestored", "Warning ReconciliationFailed"}},
		{"and when it succeeds", restored(withPeerings("", issued, invalidCSR)), nil,
			[]string{"Warning AppliedBranchRestored", "Normal ReconciliationSucceeded"}},
	}
	for _, s := range steps {
		got := tr.observe(s.res, s.err)
		var reasons []string
		for _, e := range got {
			reasons = append(reasons, e.Type+" "+e.Reason)
		}
		if strings.Join(reasons, ",") != strings.Join(s.want, ",") {
			t.Errorf("%s: events %v, want %v", s.name, reasons, s.want)
		}
	}
}

// restored is res (or an empty Result) whose Sync restored the applied
// branch from an older head.
func restored(res *runner.Result) *runner.Result {
	if res == nil {
		res = &runner.Result{}
	}
	res.AppliedRestored = "0123456789abcdef0123456789abcdef01234567"
	return res
}

func TestAPeeringEventNamesThePeeringAndItsStep(t *testing.T) {
	var tr tracker
	p := peeringStatus("alpha", "beta", layout.RoleConsumer, layout.StepTenantSent, metav1.ConditionFalse, "SignatureVerificationFailed", "identity of beta: signature does not verify", true)
	events := tr.observe(withPeerings("abc123", p), nil)
	if len(events) != 1 {
		t.Fatalf("events %+v", events)
	}
	e := events[0]
	if e.Type != corev1.EventTypeWarning || e.Message != "alpha → beta (consumer, TenantSent): identity of beta: signature does not verify" {
		t.Errorf("event %+v", e)
	}
	want := map[string]string{AnnotationConsumer: "alpha", AnnotationProvider: "beta", AnnotationRole: "consumer", AnnotationStep: "TenantSent", AnnotationRevision: "abc123"}
	for k, v := range want {
		if e.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, e.Annotations[k], v)
		}
	}
}

func TestLongMessagesAreCutOnARuneBoundary(t *testing.T) {
	s := strings.Repeat("é", maxMessage)
	got := truncate(s)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("truncate: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if truncate("short") != "short" {
		t.Error("a short message was changed")
	}
}

// A tenant namespace a revocation left terminating is a Warning once, when
// it is first reported (its message, which counts the minutes, changes
// every pass), and again only if it comes back after it went.
func TestAStuckRevocationIsOneWarningUntilItClears(t *testing.T) {
	var tr tracker
	stuck := func(minutes ...int) *runner.Result {
		res := withPeerings("")
		for _, m := range minutes {
			res.Stuck = append(res.Stuck, backend.Stuck{Object: "namespace/liqo-tenant-alpha",
				Message: fmt.Sprintf("tenant namespace liqo-tenant-alpha has been terminating for %dm0s: tenant.liqo.io/finalizer", m)})
		}
		return res
	}
	for i, s := range []struct {
		res  *runner.Result
		want string
	}{
		{stuck(6), "Warning RevocationStuck namespace/liqo-tenant-alpha: tenant namespace liqo-tenant-alpha has been terminating for 6m0s: tenant.liqo.io/finalizer"},
		{stuck(7), ""},
		{stuck(), ""},
		{stuck(12), "Warning RevocationStuck namespace/liqo-tenant-alpha: tenant namespace liqo-tenant-alpha has been terminating for 12m0s: tenant.liqo.io/finalizer"},
	} {
		var got []string
		for _, e := range tr.observe(s.res, nil) {
			got = append(got, e.Type+" "+e.Reason+" "+e.Message)
		}
		if strings.Join(got, "|") != s.want {
			t.Errorf("pass %d: events %q, want %q", i, got, s.want)
		}
	}
}
