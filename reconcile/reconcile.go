// Package reconcile is gitpeer's pure core: one pass of one cluster over a
// peering repo. From the spec, the repo tree and the cluster's backend it
// computes every file the cluster owns (its outgoing inbox artifacts, the
// objects it renders for itself, its kustomization and status); the caller
// writes the difference as one commit.
//
// A pass is level-triggered and idempotent: the same inputs give the same
// bytes, so a pass with nothing to do changes nothing. Signing happens only
// after every check of package artifact holds.
package reconcile

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/schema"
)

// DefaultCertificateLifetime is how long the client certificates a provider
// signs are valid when Input.CertificateLifetime is zero.
const DefaultCertificateLifetime = 30 * 24 * time.Hour

// Input is everything one pass reads.
type Input struct {
	Spec    *schema.Spec
	Tree    fs.FS // the repo at the remote tip
	Backend backend.Backend
	Now     time.Time
	// CertificateLifetime is the validity of certificates this cluster signs
	// as a provider, unless the spec sets its own; zero means
	// DefaultCertificateLifetime. Under schema.MinCertificateLifetime the pass
	// fails.
	CertificateLifetime time.Duration
	// LiqoClusterRoles renders Liqo's ClusterRoles liqo-remote-controlplane
	// and liqo-virtual-kubelet-remote-clusterwide for a provider whose cluster
	// runs no Liqo (whose chart would install them), so the bindings grant
	// exactly what Liqo grants.
	LiqoClusterRoles bool
	// OpenPGPKey, when set, is the armored OpenPGP public key of the cluster
	// key (commitsig.OpenPGPPublicKey), published as
	// clusters/<self>/openpgp.asc: the cluster signs its commits with
	// OpenPGP. Nil: it does not, and an openpgp.asc there is deleted.
	OpenPGPKey []byte
	// Pins are the cluster's trust anchors from its backend (package pins):
	// nil means none yet. Pass never modifies them; Output.Pins is the
	// updated copy the caller saves.
	Pins *pins.Store
	// Cache, when set, carries checks on unchanged input over from the
	// cluster's earlier passes (see Cache); nil: every pass starts afresh.
	// The output is the same either way.
	Cache *Cache
	// StagedKey, when set, is the cluster's staged next key
	// (backend.KeyRoller): the pass adds it to the keys clusters/<self>/flux/
	// trusts, so that the key in force vouches for it before it signs
	// anything Flux applies. Only its public half is read, and it signs
	// its own OpenPGP certification (fluxtrust.Of).
	StagedKey crypto.Signer
	// Pending, when set, is the tree of the cluster's own proposal not
	// merged yet (gitsync.Repo.Pending, with a review branch). The pass
	// decides from Tree alone; from Pending it only takes back the
	// certificates it signed there that still serve (same key, subject, CA
	// and API server, not due for renewal), so that a pass on the same tip
	// proposes the same bytes instead of signing them anew.
	Pending fs.FS
}

// Output is the outcome of one pass.
type Output struct {
	// Files is the desired content of every path the cluster manages
	// (layout.Writable); a writable path absent here is to be deleted.
	Files map[string][]byte
	// Rendered are the Liqo objects of Files (render.Provider,
	// render.Consumer, render.Shared), by path: plan names a change's
	// steps from their kinds.
	Rendered map[string]render.Object
	// Status is the cluster's status.yaml as written into Files.
	Status *layout.ClusterStatus
	// Identities are the verified ControlPlane Identities this cluster holds
	// as a consumer: the caller stores their kubeconfigs (outside Git) once
	// the pass has landed.
	Identities []*authv1beta1.Identity
	// Revoked are the providers whose peering with this consumer was removed
	// from the spec: the caller deletes their kubeconfigs once the pass has
	// landed.
	Revoked []string
	// Pins are Input.Pins updated by this pass (peers first trusted, manifest
	// sequences seen, nonce epochs issued): the caller saves them in the
	// backend before publishing Files.
	Pins *pins.Store
	// ForeignWrites name this cluster's manifests in the repo that its key
	// signed but its pin store did not (pins.Store.Foreign), newer than any
	// found before; Pins.ForeignPasses counts the passes in a row that
	// found one.
	ForeignWrites []string
	// Republished, when not "", says why the pass published the cluster's
	// own cluster.yaml anew from its backend: the repo's was not signed by
	// the cluster (a writer's edit) or did not parse.
	Republished string
	// Certificates are the client certificates of the peerings this pass
	// found Ready on this cluster's side: as a provider the one it issued,
	// as a consumer the one its verified Identity carries.
	Certificates []Certificate
	// cache is Input.Cache, for Diff's lookups of this cluster's folder in
	// other clusters' inboxes.
	cache *Cache
}

