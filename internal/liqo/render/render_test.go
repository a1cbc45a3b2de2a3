package render_test

import (
	"slices"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

func files(objs []render.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.File())
	}
	return out
}

func tenant() *authv1beta1.Tenant {
	t := liqo.Tenant("alpha", []byte("key"), []byte("csr"), []byte("sig"))
	t.Annotations = map[string]string{"extra": "a consumer's own annotation"}
	return t
}

// TestProviderRendersWhatThePeeringsStateGrants: a provider renders the
// namespace and nonce Secret before any Tenant, Liqo's objects once one is
// accepted, and no bindings for a drained tenant (Liqo unbinds them).
func TestProviderRendersWhatThePeeringsStateGrants(t *testing.T) {
	waiting := render.Provider("beta", render.Provided{Consumer: "alpha", Nonce: "bm9uY2U="})
	if got, want := files(waiting), []string{"namespace-liqo-tenant-alpha.yaml", "secret-liqo-nonce.yaml"}; !slices.Equal(got, want) {
		t.Errorf("before a Tenant: %q, want %q", got, want)
	}

	accepted := render.Provider("beta", render.Provided{Consumer: "alpha", Nonce: "bm9uY2U=", Tenant: tenant(), Epoch: 7,
		Condition: authv1beta1.TenantConditionActive})
	want := []string{
		"namespace-liqo-tenant-alpha.yaml", "secret-liqo-nonce.yaml", "tenant-alpha.yaml",
		"rolebinding-liqo-binding-liqo-remote-controlplane.yaml", "clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml",
		"validatingadmissionpolicy-gitpeer-resourceslices-alpha.yaml", "validatingadmissionpolicybinding-gitpeer-resourceslices-alpha.yaml",
	}
	if got := files(accepted); !slices.Equal(got, want) {
		t.Errorf("accepted: %q, want %q", got, want)
	}
	rendered := accepted[2].Object.(*authv1beta1.Tenant)
	if rendered.Spec.TenantCondition != "" || len(rendered.Annotations) != 1 || rendered.Annotations[artifact.AnnotationNonceEpoch] != "7" {
		t.Errorf("rendered Tenant: condition %q, annotations %v; want no condition for Active and only the nonce epoch", rendered.Spec.TenantCondition, rendered.Annotations)
	}

	drained := render.Provider("beta", render.Provided{Consumer: "alpha", Tenant: tenant(), Epoch: 7, Condition: authv1beta1.TenantConditionDrained})
	for _, o := range drained {
		if o.Kind == render.KindRoleBinding || o.Kind == render.KindClusterRoleBinding || o.Kind == render.KindSecret {
			t.Errorf("a drained tenant of a removed peering renders %s %s", o.Kind, o.Name)
		}
	}
	if got := drained[1].Object.(*authv1beta1.Tenant).Spec.TenantCondition; got != authv1beta1.TenantConditionDrained {
		t.Errorf("drained Tenant's condition %q", got)
	}
}

// TestConsumerRendersItsIdentityThenEachAcceptedSlice: the names are
// Liqo's (controlplane-<provider>, resourceslice-<slice>), and each slice's
// objects name the slice for plan's step.
func TestConsumerRendersItsIdentityThenEachAcceptedSlice(t *testing.T) {
	params := authv1beta1.AuthParams{APIServer: "https://beta.example:6443"}
	req := liqo.ResourceSlice("pool", "alpha", "beta", "default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, true, nil)
	objs := render.Consumer("alpha", render.Consumed{Provider: "beta", Identity: &params,
		Slices: []render.Slice{{Name: "pool", Request: req, AuthParams: &params}}})
	want := []string{"namespace-liqo-tenant-beta.yaml", "identity-controlplane-beta.yaml", "resourceslice-pool.yaml", "identity-resourceslice-pool.yaml"}
	if got := files(objs); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if objs[1].Slice != "" || objs[2].Slice != "pool" || objs[3].Slice != "pool" {
		t.Errorf("slices named %q %q %q, want the slice's objects to name it", objs[1].Slice, objs[2].Slice, objs[3].Slice)
	}
	if got := objs[1].Path("alpha"); got != "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml" {
		t.Errorf("path %s", got)
	}
	if none := render.Consumer("alpha", render.Consumed{Provider: "beta"}); len(none) != 0 {
		t.Errorf("before an Identity is verified: %q, want nothing", files(none))
	}
}

// TestAdmissionPolicyAdmitsTheGrants: the policy rendered is package
// admission's for exactly the grants given.
func TestAdmissionPolicyAdmitsTheGrants(t *testing.T) {
	grants := []admission.Grant{{Name: "pool", Class: "default"}}
	objs := render.Provider("beta", render.Provided{Consumer: "alpha", Tenant: tenant(), Grants: grants})
	i := slices.IndexFunc(objs, func(o render.Object) bool { return o.Kind == render.KindValidatingAdmissionPolicy })
	got, err := liqo.Encode(objs[i].Object)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := liqo.Encode(admission.Policy("beta", "alpha", liqo.TenantNamespace("alpha"), grants))
	if string(got) != string(want) {
		t.Errorf("policy differs from admission.Policy for the grants:\n%s", got)
	}
	if s := render.Shared(); len(s) != 2 || s[0].Kind != render.KindClusterRole || s[0].Peer != render.SharedDir {
		t.Errorf("shared objects %+v", s)
	}
}
