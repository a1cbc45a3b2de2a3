package verify

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// rendered checks every file under clusters/<id>/liqo/: what Flux applies to
// a cluster must be exactly an object gitpeer renders from the verified
// artifacts of a declared peering (byte for byte: reconcile writes
// liqo.Encode of each object). A RoleBinding pointing elsewhere, an extra
// binding, an Identity with another API server: each is named.
func (v *verifier) rendered() {
	clusters, err := fs.ReadDir(v.tree, layout.ClustersDir)
	if err != nil {
		return
	}
	var ids []string
	for _, c := range clusters {
		if c.IsDir() && v.declared(c.Name()) && v.scope.has(c.Name()) {
			ids = append(ids, c.Name())
		}
	}
	// Each cluster on its own, in parallel; what each accepted is kept
	// when all are done (forks do not write v.accepted).
	accepted := make([][][]byte, len(ids))
	unheld := make([][]unheldObject, len(ids))
	v.parallel(len(ids), func(sub *verifier, i int) { accepted[i], unheld[i] = sub.renderedOf(ids[i]) })
	for i, id := range ids {
		if accepted[i] != nil {
			v.accepted[id] = append(v.accepted[id], accepted[i]...)
		}
		v.unheld = append(v.unheld, unheld[i]...)
	}
}

// unheldObject is a rendered file that is an object of a peering the spec
// does not hold, other than what a revocation renders for it: a peering
// removed from the spec leaves it until the reconcilers' next passes, so
// it is accepted when the commit that wrote it had the peering in its spec
// (Check asks the history which commit that is; see PeeringNotInSpec).
type unheldObject struct {
	file string
	blob plumbing.Hash // of the file's content
	pair schema.Pair   // the peering it is an object of
}

// renderedOf checks the files under clusters/<self>/liqo/ and returns those
// that are exactly what gitpeer renders, in the order read, and of them
// those that are an object of a peering the spec does not hold.
func (v *verifier) renderedOf(self string) (accepted [][]byte, unheld []unheldObject) {
	peers, err := fs.ReadDir(v.tree, layout.ClusterPath(self, layout.LiqoDir))
	if err != nil {
		return nil, nil
	}
	for _, p := range peers {
		dir := path.Join(layout.ClusterPath(self, layout.LiqoDir), p.Name())
		if !p.IsDir() {
			v.add(dir, "", reasons.UnexpectedObject, "gitpeer renders objects only in per-peer directories")
			continue
		}
		allowed := v.expected(self, p.Name())
		files, _ := fs.ReadDir(v.tree, dir)
		for _, f := range files {
			file := path.Join(dir, f.Name())
			data, ok := v.read(file)
			if !ok {
				continue
			}
			known, match := v.matchesAny(data, allowed[f.Name()])
			if !known {
				v.add(file, "", reasons.UnexpectedObject, "gitpeer renders no such object for this peering: it would be applied unverified")
				continue
			}
			if match == nil {
				v.add(file, "", reasons.RenderedMismatch, "differs from the object gitpeer renders from the verified artifacts")
				continue
			}
			accepted = append(accepted, data)
			if match.unheld != nil {
				unheld = append(unheld, unheldObject{file: file, blob: plumbing.ComputeHash(plumbing.BlobObject, data), pair: *match.unheld})
			}
		}
	}
	return accepted, unheld
}

// form is an object gitpeer may render, encoded when first compared: most
// peer directories hold one form of each object, and encoding every
// candidate of every peering cost more than all the other checks of a
// rendered file.
type form struct {
	obj  any
	done bool
	data []byte
	ok   bool // obj encodes
	// unheld, when set, is the peering the spec does not hold whose
	// object this is, other than in the form a revocation renders.
	unheld *schema.Pair
}

// matchesAny reports whether any of forms encodes (the file is one gitpeer
// renders: known) and which one encodes to exactly data (nil: none). The
// answers are those of encoding every form first.
func (v *verifier) matchesAny(data []byte, forms []*form) (known bool, match *form) {
	for _, f := range forms {
		if !f.done {
			var err error
			f.data, err = v.encoder.Encode(f.obj)
			f.ok, f.done = err == nil, true
		}
		if !f.ok {
			continue
		}
		known = true
		if bytes.Equal(data, f.data) {
			return true, f
		}
	}
	return known, nil
}

