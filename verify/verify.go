// Package verify checks a peering repo checkout offline, with no private
// material: every check a provider makes before signing and a consumer makes
// before trusting, plus the repo's own rules (ownership layout, the apply
// rule, no secrets in the tree). It is what a reviewer runs on a pull request.
package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/artifact"
	"github.com/gitpeer/gitpeer/guard"
	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/liqo"
	"github.com/gitpeer/gitpeer/schema"
)

// Problem is one failed check: the file, the field at fault ("" for the whole
// file) and why.
type Problem struct {
	File   string
	Field  string
	Reason string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.File + ": " + p.Reason
	}
	return p.File + ": " + p.Field + ": " + p.Reason
}

// Tree checks the checkout tree (spec at its root) at time now and returns
// every problem found, sorted by file. A nil slice means every check holds.
func Tree(tree fs.FS, spec *schema.Spec, now time.Time) []Problem {
	v := &verifier{tree: tree, spec: spec, now: now, infos: map[string]*layout.ClusterInfo{}, removed: map[[2]string]bool{}}
	v.clusters()
	v.findRemoved()
	v.files()
	for _, p := range spec.Peerings {
		v.peering(p)
	}

	v.rendered()
	sort.SliceStable(v.problems, func(i, j int) bool { return v.problems[i].File < v.problems[j].File })
	return v.problems
}

type verifier struct {
	// removed are (consumer, provider) pairs no longer in the spec whose
	// handshake artifacts are still in the tree: the reconcilers withdraw
	// them in their next passes.
	removed  map[[2]string]bool
	tree     fs.FS
	spec     *schema.Spec
	now      time.Time
	infos    map[string]*layout.ClusterInfo
	problems []Problem
}

func (v *verifier) add(file, field, format string, a ...any) {
	v.problems = append(v.problems, Problem{File: file, Field: field, Reason: fmt.Sprintf(format, a...)})
}

func (v *verifier) addErr(err error) {
	var ae *artifact.Error
	var fe *layout.FieldError
	switch {
	case errors.As(err, &ae):
		v.add(ae.File, ae.Field, "%v (%s)", ae.Err, ae.Reason)
	case errors.As(err, &fe):
		v.add(fe.File, fe.Field, "%s", fe.Reason)
	default:
		v.add("", "", "%v", err)
	}
}

// clusters checks each declared cluster's cluster.yaml and pin.
func (v *verifier) clusters() {
	for _, c := range v.spec.Clusters {
		ci, err := layout.ReadClusterInfo(v.tree, c.ID)
		if errors.Is(err, layout.ErrNotPublished) {
			continue // not published yet: its peerings simply have not started
		}
		if err != nil {
			v.addErr(err)
			continue
		}
		if c.Fingerprint != "" && c.Fingerprint != ci.Fingerprint {
			v.add(layout.ClusterPath(c.ID, layout.ClusterFile), "fingerprint", "is %s, but the spec pins %s", ci.Fingerprint, c.Fingerprint)
			continue
		}
		v.infos[c.ID] = ci
	}
}

// files walks clusters/: no private material anywhere, every tree belongs to
// a declared cluster, every inbox to one of its peers, every kustomization
// applies only the cluster's own rendered files.
func (v *verifier) files() {
	_ = fs.WalkDir(v.tree, layout.ClustersDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != layout.ClustersDir {
				v.add(p, "", "%v", err)
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(v.tree, p)
		if err != nil {
			v.add(p, "", "%v", err)
			return nil
		}
		if reason, found := guard.Inspect(data); found {
			v.add(p, "", "private material: %s", reason)
		}
		cluster, from, rest, ok := layout.Split(p)
		switch {
		case !ok:
			v.add(p, "", "not in a cluster's tree")
		case !v.declared(cluster):
			v.add(p, "", "cluster %q is not declared in the spec", cluster)
		case from != "" && !v.peers(cluster, from) && !v.peers(from, cluster):
			v.add(p, "", "%s and %s do not peer: nothing may be addressed from one to the other", from, cluster)
		case from == "" && rest == layout.KustomizationFile:
			v.kustomization(p, cluster, data)
		}
		return nil
	})
}

func (v *verifier) declared(id string) bool { _, ok := v.spec.Cluster(id); return ok }

