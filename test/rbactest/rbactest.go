// Package rbactest checks requests made to a fake clientset against
// manifests/rbac as Kubernetes' RBAC authorizer would, for the tests proving
// that the manifests grant exactly what gitpeer does: the kubernetes
// backend's (internal/backend/kubernetes/rbac_test.go) and the daemon's
// (internal/controller/daemon/rbac_test.go). Each test owns the rules of its resources
// (DaemonResources are the daemon's) and requires every one to be used.
package rbactest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// DaemonResources are the resources whose rules the daemon uses (leader
// election on its Lease, Events about it); the backend uses the others.
var DaemonResources = []string{"leases", "events"}

// FluxNamespace is Flux's namespace, where manifests/rbac grants what the
// backend reads of Flux (FluxTrusts).
const FluxNamespace = "flux-system"

// Manifests is manifests/rbac built with kustomize.
type Manifests struct {
	ServiceAccount     corev1.ServiceAccount
	Role               rbacv1.Role
	RoleBinding        rbacv1.RoleBinding
	ClusterRole        rbacv1.ClusterRole
	ClusterRoleBinding rbacv1.ClusterRoleBinding
	// FluxRole and FluxRoleBinding are the Role and RoleBinding in
	// FluxNamespace; Role and RoleBinding are those of the Liqo namespace.
	FluxRole        rbacv1.Role
	FluxRoleBinding rbacv1.RoleBinding
}

// Load builds dir (manifests/rbac) with kustomize and decodes each object
// strictly; it fails on an unexpected or a missing kind.
func Load(dir string) (*Manifests, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var m Manifests
	targets := map[string]any{
		"ServiceAccount": &m.ServiceAccount, "Role": &m.Role, "RoleBinding": &m.RoleBinding,
		"FluxRole": &m.FluxRole, "FluxRoleBinding": &m.FluxRoleBinding,
		"ClusterRole": &m.ClusterRole, "ClusterRoleBinding": &m.ClusterRoleBinding,
	}
	for _, r := range rm.Resources() {
		target := r.GetKind()
		if r.GetNamespace() == FluxNamespace {
			target = "Flux" + target
		}
		into, ok := targets[target]
		if !ok {
			return nil, fmt.Errorf("%s: unexpected %s %s/%s", dir, r.GetKind(), r.GetNamespace(), r.GetName())
		}
		delete(targets, target)
		data, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", dir, r.GetKind(), err)
		}
	}
	if len(targets) != 0 {
		return nil, fmt.Errorf("%s lacks %v", dir, targets)
	}
	return &m, nil
}

// ClusterIDPlaceholder is what manifests/rbac's Roles name the cluster's
// GitOps source objects with (gitpeer-CLUSTER_ID) until
// manifests/deploy/cluster-id replaces it with the cluster ID.
const ClusterIDPlaceholder = "CLUSTER_ID"

// ForCluster is m with the cluster ID placeholder of the Roles'
// resourceNames replaced by id, as manifests/deploy/cluster-id does.
func (m *Manifests) ForCluster(id string) *Manifests {
	out := *m
	out.Role = RoleForCluster(m.Role, id)
	out.FluxRole = RoleForCluster(m.FluxRole, id)
	return &out
}

// RoleForCluster is r with ClusterIDPlaceholder in its resourceNames
// replaced by id.
func RoleForCluster(r rbacv1.Role, id string) rbacv1.Role {
	r = *r.DeepCopy()
	for i := range r.Rules {
		for j, n := range r.Rules[i].ResourceNames {
			r.Rules[i].ResourceNames[j] = strings.ReplaceAll(n, ClusterIDPlaceholder, id)
		}
	}
	return r
}

// LoadRole decodes the first document of file, a Role (such as
// manifests/rbac/argocd/role.yaml, of a component that builds only within
// an overlay), strictly.
func LoadRole(file string) (rbacv1.Role, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return rbacv1.Role{}, err
	}
	doc, _, _ := strings.Cut(string(data), "\n---\n")
	var r rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
		return rbacv1.Role{}, fmt.Errorf("%s: %w", file, err)
	}
	if r.Kind != "Role" {
		return rbacv1.Role{}, fmt.Errorf("%s: first document is a %s, not a Role", file, r.Kind)
	}
	return r, nil
}

// AllowedBy reports whether the rules of role permit req, in its
// namespace.
func AllowedBy(role rbacv1.Role, req Request) bool {
	return req.Namespace == role.Namespace && allows(role.Rules, req)
}

// Rule is one (API group, resource, verb) a rule grants; Resource may be
// "resource/subresource".
type Rule struct{ Group, Resource, Verb string }

// Request is an API request as the authorizer sees it.
type Request struct {
	Rule
	Name, Namespace string
}

// Requests are the requests of a fake clientset's actions, except status
// updates (made by fakes standing in for controllers).
func Requests(actions []k8stesting.Action) []Request {
	var out []Request
	for _, a := range actions {
		if a.GetSubresource() == "status" {
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		var name string
		switch a := a.(type) {
		case interface{ GetName() string }: // get, delete and patch
			name = a.GetName()
		case k8stesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		}
		out = append(out, Request{Rule{a.GetResource().Group, res, a.GetVerb()}, name, a.GetNamespace()})
	}
	return out
}

// Allows reports whether the ClusterRole, or a Role in its namespace,
// permits req.
func (m *Manifests) Allows(req Request) bool {
	return allows(m.ClusterRole.Rules, req) || (req.Namespace == m.Role.Namespace && allows(m.Role.Rules, req)) ||
		(req.Namespace == m.FluxRole.Namespace && allows(m.FluxRole.Rules, req))
}

// AllowsInFlux reports whether the Role in Flux's namespace alone permits
// req.
func (m *Manifests) AllowsInFlux(req Request) bool { return AllowedBy(m.FluxRole, req) }

func allows(rules []rbacv1.PolicyRule, req Request) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, req.Group) && slices.Contains(r.Resources, req.Resource) && slices.Contains(r.Verbs, req.Verb) &&
			(len(r.ResourceNames) == 0 || (req.Name != "" && slices.Contains(r.ResourceNames, req.Name))) {
			return true
		}
	}
	return false
}

// Granted lists every (group, resource, verb) of the Roles and the
// ClusterRole whose resource satisfies owned.
func (m *Manifests) Granted(owned func(resource string) bool) []Rule {
	var out []Rule
	for _, rules := range [][]rbacv1.PolicyRule{m.Role.Rules, m.FluxRole.Rules, m.ClusterRole.Rules} {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if owned(res) {
							out = append(out, Rule{g, res, v})
						}
					}
				}
			}
		}
	}
	return out
}

// IsDaemonResource reports whether resource is one of DaemonResources.
func IsDaemonResource(resource string) bool { return slices.Contains(DaemonResources, resource) }
