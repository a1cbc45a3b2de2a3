package attack

import (
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
)

// TestARepoWriterCannotWidenTheProvidersAdmissionPolicy: beta's admission
// policy for alpha admits exactly the slices beta granted (pool, web). A
// repo writer rewrites it on main to admit any slice. beta's applied branch
// never carries the widened policy, verify names the file, and beta's next
// pass puts its own back.
func TestARepoWriterCannotWidenTheProvidersAdmissionPolicy(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	const policyFile = "clusters/beta/liqo/alpha/validatingadmissionpolicy-gitpeer-resourceslices-alpha.yaml"
	w.forbid("beta", policyFile, "object.metadata.name != \"\"")
	signed := w.mustShow(policyFile)
	var p admissionv1.ValidatingAdmissionPolicy
	if err := yaml.Unmarshal(signed, &p); err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.Validations[0].Expression; got != `(has(request.subResource) && request.subResource == "status") || object.metadata.name in ["pool", "web"]` {
		t.Fatalf("beta's policy for alpha admits %s, want pool and web", got)
	}

	widened := p.DeepCopy()
	widened.Spec.Validations = []admissionv1.Validation{{Expression: `object.metadata.name != ""`}}
	w.attack("mallory <mallory@example.com>", "admit whatever alpha asks for\n", func(a *writer) {
		a.write(policyFile, encode(t, widened))
	})
	findings := w.verify()
	if !slices.ContainsFunc(findings, func(f verify.Finding) bool { return f.File == policyFile }) {
		t.Errorf("verify does not name the widened policy: %v", findings)
	}
	w.pass("beta") // checks beta's applied branch holds nothing forbidden
	if got, _ := w.showAt(layout.AppliedBranch("beta"), policyFile); string(got) != string(signed) {
		t.Errorf("beta's applied branch holds another policy:\n%s", got)
	}
	if got := w.mustShow(policyFile); string(got) != string(signed) {
		t.Errorf("beta's pass did not put its policy back on main:\n%s", got)
	}
}
