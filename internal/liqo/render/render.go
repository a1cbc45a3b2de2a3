// Package render is the one list of the Liqo objects gitpeer renders for a
// peering, as Liqo's authentication/forge is for its controllers and
// liqoctl: the reconciler writes exactly these objects under
// clusters/<self>/liqo/<peer>/, verify accepts exactly these, and plan
// names a change's steps from their kinds (reconcile.Step). Adding a Liqo
// object to a peering touches this package only, and reconcile's steps
// when writing it is a step of its own.
package render

import (
	"path"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// SharedDir is the directory under clusters/<self>/liqo/ for objects that
// serve every peering (Liqo's ClusterRoles), not one peer. Its leading
// underscore keeps it apart from cluster IDs, which are DNS labels.
const SharedDir = "_shared"

// Kinds of the objects a peering renders that Kubernetes' core and RBAC
// groups define; Liqo's own come from its API package.
const (
	KindNamespace                        = "Namespace"
	KindSecret                           = "Secret"
	KindRoleBinding                      = "RoleBinding"
	KindClusterRole                      = "ClusterRole"
	KindClusterRoleBinding               = "ClusterRoleBinding"
	KindValidatingAdmissionPolicy        = "ValidatingAdmissionPolicy"
	KindValidatingAdmissionPolicyBinding = "ValidatingAdmissionPolicyBinding"
)

// Object is one object rendered for a peering.
type Object struct {
	// Peer is the directory under clusters/<self>/liqo/ that holds it: the
	// peer's cluster ID, or SharedDir.
	Peer string
	// Kind and Name are the object's; File is derived from them.
	Kind, Name string
	// Slice is the ResourceSlice the object serves (the slice itself and
	// its Identity); "" for every other object.
	Slice string
	// Object is the Kubernetes object, to be encoded by liqo.Encode.
	Object any
}

// File is the object's file name in its peer directory,
// liqo.ObjectFileName: "<lowercased kind>-<name>.yaml".
func (o Object) File() string { return liqo.ObjectFileName(o.Kind, o.Name) }

// Path is the object's path in the repo when cluster self renders it.
func (o Object) Path(self string) string { return Path(self, o.Peer, o.Kind, o.Name) }

// Path is where cluster self renders the object of kind and name for peer:
// clusters/<self>/liqo/<peer>/<liqo.ObjectFileName>. Readers of what a pass
// rendered before look it up there.
func Path(self, peer, kind, name string) string {
	return path.Join(layout.PeerDir(self, peer), liqo.ObjectFileName(kind, name))
}

// Provided is the state of a peering on its provider's side, from which
// Provider renders.
type Provided struct {
	// Consumer is the consumer's cluster ID.
	Consumer string
	// Nonce is the value of the nonce the provider issued (base64 of 64
	// random bytes, artifact.Nonce.Value); "" renders no nonce Secret, as
	// for a peering removed from the spec.
	Nonce string
	// Tenant is the consumer's verified Tenant; nil while none is
	// accepted, which renders neither the Tenant nor its bindings and
	// admission policy. Only its key, CSR and signature are rendered, with
	// Epoch: nothing else a consumer wrote rides along.
	Tenant *authv1beta1.Tenant
	// Epoch is the epoch of the nonce Tenant answers (artifact.TenantEpoch).
	Epoch uint64
	// Condition is the Tenant's condition; Active and "" both render the
	// field empty, as Liqo reads it. A Drained tenant's bindings are not
	// rendered: Liqo unbinds a drained tenant's roles.
	Condition authv1beta1.TenantCondition
	// Grants are the slices the provider's API server admits in the
	// tenant namespace (package admission); none for a drained tenant.
	Grants []admission.Grant
}

// Provider lists what provider renders for s.Consumer, in a fixed order:
// the tenant namespace, the nonce Secret, then once a Tenant is accepted
// the Tenant, its RoleBinding and ClusterRoleBinding (not when drained),
// and the admission policy and its binding.
func Provider(provider string, s Provided) []Object {
	c := s.Consumer
	out := []Object{{Peer: c, Kind: KindNamespace, Name: liqo.TenantNamespace(c), Object: liqo.Namespace(c)}}
	if s.Nonce != "" {
		out = append(out, Object{Peer: c, Kind: KindSecret, Name: liqo.NonceSecretName, Object: liqo.NonceSecret(c, s.Nonce)})
	}
	if s.Tenant == nil {
		return out
	}
	t := artifact.NewTenant(c, artifact.Nonce{Epoch: s.Epoch}, s.Tenant.Spec.PublicKey, s.Tenant.Spec.CSR, s.Tenant.Spec.Signature)
	if s.Condition != authv1beta1.TenantConditionActive {
		t.Spec.TenantCondition = s.Condition
	}
	out = append(out, Object{Peer: c, Kind: authv1beta1.TenantKind, Name: c, Object: t})
	if s.Condition != authv1beta1.TenantConditionDrained {
		out = append(out,
			Object{Peer: c, Kind: KindRoleBinding, Name: liqo.ControlPlaneRBName, Object: liqo.ControlPlaneRoleBinding(c)},
			Object{Peer: c, Kind: KindClusterRoleBinding, Name: liqo.ClusterWideBindingName(c), Object: liqo.ClusterWideBinding(c)})
	}
	name := admission.Name(c)
	return append(out,
		Object{Peer: c, Kind: KindValidatingAdmissionPolicy, Name: name, Object: admission.Policy(provider, c, liqo.TenantNamespace(c), s.Grants)},
		Object{Peer: c, Kind: KindValidatingAdmissionPolicyBinding, Name: name, Object: admission.Binding(c)})
}

// Consumed is the state of a peering on its consumer's side, from which
// Consumer renders.
type Consumed struct {
	// Provider is the provider's cluster ID.
	Provider string
	// Identity holds the credentials of the provider's verified
	// ControlPlane Identity; nil while none is verified.
	Identity *authv1beta1.AuthParams
	// Slices are the ResourceSlices the provider accepted, in name order.
	Slices []Slice
}

// Slice is one ResourceSlice a consumer renders: its request and the
// credentials of the provider's answer.
type Slice struct {
	// Name is the slice's name.
	Name string
	// Request is the consumer's ResourceSlice as sent; nil renders none.
	Request *authv1beta1.ResourceSlice
	// AuthParams are the credentials the provider's answer carries; nil
	// renders no Identity.
	AuthParams *authv1beta1.AuthParams
}

// Consumer lists what consumer renders for s.Provider, in a fixed order: the
// tenant namespace and the ControlPlane Identity once one is verified, then
// each slice's ResourceSlice and its Identity.
func Consumer(consumer string, s Consumed) []Object {
	pr := s.Provider
	var out []Object
	if s.Identity != nil {
		id := liqo.ControlPlaneIdentity(consumer, pr, *s.Identity)
		out = append(out,
			Object{Peer: pr, Kind: KindNamespace, Name: liqo.TenantNamespace(pr), Object: liqo.Namespace(pr)},
			Object{Peer: pr, Kind: authv1beta1.IdentityKind, Name: id.Name, Object: id})
	}
	for _, sl := range s.Slices {
		if sl.Request != nil {
			out = append(out, Object{Peer: pr, Kind: authv1beta1.ResourceSliceKind, Name: sl.Name, Slice: sl.Name, Object: sl.Request})
		}
		if sl.AuthParams != nil {
			id := liqo.ResourceSliceIdentity(sl.Name, pr, *sl.AuthParams)
			out = append(out, Object{Peer: pr, Kind: authv1beta1.IdentityKind, Name: id.Name, Slice: sl.Name, Object: id})
		}
	}
	return out
}

// Shared lists what a provider renders once for all its peerings when it
// renders Liqo's ClusterRoles (liqo-remote-controlplane and the
// cluster-wide one) itself, in SharedDir.
func Shared() []Object {
	rc, cw := liqo.RemoteControlPlaneClusterRole(), liqo.ClusterWideClusterRole()
	return []Object{
		{Peer: SharedDir, Kind: KindClusterRole, Name: rc.Name, Object: rc},
		{Peer: SharedDir, Kind: KindClusterRole, Name: cw.Name, Object: cw},
	}
}
