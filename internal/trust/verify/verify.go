// Package verify checks a peering repo offline, with no private material,
// and sees it as Flux applies it. It is what a reviewer runs on a pull
// request (gitpeer verify):
//
//   - Tree: every check a provider makes before signing and a consumer makes
//     before trusting, and the repo's own rules (ownership layout, the apply
//     rule, rendered objects, no secrets under clusters/);
//   - CheckTree adds signed writes (each writer's directory against the
//     manifest it signs, package manifest), each cluster's kustomization
//     built with kustomize's API on that cluster's tree alone and compared
//     with what gitpeer renders, and private material anywhere in the tree;
//   - History judges every commit reachable from HEAD, merges included: each
//     change to a writer's directory vouched for by that writer's manifest at
//     that commit, key continuity of every cluster.yaml, SSH commit
//     signatures, and each applied branch the clone holds against it
//     (StaleSeal, InvalidSeal);
//   - Check runs all of it on a checkout, and guard.ScanHistory on request.
//
// Findings name the file, the field, a reason code (package reasons), a message and,
// from history, the commit. A finding that a later signed state resolved
// (Finding.Resolved: a repaired hand edit, a re-pinned key, a rotation in
// progress) is legitimate history: Failing leaves it out unless strict.
package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/schema"
)

// Finding is one failed check: the file at fault, the field in it ("" for
// the whole file), a reason code a program branches on (one of package reasons'
// constants, or an artifact's condition reason such as
// SignatureVerificationFailed), the message a person reads to act, and, for
// a finding from history, the full hash of the commit that introduced it.
//
// Resolved, when set, says which later signed state made the finding
// legitimate history: a hand edit the writer's own signature covers again,
// a key change every peer re-pinned, a rotation in progress. Such a
// finding does not fail the default check (gitpeer verify exits 0), and
// fails the strict one (gitpeer verify --strict).
type Finding struct {
	File     string      `json:"file"`
	Field    string      `json:"field"`
	Reason   string      `json:"reason"`
	Message  string      `json:"message"`
	Commit   string      `json:"commit"`
	Resolved *Resolution `json:"resolved,omitempty"`
}

// Resolution is what resolved a finding: a reason code (one of the
// Resolution* constants), the message a person reads, and the full hash
// of the commit holding the signed state that resolved it ("" when the
// history checked does not hold it, e.g. before --base).
type Resolution struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Commit  string `json:"commit,omitempty"`
}

// Resolution reasons.
const (
	// ResolutionRepaired: the path a change did not vouch for is, at the
	// checked commit, again exactly as its writer's manifest signs it
	// (or gone, and no longer listed): the writer's reconciler repaired
	// the hand edit.
	ResolutionRepaired = "Repaired"
	// ResolutionRepinned: every peer of the cluster whose key changed
	// without a rotation statement records, in a file it signs
	// (clusters/<peer>/repins.yaml), that its admin re-pinned that very
	// key (gitpeer trust).
	ResolutionRepinned = "Repinned"
	// ResolutionKeyRotationInProgress: a finding of the tree on a file
	// left as it was before a cluster of its peering rotated its key
	// with a valid rotation statement, and which held no finding then:
	// what a peer keeps until it answers the new key.
	ResolutionKeyRotationInProgress = "KeyRotationInProgress"
	// ResolutionSealPending: a StaleSeal whose newer changes the cluster
	// signed all name that very seal as the one in force when they were
	// made (trailer.Applied): the cluster has not sealed them yet (its
	// seal follows its push, or, with review branches, its first pass
	// after the merge), and nobody moved the branch back from a newer
	// seal it made before them.
	ResolutionSealPending = "SealPending"
)

// Failing returns the findings that fail the check: all of them when
// strict, else those no later signed state resolved.
func Failing(findings []Finding, strict bool) []Finding {
	if strict {
		return findings
	}
	var out []Finding
	for _, f := range findings {
		if f.Resolved == nil {
			out = append(out, f)
		}
	}
	return out
}

