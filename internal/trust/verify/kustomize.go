package verify

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// kustomizationNames are the file names kustomize reads as a kustomization,
// in its order of preference.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// builds checks each declared cluster's tree as Flux applies it: first every
// kustomization in it (and every one it reaches) for references to remote
// content or to paths outside the cluster's own tree or into its inbox; then,
// if there are none, builds it with kustomize on an in-memory copy of that
// tree alone (as Flux's kustomize-controller: no load restrictions inside
// the tree, no plugins) and requires every object built to be one that
// gitpeer renders for the cluster, byte for byte as it is in liqo/.
func (v *verifier) builds() {
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
	v.parallel(len(ids), func(sub *verifier, i int) { sub.build(ids[i]) })
}

func (v *verifier) build(id string) {
	root := layout.ClusterPath(id)
	kfile := findKustomization(v.tree, root)
	if kfile == "" {
		v.add(path.Join(root, layout.KustomizationFile), "", reasons.MissingKustomization, "missing: Flux would apply every YAML file under %s/, the unverified inbox included", root)
		return
	}
	refused := v.references(id)
	if refused {
		return // never let kustomize fetch, nor build what is refused
	}
	mem := filesys.MakeFsInMemory()
	_ = fs.WalkDir(v.tree, root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && p == path.Join(root, layout.InboxDir):
			return fs.SkipDir
		case d.IsDir():
			return nil
		}
		if data, err := fs.ReadFile(v.tree, p); err == nil {
			_ = mem.WriteFile("/"+p, data)
		}
		return nil
	})
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	built, err := krusty.MakeKustomizer(opts).Run(mem, "/"+root)
	if err != nil {
		v.add(kfile, "", reasons.BuildFailed, "kustomize build %s: %v", root, err)
		return
	}
	v.compareBuilt(id, kfile, built.Resources())
}

// compareBuilt requires each built object to be one of the cluster's
// accepted rendered files, as kustomize reads it.
func (v *verifier) compareBuilt(id, kfile string, built []*resource.Resource) {
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var accepted []builtObject
	for _, data := range v.accepted[id] {
		accepted = append(accepted, v.acceptedObjects.objects(rf, data)...)
	}
	for _, r := range built {
		name := objectName(r)
		m, err := r.Map()
		if err != nil {
			v.add(kfile, name, reasons.UnexpectedObject, "builds an object that cannot be read: %v", err)
			continue
		}
		match, sameName := false, false
		for _, a := range accepted {
			if a.id == name {
				sameName = true
				if reflect.DeepEqual(a.obj, m) {
					match = true
					break
				}
			}
		}
		switch {
		case match:
		case sameName:
			v.add(kfile, name, reasons.UnexpectedObject, "builds %s unlike the object gitpeer renders for %s: a patch, generator or transformer changed it", name, id)
		default:
			v.add(kfile, name, reasons.UnexpectedObject, "builds %s, which gitpeer does not render for %s from verified artifacts: Flux would apply it unverified", name, id)
		}
	}
}

// builtObject is an object as kustomize reads it: its objectName and its
// content (read only: the same one may serve several clusters).
type builtObject struct {
	id  string
	obj map[string]any
}

// acceptedObjects remembers the objects kustomize reads from an accepted
// rendered file, keyed by the SHA-256 of the file's exact bytes: the same
// namespace and RBAC objects are rendered in every cluster peering with
// the same cluster (at 100/1,000, 9,000 rendered files hold 4,400
// contents), and kustomize's parse was a third of comparing a build. Only
// contents seen a second time are kept, so that memory goes to what
// repeats. Safe for concurrent use; a nil one keeps nothing.
type acceptedObjects struct {
	seen   *boundedmap.Map[[sha256.Size]byte, struct{}]
	parsed *boundedmap.Map[[sha256.Size]byte, []builtObject]
}

func newAcceptedObjects() *acceptedObjects {
	return &acceptedObjects{seen: boundedmap.New[[sha256.Size]byte, struct{}](1 << 17), parsed: boundedmap.New[[sha256.Size]byte, []builtObject](1 << 14)}
}

