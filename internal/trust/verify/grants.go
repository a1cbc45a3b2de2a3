package verify

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// grants checks every slice the tree grants in the peering pr against the
// spec: each accepted answer in clusters/<consumer>/inbox/<provider>/ (a
// slice the spec lists, with its class and resources, the grant the
// provider's class makes for it, within the class totals taken in the
// spec's order: policy.Grant as the provider decides) and each
// ResourceSlice or ResourceSlice Identity rendered in
// clusters/<consumer>/liqo/<provider>/ (a slice so granted). A finding the
// spec at Base does not have is left out: the change under review is what
// makes the provider withdraw that grant, on its first pass after it lands.
func (v *verifier) grants(pr schema.Peering) {
	found := v.grantFindings(v.spec, pr)
	if len(found) == 0 {
		return
	}
	var before map[findingAt]bool
	if v.baseSpec != nil {
		for _, bp := range v.baseSpec.Peerings {
			if bp.Consumer == pr.Consumer && bp.Provider == pr.Provider {
				before = map[findingAt]bool{}
				for _, f := range v.grantFindings(v.baseSpec, bp) {
					before[findingAt{f.File, f.Field}] = true
				}
				break
			}
		}
	}
	for _, f := range found {
		if before != nil && !before[findingAt{f.File, f.Field}] {
			continue // granted as the spec at Base lists it
		}
		v.problems = append(v.problems, f)
	}
}

// grantFindings is grants' findings for pr under spec.
func (v *verifier) grantFindings(spec *schema.Spec, pr schema.Peering) []Finding {
	classes, err := reconcile.ProviderClasses(spec, pr.Provider)
	if err != nil {
		return nil // validate names the spec's own problems
	}
	listed := map[string]*policy.Listed{}
	index := map[string]int{}
	for i, s := range pr.Slices {
		if _, dup := listed[s.Name]; dup {
			continue
		}
		resources, _ := reconcile.Quantities(s.Resources)
		listed[s.Name] = &policy.Listed{Name: s.Name, Class: s.Class, Resources: resources}
		index[s.Name] = i
	}
	rank := func(name string) int {
		if i, ok := index[name]; ok {
			return i
		}
		return len(index)
	}
	var out []Finding
	add := func(file, field, reason, format string, a ...any) {
		out = append(out, Finding{File: file, Field: field, Reason: reason, Message: fmt.Sprintf(format, a...)})
	}

	granted := v.acceptedAnswers(pr.Provider, pr.Consumer)
	sort.Slice(granted, func(i, j int) bool {
		if ri, rj := rank(granted[i].name), rank(granted[j].name); ri != rj {
			return ri < rj
		}
		return granted[i].name < granted[j].name
	})
	budget := policy.NewBudget(classes)
	why := map[string]string{} // slice name → reason its grant is refused
	ok := map[string]bool{}    // slice names granted as the spec lists them
	for _, g := range granted {
		d := policy.Grant(classes, authv1beta1.TenantCondition(pr.Condition()), listed[g.name],
			policy.Request{Name: g.name, Class: string(g.rs.Spec.Class), Resources: g.rs.Spec.Resources, WasAccepted: true}, budget)
		switch {
		case !d.Accepted:
			reason := d.Why
			if reason == "" {
				reason = reasons.GrantBeyondPolicy
			}
			msg := strings.TrimPrefix(d.Message, reason+": ")
			add(g.file, "spec", reason, "%s grants slice %s to %s, which the spec does not: %s", pr.Provider, g.name, pr.Consumer, msg)
			why[g.name] = reason
		case !policy.SameResources(g.rs.Status.Resources, d.Granted):
			add(g.file, "status.resources", reasons.SliceDiffersFromSpec, "grants {%s}; class %s grants {%s} for the spec's slice %s",
				policy.FormatResources(g.rs.Status.Resources), policy.ClassName(string(g.rs.Spec.Class)), policy.FormatResources(d.Granted), g.name)
			why[g.name] = reasons.SliceDiffersFromSpec
		default:
			ok[g.name] = true
		}
	}

	dir := layout.PeerDir(pr.Consumer, pr.Provider)
	files, _ := fs.ReadDir(v.tree, dir)
	for _, f := range files {
		file := path.Join(dir, f.Name())
		data, found := v.readQuiet(file)
		if !found {
			continue
		}
		if !sliceOrIdentity(data) {
			continue // neither decoding would succeed
		}
		name := ""
		if rs, err := liqo.DecodeResourceSlice(data); err == nil {
			name = rs.Name
			if reason, msg := policy.Match(listed[name], name, string(rs.Spec.Class), rs.Spec.Resources); reason != "" {
				add(file, "spec", reason, "rendered for %s: %s", pr.Consumer, msg)
				continue
			}
		} else if id, err := liqo.DecodeIdentity(data); err == nil && id.Spec.Type == authv1beta1.ResourceSliceIdentityType {
			name = id.Labels[liqo.LabelResourceSliceName]
			if listed[name] == nil {
				add(file, "", reasons.SliceNotInSpec, "rendered for %s: the spec lists no slice %s for this peering", pr.Consumer, name)
				continue
			}
		} else {
			continue
		}
		switch {
		case why[name] != "":
			add(file, "", why[name], "rendered for %s, but %s's grant of slice %s is beyond the spec", pr.Consumer, pr.Provider, name)
		case !ok[name]:
			add(file, "", reasons.GrantNotAccepted, "rendered for %s, but %s has not granted slice %s", pr.Consumer, pr.Provider, name)
		}
	}
	return out
}

