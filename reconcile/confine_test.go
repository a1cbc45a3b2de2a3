package reconcile_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/reasons"
)

// hub: beta provides for alpha and for gamma.
const hub = `clusters: [{id: "alpha"}, {id: "gamma"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma", provider: "beta"}]
`

// TestASignerRefusingOnePeersCSRStallsOnlyThatPeering: beta's signer
// refuses every CSR of gamma (as a Kubernetes signer may refuse a request).
// beta's pass does not fail: gamma's peering is Stalled PeeringFailed naming
// the refusal, alpha's is Ready. Once the signer accepts, gamma's peering
// completes.
func TestASignerRefusingOnePeersCSRStallsOnlyThatPeering(t *testing.T) {
	w := newWorld(t, hub)
	w.backends["beta"].refuse = func(csrPEM []byte) error {
		block, _ := pem.Decode(csrPEM)
		if block == nil {
			return errors.New("not PEM")
		}
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return err
		}
		if csr.Subject.CommonName == "gamma" {
			return errors.New("certificatesigningrequests: denied by policy")
		}
		return nil
	}
	w.converge("beta", "alpha", "gamma")
	if c := condition(w.status("beta", "alpha", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("beta's view of alpha: %+v", w.status("beta", "alpha", "beta").Conditions)
	}
	c := condition(w.status("beta", "gamma", "beta"), meta.StalledCondition)
	if c == nil || c.Reason != reasons.PeeringFailed || !strings.Contains(c.Message, "denied by policy") {
		t.Fatalf("beta's view of gamma: %+v, want Stalled PeeringFailed naming the refusal", w.status("beta", "gamma", "beta").Conditions)
	}
	if w.has("clusters/gamma/inbox/beta/identity.yaml") {
		t.Fatal("beta answered gamma without a certificate")
	}

	w.backends["beta"].refuse = nil
	w.converge("beta", "gamma")
	if c := condition(w.status("gamma", "gamma", "beta"), meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("gamma's view once the signer accepts: %+v", w.status("gamma", "gamma", "beta").Conditions)
	}
}
