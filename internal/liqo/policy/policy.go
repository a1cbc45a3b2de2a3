// Package policy is a provider's decision on a consumer's ResourceSlice:
// which class it offers, the caps of each class, and how the Tenant's
// condition (Active, Cordoned, Drained) changes the answer. It mirrors what
// Liqo's remote ResourceSlice controller decides for the "default" class
// (pkg/liqo-controller-manager/authentication/remoteresourceslice-controller),
// adding per-class caps a provider declares in the spec.
package policy

import (
	"fmt"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// reasonDenied is Liqo's reason of a denied Resources condition.
const reasonDenied = "ResourceSliceResourcesDenied"

// DefaultClass is the class Liqo serves itself; "" means it too.
const DefaultClass = "default"

// DefaultCaps are the resources of Liqo's default class when a provider
// declares none: Liqo's Helm defaults (--default-node-resources).
func DefaultCaps() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
}

// Class is a slice class a provider offers, with the most it grants of each
// resource. A resource without a cap cannot be requested from the class.
type Class struct {
	Name string
	Caps corev1.ResourceList
}

// Decision is the Resources half of a ResourceSlice's status.
type Decision struct {
	Accepted bool
	Reason   string // Liqo's ResourceSliceResourcesAccepted / ResourceSliceResourcesDenied
	Message  string
	// Why is gitpeer's reason for a denial Liqo has no reason for
	// (ReasonSliceNotInSpec, …; see Grant), "" otherwise.
	Why string
	// Granted is the class's caps overlaid by what was requested, as Liqo
	// overlays its defaults with the slice's spec; nil when denied.
	Granted corev1.ResourceList
}

// Request is a slice request as the provider sees it.
type Request struct {
	// Name is the slice's name (Grant's messages name it).
	Name      string
	Class     string
	Resources corev1.ResourceList
	// WasAccepted says the same request was accepted before: a Cordoned
	// Tenant keeps existing slices and refuses only new ones.
	WasAccepted bool
}

// Violation is one reason a request exceeds what a provider offers.
type Violation struct {
	// Resource is the resource asked for beyond the class's caps; empty
	// when the class itself is not offered.
	Resource corev1.ResourceName
	// Message says why, e.g. "requested 16 exceeds the cap 4 of class
	// default" or `class "fast" is not offered (offered: gpu, default)`.
	Message string
}

// String is "resource: message", or the message alone for the class.
func (v Violation) String() string {
	if v.Resource == "" {
		return v.Message
	}
	return string(v.Resource) + ": " + v.Message
}

// Check compares a request for class (empty: DefaultClass) with the
// classes a provider offers (DefaultCaps under "default" when classes is
// empty): the class must be offered, and every resource requested must
// have a cap there and be within it. It returns the class found (nil when
// not offered) and the violations, a class violation alone or one per
// resource in name order. Decide denies exactly what Check finds, and
// gitpeer validate reports it before a provider has to.
func Check(classes []Class, class string, resources corev1.ResourceList) (*Class, []Violation) {
	name := class
	if name == "" {
		name = DefaultClass
	}
	if len(classes) == 0 {
		classes = []Class{{Name: DefaultClass, Caps: DefaultCaps()}}
	}
	var found *Class
	offered := make([]string, 0, len(classes))
	for i := range classes {
		offered = append(offered, classes[i].Name)
		if classes[i].Name == name {
			found = &classes[i]
		}
	}
	if found == nil {
		return nil, []Violation{{Message: fmt.Sprintf("class %q is not offered (offered: %s)", name, strings.Join(offered, ", "))}}
	}
	names := make([]string, 0, len(resources))
	for r := range resources {
		names = append(names, string(r))
	}
	sort.Strings(names)
	var out []Violation
	for _, r := range names {
		q := resources[corev1.ResourceName(r)]
		limit, ok := found.Caps[corev1.ResourceName(r)]
		if !ok {
			out = append(out, Violation{Resource: corev1.ResourceName(r), Message: fmt.Sprintf("class %s has no cap for it", name)})
			continue
		}
		if q.Cmp(limit) > 0 {
			out = append(out, Violation{Resource: corev1.ResourceName(r), Message: fmt.Sprintf("requested %s exceeds the cap %s of class %s", q.String(), limit.String(), name)})
		}
	}
	return found, out
}

// Decide answers a slice request under the provider's classes (DefaultCaps
// under "default" when classes is empty) and the Tenant's condition.
func Decide(classes []Class, tenant authv1beta1.TenantCondition, req Request) Decision {
	deny := func(format string, a ...any) Decision {
		return Decision{Reason: reasonDenied, Message: fmt.Sprintf(format, a...)}
	}
	switch tenant {
	case authv1beta1.TenantConditionDrained:
		return deny("tenant is drained: no resources are granted")
	case authv1beta1.TenantConditionCordoned:
		if !req.WasAccepted {
			return deny("tenant is cordoned: no new slices are accepted")
		}
	}
	class, violations := Check(classes, req.Class, req.Resources)
	if len(violations) > 0 {
		msgs := make([]string, len(violations))
		for i, v := range violations {
			msgs[i] = v.String()
		}
		return deny("%s", strings.Join(msgs, "; "))
	}
	granted := corev1.ResourceList{}
	for r, q := range class.Caps {
		granted[r] = q.DeepCopy()
	}
	for r, q := range req.Resources {
		granted[r] = q.DeepCopy()
	}
	return Decision{Accepted: true, Reason: "ResourceSliceResourcesAccepted", Message: "resources accepted", Granted: granted}
}