// Problem is the former name of Finding.
//
// Deprecated: use Finding.
type Problem = Finding

// String formats f as one line: "file: field: message (Reason, commit
// <12 hex>)", leaving out what f does not have.
func (f Finding) String() string {
	var b strings.Builder
	for _, s := range []string{f.File, f.Field} {
		if s != "" {
			b.WriteString(s)
			b.WriteString(": ")
		}
	}
	b.WriteString(f.Message)
	var tail []string
	if f.Reason != "" {
		tail = append(tail, f.Reason)
	}
	if f.Commit != "" {
		tail = append(tail, "commit "+shortHash(f.Commit))
	}
	if len(tail) > 0 {
		b.WriteString(" (" + strings.Join(tail, ", ") + ")")
	}
	if r := f.Resolved; r != nil {
		b.WriteString("; resolved: " + r.Message + " (" + r.Reason)
		if r.Commit != "" {
			b.WriteString(", commit " + shortHash(r.Commit))
		}
		b.WriteString(")")
	}
	return b.String()
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Tree runs the artifact and layout checks on a checkout tree (spec at its
// root) at time now: every check a reconciler makes on the artifacts, the
// ownership layout, the apply rule, private material under clusters/. It
// returns every finding, sorted by file; nil means every check holds.
// CheckTree adds manifests, kustomize builds and the whole tree's private
// material.
func Tree(tree fs.FS, spec *schema.Spec, now time.Time) []Finding {
	v := newVerifier(tree, spec, now)
	v.guard = guard.NewCache()
	v.run()
	return v.sorted()
}

func newVerifier(tree fs.FS, spec *schema.Spec, now time.Time) *verifier {
	v := &verifier{tree: tree, spec: spec, now: now, infos: map[string]*layout.ClusterInfo{}, removed: map[schema.Pair]bool{}, accepted: map[string][][]byte{},
		declaredIDs: map[string]int{}, peerings: map[schema.Pair]bool{}, encoder: liqo.NewEncoder(), acceptedObjects: newAcceptedObjects()}
	if spec != nil {
		for i, c := range spec.Clusters {
			if _, dup := v.declaredIDs[c.ID]; !dup {
				v.declaredIDs[c.ID] = i // the first, as spec.Cluster finds it
			}
		}
		for _, p := range spec.Peerings {
			v.peerings[p.Pair()] = true
		}
	}
	return v
}

func (v *verifier) run() {
	v.clusters()
	v.findRemoved()
	v.files()
	peerings := v.spec.Peerings
	if v.scope != nil {
		peerings = nil
		for _, p := range v.spec.Peerings {
			if v.scope.peering(p) {
				peerings = append(peerings, p)
			}
		}
	}
	v.parallel(len(peerings), func(sub *verifier, i int) { sub.peering(peerings[i]) })
	v.rendered()
}

// fork returns a verifier sharing v's tree, spec and what v found so far
// (cluster infos, removed peerings, accepted files: read only while forks
// run), with no findings of its own.
func (v *verifier) fork() *verifier {
	sub := *v
	sub.problems = nil
	return &sub
}

// parallel runs f(sub, i) for every i in [0, n) on up to GOMAXPROCS
// goroutines, each call with a fork of v, then appends the forks' findings
// to v's in order of i: the findings, and their order, are those of calling
// f on v for i = 0, 1, … in turn. f must not write v's shared state.
func (v *verifier) parallel(n int, f func(sub *verifier, i int)) {
	found := make([][]Finding, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				sub := v.fork()
				f(sub, i)
				found[i] = sub.problems
			}
		})
	}
	wg.Wait()
	for _, p := range found {
		v.problems = append(v.problems, p...)
	}
}

func (v *verifier) sorted() []Finding {
	sort.SliceStable(v.problems, func(i, j int) bool { return v.problems[i].File < v.problems[j].File })
	return v.problems
}

