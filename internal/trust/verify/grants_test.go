package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

const (
	webAnswer   = "clusters/alpha/inbox/beta/resourceslice-web.status.yaml"
	webRendered = "clusters/alpha/liqo/beta/resourceslice-web.yaml"
	webIdentity = "clusters/alpha/liqo/beta/identity-resourceslice-web.yaml"
	webSpec     = `{name: "web", resources: {cpu: "2", memory: "4Gi"}},`
)

// editSpec replaces old by new in the checkout's peering.cue.
func editSpec(t *testing.T, dir, old, new string) {
	t.Helper()
	p := filepath.Join(dir, "peering.cue")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("peering.cue lacks %q", old)
	}
	writeFile(t, p, strings.Replace(string(data), old, new, 1))
}

// mustHave fails unless a finding names file and field with reason.
func mustHave(t *testing.T, findings []verify.Finding, file, field, reason string) {
	t.Helper()
	for _, f := range findings {
		if f.File == file && f.Field == field && f.Reason == reason {
			return
		}
	}
	t.Errorf("no %s finding on %s field %q; got:\n%s", reason, file, field, list(findings))
}

func TestAGrantTheSpecDoesNotListIsAFinding(t *testing.T) {
	dir := checkout(t)
	editSpec(t, dir, webSpec, "")
	findings := run(t, dir)
	mustHave(t, findings, webAnswer, "spec", reasons.SliceNotInSpec)
	mustHave(t, findings, webRendered, "spec", reasons.SliceNotInSpec)
	mustHave(t, findings, webIdentity, "", reasons.SliceNotInSpec)
}

func TestAGrantWithOtherResourcesThanTheSpecsIsAFinding(t *testing.T) {
	dir := checkout(t)
	editSpec(t, dir, webSpec, `{name: "web", resources: {cpu: "1", memory: "4Gi"}},`)
	findings := run(t, dir)
	mustHave(t, findings, webAnswer, "spec", reasons.SliceDiffersFromSpec)
	mustHave(t, findings, webRendered, "spec", reasons.SliceDiffersFromSpec)
	mustHave(t, findings, webIdentity, "", reasons.SliceDiffersFromSpec)
	if !has(findings, webAnswer, "spec", "resources {cpu=2, memory=4Gi}, the spec's are {cpu=1, memory=4Gi}") {
		t.Errorf("the finding does not say what differs:\n%s", list(findings))
	}
}

func TestAnAnswerGrantingMoreThanTheClassIsAFinding(t *testing.T) {
	dir := checkout(t)
	editFile(webAnswer, func(t *testing.T, data []byte) []byte {
		rs, err := liqo.DecodeResourceSlice(data)
		if err != nil {
			t.Fatal(err)
		}
		rs.Status.Resources["memory"] = resource.MustParse("64Gi")
		return encode(t, rs)
	})(t, dir)
	findings := run(t, dir)
	mustHave(t, findings, webAnswer, "status.resources", reasons.SliceDiffersFromSpec)
	mustHave(t, findings, webIdentity, "", reasons.SliceDiffersFromSpec)
}

func TestGrantsOverTheClassTotalAreAFinding(t *testing.T) {
	dir := checkout(t)
	// A second grant of beta's default class to alpha, hand-made from web's
	// and listed in the spec: web's 2 cpu and its 3 make 5, over Liqo's
	// default cap 4, though each is within it.
	data, err := os.ReadFile(filepath.Join(dir, webAnswer))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := liqo.DecodeResourceSlice(data)
	if err != nil {
		t.Fatal(err)
	}
	rs.Name = "web2"
	rs.Spec.Resources["cpu"] = resource.MustParse("3")
	rs.Status.Resources["cpu"] = resource.MustParse("3")
	second := "clusters/alpha/inbox/beta/resourceslice-web2.status.yaml"
	writeFile(t, filepath.Join(dir, second), string(encode(t, rs)))
	editSpec(t, dir, webSpec, webSpec+`{name: "web2", resources: {cpu: "3", memory: "4Gi"}},`)
	findings := run(t, dir)
	mustHave(t, findings, second, "spec", reasons.SliceOverClassTotal)
	if has(findings, webAnswer, "spec", "") || has(findings, webAnswer, "spec", reasons.SliceOverClassTotal) {
		t.Errorf("web, listed first, is named:\n%s", list(findings))
	}
}

func TestASpecChangeUnderReviewIsNotAFindingOfTheGrantItWithdraws(t *testing.T) {
	dir := checkout(t)
	git := func(args ...string) {
		t.Helper()
		testgit.Git(t, dir, args...)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	editSpec(t, dir, webSpec, "")
	git("commit", "-q", "-am", "drop slice web")
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := verify.Check(dir, spec, verify.Options{Now: time.Now(), Base: "HEAD~1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if strings.Contains(f.File, "web") {
			t.Errorf("the grant the change withdraws is a finding: %s", f)
		}
	}
	// Without the base, the tree grants what the spec does not list.
	mustHave(t, verify.Tree(layout.NewTree(dir), spec, time.Now()), webAnswer, "spec", reasons.SliceNotInSpec)
}

func TestARenderedSliceWithoutAGrantIsAFinding(t *testing.T) {
	dir := checkout(t)
	// gamma denied delta's bigbatch (over its class's cap); delta renders it
	// anyway, exactly as it requested it.
	data, err := os.ReadFile(filepath.Join(dir, "clusters/gamma/inbox/delta/resourceslice-bigbatch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rendered := "clusters/delta/liqo/gamma/resourceslice-bigbatch.yaml"
	writeFile(t, filepath.Join(dir, rendered), string(data))
	mustHave(t, run(t, dir), rendered, "", reasons.GrantNotAccepted)
}

func TestAGrantToADrainedTenantIsAFinding(t *testing.T) {
	dir := checkout(t)
	editSpec(t, dir, `{consumer: "alpha", provider: "beta", slices: [`, `{consumer: "alpha", provider: "beta", tenantCondition: "Drained", slices: [`)
	findings := run(t, dir)
	mustHave(t, findings, webAnswer, "spec", reasons.GrantBeyondPolicy)
	if !has(findings, webAnswer, "spec", "drained") {
		t.Errorf("the finding does not say why:\n%s", list(findings))
	}
}
