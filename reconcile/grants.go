package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// keptAnswer is an answer this cluster gave to a request it cannot read now
// (see keepAnswers).
type keptAnswer struct {
	file string // the answer's path in the consumer's inbox
	data []byte // the answer as committed
	prev *authv1beta1.ResourceSlice
	note string // why the request is not read: "<request file> is <reason>"
}

// grantSpec is the spec's slices of one peering, as the provider grants
// them.
type grantSpec struct {
	listed map[string]*policy.Listed
	index  map[string]int // position in the spec's list
}

// specSlices indexes the slices the spec lists for a peering. A slice whose
// resources do not parse (the schema admits only quantities) is listed
// without resources, so no request matches it.
func specSlices(slices []schema.Slice) grantSpec {
	g := grantSpec{listed: map[string]*policy.Listed{}, index: map[string]int{}}
	for i, s := range slices {
		if _, dup := g.listed[s.Name]; dup {
			continue // the first, as validate reports the rest
		}
		resources, err := Quantities(s.Resources)
		if err != nil {
			resources = nil
		}
		g.listed[s.Name] = &policy.Listed{Name: s.Name, Class: s.Class, Resources: resources}
		g.index[s.Name] = i
	}
	return g
}

// order is the order in which the slices of requested and kept are
// decided: the spec's order (the slices listed first take the class totals
// first), then those the spec does not list, by name.
func (g grantSpec) order(requested []string, kept map[string]keptAnswer) []string {
	all := append([]string(nil), requested...)
	for name := range kept {
		all = append(all, name)
	}
	rank := func(name string) int {
		if i, ok := g.index[name]; ok {
			return i
		}
		return len(g.index)
	}
	sort.Slice(all, func(i, j int) bool {
		if ri, rj := rank(all[i]), rank(all[j]); ri != rj {
			return ri < rj
		}
		return all[i] < all[j]
	})
	return all
}

func sortedKeys(m map[string]keptAnswer) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keepAnswer decides again an answer kept for a request that cannot be
// read (keepAnswers). A denial is kept byte for byte. An acceptance is kept
// only while it is still a grant of the spec: the slice listed with the
// class and resources accepted, the Tenant's condition allowing it and the
// class total holding (policy.Grant, as a request accepted before);
// otherwise the answer becomes a denial naming the reason, so a slice
// removed from the spec is not granted on because its request was hidden.
func (p *pass) keepAnswer(name string, k keptAnswer, listed *policy.Listed, condition authv1beta1.TenantCondition, budget *policy.Budget, grant func(admission.Grant)) (layout.SliceStatus, error) {
	if artifact.SliceAccepted(k.prev) {
		d := policy.Grant(p.terms.classes, condition, listed, policy.Request{Name: name, Class: string(k.prev.Spec.Class),
			Resources: k.prev.Spec.Resources, WasAccepted: true}, budget)
		if !d.Accepted {
			ans := k.prev.DeepCopy()
			ans.Status = authv1beta1.ResourceSliceStatus{Conditions: p.sliceConditions(k.prev,
				sliceCond(authv1beta1.ResourceSliceConditionTypeAuthentication, true, liqo.ReasonSliceAuthAccepted, "ResourceSlice authentication accepted"),
				sliceCond(authv1beta1.ResourceSliceConditionTypeResources, false, d.Reason, d.Message))}
			if err := p.put(k.file, ans); err != nil {
				return layout.SliceStatus{}, err
			}
			s := sliceStatus(ans)
			s.Message += "; decided again although " + k.note
			return s, nil
		}
	}
	p.out.Files[k.file] = k.data
	if artifact.SliceAccepted(k.prev) {
		grant(admission.Grant{Name: name, Class: string(k.prev.Spec.Class), Resources: k.prev.Spec.Resources, Granted: k.prev.Status.Resources})
	}
	s := sliceStatus(k.prev)
	s.Message += "; decision kept: " + k.note
	return s, nil
}

// notSigned is the status of a granted slice whose CSR the signer did not
// sign (err). The answer given before to this same request is kept byte
// for byte, so a signer down for a while withdraws nothing; with none, no
// answer is written. The message names err only when it is about the CSR
// (public in the request): a backend's errors may describe this cluster.
func (p *pass) notSigned(answerFile string, prev, req *authv1beta1.ResourceSlice, err error) layout.SliceStatus {
	why := "the signer of this cluster failed"
	for _, e := range []error{handshake.ErrCSRSubject, handshake.ErrMalformedCSR, handshake.ErrCSRKey} {
		if errors.Is(err, e) {
			why = err.Error()
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		why = "the signer of this cluster timed out"
	}
	s := layout.SliceStatus{Name: req.Name, Authentication: "Accepted", Resources: "Pending", Reason: reasons.SliceNotSigned,
		Message: fmt.Sprintf("granted, but the CSR of slice %s was not signed: %s", req.Name, why)}
	if prev != nil && reflect.DeepEqual(prev.Spec, req.Spec) {
		if data, found, rerr := p.read(answerFile); rerr == nil && found {
			p.out.Files[answerFile] = data
			s.Message += "; the answer given before is kept"
		}
	}
	return s
}

// refusedName is the status of a request whose file names a slice Liqo
// cannot serve (policy.CheckName): nothing of it is read, signed or
// answered. The status names the slice by its name cut to 64 bytes.
func refusedName(name string, err error) layout.SliceStatus {
	if len(name) > 64 {
		name = strings.ToValidUTF8(name[:64], "") + "…"
	}
	return layout.SliceStatus{Name: name, Authentication: "Denied", Resources: "Denied",
		Reason: reasons.SliceNameRefused, Message: err.Error()}
}