type verifier struct {
	// removed are (consumer, provider) pairs no longer in the spec whose
	// handshake artifacts are still in the tree: the reconcilers withdraw
	// them in their next passes.
	removed map[schema.Pair]bool
	tree    fs.FS
	spec    *schema.Spec
	now     time.Time
	infos   map[string]*layout.ClusterInfo
	// accepted holds, per cluster, the files under clusters/<id>/liqo/ that
	// are exactly what gitpeer renders: what its kustomization may build.
	accepted map[string][][]byte
	// unheld are the accepted rendered files that are objects of a
	// peering the spec does not hold (see unheldObject).
	unheld []unheldObject
	// baseSpec is the spec at Options.Base, nil without one (see grants).
	baseSpec *schema.Spec
	problems []Finding
	// declaredIDs (ID → index in spec.Clusters) and peerings index the
	// spec's clusters and (consumer, provider) pairs: the checks ask for
	// every file.
	declaredIDs map[string]int
	peerings    map[schema.Pair]bool
	// guard answers Inspect for content already inspected (nil: none).
	guard *guard.Cache
	// verified holds manifests already parsed and verified (nil: none).
	verified *dirmanifest.Cache
	// acceptedObjects are the accepted rendered files as kustomize reads
	// them (see compareBuilt).
	acceptedObjects *acceptedObjects
	// encoder is liqo.Encode remembering what it encoded: the same RBAC
	// objects and namespaces are rendered for many peerings.
	encoder *liqo.Encoder
	// scope limits the checks to what a change touched (Options.Base);
	// nil: the whole tree.
	scope *treeScope
	// expiry, when set, keeps the earliest expiry of the certificates
	// found valid (for a checkpoint); nil: not kept.
	expiry *expiry
}

func (v *verifier) add(file, field, reason, format string, a ...any) {
	v.problems = append(v.problems, Finding{File: file, Field: field, Reason: reason, Message: fmt.Sprintf(format, a...)})
}

// addErr reports an artifact's refusal with its own reason, any other error
// with reason.
func (v *verifier) addErr(reason string, err error) {
	var ae *artifact.Error
	var fe *layout.FieldError
	switch {
	case errors.As(err, &ae):
		v.add(ae.File, ae.Field, ae.Reason, "%v", ae.Err)
	case errors.As(err, &fe):
		v.add(fe.File, fe.Field, reason, "%s", fe.Reason)
	default:
		v.add("", "", reason, "%v", err)
	}
}

// clusters checks each declared cluster's cluster.yaml and pin.
func (v *verifier) clusters() {
	for _, c := range v.spec.Clusters {
		switch {
		case v.scope.has(c.ID):
			v.cluster(c)
		case v.scope.needsInfo(c.ID):
			// A neighbour of the scope: its key is needed, its findings
			// are out of scope (the fork's are dropped; infos is shared).
			v.fork().cluster(c)
		}
	}
}

// cluster checks cluster c's cluster.yaml and pin, and keeps its info.
func (v *verifier) cluster(c schema.Cluster) {
	ci, err := layout.ReadClusterInfo(v.tree, c.ID)
	if errors.Is(err, layout.ErrNotPublished) {
		return // not published yet: its peerings simply have not started
	}
	if err != nil {
		v.addErr(reasons.InvalidFile, err)
		return
	}
	if c.Fingerprint != "" && c.Fingerprint != ci.Fingerprint {
		v.add(layout.ClusterPath(c.ID, layout.ClusterFile), "fingerprint", reasons.FingerprintMismatch, "is %s, but the spec pins %s", ci.Fingerprint, c.Fingerprint)
		return
	}
	v.infos[c.ID] = ci
	v.openPGPKey(ci)
}

// openPGPKey checks the OpenPGP key a cluster publishes, when it publishes
// one, against its cluster.yaml's key.
func (v *verifier) openPGPKey(ci *layout.ClusterInfo) {
	file := layout.ClusterPath(ci.ClusterID, layout.OpenPGPKeyFile)
	data, ok := v.read(file)
	if !ok {
		return
	}
	pub, err := ci.Key()
	if err != nil {
		return // cluster.yaml was checked: not reached
	}
	_, _, err = commitsig.CheckOpenPGPKey(data, pub, commitsig.OpenPGPUserID(ci.ClusterID))
	switch {
	case errors.Is(err, commitsig.ErrOpenPGPKeyMismatch):
		v.add(file, "", reasons.OpenPGPKeyMismatch, "%v: it is not the key of %s", err, layout.ClusterPath(ci.ClusterID, layout.ClusterFile))
	case err != nil:
		v.add(file, "", reasons.InvalidFile, "%v", err)
	}
}

