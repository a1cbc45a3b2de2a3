package reconcile

import (
	"errors"
	"io/fs"
	"sort"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// revoke handles peerings removed from the spec, found by what this cluster
// wrote for them before. As a provider it revokes in two steps, as Liqo's
// unpeer does: first the Tenant goes Drained and its RBAC is unbound (so
// Liqo, once the GitOps engine applies it, deletes the tenant's
// ResourceSlices and NamespaceMaps), then, once the provider's drain period
// has passed, every artifact is withdrawn and the engine prunes. As a
// consumer it withdraws everything at once and drops the kubeconfig.
func (p *pass) revoke(prev *layout.ClusterStatus) ([]layout.PeeringStatus, error) {
	peers, err := p.formerPeers()
	if err != nil {
		return nil, err
	}
	var out []layout.PeeringStatus
	for _, peer := range peers {
		if !p.hasPeering(peer, p.self) {
			if st, err := p.drain(peer, prev); err != nil {
				return nil, err
			} else if st != nil {
				out = append(out, *st)
			}
		}
		if !p.hasPeering(p.self, peer) && p.wasConsumerOf(peer) {
			p.out.Revoked = append(p.out.Revoked, peer)
		}
	}
	return out, nil
}

// drain keeps the Tenant of consumer, a peering removed from the spec,
// rendered Drained with its RBAC unbound until the drain period has passed
// since the pass that first drained it (PeeringStatus.RevokingSince), and
// returns the peering's status meanwhile; nil once its artifacts are to be
// withdrawn, or when there is no accepted Tenant. Withdrawing in the pass
// after draining would race the GitOps engine: an engine that had not
// applied the drained Tenant yet would prune a Tenant Liqo never saw
// drained, and leave its ResourceSlices and NamespaceMaps behind.
func (p *pass) drain(consumer string, prev *layout.ClusterStatus) (*layout.PeeringStatus, error) {
	t := p.acceptedTenant(consumer)
	if t == nil {
		return nil, nil
	}
	old := prev.Find(consumer, p.self)
	since := p.in.Now
	if t.Spec.TenantCondition == authv1beta1.TenantConditionDrained {
		// A status that lost its start (written before gitpeer recorded
		// one, or never published) starts the period now: late beats early.
		if old != nil && old.Step == layout.StepRevoking && old.RevokingSince != nil {
			since = old.RevokingSince.Time
		}
		if !p.in.Now.Before(since.Add(p.terms.drainPeriod)) {
			return nil, nil
		}
	}
	// A drained tenant keeps no binding and gets no slice: the API server
	// admits none. The epoch is the one the Tenant was accepted with.
	epoch, _ := artifact.TenantEpoch("", t)
	drained := render.Provided{Consumer: consumer, Tenant: t, Epoch: epoch, Condition: authv1beta1.TenantConditionDrained}
	if err := p.render(render.Provider(p.self, drained)); err != nil {
		return nil, err
	}
	st := &peeringObject{status: &layout.PeeringStatus{Consumer: consumer, Provider: p.self, Role: layout.RoleProvider}}
	if old != nil {
		st.status.Conditions = append(st.status.Conditions, old.Conditions...)
	}
	st.status.Step = layout.StepRevoking
	st.status.RevokingSince = &metav1.Time{Time: since.UTC().Truncate(time.Second)}
	conditions.MarkFalse(st, meta.ReadyCondition, reasons.Revoking, "peering removed from the spec: tenant %s drained and unbound; its artifacts are withdrawn after %s", consumer, since.Add(p.terms.drainPeriod).UTC().Format(time.RFC3339))
	conditions.MarkReconciling(st, reasons.Revoking, "revoking %s", consumer)
	return st.status, nil
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
		if e.IsDir() && e.Name() != render.SharedDir {
			seen[e.Name()] = true
		}
	}
	// A directory is in the signed view as it is in the repo.
	inboxes, err := p.inboxesForSelf()
	if err != nil {
		return nil, err
	}
	for _, c := range inboxes {
		seen[c] = true
	}
	peers := make([]string, 0, len(seen))
	for peer := range seen {
		peers = append(peers, peer)
	}
	sort.Strings(peers)
	return peers, nil
}

// inboxesForSelf are, sorted, the other clusters whose inbox holds a
// directory for this cluster (clusters/<c>/inbox/<self>/), in the repo as
// it is. It looks at every cluster of the repo, once per pass: formerPeers
// and ownInboxDirs both need it. A cluster whose tree the Cache saw without
// such a directory (same tree hash) is not looked into again.
func (p *pass) inboxesForSelf() ([]string, error) {
	if p.inboxes != nil {
		return *p.inboxes, nil
	}
	clusters, err := fs.ReadDir(p.raw, layout.ClustersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := []string{}
	for _, c := range clusters {
		if !c.IsDir() || c.Name() == p.self || p.in.Cache.inboxAbsent(p.self, c) {
			continue
		}
		fi, err := fs.Stat(p.raw, layout.ClusterPath(c.Name(), layout.InboxDir, p.self))
		switch {
		case err == nil && fi.IsDir():
			out = append(out, c.Name())
		case errors.Is(err, fs.ErrNotExist):
			p.in.Cache.noteInboxAbsent(p.self, c)
		}
	}
	p.inboxes = &out
	return out, nil
}

// wasConsumerOf reports whether this cluster holds, or held, a Tenant for peer.
func (p *pass) wasConsumerOf(peer string) bool {
	for _, f := range []string{
		layout.InboxPath(peer, p.self, layout.TenantFile),
		render.Path(p.self, peer, authv1beta1.IdentityKind, liqo.ControlPlaneIdentityName(peer)),
	} {
		if _, err := fs.Stat(p.in.Tree, f); err == nil {
			return true
		}
	}
	return false
}
