package reconcile

import (
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/schema"
)

// DefaultNonceLifetime is how long a nonce may go unanswered when the spec
// sets no nonceLifetime.
const DefaultNonceLifetime = 7 * 24 * time.Hour

// DefaultDrainPeriod is how long a revoked peering's Tenant stays Drained
// in the repo before its artifacts are withdrawn, when the spec sets no
// drainPeriod: several polls of Flux's GitRepository (1m in
// manifests/flux) and Argo CD's default 3m, so the engine applies the
// drained Tenant before it prunes it.
const DefaultDrainPeriod = 10 * time.Minute

// terms are this cluster's terms as a provider, from the spec.
type terms struct {
	certificateLifetime time.Duration
	nonceLifetime       time.Duration
	drainPeriod         time.Duration
	classes             []policy.Class
}

func providerTerms(in Input, self string) (terms, error) {
	t := terms{certificateLifetime: in.CertificateLifetime, nonceLifetime: DefaultNonceLifetime, drainPeriod: DefaultDrainPeriod}
	c, _ := in.Spec.Cluster(self)
	if c.Provider == nil {
		return t, nil
	}
	var err error
	if s := c.Provider.CertificateLifetime; s != "" {
		if t.certificateLifetime, err = time.ParseDuration(s); err != nil || t.certificateLifetime < schema.MinCertificateLifetime {
			return t, fmt.Errorf("spec: clusters %s: provider.certificateLifetime: %q is not a duration of at least %s", self, s, schema.MinCertificateLifetime)
		}
	}
	if s := c.Provider.NonceLifetime; s != "" {
		if t.nonceLifetime, err = time.ParseDuration(s); err != nil || t.nonceLifetime <= 0 {
			return t, fmt.Errorf("spec: clusters %s: provider.nonceLifetime: %q is not a positive duration", self, s)
		}
	}
	if t.drainPeriod, err = DrainPeriod(in.Spec, self); err != nil {
		return t, err
	}
	t.classes, err = ProviderClasses(in.Spec, self)
	return t, err
}

// DrainPeriod is how long provider keeps the Tenant of a peering removed
// from the spec Drained before it withdraws the peering's artifacts: the
// spec's provider.drainPeriod, else DefaultDrainPeriod. A value that is not
// a Go duration of zero or more is an error naming the field. status reads
// it to say when a revocation completes.
func DrainPeriod(spec *schema.Spec, provider string) (time.Duration, error) {
	c, _ := spec.Cluster(provider)
	if c.Provider == nil || c.Provider.DrainPeriod == "" {
		return DefaultDrainPeriod, nil
	}
	s := c.Provider.DrainPeriod
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("spec: clusters %s: provider.drainPeriod: %q is not a duration of zero or more", provider, s)
	}
	return d, nil
}

// ProviderClasses are the slice classes provider offers under the spec,
// with their caps, as its reconciler decides with them (policy.Decide); nil
// when the spec declares none (policy then serves Liqo's default class).
func ProviderClasses(spec *schema.Spec, provider string) ([]policy.Class, error) {
	c, _ := spec.Cluster(provider)
	if c.Provider == nil {
		return nil, nil
	}
	var classes []policy.Class
	for _, cl := range c.Provider.Classes {
		caps, err := Quantities(cl.Caps)
		if err != nil {
			return nil, fmt.Errorf("spec: clusters %s: provider.classes %s: caps: %w", provider, cl.Name, err)
		}
		classes = append(classes, policy.Class{Name: cl.Name, Caps: caps})
	}
	return classes, nil
}

// Quantities parses a resource map of the spec (a slice's resources, a
// class's caps) as the reconcilers read it.
func Quantities(m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a quantity", name, v)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// renewAt is when a certificate valid over [notBefore, notAfter] is re-signed:
// once a third of its lifetime is left, as Liqo's ShouldRenewCertificate,
// brought forward by up to a tenth of the lifetime. The lifetime is the one
// asked for, from the signing (notBefore + handshake.CertBackdate, as both
// the file backend's CA and Kubernetes' signer backdate) to notAfter: counted
// from the backdated notBefore, anything under 2.5 minutes was due the moment
// it was signed and every pass re-signed it. The jitter derives from the
// subject and serial, so it is stable pass after pass yet differs across a
// mesh whose certificates were all signed at once.
func renewAt(notBefore, notAfter time.Time, subject, serial string) time.Time {
	issued := notBefore.Add(handshake.CertBackdate)
	if !issued.Before(notAfter) {
		// Not backdated (nor signed by gitpeer's signers): all of it is
		// lifetime.
		issued = notBefore
	}
	life := notAfter.Sub(issued)
	h := fnv.New64a()
	h.Write([]byte(subject + "\x00" + serial))
	jitter := time.Duration(h.Sum64()%1000) * (life / 10) / 1000
	return notAfter.Add(-life/3 - jitter)
}
