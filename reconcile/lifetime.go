package reconcile

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// lifetimeTolerance is how much shorter than requested a certificate may
// be without a word: signers round, and gitpeer's own backdate the start.
const lifetimeTolerance = time.Minute

// cappedLifetimeNote is what a provider's status adds when the certificate
// certPEM (a PEM certificate its backend signed, for subject) is valid for
// shorter than requested: the signer capped it (the kubernetes backend's
// certificates.k8s.io signer honours spec.expirationSeconds only up to
// kube-controller-manager's --cluster-signing-duration). It names both
// lifetimes and when the certificate is renewed (renewAt: a third of its
// lifetime, and a little jitter, before it expires), so that renewals
// every few hours are no surprise. "" when it is not shorter, or cannot be
// read. The words depend only on the certificate and the request: a status
// does not change from pass to pass.
func cappedLifetimeNote(certPEM []byte, requested time.Duration, subject string) string {
	block, _ := pem.Decode(certPEM)
	if block == nil || requested <= 0 {
		return ""
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	issued := crt.NotBefore.Add(handshake.CertBackdate)
	if !issued.Before(crt.NotAfter) {
		issued = crt.NotBefore
	}
	got := crt.NotAfter.Sub(issued)
	if got >= requested-lifetimeTolerance {
		return ""
	}
	renew := renewAt(crt.NotBefore, crt.NotAfter, subject, crt.SerialNumber.String())
	return fmt.Sprintf("; the signer capped the certificate at %s of the %s requested (certificateLifetime): it is renewed about every %s, next at %s; "+
		"raise the signer's cap (kube-controller-manager --cluster-signing-duration) or lower certificateLifetime to match",
		roundLifetime(got), roundLifetime(requested), roundLifetime(renew.Sub(issued)), renew.UTC().Format(time.RFC3339))
}

// roundLifetime prints a lifetime to the minute.
func roundLifetime(d time.Duration) string { return d.Round(time.Minute).String() }
