package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
)

// TestACappedCertificateLifetimeIsNamedWithItsRenewal: a signer that issues
// for less than the provider requested (30 days by default; here capped at
// 24h) is named in the provider's Ready message, with the renewal it
// implies; the message stays the same pass after pass.
func TestACappedCertificateLifetimeIsNamedWithItsRenewal(t *testing.T) {
	w := newWorld(t, twoClusters)
	w.backends["beta"].cap = 24 * time.Hour
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		w.pass(id)
	}
	out, plan := w.pass("beta")
	if !plan.Empty() {
		t.Errorf("a settled pass changed %v", plan.Writes)
	}
	msg := condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition).Message
	for _, want := range []string{
		"identity issued to alpha; certificate valid until ",
		"; the signer capped the certificate at 24h0m0s of the 720h0m0s requested (certificateLifetime): it is renewed about every 1",
		", next at 2026-11-2",
		"raise the signer's cap (kube-controller-manager --cluster-signing-duration) or lower certificateLifetime to match",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("beta's Ready message does not say %q:\n%s", want, msg)
		}
	}

	// Uncapped, nothing is said.
	w2 := newWorld(t, twoClusters)
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		w2.pass(id)
	}
	out, _ = w2.pass("beta")
	if msg := condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition).Message; strings.Contains(msg, "capped") {
		t.Errorf("an uncapped certificate is called capped: %s", msg)
	}
}
