package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gitpeer/gitpeer/internal/reasons"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckName refuses a slice name Liqo cannot serve: Liqo labels the
// slice's Identity "resourceslice-<name>" with liqo.io/resourceslice-name:
// <name> (a label value, at most 63 characters) and signs a certificate
// with CN "<name>-<12 hex>"; the spec's slice names are DNS-1123 labels for
// that reason. Anything else (upper case, a "system:" prefix Kubernetes
// reserves, spaces, 300 characters) is refused before it reaches a signer.
// The error quotes at most the first 64 bytes of name.
func CheckName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		q := name
		if len(q) > 64 {
			q = strings.ToValidUTF8(q[:64], "") + "…"
		}
		return fmt.Errorf("slice name %q is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters), as Liqo names slices", q)
	}
	return nil
}

// Listed is a slice as the spec lists it for one peering.
type Listed struct {
	Name string
	// Class is the spec's class; "" is DefaultClass.
	Class     string
	Resources corev1.ResourceList
}

// ClassName is class with "" read as DefaultClass, as Liqo reads it.
func ClassName(class string) string {
	if class == "" {
		return DefaultClass
	}
	return class
}

// Match compares a slice's class and resources with the spec's listing of
// it (nil: the spec does not list it). It returns "" when they are the
// listed slice's (classes compared as ClassName, quantities by value, so
// "4096Mi" is "4Gi"), else ReasonSliceNotInSpec or
// ReasonSliceDiffersFromSpec and a message saying what differs.
func Match(listed *Listed, name, class string, resources corev1.ResourceList) (reason, message string) {
	if listed == nil {
		return reasons.SliceNotInSpec, fmt.Sprintf("the spec lists no slice %s for this peering", name)
	}
	var diffs []string
	if ClassName(class) != ClassName(listed.Class) {
		diffs = append(diffs, fmt.Sprintf("class %s, the spec's is %s", ClassName(class), ClassName(listed.Class)))
	}
	if !SameResources(resources, listed.Resources) {
		diffs = append(diffs, fmt.Sprintf("resources {%s}, the spec's are {%s}", FormatResources(resources), FormatResources(listed.Resources)))
	}
	if len(diffs) == 0 {
		return "", ""
	}
	return reasons.SliceDiffersFromSpec, fmt.Sprintf("slice %s asks for %s", name, strings.Join(diffs, "; "))
}

// SameResources reports whether a and b name the same resources with equal
// quantities.
func SameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for r, q := range a {
		o, ok := b[r]
		if !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// FormatResources is "cpu=2, memory=4Gi": the resources in name order.
func FormatResources(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for r := range l {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for i, r := range names {
		q := l[corev1.ResourceName(r)]
		names[i] = r + "=" + q.String()
	}
	return strings.Join(names, ", ")
}

// Budget is what one consumer was granted so far in each class of one
// provider, in one pass: the class total. It counts the resources each
// granted slice requests (its spec.resources), not the class caps Liqo
// overlays for the resources a slice does not name (Decision.Granted), so
// the total that holds is: for every class and every resource a slice of
// the class names, the sum over the consumer's granted slices of that
// class is within the class's cap.
type Budget struct {
	classes []Class
	used    map[string]corev1.ResourceList
}

// NewBudget starts an empty budget over a provider's classes (DefaultCaps
// under "default" when classes is empty, as Check).
func NewBudget(classes []Class) *Budget {
	if len(classes) == 0 {
		classes = []Class{{Name: DefaultClass, Caps: DefaultCaps()}}
	}
	return &Budget{classes: classes, used: map[string]corev1.ResourceList{}}
}

// Take adds resources of class to the budget if the class's total stays
// within its caps for every resource; otherwise it adds nothing and
// returns a message naming each resource that would go over, in name
// order.
func (b *Budget) Take(class string, resources corev1.ResourceList) (bool, string) {
	name := ClassName(class)
	var caps corev1.ResourceList
	for _, c := range b.classes {
		if c.Name == name {
			caps = c.Caps
		}
	}
	if caps == nil {
		return false, fmt.Sprintf("class %q is not offered", name)
	}
	used := b.used[name]
	next := corev1.ResourceList{}
	for r, q := range used {
		next[r] = q.DeepCopy()
	}
	var over []string
	names := make([]string, 0, len(resources))
	for r := range resources {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for _, r := range names {
		rn := corev1.ResourceName(r)
		sum := next[rn]
		sum = sum.DeepCopy()
		sum.Add(resources[rn])
		next[rn] = sum
		limit, ok := caps[rn]
		if !ok || sum.Cmp(limit) > 0 {
			req, before := resources[rn], used[rn]
			over = append(over, fmt.Sprintf("%s: %s requested and %s already granted in class %s make %s, over its cap %s",
				r, req.String(), before.String(), name, sum.String(), limit.String()))
		}
	}
	if len(over) > 0 {
		return false, strings.Join(over, "; ")
	}
	b.used[name] = next
	return true, ""
}

// Grant is a provider's decision on a slice request under the reviewed
// spec: the request must be the slice the spec lists for the peering, with
// its class and resources (Match: listed is nil when the spec does not
// list req.Name), then Liqo's decision holds (Decide: Tenant condition,
// class offered, per-slice caps), then the consumer's total in the class
// must stay within the class's caps (budget.Take; a denied request takes
// nothing). Callers decide a peering's slices in the spec's order, so the
// slices listed first are granted first. A denial for a reason of gitpeer
// carries it in Why and as the first word of Message.
func Grant(classes []Class, tenant authv1beta1.TenantCondition, listed *Listed, req Request, budget *Budget) Decision {
	if reason, msg := Match(listed, req.Name, req.Class, req.Resources); reason != "" {
		return Decision{Reason: reasonDenied, Why: reason, Message: reason + ": " + msg}
	}
	d := Decide(classes, tenant, req)
	if !d.Accepted {
		return d
	}
	if ok, msg := budget.Take(req.Class, req.Resources); !ok {
		return Decision{Reason: reasonDenied, Why: reasons.SliceOverClassTotal,
			Message: reasons.SliceOverClassTotal + ": slice " + req.Name + ": " + msg}
	}
	return d
}

// ReasonOf is the gitpeer reason a Resources condition's message starts
// with (Grant's "<Reason>: …"), or "".
func ReasonOf(message string) string {
	for _, r := range []string{reasons.SliceNotInSpec, reasons.SliceDiffersFromSpec, reasons.SliceOverClassTotal, reasons.SliceNameRefused} {
		if strings.HasPrefix(message, r+": ") {
			return r
		}
	}
	return ""
}
