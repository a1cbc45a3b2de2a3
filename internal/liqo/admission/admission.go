// Package admission renders the admission policy by which a provider's own
// API server holds Liqo to the reviewed spec: a ValidatingAdmissionPolicy
// (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) and its binding
// per consumer, admitting in the consumer's tenant namespace only the
// ResourceSlices the provider's reconciler granted, each with exactly the
// class and resources granted, and no status write that grants more than
// that from anyone but the provider's own Liqo.
//
// Why it exists: Liqo's crd-replicator creates, with the consumer's
// control-plane identity, whatever ResourceSlice the consumer cluster holds
// in the provider's tenant namespace, and Liqo's remoteresourceslice
// controller signs and accepts any slice of the default class there
// (pkg/liqo-controller-manager/authentication/remoteresourceslice-controller).
// RBAC cannot narrow that: a create carries no object name to authorize. So
// whoever administers a consumer cluster (`liqoctl create resourceslice`)
// would get a certificate and a VirtualNode the spec never granted. With the
// policy applied, such a slice never exists on the provider: no certificate,
// no status, so no VirtualNode on the consumer either (docs/trust.md,
// "The reviewed spec binds Liqo").
//
// The same consumer identity holds every verb on resourceslices/status
// (Liqo's remote-controlplane ClusterRole), and the provider's Liqo sizes
// the consumer's offloading Quota from a slice's status.resources
// (quotacreator-controller), which is replicated back to size the
// consumer's VirtualNode; Liqo reconciles a slice only when its spec
// changes, so nothing in Liqo corrects a status written by someone else.
// Liqo's own writer of that status is its controller-manager
// (LiqoControllerManager); nobody else has a reason to write it: the
// consumer's crd-replicator copies status from the provider, never to it.
//
// The objects are pure functions of their arguments, byte-stable for the
// same grants, so that a pass that changes nothing commits nothing.
package admission

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
)

// Names of what the policy matches and marks.
const (
	// NamePrefix starts the names of a consumer's policy and binding:
	// "gitpeer-resourceslices-<consumer>".
	NamePrefix = "gitpeer-resourceslices-"

	// labelNamespaceName is the label the API server sets on every
	// Namespace (Kubernetes ≥ 1.22): it selects the tenant namespace by name.
	labelNamespaceName = "kubernetes.io/metadata.name"

	// LiqoControllerManager is the user Liqo's controller-manager writes a
	// replicated ResourceSlice's status as: the ServiceAccount
	// liqo-controller-manager its Helm chart (v1.x, no nameOverride)
	// creates in Liqo's default namespace "liqo". Its status writes are the
	// only ones the policy does not check.
	LiqoControllerManager = "system:serviceaccount:liqo:liqo-controller-manager"

	// accepted is the status of a Liqo ResourceSlice condition that grants
	// (authv1beta1.ResourceSliceConditionAccepted).
	accepted = "Accepted"
)

// Grant is one ResourceSlice a provider admits for a consumer: its name (a
// DNS-1123 label), its class ("" reads as policy.DefaultClass), the
// resources its spec must request, Kubernetes quantities by resource name,
// exactly as granted, and the most its status may grant.
type Grant struct {
	Name      string
	Class     string
	Resources corev1.ResourceList
	// Granted is the most of each resource the slice's status.resources may
	// hold: the class's caps overlaid by Resources, as the provider's
	// answer grants them (policy.Decision.Granted) and as Liqo overlays its
	// defaults with the slice's spec. Resources overlays it here too, so nil
	// reads as Resources alone.
	Granted corev1.ResourceList
}

// limits is g.Granted overlaid by g.Resources: what the slice's status may
// hold at most.
func (g Grant) limits() corev1.ResourceList {
	out := corev1.ResourceList{}
	for r, q := range g.Granted {
		out[r] = q
	}
	for r, q := range g.Resources {
		out[r] = q
	}
	return out
}

// Name is the name of consumer's policy and binding.
func Name(consumer string) string { return NamePrefix + consumer }