// files walks clusters/: no private material anywhere, every tree belongs to
// a declared cluster, every inbox to one of its peers, every kustomization
// applies only the cluster's own rendered files. The walk lists the files;
// they are read and checked in parallel, findings in the walk's order.
func (v *verifier) files() {
	type item struct {
		path string
		err  error // the walk's error at path, reported as it is
	}
	var items []item
	_ = fs.WalkDir(v.tree, layout.ClustersDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != layout.ClustersDir && v.scope.inClusters(p) {
				items = append(items, item{p, err})
			}
			return nil
		}
		if !v.scope.inClusters(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			items = append(items, item{path: p})
		}
		return nil
	})
	v.parallel(len(items), func(sub *verifier, i int) {
		if items[i].err != nil {
			sub.add(items[i].path, "", reasons.Unreadable, "%v", items[i].err)
			return
		}
		sub.file(items[i].path)
	})
}

// file checks one file under clusters/ (see files).
func (v *verifier) file(p string) {
	data, err := fs.ReadFile(v.tree, p)
	if err != nil {
		v.add(p, "", reasons.Unreadable, "%v", err)
		return
	}
	if reason, found := v.guard.Inspect(data); found {
		v.add(p, "", reasons.PrivateMaterial, "private material: %s", reason)
	}
	cluster, from, rest, ok := layout.Split(p)
	switch {
	case !ok:
		v.add(p, "", reasons.OutsideLayout, "not in a cluster's tree")
	case !v.declared(cluster):
		v.add(p, "", reasons.UndeclaredCluster, "cluster %q is not declared in the spec", cluster)
	case from != "" && !v.peers(cluster, from) && !v.peers(from, cluster) && !v.tombstone(p, cluster, from, data):
		v.add(p, "", reasons.NotPeered, "%s and %s do not peer: nothing may be addressed from one to the other", from, cluster)
	case from != "" && !artifact.InboxArtifact(rest, v.sender(cluster, from)):
		parts := v.sender(cluster, from)
		v.add(p, "", reasons.UnexpectedArtifact, "not an artifact %s sends as %s (%s): no reader acts on it, signed or not",
			from, parts.Part(cluster), artifact.InboxArtifacts(parts))
	case from == "" && rest == layout.KustomizationFile:
		v.kustomization(p, cluster, data)
	case from == "" && strings.HasPrefix(rest, fluxtrust.Dir+"/"):
		v.fluxTrust(p, cluster, rest, data)
	}
}

// sender is the part from plays toward to as the writer of
// clusters/<to>/inbox/<from>/: as the reconcilers count it, a peering the
// spec declares or one removed whose nonce or Tenant is still there.
func (v *verifier) sender(to, from string) artifact.Sender {
	return artifact.Sender{Provider: v.peers(to, from), Consumer: v.peers(from, to)}
}

func (v *verifier) declared(id string) bool { _, ok := v.declaredIDs[id]; return ok }

// hasPeering reports whether the spec declares the peering.
func (v *verifier) hasPeering(consumer, provider string) bool {
	return v.peerings[schema.Pair{Consumer: consumer, Provider: provider}]
}

// peers reports whether consumer and provider peer, or did and are being
// withdrawn.
func (v *verifier) peers(consumer, provider string) bool {
	return v.hasPeering(consumer, provider) || v.removed[schema.Pair{Consumer: consumer, Provider: provider}]
}