// objects returns the objects rf reads from data, those of its documents
// that parse (none when the file does not), in order.
func (c *acceptedObjects) objects(rf *resource.Factory, data []byte) []builtObject {
	var k [sha256.Size]byte
	if c != nil {
		k = sha256.Sum256(data)
		if out, ok := c.parsed.Get(k); ok {
			return out
		}
	}
	rs, err := rf.SliceFromBytes(data)
	if err != nil {
		rs = nil
	}
	var out []builtObject
	for _, r := range rs {
		if m, err := r.Map(); err == nil {
			out = append(out, builtObject{objectName(r), m})
		}
	}
	if c != nil {
		if _, again := c.seen.Get(k); again {
			c.parsed.Put(k, out)
		} else {
			c.seen.Put(k, struct{}{})
		}
	}
	return out
}

// objectName is "Kind/name", or "Kind/namespace/name" for a namespaced
// object.
func objectName(r *resource.Resource) string {
	if ns := r.GetNamespace(); ns != "" {
		return r.GetKind() + "/" + ns + "/" + r.GetName()
	}
	return r.GetKind() + "/" + r.GetName()
}

// findKustomization returns the kustomization file of dir, "" if none.
func findKustomization(tree fs.FS, dir string) string {
	for _, n := range kustomizationNames {
		p := path.Join(dir, n)
		if fi, err := fs.Stat(tree, p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// references checks every kustomization in cluster id's tree (its inbox
// aside) and every one they reach, and reports whether any reference was
// refused.
func (v *verifier) references(id string) bool {
	root := layout.ClusterPath(id)
	inbox := path.Join(root, layout.InboxDir)
	var queue []string
	_ = fs.WalkDir(v.tree, root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
		case d.IsDir() && p == inbox:
			return fs.SkipDir
		case !d.IsDir() && isKustomizationName(d.Name()):
			queue = append(queue, p)
		}
		return nil
	})
	sort.Strings(queue)
	seen := map[string]bool{}
	refused := false
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		if seen[file] {
			continue
		}
		seen[file] = true
		data, err := fs.ReadFile(v.tree, file)
		if err != nil {
			continue // a reachable file that cannot be read fails the build
		}
		var k types.Kustomization
		if err := yaml.Unmarshal(data, &k); err != nil {
			v.add(file, "", reasons.BuildFailed, "does not parse as a kustomization: %v", err)
			refused = true
			continue
		}
		dir := path.Dir(file)
		for _, ref := range kustomizationRefs(&k) {
			target, reason, why := classifyRef(root, dir, ref.value)
			if reason != "" {
				v.add(file, ref.field, reason, "%q %s", ref.value, why)
				refused = true
				continue
			}
			if !ref.root {
				continue
			}
			if fi, err := fs.Stat(v.tree, target); err == nil && fi.IsDir() {
				if nested := findKustomization(v.tree, target); nested != "" {
					queue = append(queue, nested)
				}
			}
		}
	}
	return refused
}

func isKustomizationName(name string) bool {
	for _, n := range kustomizationNames {
		if name == n {
			return true
		}
	}
	return false
}

// kustRef is a path or URL a kustomization refers to; root means it may
// name a directory holding another kustomization.
type kustRef struct {
	field, value string
	root         bool
}