// Policy is the ValidatingAdmissionPolicy that admits, on CREATE and on any
// UPDATE that changes the spec, a ResourceSlice in tenantNamespace only if
// it is one of grants (by name) with the granted class and exactly the
// granted resources (compared as quantities: "4000m" is "4"), and names
// consumer as its consumer. Updates of the main resource that leave the
// spec alone (Liqo's finalizers, labels) and deletions are never matched,
// so a slice the spec no longer grants can still be cleaned up. With no
// grants it refuses every slice.
//
// Writes of the status subresource are checked too, unless they come from
// LiqoControllerManager. Such a write may not grant more than the spec:
//   - each resource of status.resources is at most what the grant allows
//     (Grant.Granted overlaid by Grant.Resources), or at most what the
//     status held before the write (lowering, or leaving, what Liqo wrote
//     is not a grant); a resource the grant does not name, or any resource
//     of a slice not granted, may not be added or raised;
//   - a condition (Authentication, Resources) may be Accepted only on a
//     granted slice, or if it was Accepted before;
//   - status.authParams (the slice's certificate) may be set only on a
//     granted slice, or left as it was.
//
// The main resource cannot change a status (Liqo's CRD has the status
// subresource, so the API server keeps the old status on such an update).
//
// provider only names the cluster in the refusal messages. The policy
// fails closed (failurePolicy Fail): a value the quantity library cannot
// parse refuses the write.
func Policy(provider, consumer, tenantNamespace string, grants []Grant) *admissionv1.ValidatingAdmissionPolicy {
	grants = sorted(grants)
	names := make([]string, len(grants))
	for i, g := range grants {
		names[i] = g.Name
	}
	granted := "none"
	if len(names) > 0 {
		granted = strings.Join(names, ", ")
	}
	fail := admissionv1.Fail
	forbidden := metav1.StatusReasonForbidden
	// Spec checks are for writes of the main resource; status checks for
	// writes of the status subresource, where the spec cannot change.
	const specWrite, statusWrite = isStatusWrite + " || ", "!" + isStatusWrite + " || "
	validations := []admissionv1.Validation{
		{
			Expression: specWrite + fmt.Sprintf("object.metadata.name in %s", celList(names)),
			MessageExpression: fmt.Sprintf(`"ResourceSlice " + object.metadata.name + %s`,
				cel(fmt.Sprintf(" is not granted to %s by the reviewed peering spec (granted: %s): only what %s's gitpeer reconciler accepted may be created; see gitpeer status on %s", consumer, granted, provider, provider))),
			Reason: &forbidden,
		},
		{
			Expression: specWrite + fmt.Sprintf("has(object.spec.consumerClusterID) && object.spec.consumerClusterID == %s", cel(consumer)),
			Message:    fmt.Sprintf("a ResourceSlice in %s must name %s as spec.consumerClusterID", tenantNamespace, consumer),
			Reason:     &forbidden,
		},
	}
	for _, g := range grants {
		validations = append(validations, admissionv1.Validation{
			Expression: specWrite + fmt.Sprintf("object.metadata.name != %s || (%s && %s)", cel(g.Name), classIs(g.Class), resourcesAre(g.Resources)),
			Message:    fmt.Sprintf("ResourceSlice %s must request exactly what the reviewed peering spec grants %s: %s", g.Name, consumer, describe(g)),
			Reason:     &forbidden,
		})
	}
	only := fmt.Sprintf("; only %s's Liqo (%s) writes a slice's status beyond that", provider, LiqoControllerManager)
	validations = append(validations,
		admissionv1.Validation{
			Expression: statusWrite + statusResourcesWithin,
			MessageExpression: fmt.Sprintf(`"ResourceSlice " + object.metadata.name + %s + (object.metadata.name in variables.grantedText ? variables.grantedText[object.metadata.name] : "nothing") + %s`,
				cel(fmt.Sprintf(": status.resources may not grant more than the reviewed peering spec grants %s for it (", consumer)),
				cel(") nor raise what the status held"+only)),
			Reason: &forbidden,
		},
		admissionv1.Validation{
			Expression: statusWrite + "object.metadata.name in variables.granted || " + statusConditionsKept,
			MessageExpression: fmt.Sprintf(`"ResourceSlice " + object.metadata.name + %s`,
				cel(fmt.Sprintf(": status.conditions may not accept a slice the reviewed peering spec does not grant %s (granted: %s)%s", consumer, granted, only))),
			Reason: &forbidden,
		},
		admissionv1.Validation{
			Expression: statusWrite + "object.metadata.name in variables.granted || " + statusAuthParamsKept,
			MessageExpression: fmt.Sprintf(`"ResourceSlice " + object.metadata.name + %s`,
				cel(fmt.Sprintf(": status.authParams may not be set on a slice the reviewed peering spec does not grant %s (granted: %s)%s", consumer, granted, only))),
			Reason: &forbidden,
		},
	)
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta(consumer),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: tenantNamespace}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule: admissionv1.Rule{
						APIGroups:   []string{"authentication.liqo.io"},
						APIVersions: []string{"*"},
						Resources:   []string{"resourceslices", "resourceslices/status"},
					},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{
				{
					Name:       "changes-the-spec-or-writes-the-status",
					Expression: `request.operation == "CREATE" || ` + isStatusWrite + ` || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec`,
				},
				{
					Name:       "not-the-providers-liqo-writing-the-status",
					Expression: fmt.Sprintf(`!%s || request.userInfo.username != %s`, isStatusWrite, cel(LiqoControllerManager)),
				},
			},
			Variables: []admissionv1.Variable{
				{Name: "granted", Expression: grantedMap(grants)},
				{Name: "grantedText", Expression: grantedText(grants)},
			},
			Validations: validations,
		},
	}
}

// isStatusWrite tells a write of the status subresource. The API server
// leaves request.subResource out of a request for the main resource, and
// reading a field that is not there is an evaluation error (which
// failurePolicy Fail turns into a refusal), hence has().
const isStatusWrite = `(has(request.subResource) && request.subResource == "status")`