// findRemoved finds peerings gone from the spec that left a nonce or a
// Tenant behind, between declared clusters. Such an artifact is in an inbox
// clusters/<x>/inbox/<y>/ (a nonce of y for consumer x, a Tenant of y for
// provider x): the inboxes are listed rather than every pair of clusters
// tried.
func (v *verifier) findRemoved() {
	for _, x := range v.spec.Clusters {
		// Scoped, only the pairs with a checked cluster: the others are
		// asked about by no check that runs.
		for _, y := range v.scope.senders(v.tree, x.ID) {
			if y == x.ID || !v.declared(y) {
				continue
			}
			for _, c := range []struct {
				schema.Pair
				shown string // the file that shows it was peered
			}{
				{schema.Pair{Consumer: x.ID, Provider: y}, layout.InboxPath(x.ID, y, layout.NonceFile)},
				{schema.Pair{Consumer: y, Provider: x.ID}, layout.InboxPath(x.ID, y, layout.TenantFile)},
			} {
				if v.hasPeering(c.Consumer, c.Provider) {
					continue
				}
				if _, err := fs.Stat(v.tree, c.shown); err == nil {
					v.removed[c.Pair] = true
				}
			}
		}
	}
}

func (v *verifier) kustomization(file, cluster string, data []byte) {
	resources, err := layout.ParseKustomization(file, data)
	if err != nil {
		v.addErr(reasons.InvalidFile, err)
		return
	}
	for i, r := range resources {
		if _, err := fs.Stat(v.tree, path.Join(layout.ClusterPath(cluster), r)); err != nil {
			v.add(file, fmt.Sprintf("resources[%d]", i), reasons.MissingReference, "%q does not exist", r)
		}
	}
}

func (v *verifier) read(file string) ([]byte, bool) {
	data, err := fs.ReadFile(v.tree, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		v.add(file, "", reasons.Unreadable, "%v", err)
		return nil, false
	}
	return data, true
}

// peering re-runs both sides' checks on whatever artifacts exist. The
// provider's nonce is checked against the one it published (the secret it
// derives from is not in Git), and a token proof cannot be checked offline.
func (v *verifier) peering(pr schema.Peering) {
	consumer, provider := pr.Consumer, pr.Provider
	c, p := v.infos[consumer], v.infos[provider]
	nonceFile := layout.InboxPath(consumer, provider, layout.NonceFile)
	tenantFile := layout.InboxPath(provider, consumer, layout.TenantFile)
	identityFile := layout.InboxPath(consumer, provider, layout.IdentityFile)

	nonceData, hasNonce := v.read(nonceFile)
	tenantData, hasTenant := v.read(tenantFile)
	identityData, hasIdentity := v.read(identityFile)
	var nonce artifact.Nonce
	if hasNonce {
		var err error
		if nonce, err = artifact.ParseNonce(nonceFile, nonceData, consumer); err != nil {
			v.addErr(reasons.InvalidFile, err)
			hasNonce = false
		}
	}
	// The key a Tenant must carry: the published one under "pinned", the
	// first one accepted (the provider's rendered Tenant) under open/token.
	var pinned []byte
	havePin := false
	switch {
	case pr.AcceptPolicy() == schema.PolicyPinned && c != nil:
		_, pinned, _ = handshake.ParsePublicKey([]byte(c.PublicKey))
		havePin = true
	case pr.AcceptPolicy() != schema.PolicyPinned:
		havePin = true
		rendered := render.Path(provider, consumer, authv1beta1.TenantKind, consumer)
		if data, ok := v.read(rendered); ok {
			if t, err := artifact.DecodeTenant(rendered, data); err == nil {
				_, pinned, _ = handshake.ParsePublicKey(t.Spec.PublicKey)
			}
		}
	}
	var tenantKey []byte
	var spec schema.Cluster
	if i, ok := v.declaredIDs[consumer]; ok {
		spec = v.spec.Clusters[i]
	}
	switch {
	case hasTenant && !hasNonce:
		v.add(tenantFile, "", reasons.OutOfOrder, "answers no valid nonce from %s", provider)
	case hasTenant && !havePin:
		v.add(tenantFile, "", reasons.OutOfOrder, "%s has not published a valid cluster.yaml to pin its key", consumer)
	case hasTenant:
		t, err := artifact.VerifyTenant(tenantFile, tenantData, artifact.TenantCheck{ConsumerID: consumer, Nonce: nonce.Value, PinnedKeyDER: pinned, Fingerprint: spec.Fingerprint})
		if err != nil {
			v.addErr(reasons.InvalidFile, err)
			break
		}
		_, tenantKey, _ = handshake.ParsePublicKey(t.Spec.PublicKey)
		if e, err := artifact.TenantEpoch(tenantFile, t); err != nil {
			v.addErr(reasons.InvalidFile, err)
		} else if e != nonce.Epoch {
			v.add(tenantFile, "metadata.annotations", reasons.EpochMismatch, "answers epoch %d, the nonce is of epoch %d", e, nonce.Epoch)
		}
	}
	if hasIdentity {
		if tenantKey == nil {
			v.add(identityFile, "", reasons.OutOfOrder, "issued without a valid Tenant from %s", consumer)
		}
		if p == nil {
			v.add(identityFile, "", reasons.OutOfOrder, "%s has not published a valid cluster.yaml", provider)
		} else if tenantKey != nil {
			if id, err := artifact.VerifyIdentity(identityFile, identityData, artifact.IdentityCheck{
				ConsumerID: consumer, Provider: p, ConsumerKeyDER: tenantKey, Now: v.now,
			}); err != nil {
				v.addErr(reasons.InvalidFile, err)
			} else {
				v.expiry.note(id.Spec.AuthParams.SignedCRT, []byte(p.CA))
			}
		}
	}
	v.slices(consumer, provider, p, tenantKey)
	v.grants(pr)
}

