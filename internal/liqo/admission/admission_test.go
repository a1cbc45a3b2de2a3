package admission

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

func grant(name, class string, kv ...string) Grant {
	g := Grant{Name: name, Class: class, Resources: corev1.ResourceList{}}
	for i := 0; i+1 < len(kv); i += 2 {
		g.Resources[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return g
}

// The policy is what the provider commits: the same grants in any order
// give the same bytes, so a pass that changes nothing commits nothing.
func TestPolicyBytesDoNotDependOnTheGrantsOrder(t *testing.T) {
	web, batch := grant("web", "", "cpu", "2", "memory", "4Gi"), grant("batch", "gpu", "nvidia.com/gpu", "1", "cpu", "8")
	a, err := liqo.Encode(Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{web, batch}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := liqo.Encode(Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{batch, web}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("order changed the policy:\n%s\n---\n%s", a, b)
	}
	p := Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{web, batch})
	var said []string
	for _, v := range p.Spec.Validations {
		said = append(said, v.Expression, v.Message)
	}
	said = append(said, p.Spec.MatchConstraints.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"], string(*p.Spec.FailurePolicy))
	all := strings.Join(said, "\n")
	for _, want := range []string{
		`object.metadata.name in ["batch", "web"]`,
		"liqo-tenant-alpha",
		"Fail",
		`ResourceSlice web must request exactly what the reviewed peering spec grants alpha: class default, cpu 2, memory 4Gi`,
		`ResourceSlice batch must request exactly what the reviewed peering spec grants alpha: class gpu, cpu 8, nvidia.com/gpu 1`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("policy lacks %s:\n%s", want, all)
		}
	}
}

// With nothing granted (a new tenant, a drained one) no slice is admitted.
func TestNoGrantsAdmitNoSlice(t *testing.T) {
	p := Policy("beta", "alpha", "liqo-tenant-alpha", nil)
	if got := p.Spec.Validations[0].Expression; got != `(has(request.subResource) && request.subResource == "status") || object.metadata.name in []` {
		t.Fatalf("first validation %q", got)
	}
	if len(p.Spec.Validations) != 5 {
		t.Fatalf("%d validations, want the name and consumer checks and the three status checks only", len(p.Spec.Validations))
	}
	for _, v := range p.Spec.Variables {
		if v.Expression != "{}" {
			t.Errorf("variable %s is %s, want {}: nothing granted", v.Name, v.Expression)
		}
	}
	if Binding("alpha").Spec.PolicyName != p.Name || p.Name != "gitpeer-resourceslices-alpha" {
		t.Fatalf("binding names %q, policy is %q", Binding("alpha").Spec.PolicyName, p.Name)
	}
}

// A value with quotes or backslashes stays one CEL string literal: it
// cannot end the literal and add an expression of its own.
func TestValuesStayInsideTheirLiteral(t *testing.T) {
	for _, v := range []string{`a" || true || "`, `a\" || true`, "a\n|| true", `'`} {
		lit := cel(v)
		back, err := strconv.Unquote(lit)
		if err != nil || back != v {
			t.Errorf("cel(%q) = %s reads back as %q, %v", v, lit, back, err)
		}
		if strings.Count(lit, `"`)-strings.Count(lit, `\"`) != 2 {
			t.Errorf("cel(%q) = %s has unescaped quotes inside", v, lit)
		}
	}
}

// A status write is checked unless it is the provider's Liqo's: the policy
// matches the status subresource, and only Liqo's controller-manager's
// status writes are left out; its spec writes are matched as anyone's.
func TestStatusWritesAreCheckedExceptLiqos(t *testing.T) {
	p := Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{grant("web", "", "cpu", "2")})
	rules := p.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || strings.Join(rules[0].Resources, ",") != "resourceslices,resourceslices/status" {
		t.Fatalf("policy matches %+v, want resourceslices and resourceslices/status", rules)
	}
	var conds []string
	for _, c := range p.Spec.MatchConditions {
		conds = append(conds, c.Expression)
	}
	want := []string{
		`request.operation == "CREATE" || (has(request.subResource) && request.subResource == "status") || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec`,
		`!(has(request.subResource) && request.subResource == "status") || request.userInfo.username != "system:serviceaccount:liqo:liqo-controller-manager"`,
	}
	if strings.Join(conds, "\n") != strings.Join(want, "\n") {
		t.Errorf("match conditions:\n%s\nwant:\n%s", strings.Join(conds, "\n"), strings.Join(want, "\n"))
	}
	// Each validation is for one kind of write: the spec checks pass a
	// status write (its spec cannot change), the status checks a spec write.
	for i, v := range p.Spec.Validations {
		guard := `(has(request.subResource) && request.subResource == "status") || `
		if i >= len(p.Spec.Validations)-3 {
			guard = `!(has(request.subResource) && request.subResource == "status") || `
		}
		if !strings.HasPrefix(v.Expression, guard) {
			t.Errorf("validation %d does not start with %q: %s", i, guard, v.Expression)
		}
	}
}

// The API server leaves request.subResource out of a request for the main
// resource, where reading it is an error that refuses the request: every
// expression tests has() first.
func TestSubResourceIsReadOnlyWhereItIsSet(t *testing.T) {
	p := Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{grant("web", "", "cpu", "2")})
	exprs := []string{}
	for _, c := range p.Spec.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	for _, v := range p.Spec.Validations {
		exprs = append(exprs, v.Expression, v.MessageExpression)
	}
	for _, e := range exprs {
		if n, guarded := strings.Count(e, "request.subResource"), strings.Count(e, "has(request.subResource) && request.subResource"); n != 2*guarded {
			t.Errorf("request.subResource read without has(): %s", e)
		}
	}
}

// What a slice's status may hold is the grant's class caps overlaid by
// the resources requested (a request below the cap lowers it); a grant
// without caps holds its resources only. The refusal says it in words.
func TestStatusBoundIsTheCapsOverlaidByTheRequest(t *testing.T) {
	web := grant("web", "", "cpu", "2", "memory", "4Gi")
	web.Granted = grant("", "", "cpu", "4", "memory", "8Gi", "pods", "110").Resources
	batch := grant("batch", "gpu", "nvidia.com/gpu", "1")
	p := Policy("beta", "alpha", "liqo-tenant-alpha", []Grant{web, batch})
	got := map[string]string{}
	for _, v := range p.Spec.Variables {
		got[v.Name] = v.Expression
	}
	if want := `{"batch": {"nvidia.com/gpu": "1"}, "web": {"cpu": "2", "memory": "4Gi", "pods": "110"}}`; got["granted"] != want {
		t.Errorf("variable granted = %s, want %s", got["granted"], want)
	}
	if want := `{"batch": "nvidia.com/gpu 1", "web": "cpu 2, memory 4Gi, pods 110"}`; got["grantedText"] != want {
		t.Errorf("variable grantedText = %s, want %s", got["grantedText"], want)
	}
	var msgs []string
	for _, v := range p.Spec.Validations {
		msgs = append(msgs, v.MessageExpression)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`": status.resources may not grant more than the reviewed peering spec grants alpha for it ("`,
		`": status.conditions may not accept a slice the reviewed peering spec does not grant alpha (granted: batch, web); only beta's Liqo (system:serviceaccount:liqo:liqo-controller-manager) writes a slice's status beyond that"`,
		`": status.authParams may not be set on a slice the reviewed peering spec does not grant alpha (granted: batch, web)`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("messages lack %s:\n%s", want, all)
		}
	}
	if web.Granted.Cpu().String() != "4" {
		t.Errorf("Policy changed the caller's grant: cpu %s", web.Granted.Cpu())
	}
}