// Certificate is the validity of a peering's client certificate (the
// consumer's credentials for the provider's API server).
type Certificate struct {
	Consumer, Provider string
	Role               layout.Role // the side of this cluster
	NotAfter           time.Time
}

// Pass runs one pass for the backend's cluster. It fails only when the
// cluster itself cannot act (not in the spec, its published cluster.yaml does
// not match its backend); problems with peers' artifacts become status
// conditions, never errors.
func Pass(ctx context.Context, in Input) (*Output, error) {
	self := in.Backend.ClusterID()
	if _, ok := in.Spec.Cluster(self); !ok {
		return nil, fmt.Errorf("cluster %q is not declared in the spec: check the cluster ID (--cluster, or Liqo's), or add {id: %q} to the spec's clusters, with its peerings, and get that merged", self, self)
	}
	if in.CertificateLifetime == 0 {
		in.CertificateLifetime = DefaultCertificateLifetime
	}
	if in.CertificateLifetime < schema.MinCertificateLifetime {
		return nil, fmt.Errorf("certificate lifetime %s is shorter than the shortest a provider signs, %s", in.CertificateLifetime, schema.MinCertificateLifetime)
	}
	// Every read of the repo is capped by what the file is (layout.SizeLimit)
	// before it is read: a peer's, or a repo writer's, oversized file is
	// refused for that peer alone, never read whole.
	in.Tree = layout.Capped(in.Tree)
	me, err := in.Cache.readClusterInfo(in.Tree, self)
	if errors.Is(err, layout.ErrNotPublished) {
		// The spec may name a cluster before its init commit is merged:
		// every pass fails until it is.
		return nil, fmt.Errorf("own cluster info: %w yet: publish it with gitpeer init --cluster %s --repo CLONE (with this cluster's state dir or kube context), commit clusters/%s/ and get it merged",
			err, self, self)
	}
	// A cluster.yaml that does not parse is republished below, as one its
	// cluster did not sign: the reconciler holds all it publishes.
	damaged := err
	store := pins.New(self)
	if in.Pins != nil {
		store = in.Pins.Clone()
	}
	p := &pass{in: in, self: self, me: me, raw: in.Tree, pins: store, trusted: map[string]trusted{}, distrust: map[string]distrusted{}, providers: map[string]bool{},
		out: &Output{Files: map[string][]byte{}, Rendered: map[string]render.Object{}, Pins: store, cache: in.Cache}, ownKey: in.Backend.Signer().Public()}
	asConsumer, asProvider := in.Spec.PeeringsOf(self)
	p.peerings = map[schema.Pair]bool{}
	for _, pr := range append(slices.Clip(asConsumer), asProvider...) {
		p.peerings[pr.Pair()] = true
	}
	if p.mayRepairOwnInfo(ctx, damaged) {
		if err := p.republishOwnInfo(ctx, damaged); err != nil {
			return nil, err
		}
		p.out.Republished = p.republished
	} else if damaged != nil {
		return nil, fmt.Errorf("own cluster info: %w", damaged)
	}
	if err := p.ownInfo(ctx); err != nil {
		return nil, err
	}
	// From here on every read of the repo goes through the signed view: a
	// file its writer did not sign does not exist.
	p.view = dirmanifest.NewCachedView(in.Tree, p, in.Cache.manifestCache())
	p.in.Tree = p.view
	if p.rotated == nil {
		if err := p.ownInfoSigned(); err != nil {
			return nil, err
		}
	}
	prev, err := layout.ReadStatus(p.in.Tree, self)
	if err != nil {
		// A broken status of our own is rewritten, not fatal.
		prev = &layout.ClusterStatus{}
	}
	status := &layout.ClusterStatus{APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: self, Peerings: []layout.PeeringStatus{}}
	if p.terms, err = providerTerms(in, self); err != nil {
		return nil, err
	}
	for _, pr := range asConsumer {
		p.providers[pr.Provider] = true
	}
	for _, pr := range asProvider {
		st := p.newStatus(prev, pr, layout.RoleProvider)
		if err := p.confine(ctx, pr.Consumer, st, func() error { return p.provide(ctx, pr, st) }); err != nil {
			return nil, err
		}
		status.Peerings = append(status.Peerings, *st.status)
	}
	for _, pr := range asConsumer {
		st := p.newStatus(prev, pr, layout.RoleConsumer)
		if err := p.confine(ctx, pr.Provider, st, func() error { return p.consume(ctx, pr, st) }); err != nil {
			return nil, err
		}
		status.Peerings = append(status.Peerings, *st.status)
	}
	revoking, err := p.revoke(prev)
	if err != nil {
		return nil, err
	}
	status.Peerings = append(status.Peerings, revoking...)
	p.reportUnexpected(status)
	if in.LiqoClusterRoles && len(asProvider) > 0 {
		if err := p.render(render.Shared()); err != nil {
			return nil, err
		}
	}
	if err := p.finish(status, prev); err != nil {
		return nil, err
	}
	return p.out, nil
}

