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
	// Granted is the class's caps overlaid by what was requested, as Liqo
	// overlays its defaults with the slice's spec; nil when denied.
	Granted corev1.ResourceList
}

// Request is a slice request as the provider sees it.
type Request struct {
	Class     string
	Resources corev1.ResourceList
	// WasAccepted says the same request was accepted before: a Cordoned
	// Tenant keeps existing slices and refuses only new ones.
	WasAccepted bool
}

// Decide answers a slice request under the provider's classes (DefaultCaps
// under "default" when classes is empty) and the Tenant's condition.
func Decide(classes []Class, tenant authv1beta1.TenantCondition, req Request) Decision {
	deny := func(format string, a ...any) Decision {
		return Decision{Reason: "ResourceSliceResourcesDenied", Message: fmt.Sprintf(format, a...)}
	}
	switch tenant {
	case authv1beta1.TenantConditionDrained:
		return deny("tenant is drained: no resources are granted")
	case authv1beta1.TenantConditionCordoned:
		if !req.WasAccepted {
			return deny("tenant is cordoned: no new slices are accepted")
		}
	}
	name := req.Class
	if name == "" {
		name = DefaultClass
	}
	if len(classes) == 0 {
		classes = []Class{{Name: DefaultClass, Caps: DefaultCaps()}}
	}
	var class *Class
	offered := make([]string, 0, len(classes))
	for i := range classes {
		offered = append(offered, classes[i].Name)
		if classes[i].Name == name {
			class = &classes[i]
		}
	}
	if class == nil {
		return deny("class %q is not offered (offered: %s)", name, strings.Join(offered, ", "))
	}
	names := make([]string, 0, len(req.Resources))
	for r := range req.Resources {
		names = append(names, string(r))
	}
	sort.Strings(names)
	var over []string
	for _, r := range names {
		q := req.Resources[corev1.ResourceName(r)]
		limit, ok := class.Caps[corev1.ResourceName(r)]
		if !ok {
			over = append(over, fmt.Sprintf("%s: class %s has no cap for it", r, name))
			continue
		}
		if q.Cmp(limit) > 0 {
			over = append(over, fmt.Sprintf("%s: requested %s exceeds the cap %s of class %s", r, q.String(), limit.String(), name))
		}
	}
	if len(over) > 0 {
		return deny("%s", strings.Join(over, "; "))
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
