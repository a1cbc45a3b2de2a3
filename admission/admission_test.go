package admission

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/liqo"
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
	if got := p.Spec.Validations[0].Expression; got != "object.metadata.name in []" {
		t.Fatalf("first validation %q", got)
	}
	if len(p.Spec.Validations) != 2 {
		t.Fatalf("%d validations, want the name and consumer checks only", len(p.Spec.Validations))
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
