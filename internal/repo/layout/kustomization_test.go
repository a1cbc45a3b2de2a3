package layout_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

func TestKustomizationListsResourcesSorted(t *testing.T) {
	data, err := layout.Kustomization([]string{"liqo/beta/tenant-beta.yaml", "liqo/alpha/namespace-liqo-tenant-alpha.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- liqo/alpha/namespace-liqo-tenant-alpha.yaml
- liqo/beta/tenant-beta.yaml
`
	if string(data) != want {
		t.Errorf("kustomization:\n%s\nwant:\n%s", data, want)
	}
	res, err := layout.ParseKustomization("k", data)
	if err != nil || !slices.Equal(res, []string{"liqo/alpha/namespace-liqo-tenant-alpha.yaml", "liqo/beta/tenant-beta.yaml"}) {
		t.Errorf("parsed back as %v, %v", res, err)
	}
}

func TestKustomizationDoesNotModifyItsInput(t *testing.T) {
	in := []string{"b.yaml", "a.yaml"}
	if _, err := layout.Kustomization(in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, []string{"b.yaml", "a.yaml"}) {
		t.Errorf("input reordered to %v", in)
	}
}

// TestParseKustomizationEnforcesTheApplyRule: a kustomization applies only
// the cluster's own verified copies, never the inbox and never anything
// outside the cluster's tree.
func TestParseKustomizationEnforcesTheApplyRule(t *testing.T) {
	const file = "clusters/alpha/kustomization.yaml"
	cases := []struct {
		name  string
		doc   string
		field string // "" when the kustomization is valid
		says  string
	}{
		{name: "accepts rendered objects", doc: "resources: [liqo/beta/tenant-beta.yaml, liqo/gamma]\n"},
		{name: "accepts no resources", doc: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"},
		{name: "accepts a file whose name starts like the inbox", doc: "resources: [inboxes.yaml, liqo/inbox/x.yaml]\n"},
		{name: "refuses an inbox artifact", doc: "resources: [liqo/beta/a.yaml, inbox/beta/tenant.yaml]\n",
			field: "resources[1]", says: "unverified inbox artifact"},
		{name: "refuses the whole inbox", doc: "resources: [inbox]\n", field: "resources[0]", says: "inbox"},
		{name: "refuses an inbox reached through ./", doc: "resources: [./inbox/beta/identity.yaml]\n", field: "resources[0]"},
		{name: "refuses an inbox reached through liqo/..", doc: "resources: [liqo/../inbox/beta/identity.yaml]\n", field: "resources[0]"},
		{name: "refuses a parent directory", doc: "resources: [..]\n", field: "resources[0]", says: "outside the cluster's tree"},
		{name: "refuses another cluster's tree", doc: "resources: [../beta/liqo/alpha/x.yaml]\n", field: "resources[0]", says: "outside"},
		{name: "refuses an escape hidden behind a subdirectory", doc: "resources: [liqo/../../beta/x.yaml]\n", field: "resources[0]"},
		{name: "refuses an absolute path", doc: "resources: [/etc/passwd]\n", field: "resources[0]", says: "outside"},
		{name: "refuses an https URL", doc: "resources: [https://example.com/evil.yaml]\n", field: "resources[0]", says: "outside"},
		{name: "refuses a git URL", doc: "resources: [\"git::https://example.com/org/repo//dir?ref=main\"]\n", field: "resources[0]"},
		{name: "refuses a component in the inbox", doc: "components: [inbox/beta]\n", says: "components"},
		{name: "refuses a base outside the tree", doc: "bases: [../beta]\n", says: "bases"},
		{name: "refuses a patch read from the inbox", doc: "patches: [{path: inbox/beta/tenant.yaml}]\n", says: "patches"},
		{name: "refuses a generator reading the inbox", doc: "configMapGenerator: [{name: x, files: [inbox/beta/nonce.yaml]}]\n", says: "configMapGenerator"},
		{name: "refuses a document that is not a kustomization", doc: "resources: {a: b}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := layout.ParseKustomization(file, []byte(tc.doc))
			valid := tc.field == "" && tc.says == "" && !strings.HasPrefix(tc.name, "refuses")
			if valid {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %v", res)
			}
			var fe *layout.FieldError
			if !errors.As(err, &fe) || fe.File != file || fe.Field != tc.field {
				t.Fatalf("error %v, want a FieldError on %s field %q", err, file, tc.field)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("message %q does not say %q", err, tc.says)
			}
		})
	}
}