// The status checks, on a write of the status subresource. Variable
// granted maps each granted slice's name to the most of each resource its
// status may hold (quantity strings); values of status.resources may be
// integers (int-or-string), hence string().
const (
	statusResourcesWithin = `!has(object.status) || !has(object.status.resources) || object.status.resources.all(r, ` +
		`(object.metadata.name in variables.granted && r in variables.granted[object.metadata.name] && ` +
		`quantity(string(object.status.resources[r])).compareTo(quantity(variables.granted[object.metadata.name][r])) <= 0) || ` +
		`(has(oldObject.status) && has(oldObject.status.resources) && r in oldObject.status.resources && ` +
		`quantity(string(object.status.resources[r])).compareTo(quantity(string(oldObject.status.resources[r]))) <= 0))`
	statusConditionsKept = `!has(object.status) || !has(object.status.conditions) || object.status.conditions.all(c, ` +
		`!has(c.status) || c.status != "` + accepted + `" || (has(c.type) && has(oldObject.status) && has(oldObject.status.conditions) && ` +
		`oldObject.status.conditions.exists(o, has(o.type) && o.type == c.type && has(o.status) && o.status == "` + accepted + `")))`
	statusAuthParamsKept = `!has(object.status) || !has(object.status.authParams) || ` +
		`(has(oldObject.status) && has(oldObject.status.authParams) && object.status.authParams == oldObject.status.authParams)`
)

// grantedMap is a CEL map from each granted slice's name to the most its
// status may hold of each resource (Grant.limits), as quantity strings.
func grantedMap(grants []Grant) string {
	entries := make([]string, len(grants))
	for i, g := range grants {
		limits := g.limits()
		kv := make([]string, 0, len(limits))
		for _, name := range resourceNames(limits) {
			q := limits[corev1.ResourceName(name)]
			kv = append(kv, cel(name)+": "+cel(q.String()))
		}
		entries[i] = cel(g.Name) + ": {" + strings.Join(kv, ", ") + "}"
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// grantedText is a CEL map from each granted slice's name to the words the
// status refusal uses for what its status may hold.
func grantedText(grants []Grant) string {
	entries := make([]string, len(grants))
	for i, g := range grants {
		limits := g.limits()
		parts := make([]string, 0, len(limits))
		for _, name := range resourceNames(limits) {
			q := limits[corev1.ResourceName(name)]
			parts = append(parts, name+" "+q.String())
		}
		text := "nothing"
		if len(parts) > 0 {
			text = strings.Join(parts, ", ")
		}
		entries[i] = cel(g.Name) + ": " + cel(text)
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// Binding binds consumer's Policy cluster-wide (its match constraints
// narrow it to the tenant namespace), denying what it refuses.
func Binding(consumer string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: meta(consumer),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        Name(consumer),
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

func meta(consumer string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:   Name(consumer),
		Labels: map[string]string{liqo.LabelManagedBy: "gitpeer", liqo.LabelRemoteClusterID: consumer},
	}
}

// sorted returns grants by name, without changing the caller's slice.
func sorted(grants []Grant) []Grant {
	out := append([]Grant(nil), grants...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// classIs tests the slice's class as Liqo reads it (policy.ClassName):
// absent or "" is policy.DefaultClass.
func classIs(class string) string {
	return fmt.Sprintf(`(has(object.spec.class) && object.spec.class != "" ? object.spec.class : %s) == %s`, cel(policy.DefaultClass), cel(policy.ClassName(class)))
}

// resourcesAre tests that the slice requests exactly want: the same
// resource names, each an equal quantity. A value the quantity library
// cannot parse is an evaluation error, which the policy's failurePolicy
// turns into a refusal.
func resourcesAre(want corev1.ResourceList) string {
	if len(want) == 0 {
		return "(!has(object.spec.resources) || size(object.spec.resources) == 0)"
	}
	terms := []string{"has(object.spec.resources)", fmt.Sprintf("size(object.spec.resources) == %d", len(want))}
	for _, name := range resourceNames(want) {
		q := want[corev1.ResourceName(name)]
		terms = append(terms,
			fmt.Sprintf("%s in object.spec.resources", cel(name)),
			fmt.Sprintf("quantity(string(object.spec.resources[%s])).compareTo(quantity(%s)) == 0", cel(name), cel(q.String())))
	}
	return strings.Join(terms, " && ")
}

// describe says what g grants, for the refusal message.
func describe(g Grant) string {
	parts := []string{"class " + policy.ClassName(g.Class)}
	for _, name := range resourceNames(g.Resources) {
		q := g.Resources[corev1.ResourceName(name)]
		parts = append(parts, name+" "+q.String())
	}
	return strings.Join(parts, ", ")
}

func resourceNames(rl corev1.ResourceList) []string {
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	return names
}

// cel is s as a CEL string literal. CEL's double-quoted strings take the
// escapes strconv.Quote writes (\\, \", \n, \xHH, \uHHHH, \UHHHHHHHH), so
// no value can end the literal early; names and quantities are validated
// before they get here anyway.
func cel(s string) string { return strconv.Quote(s) }

// celList is names as a CEL list of string literals.
func celList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = cel(n)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