// expected lists, by file name, the objects a rendered file of self for
// peer may be the encoding of (liqo.Encode), in order: the union of what
// render lists for every state the peering may be in (a Tenant cordoned or
// drained by the spec, its slices admitted or none while it drains).
func (v *verifier) expected(self, peer string) map[string][]*form {
	out := map[string][]*form{}
	// addAs adds objs as objects of the peering unheld, nil for one the
	// spec holds or the form a revocation renders; where both list an
	// object, it is held.
	addAs := func(unheld *schema.Pair, objs []render.Object) {
		for _, o := range objs {
			file := o.File()
			i := slices.IndexFunc(out[file], func(f *form) bool { return reflect.DeepEqual(f.obj, o.Object) })
			switch {
			case i < 0:
				out[file] = append(out[file], &form{obj: o.Object, unheld: unheld})
			case unheld == nil:
				out[file][i].unheld = nil
			}
		}
	}
	add := func(objs []render.Object) { addAs(nil, objs) }
	if peer == render.SharedDir {
		add(render.Shared())
		return out
	}
	// The tenant namespace serves either side of any peering with peer.
	add(render.Provider(self, render.Provided{Consumer: peer}))

	// The peerings the spec does not hold: their objects are accepted as
	// what was rendered before the spec removed them, but only a
	// revocation's are written after (see unheldObject).
	var provides, consumes *schema.Pair
	if !v.hasPeering(peer, self) {
		provides = &schema.Pair{Consumer: peer, Provider: self}
	}
	if !v.hasPeering(self, peer) {
		consumes = &schema.Pair{Consumer: self, Provider: peer}
	}

	// self provides to peer, or did until the peering was removed (a drained
	// Tenant is what the first revocation pass leaves).
	if v.peers(peer, self) || !v.peers(self, peer) {
		provided := render.Provided{Consumer: peer}
		if data, ok := v.readQuiet(layout.InboxPath(peer, self, layout.NonceFile)); ok {
			if n, err := artifact.ParseNonce("", data, peer); err == nil {
				provided.Nonce = n.Value
			}
		}
		addAs(provides, render.Provider(self, provided))
		if data, ok := v.readQuiet(layout.InboxPath(self, peer, layout.TenantFile)); ok {
			if t, err := artifact.DecodeTenant("", data); err == nil {
				if e, err := artifact.TenantEpoch("", t); err == nil {
					provided.Tenant, provided.Epoch = t, e
				}
			}
		}
		// The admission policy admits exactly the slices self's answers
		// grant peer, or none (a drained tenant).
		for _, cond := range []authv1beta1.TenantCondition{"", authv1beta1.TenantConditionCordoned, authv1beta1.TenantConditionDrained} {
			for _, grants := range [][]admission.Grant{v.admitted(self, peer), nil} {
				provided.Condition, provided.Grants = cond, grants
				addAs(provides, render.Provider(self, provided))
			}
		}
		// What a revocation renders (reconcile's drain): the Tenant
		// drained, no binding, no nonce, an admission policy admitting
		// nothing.
		if provided.Tenant != nil {
			add(render.Provider(self, render.Provided{Consumer: peer, Tenant: provided.Tenant, Epoch: provided.Epoch, Condition: authv1beta1.TenantConditionDrained}))
		}
	}
	if !v.hasPeering(self, peer) && !v.hasPeering(peer, self) {
		v.leftovers(self, peer, addAs)
	}
	// self consumes from peer.
	if v.peers(self, peer) {
		consumed := render.Consumed{Provider: peer}
		if data, ok := v.readQuiet(layout.InboxPath(self, peer, layout.IdentityFile)); ok {
			if id, err := artifact.DecodeIdentity("", data); err == nil {
				consumed.Identity = &id.Spec.AuthParams
			}
		}
		for _, name := range v.sliceRequests(peer, self) {
			reqData, _ := v.readQuiet(layout.InboxPath(peer, self, artifact.SliceFile(name)))
			req, err := artifact.DecodeSlice("", reqData)
			if err != nil {
				continue
			}
			sl := render.Slice{Name: name, Request: req}
			if ansData, ok := v.readQuiet(layout.InboxPath(self, peer, artifact.SliceAnswerFile(name))); ok {
				if ans, err := artifact.DecodeSlice("", ansData); err == nil {
					sl.AuthParams = ans.Status.AuthParams
				}
			}
			consumed.Slices = append(consumed.Slices, sl)
		}
		addAs(consumes, render.Consumer(self, consumed))
	}
	return out
}