// matchBackend refuses to act when the published cluster.yaml is not this
// backend's: every peer would refuse our artifacts, and signing with a CA the
// consumers do not trust helps nobody.
func matchBackend(me *layout.ClusterInfo, b backend.Backend) error {
	file := layout.ClusterPath(me.ClusterID, layout.ClusterFile)
	pub, _, err := handshake.ParsePublicKey([]byte(me.PublicKey))
	if err != nil {
		return fmt.Errorf("%s: publicKey: %w", file, err)
	}
	fp, _ := handshake.Fingerprint(pub)
	own, err := handshake.Fingerprint(b.Signer().Public())
	if err != nil {
		return err
	}
	if fp != own {
		return fmt.Errorf("%s: publicKey: %s is not the key %s of the backend this reconciler runs with: %s", file, fp, own, wrongBackend(me.ClusterID))
	}
	if !artifact.SameCertificates([]byte(me.CA), b.CABundle()) {
		return fmt.Errorf("%s: ca: is not the CA of the backend this reconciler runs with: %s", file, wrongBackend(me.ClusterID))
	}
	return nil
}

// wrongBackend is what to do when cluster id's published cluster.yaml is
// not its backend's. The likely cause is a reconciler pointed at another
// cluster's state (a kube context, a state dir), and the fix then is the
// pointer: republishing from this backend (gitpeer init) would put that
// other cluster's key under id, so it is never the first advice.
func wrongBackend(id string) string {
	return fmt.Sprintf("check that --context/--kubeconfig (kubernetes backend) or --state-dir (file backend) are %s's; "+
		"if %s's key really changed, publish the new one with gitpeer rotate-key, signed by the old key "+
		"(never gitpeer init from a backend that is not %s's: it would publish another cluster's key as %s's)", id, id, id, id)
}

// ownInfoSigned refuses to act on a cluster.yaml this cluster did not sign:
// the pass signs it again and issues Identities naming its API server, so a
// repo writer's edit (another apiServer: matchBackend checks only the key
// and the CA) would otherwise be vouched for, and offered to every consumer
// that trusts this cluster for the first time. gitpeer init and rotate-key
// sign what they publish; an unsigned cluster.yaml naming the backend's own
// API server (the manifest was deleted, say) is accepted and signed anew.
func (p *pass) ownInfoSigned() error {
	file := layout.ClusterPath(p.self, layout.ClusterFile)
	if _, err := fs.ReadFile(p.view, file); err == nil {
		return nil
	}
	want, err := p.in.Backend.ClusterInfo()
	if err != nil {
		return err
	}
	if p.me.APIServer != want.APIServer {
		return fmt.Errorf("%s: apiServer: %q is not signed by %s and is not this cluster's API server %q (republish with gitpeer init)", file, p.me.APIServer, p.self, want.APIServer)
	}
	return nil
}

type pass struct {
	in    Input
	self  string
	me    *layout.ClusterInfo
	out   *Output
	terms terms
	// raw is the repo as it is; in.Tree is the signed view of it.
	raw  fs.FS
	view *dirmanifest.View
	pins *pins.Store
	// trusted are the peers whose cluster.yaml matched their pins in this
	// pass; distrust says why the others did not.
	trusted  map[string]trusted
	distrust map[string]distrusted
	// peerings are the spec's peerings of this cluster: hasPeering looks them up instead of scanning the whole
	// spec (10,000 peerings at the size) for every peer.
	peerings map[schema.Pair]bool
	// inboxes memoizes inboxesForSelf for the pass (nil: not computed).
	inboxes *[]string
	// providers are the peers the spec makes providers of this cluster:
	// their API server and CA are pinned facts, whichever role of a
	// two-way peering asks to trust them first.
	providers map[string]bool
	// republished says why the pass publishes its cluster.yaml anew from
	// its backend ("" when it does not: ownrepair.go).
	republished string
	// withdrawals: own directories found rolled back (withdraw.go).
	withdrawals withdrawals
	// rotated is the cluster.yaml this pass publishes for a promoted key
	// (ownInfo), nil when it signs the published one as it is.
	rotated []byte
	// ownKey signed this cluster's files as the tree holds them: the
	// backend's key, or in the pass that switches keys the one it replaced.
	ownKey crypto.PublicKey
}