// kustomizationRefs lists every reference of k that kustomize loads:
// resources, components, bases, crds, patches and their older forms,
// generator sources, generators, transformers, validators, configurations,
// openapi, replacements and Helm files. Inline documents (multi-line values)
// name nothing.
func kustomizationRefs(k *types.Kustomization) []kustRef {
	var out []kustRef
	add := func(field, value string, root bool) {
		if value != "" && !strings.Contains(value, "\n") {
			out = append(out, kustRef{field, value, root})
		}
	}
	list := func(name string, values []string, root bool) {
		for i, s := range values {
			add(fmt.Sprintf("%s[%d]", name, i), s, root)
		}
	}
	list("resources", k.Resources, true)
	list("components", k.Components, true)
	list("bases", k.Bases, true)
	list("crds", k.Crds, false)
	list("configurations", k.Configurations, false)
	list("generators", k.Generators, true)
	list("transformers", k.Transformers, true)
	list("validators", k.Validators, true)
	for i, p := range k.Patches {
		add(fmt.Sprintf("patches[%d].path", i), p.Path, false)
	}
	for i, p := range k.PatchesJson6902 {
		add(fmt.Sprintf("patchesJson6902[%d].path", i), p.Path, false)
	}
	for i, p := range k.PatchesStrategicMerge {
		if s := string(p); isRemote(s) || !strings.ContainsAny(s, ":{") {
			add(fmt.Sprintf("patchesStrategicMerge[%d]", i), s, false)
		}
	}
	for i, r := range k.Replacements {
		add(fmt.Sprintf("replacements[%d].path", i), r.Path, false)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		add("openapi.path", p, false)
	}
	sources := func(field string, s types.KvPairSources) {
		for j, f := range s.FileSources {
			if _, file, ok := strings.Cut(f, "="); ok {
				f = file
			}
			add(fmt.Sprintf("%s.files[%d]", field, j), f, false)
		}
		list(field+".envs", s.EnvSources, false)
		add(field+".env", s.EnvSource, false)
	}
	for i, g := range k.ConfigMapGenerator {
		sources(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)
	}
	for i, g := range k.SecretGenerator {
		sources(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)
	}
	if k.HelmGlobals != nil {
		add("helmGlobals.chartHome", k.HelmGlobals.ChartHome, false)
		add("helmGlobals.configHome", k.HelmGlobals.ConfigHome, false)
	}
	for i, h := range k.HelmCharts {
		f := fmt.Sprintf("helmCharts[%d]", i)
		add(f+".repo", h.Repo, false)
		add(f+".valuesFile", h.ValuesFile, false)
		list(f+".additionalValuesFiles", h.AdditionalValuesFiles, false)
	}
	for i, h := range k.HelmChartInflationGenerator {
		f := fmt.Sprintf("helmChartInflationGenerator[%d]", i)
		add(f+".chartRepoUrl", h.ChartRepoURL, false)
		add(f+".chartHome", h.ChartHome, false)
		add(f+".values", h.Values, false)
	}
	return out
}

// userAt is kustomize's "user@host:path" form of a Git URL.
var userAt = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isRemote reports whether kustomize would fetch ref from elsewhere: any URL
// (http, https, ssh, file, …), its git:: and user@host: forms, the
// github.com/ shorthand, a ?ref= or ?version= query, or the // that splits a
// repository from a path in it.
func isRemote(ref string) bool {
	l := strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(l, "://") ||
		strings.HasPrefix(l, "git::") ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:") ||
		userAt.MatchString(l) ||
		strings.Contains(l, "?ref=") || strings.Contains(l, "?version=") ||
		strings.Contains(l, "//")
}

// classifyRef resolves ref, found in a kustomization in dir, inside the
// cluster tree root. It returns the repo path it names, or a reason and why
// it is refused.
func classifyRef(root, dir, ref string) (target, reason, why string) {
	if isRemote(ref) {
		return "", reasons.RemoteBase, "is remote: Flux would fetch content nobody reviewed in this repo"
	}
	if path.IsAbs(ref) {
		return "", reasons.OutsideReference, fmt.Sprintf("is an absolute path: only paths inside %s/ are applied", root)
	}
	target = path.Join(dir, ref)
	if target != root && !strings.HasPrefix(target, root+"/") {
		return "", reasons.OutsideReference, fmt.Sprintf("leaves %s/: a cluster applies only its own tree", root)
	}
	if inbox := path.Join(root, layout.InboxDir); target == inbox || strings.HasPrefix(target, inbox+"/") {
		return "", reasons.OutsideReference, fmt.Sprintf("enters %s/: inbox artifacts are applied only through the cluster's own verified copies", inbox)
	}
	return target, "", ""
}
