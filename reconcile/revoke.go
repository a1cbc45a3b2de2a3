package reconcile

import (
	"errors"
	"io/fs"
	"sort"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/liqo"
)

// revoke handles peerings removed from the spec, found by what this cluster
// wrote for them before. As a provider it revokes in two passes, as Liqo's
// unpeer does: first the Tenant goes Drained and its RBAC is unbound (so
// Liqo, once Flux applies it, deletes the tenant's ResourceSlices and
// NamespaceMaps), then every artifact is withdrawn and Flux prunes. As a
// consumer it withdraws everything at once and drops the kubeconfig.
func (p *pass) revoke(prev *layout.ClusterStatus) ([]layout.PeeringStatus, error) {
	peers, err := p.formerPeers()
	if err != nil {
		return nil, err
	}
	var out []layout.PeeringStatus
	for _, peer := range peers {
		if !p.in.Spec.HasPeering(peer, p.self) {
			if t := p.acceptedTenant(peer); t != nil && t.Spec.TenantCondition != authv1beta1.TenantConditionDrained {
				drained := t.DeepCopy()
				drained.Spec.TenantCondition = authv1beta1.TenantConditionDrained
				if err := p.render(peer, "Namespace", liqo.TenantNamespace(peer), liqo.Namespace(peer)); err != nil {
					return nil, err
				}
				if err := p.render(peer, authv1beta1.TenantKind, peer, drained); err != nil {
					return nil, err
				}
				st := &peeringObject{status: &layout.PeeringStatus{Consumer: peer, Provider: p.self, Role: layout.RoleProvider}}
				if old := prev.Find(peer, p.self); old != nil {
					st.status.Conditions = append(st.status.Conditions, old.Conditions...)
				}
				st.status.Step = layout.StepRevoking
				conditions.MarkFalse(st, meta.ReadyCondition, ReasonRevoking, "peering removed from the spec: tenant %s drained and unbound; its artifacts go in the next pass", peer)
				conditions.MarkReconciling(st, ReasonRevoking, "revoking %s", peer)
				out = append(out, *st.status)
			}
		}
		if !p.in.Spec.HasPeering(p.self, peer) && p.wasConsumerOf(peer) {
			p.out.Revoked = append(p.out.Revoked, peer)
		}
	}
	return out, nil
}

// formerPeers lists every cluster this one wrote artifacts for or rendered
// objects of, sorted.
func (p *pass) formerPeers() ([]string, error) {
	seen := map[string]bool{}
	liqoDir := layout.ClusterPath(p.self, layout.LiqoDir)
	entries, err := fs.ReadDir(p.in.Tree, liqoDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != SharedDir {
			seen[e.Name()] = true
		}
	}
	clusters, err := fs.ReadDir(p.in.Tree, layout.ClustersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, c := range clusters {
		if !c.IsDir() || c.Name() == p.self {
			continue
		}
		if _, err := fs.Stat(p.in.Tree, layout.ClusterPath(c.Name(), layout.InboxDir, p.self)); err == nil {
			seen[c.Name()] = true
		}
	}
	peers := make([]string, 0, len(seen))
	for peer := range seen {
		peers = append(peers, peer)
	}
	sort.Strings(peers)
	return peers, nil
}

// wasConsumerOf reports whether this cluster holds, or held, a Tenant for peer.
func (p *pass) wasConsumerOf(peer string) bool {
	for _, f := range []string{
		layout.InboxPath(peer, p.self, layout.TenantFile),
		layout.ClusterPath(p.self, layout.LiqoDir, peer, liqo.ObjectFileName(authv1beta1.IdentityKind, liqo.ControlPlaneIdentityName(peer))),
	} {
		if _, err := fs.Stat(p.in.Tree, f); err == nil {
			return true
		}
	}
	return false
}