// loadBaseSpec is the spec at revision base of the repository at dir (one
// of schema.SpecFiles at the root of its tree, read from Git objects as
// every reader reads), parsed with parse (nil: schema.Parse), nil when
// there is none or it does not parse: grants then judges by HEAD's spec
// alone. The same file with the same bytes in tree, the tree checked, is
// spec, its parse, not evaluated again.
func loadBaseSpec(dir, base string, parse func(file string, data []byte) (*schema.Spec, error), tree fs.FS, spec *schema.Spec) *schema.Spec {
	ct, err := gitobj.OpenCommitTree(dir, base)
	if err != nil {
		return nil
	}
	defer ct.Close()
	file, data, err := schema.FindSpec(ct.TreeFS, "")
	if err != nil {
		return nil
	}
	if spec != nil && tree != nil {
		if hf, hd, err := schema.FindSpec(tree, ""); err == nil && hf == file && bytes.Equal(hd, data) {
			return spec
		}
	}
	if parse == nil {
		parse = schema.Parse
	}
	at, err := parse(file, data)
	if err != nil {
		return nil
	}
	return at
}

// acceptedAnswer is an answer in a consumer's inbox by which its provider
// accepts slice name (artifact.SliceAccepted).
type acceptedAnswer struct {
	name, file string
	rs         *authv1beta1.ResourceSlice
}

// acceptedAnswers lists the answers of provider in consumer's inbox that
// accept a slice, in the directory's order. A denial grants nothing, and
// one that cannot be read is left to the answer checks, which name it.
func (v *verifier) acceptedAnswers(provider, consumer string) []acceptedAnswer {
	dir := layout.ClusterPath(consumer, layout.InboxDir, provider)
	entries, _ := fs.ReadDir(v.tree, dir)
	var out []acceptedAnswer
	for _, e := range entries {
		name, ok := artifact.SliceAnswerName(e.Name())
		if !ok {
			continue
		}
		file := path.Join(dir, e.Name())
		data, ok := v.readQuiet(file)
		if !ok {
			continue
		}
		if rs, err := artifact.DecodeSlice(file, data); err == nil && artifact.SliceAccepted(rs) {
			out = append(out, acceptedAnswer{name: name, file: file, rs: rs})
		}
	}
	return out
}

// findingAt is where a finding is: its file and field.
type findingAt struct{ file, field string }

// sliceOrIdentity reports whether data may decode as a ResourceSlice or an
// Identity: whether its apiVersion and kind, read as liqo's decoders read
// them (sigs.k8s.io/yaml into the two fields), are one of theirs. When not,
// both liqo.DecodeResourceSlice and liqo.DecodeIdentity fail on it (on
// those fields, or on the YAML before them), after two YAML parses each: a
// peer directory's namespaces, Tenants and RBAC were parsed four times only
// to be skipped.
func sliceOrIdentity(data []byte) bool {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return false
	}
	return head.APIVersion == authv1beta1.GroupVersion.String() &&
		(head.Kind == authv1beta1.ResourceSliceKind || head.Kind == authv1beta1.IdentityKind)
}
