package layout_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

func TestReadStatus(t *testing.T) {
	written := &layout.ClusterStatus{
		APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: "alpha",
		Peerings: []layout.PeeringStatus{{
			Consumer: "alpha", Provider: "beta", Role: layout.RoleConsumer, Step: layout.StepTenantSent,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Progressing", Message: "waiting for beta"}},
			Slices:     []layout.SliceStatus{{Name: "web", Authentication: "Pending", Resources: "Pending"}},
		}},
	}
	data, err := written.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tree := fstest.MapFS{
		"clusters/alpha/status.yaml": {Data: data},
		"clusters/beta/status.yaml":  {Data: data}, // alpha's status filed under beta
		"clusters/gamma/status.yaml": {Data: []byte("apiVersion: gitpeer.io/v1alpha1\nkind: ClusterStatus\nclusterID: gamma\nready: true\n")},
		"clusters/delta/status.yaml": {Data: []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Cluster\nclusterID: delta\n")},
		"clusters/omega/status.yaml": {Data: []byte("peerings: {")},
	}

	t.Run("reads back what was written", func(t *testing.T) {
		st, err := layout.ReadStatus(tree, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		ps := st.Find("alpha", "beta")
		if ps == nil || ps.Step != layout.StepTenantSent || len(ps.Conditions) != 1 || ps.Conditions[0].Message != "waiting for beta" || ps.Slices[0].Name != "web" {
			t.Fatalf("read %+v", st)
		}
		if st.Find("beta", "alpha") != nil {
			t.Error("Find ignores the direction of a peering")
		}
	})
	t.Run("gives an empty status for a cluster without one", func(t *testing.T) {
		st, err := layout.ReadStatus(tree, "epsilon")
		if err != nil || st.ClusterID != "epsilon" || st.Kind != layout.StatusKind || len(st.Peerings) != 0 {
			t.Fatalf("got %+v, %v", st, err)
		}
	})
	refusals := []struct{ name, id, field, says string }{
		{"refuses another cluster's status", "beta", "clusterID", "beta"},
		{"refuses an unknown field", "gamma", "", `unknown field "ready"`},
		{"refuses another kind", "delta", "kind", "ClusterStatus"},
		{"refuses malformed YAML", "omega", "", ""},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			st, err := layout.ReadStatus(tree, tc.id)
			var fe *layout.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %+v, %v; want a FieldError", st, err)
			}
			if want := "clusters/" + tc.id + "/status.yaml"; fe.File != want || fe.Field != tc.field {
				t.Errorf("error names %s field %q, want %s field %q", fe.File, fe.Field, want, tc.field)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("message %q does not say %q", err, tc.says)
			}
		})
	}
}

func TestStepsAreOrderedSoTheFurthestWins(t *testing.T) {
	order := []layout.Step{layout.StepPending, layout.StepNonceSent, layout.StepTenantSent, layout.StepIdentityIssued, layout.StepReady}
	for i := 1; i < len(order); i++ {
		if layout.StepOrder(order[i-1]) >= layout.StepOrder(order[i]) {
			t.Errorf("%s does not come before %s", order[i-1], order[i])
		}
	}
	for _, s := range []layout.Step{layout.StepRevoking, "Bogus", ""} {
		if layout.StepOrder(s) != layout.StepOrder(layout.StepPending) {
			t.Errorf("%q ranks %d, want Pending's", s, layout.StepOrder(s))
		}
	}
}