// peers reports whether consumer and provider peer, or did and are being
// withdrawn.
func (v *verifier) peers(consumer, provider string) bool {
	return v.spec.HasPeering(consumer, provider) || v.removed[[2]string{consumer, provider}]
}

// findRemoved finds peerings gone from the spec that left a nonce or a
// Tenant behind, between declared clusters.
func (v *verifier) findRemoved() {
	for _, c := range v.spec.Clusters {
		for _, p := range v.spec.Clusters {
			if c.ID == p.ID || v.spec.HasPeering(c.ID, p.ID) {
				continue
			}
			for _, f := range []string{layout.InboxPath(c.ID, p.ID, layout.NonceFile), layout.InboxPath(p.ID, c.ID, layout.TenantFile)} {
				if _, err := fs.Stat(v.tree, f); err == nil {
					v.removed[[2]string{c.ID, p.ID}] = true
				}
			}
		}
	}
}

func (v *verifier) kustomization(file, cluster string, data []byte) {
	resources, err := layout.ParseKustomization(file, data)
	if err != nil {
		v.addErr(err)
		return
	}
	for i, r := range resources {
		if _, err := fs.Stat(v.tree, path.Join(layout.ClusterPath(cluster), r)); err != nil {
			v.add(file, fmt.Sprintf("resources[%d]", i), "%q does not exist", r)
		}
	}
}

func (v *verifier) read(file string) ([]byte, bool) {
	data, err := fs.ReadFile(v.tree, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		v.add(file, "", "%v", err)
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
			v.addErr(err)
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
		rendered := path.Join(layout.PeerDir(provider, consumer), liqo.ObjectFileName("Tenant", consumer))
		if data, ok := v.read(rendered); ok {
			if t, err := artifact.DecodeTenant(rendered, data); err == nil {
				_, pinned, _ = handshake.ParsePublicKey(t.Spec.PublicKey)
			}
		}
	}
	var tenantKey []byte
	spec, _ := v.spec.Cluster(consumer)
	switch {
	case hasTenant && !hasNonce:
		v.add(tenantFile, "", "answers no valid nonce from %s", provider)
	case hasTenant && !havePin:
		v.add(tenantFile, "", "%s has not published a valid cluster.yaml to pin its key", consumer)
	case hasTenant:
		t, err := artifact.VerifyTenant(tenantFile, tenantData, artifact.TenantCheck{ConsumerID: consumer, Nonce: nonce.Value, PinnedKeyDER: pinned, Fingerprint: spec.Fingerprint})
		if err != nil {
			v.addErr(err)
			break
		}
		_, tenantKey, _ = handshake.ParsePublicKey(t.Spec.PublicKey)
		if e, err := artifact.TenantEpoch(tenantFile, t); err != nil {
			v.addErr(err)
		} else if e != nonce.Epoch {
			v.add(tenantFile, "metadata.annotations", "answers epoch %d, the nonce is of epoch %d", e, nonce.Epoch)
		}
	}
	if hasIdentity {
		if tenantKey == nil {
			v.add(identityFile, "", "issued without a valid Tenant from %s", consumer)
		}
		if p == nil {
			v.add(identityFile, "", "%s has not published a valid cluster.yaml", provider)
		} else if tenantKey != nil {
			if _, err := artifact.VerifyIdentity(identityFile, identityData, artifact.IdentityCheck{
				ConsumerID: consumer, Provider: p, ConsumerKeyDER: tenantKey, Now: v.now,
			}); err != nil {
				v.addErr(err)
			}
		}
	}
	v.slices(consumer, provider, p, tenantKey)
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
			v.add(file, "", "slice request without a valid Tenant from %s", consumer)
			continue
		}
		rs, err := artifact.VerifySliceRequest(file, data, name, consumer, provider, tenantKey)
		if err != nil {
			v.addErr(err)
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
			v.add(file, "", "answers no valid request of %s", consumer)
			continue
		}
		if p == nil || tenantKey == nil {
			continue
		}
		_, err := artifact.VerifySliceAnswer(file, data, req, artifact.IdentityCheck{ConsumerID: consumer, Provider: p, ConsumerKeyDER: tenantKey, Now: v.now})
		if err != nil && !errors.Is(err, artifact.ErrStaleAnswer) {
			v.addErr(err)
		}
	}
}