// hasPeering is in.Spec.HasPeering(consumer, provider) for a peering of
// this cluster (one of the two is p.self, as every caller asks).
func (p *pass) hasPeering(consumer, provider string) bool {
	if consumer != p.self && provider != p.self {
		return p.in.Spec.HasPeering(consumer, provider)
	}
	return p.peerings[schema.Pair{Consumer: consumer, Provider: provider}]
}

func (p *pass) newStatus(prev *layout.ClusterStatus, pr schema.Peering, role layout.Role) *peeringObject {
	st := &layout.PeeringStatus{Consumer: pr.Consumer, Provider: pr.Provider, Role: role, Step: layout.StepPending}
	o := &peeringObject{status: st, prevStep: layout.StepPending}
	if old := prev.Find(pr.Consumer, pr.Provider); old != nil {
		st.Conditions = append(st.Conditions, old.Conditions...)
		if old.Role == role && old.Step != "" {
			o.prevStep = old.Step
		}
	}
	return o
}

func (p *pass) put(file string, obj any) error {
	data, err := p.in.Cache.encode(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	p.out.Files[file] = data
	return nil
}

// render writes objects into clusters/<self>/liqo/<peer>/.
func (p *pass) render(objs []render.Object) error {
	for _, o := range objs {
		file := o.Path(p.self)
		if err := p.put(file, o.Object); err != nil {
			return err
		}
		p.out.Rendered[file] = o
	}
	return nil
}

func (p *pass) read(file string) ([]byte, bool, error) {
	data, err := fs.ReadFile(p.in.Tree, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", file, err)
	}
	return data, true, nil
}

// refused records a refused artifact as a Stalled condition; the pass goes
// on for other peerings and writes nothing that depends on the artifact.
func (p *pass) refused(st *peeringObject, step layout.Step, err error) error {
	var ae *artifact.Error
	if !errors.As(err, &ae) {
		return err
	}
	stall(st, step, ae.Reason, "%v", ae)
	return nil
}

// finish adds the kustomization (every rendered object, nothing from the
// inbox) and the status, its conditions dated against prev.
func (p *pass) finish(status, prev *layout.ClusterStatus) error {
	if err := p.isolate(status); err != nil {
		return err
	}
	p.noteRolledBack(status)
	stampTransitions(status, prev, p.in.Now)
	root := layout.ClusterPath(p.self) + "/"
	var resources []string
	for f := range p.out.Files {
		if rel, ok := strings.CutPrefix(f, root+layout.LiqoDir+"/"); ok {
			resources = append(resources, layout.LiqoDir+"/"+rel)
		}
	}
	sort.Strings(resources)
	k, err := layout.Kustomization(resources)
	if err != nil {
		return err
	}
	p.out.Files[root+layout.KustomizationFile] = k
	s, err := status.Encode()
	if err != nil {
		return err
	}
	p.out.Files[root+layout.StatusFile] = s
	if r := p.repins(); r != nil {
		p.out.Files[root+layout.RepinsFile] = r
	}
	p.out.Status = status
	// cluster.yaml is published by gitpeer init and checked against the
	// backend above: the pass signs it as it is, unless it switches keys.
	own := p.rotated
	if own == nil {
		if own, err = fs.ReadFile(p.raw, root+layout.ClusterFile); err != nil {
			return err
		}
	}
	p.out.Files[root+layout.ClusterFile] = own
	if err := p.renderFluxTrust(); err != nil {
		return err
	}
	if p.in.OpenPGPKey != nil {
		p.out.Files[root+layout.OpenPGPKeyFile] = p.in.OpenPGPKey
	}
	return p.seal()
}

// repins is clusters/<self>/repins.yaml: the keys of its peers this
// cluster pinned on an admin's re-pin request, as its pin store records
// them (never as the repo says); nil when there are none.
func (p *pass) repins() []byte {
	r := &layout.Repins{APIVersion: layout.APIVersion, Kind: layout.RepinsKind, ClusterID: p.self}
	ids := make([]string, 0, len(p.pins.Peers))
	for id, pin := range p.pins.Peers {
		if pin != nil && len(pin.Repinned) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	for _, id := range ids {
		r.Peers = append(r.Peers, layout.RepinnedPeer{Peer: id, Fingerprints: slices.Clone(p.pins.Peers[id].Repinned)})
	}
	data, err := r.Encode()
	if err != nil {
		return nil // not reached: fingerprints and IDs encode
	}
	return data
}