// leftovers allows what a removed peering may still hold until the
// reconcilers withdraw it: each Tenant, Identity, ResourceSlice or nonce
// Secret only in the clean form gitpeer renders (a re-encoding of its own
// fields, so nothing extra rides along); RBAC and namespaces only in Liqo's
// exact form, added by the caller. Each is added (addAs) as an object of
// the peering the spec does not hold, but a drained Tenant and what is
// rendered with it, which is what a revocation leaves.
func (v *verifier) leftovers(self, peer string, addAs func(*schema.Pair, []render.Object)) {
	provides := &schema.Pair{Consumer: peer, Provider: self}
	consumes := &schema.Pair{Consumer: self, Provider: peer}
	add := func(objs []render.Object) { addAs(consumes, objs) }
	dir := layout.PeerDir(self, peer)
	files, _ := fs.ReadDir(v.tree, dir)
	for _, f := range files {
		data, ok := v.readQuiet(path.Join(dir, f.Name()))
		if !ok {
			continue
		}
		if t, err := artifact.DecodeTenant("", data); err == nil && t.Name == peer {
			if e, err := artifact.TenantEpoch("", t); err == nil {
				unheld := provides
				if t.Spec.TenantCondition == authv1beta1.TenantConditionDrained {
					unheld = nil // what a revocation renders
				}
				addAs(unheld, render.Provider(self, render.Provided{Consumer: peer, Tenant: t, Epoch: e, Condition: t.Spec.TenantCondition}))
			}
		}
		if id, err := artifact.DecodeIdentity("", data); err == nil {
			if id.Spec.Type == authv1beta1.ControlPlaneIdentityType {
				add(render.Consumer(self, render.Consumed{Provider: peer, Identity: &id.Spec.AuthParams}))
			} else if name := id.Labels[liqo.LabelResourceSliceName]; name != "" {
				add(render.Consumer(self, render.Consumed{Provider: peer, Slices: []render.Slice{{Name: name, AuthParams: &id.Spec.AuthParams}}}))
			}
		}
		if rs, err := artifact.DecodeSlice("", data); err == nil && rs.Spec.ConsumerClusterID != nil && string(*rs.Spec.ConsumerClusterID) == self {
			clean := liqo.ResourceSlice(rs.Name, self, peer, string(rs.Spec.Class), rs.Spec.Resources,
				rs.Annotations[liqo.AnnotationCreateVirtualNode] == "true", rs.Spec.CSR)
			add(render.Consumer(self, render.Consumed{Provider: peer, Slices: []render.Slice{{Name: rs.Name, Request: clean}}}))
		}
		if _, n, err := liqo.DecodeNonceSecret(data); err == nil {
			addAs(provides, render.Provider(self, render.Provided{Consumer: peer, Nonce: n}))
		}
	}
}

// admitted is what the admission policy of provider for consumer admits:
// each slice provider's answers accept, with the class and resources of
// the request it answers, and the resources the answer grants as the most
// its status may hold.
func (v *verifier) admitted(provider, consumer string) []admission.Grant {
	var out []admission.Grant
	for _, a := range v.acceptedAnswers(provider, consumer) {
		out = append(out, admission.Grant{Name: a.name, Class: string(a.rs.Spec.Class), Resources: a.rs.Spec.Resources, Granted: a.rs.Status.Resources})
	}
	return out
}

// sliceRequests lists the slice names consumer requested of provider.
func (v *verifier) sliceRequests(provider, consumer string) []string {
	entries, err := fs.ReadDir(v.tree, layout.ClusterPath(provider, layout.InboxDir, consumer))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if name, ok := artifact.SliceName(e.Name()); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// readQuiet reads a file that may be absent, reporting nothing: its own
// checks report it.
func (v *verifier) readQuiet(file string) ([]byte, bool) {
	data, err := fs.ReadFile(v.tree, file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	return data, err == nil
}