// slices checks every slice request (its CSR against the Tenant's key) and
// every answer (an accepted one must carry a certificate of the provider's CA
// for the consumer's key and the slice's subject, and answer a request).
func (v *verifier) slices(consumer, provider string, p *layout.ClusterInfo, tenantKey []byte) {
	reqDir := layout.ClusterPath(provider, layout.InboxDir, consumer)
	requests := map[string]*authv1beta1.ResourceSlice{}
	entries, _ := fs.ReadDir(v.tree, reqDir)
	for _, e := range entries {
		name, ok := artifact.SliceName(e.Name())
		if !ok {
			continue
		}
		file := path.Join(reqDir, e.Name())
		data, ok := v.read(file)
		if !ok {
			continue
		}
		if tenantKey == nil {
			v.add(file, "", reasons.OutOfOrder, "slice request without a valid Tenant from %s", consumer)
			continue
		}
		rs, err := artifact.VerifySliceRequest(file, data, name, consumer, provider, tenantKey)
		if err != nil {
			v.addErr(reasons.InvalidFile, err)
			continue
		}
		requests[name] = rs
	}
	ansDir := layout.ClusterPath(consumer, layout.InboxDir, provider)
	entries, _ = fs.ReadDir(v.tree, ansDir)
	for _, e := range entries {
		name, ok := artifact.SliceAnswerName(e.Name())
		if !ok {
			continue
		}
		file := path.Join(ansDir, e.Name())
		data, ok := v.read(file)
		if !ok {
			continue
		}
		req, ok := requests[name]
		if !ok {
			v.add(file, "", reasons.OutOfOrder, "answers no valid request of %s", consumer)
			continue
		}
		if p == nil || tenantKey == nil {
			continue
		}
		ans, err := artifact.VerifySliceAnswer(file, data, req, artifact.IdentityCheck{ConsumerID: consumer, Provider: p, ConsumerKeyDER: tenantKey, Now: v.now})
		if err != nil && !errors.Is(err, artifact.ErrStaleAnswer) {
			v.addErr(reasons.InvalidFile, err)
		}
		if err == nil && ans.Accepted && ans.Slice.Status.AuthParams != nil {
			v.expiry.note(ans.Slice.Status.AuthParams.SignedCRT, []byte(p.CA))
		}
	}
}
