package manifests

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// chartNamespace is the release namespace the tests install into: the one
// manifests/deploy puts gitpeer in, so that both render the same objects.
const chartNamespace = "gitpeer-system"

// renderChart renders manifests/chart as `helm template gitpeer
// manifests/chart -n namespace` does with vals over values.yaml, through
// Helm's Go library: the manifests in file order (NOTES.txt left out).
func renderChart(t *testing.T, namespace string, vals map[string]any) ([]byte, error) {
	t.Helper()
	ch, err := loader.Load("chart")
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := chartutil.ReleaseOptions{Name: "gitpeer", Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, files[name])
	}
	return []byte(out.String()), nil
}

// chartResMap is renderChart's output as kustomize's resources, for the
// checks manifests/deploy's builds pass (decodeBuild, checkDeployment).
func chartResMap(t *testing.T, rendered []byte) resmap.ResMap {
	t.Helper()
	p := provider.NewDefaultDepProvider()
	rm, err := resmap.NewFactory(p.GetResourceFactory()).NewResMapFromBytes(rendered)
	if err != nil {
		t.Fatalf("the chart's output is not Kubernetes YAML: %v\n%s", err, rendered)
	}
	return rm
}

// helmOnlyLabels are the labels only the chart sets: Helm's conventions.
var helmOnlyLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// hashedConfigMap matches the name kustomize's configMapGenerator gives
// gitpeer-config (a content hash appended); the chart restarts the Pods
// with an annotation instead.
var hashedConfigMap = regexp.MustCompile(`\bgitpeer-config-[a-z0-9]{10}\b`)

// normalized is a rendering as kind/namespace/name → object, with what
// legitimately differs between the chart and kustomize taken out: Helm's
// labels, the chart's checksum annotation, kustomize's ConfigMap hash.
func normalized(t *testing.T, rm resmap.ResMap) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range rm.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		data = hashedConfigMap.ReplaceAll(data, []byte("gitpeer-config"))
		var o map[string]any
		if err := yaml.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		if labels, ok := dig(o, "metadata", "labels").(map[string]any); ok {
			for _, l := range helmOnlyLabels {
				delete(labels, l)
			}
		}
		if tmpl, ok := dig(o, "spec", "template", "metadata").(map[string]any); ok {
			if ann, ok := tmpl["annotations"].(map[string]any); ok {
				delete(ann, "checksum/config")
				if len(ann) == 0 {
					delete(tmpl, "annotations")
				}
			}
		}
		ns, _ := dig(o, "metadata", "namespace").(string)
		out[fmt.Sprintf("%s/%s/%s", o["kind"], ns, dig(o, "metadata", "name"))] = o
	}
	return out
}

// kustomizeOverlay builds an overlay of manifests/deploy as docs/deploy.md
// writes one for cluster id and repo url, with components.
func kustomizeOverlay(t *testing.T, id, url string, components ...string) resmap.ResMap {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	copyManifests(t, mem, "rbac", "deploy")
	var comps strings.Builder
	for _, c := range components {
		fmt.Fprintf(&comps, "  - ../../manifests/%s\n", c)
	}
	overlay := "resources: [../../manifests/deploy]\ncomponents:\n" + comps.String() + `configMapGenerator:
  - name: gitpeer-config
    namespace: gitpeer-system
    behavior: replace
    envs: [params.env]
`
	for name, content := range map[string]string{"kustomization.yaml": overlay, "params.env": "CLUSTER_ID=" + id + "\nREPO_URL=" + url + "\n"} {
		if err := mem.WriteFile("/src/overlays/x/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/overlays/x")
	if err != nil {
		t.Fatal(err)
	}
	return rm
}

// TestChartRendersWhatKustomizeBuilds is the no-drift check: for the same
// cluster and repo, the chart and manifests/deploy (with its cluster-id
// component, and manifests/rbac/argocd for Argo CD) give the same objects,
// field for field (Deployment, ConfigMap, ServiceAccount, RBAC, Namespace),
// save Helm's own labels and how each restarts the Pods on a new ConfigMap.
func TestChartRendersWhatKustomizeBuilds(t *testing.T) {
	const id, url = "eu-west-1", "ssh://git@git.example.invalid/org/peering.git"
	for _, tc := range []struct {
		name       string
		vals       map[string]any
		components []string
	}{
		{"with Flux", map[string]any{}, []string{"deploy/cluster-id"}},
		{"with Argo CD", map[string]any{"argocd": map[string]any{"enabled": true}}, []string{"rbac/argocd", "deploy/cluster-id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{"clusterID": id, "repoURL": url, "namespace": map[string]any{"create": true}}
			maps.Copy(vals, tc.vals)
			rendered, err := renderChart(t, chartNamespace, vals)
			if err != nil {
				t.Fatal(err)
			}
			chart := normalized(t, chartResMap(t, rendered))
			kust := normalized(t, kustomizeOverlay(t, id, url, tc.components...))
			if got, want := slices.Sorted(maps.Keys(chart)), slices.Sorted(maps.Keys(kust)); !slices.Equal(got, want) {
				t.Fatalf("the chart renders %v\nkustomize builds   %v", got, want)
			}
			for key, want := range kust {
				if d := cmp.Diff(want, chart[key]); d != "" {
					t.Errorf("%s: the chart (+) differs from manifests/deploy (-):\n%s", key, d)
				}
			}
		})
	}
}

// TestChartKeepsTheDeploymentsPromises runs the checks of manifests/deploy
// (checkDeployment: hardened security context, probes, metrics, the
// Lease's RBAC, memory, mounts, ...) on what the chart renders.
func TestChartKeepsTheDeploymentsPromises(t *testing.T) {
	rendered, err := renderChart(t, chartNamespace, map[string]any{"clusterID": "alpha", "repoURL": "https://git.example.invalid/org/peering.git", "namespace": map[string]any{"create": true}})
	if err != nil {
		t.Fatal(err)
	}
	checkDeployment(t, decodeBuild(t, chartResMap(t, rendered)))
}

// TestChartValues checks each value a user sets: where the objects go, the
// image, the Git Secret, the signing format, the engines' Roles; and that a
// missing or wrong value fails the render, saying which and why.
func TestChartValues(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"clusterID": "alpha", "repoURL": "ssh://git@git.example.invalid/org/peering.git"}
	}
	render := func(t *testing.T, ns string, set map[string]any) map[string]map[string]any {
		t.Helper()
		vals := base()
		maps.Copy(vals, set)
		rendered, err := renderChart(t, ns, vals)
		if err != nil {
			t.Fatal(err)
		}
		return normalized(t, chartResMap(t, rendered))
	}
	deployment := func(t *testing.T, objs map[string]map[string]any, ns string) map[string]any {
		t.Helper()
		d, ok := objs["Deployment/"+ns+"/gitpeer"]
		if !ok {
			t.Fatalf("no Deployment %s/gitpeer in %v", ns, slices.Sorted(maps.Keys(objs)))
		}
		return d
	}
	containerOf := func(d map[string]any) map[string]any {
		return dig(d, "spec", "template", "spec", "containers", "0").(map[string]any)
	}

	t.Run("defaults: no Namespace (helm install --create-namespace makes it), Flux's Role, no Secret", func(t *testing.T) {
		objs := render(t, "peering", nil)
		keys := slices.Sorted(maps.Keys(objs))
		want := []string{"ClusterRole//gitpeer", "ClusterRoleBinding//gitpeer", "ConfigMap/peering/gitpeer-config", "Deployment/peering/gitpeer",
			"Role/flux-system/gitpeer-flux", "Role/liqo/gitpeer", "RoleBinding/flux-system/gitpeer-flux", "RoleBinding/liqo/gitpeer", "ServiceAccount/peering/gitpeer"}
		if !slices.Equal(keys, want) {
			t.Errorf("objects %v\nwant    %v", keys, want)
		}
		for _, k := range []string{"ClusterRoleBinding//gitpeer", "RoleBinding/liqo/gitpeer", "RoleBinding/flux-system/gitpeer-flux"} {
			if s := dig(objs[k], "subjects", "0").(map[string]any); s["namespace"] != "peering" || s["name"] != "gitpeer" {
				t.Errorf("%s binds %v, want ServiceAccount peering/gitpeer (the release's namespace)", k, s)
			}
		}
		if img := containerOf(deployment(t, objs, "peering"))["image"]; img != "gitpeer:dev" {
			t.Errorf("image %v, want gitpeer:dev (what make image names it)", img)
		}
	})
	t.Run("image by tag, or by digest", func(t *testing.T) {
		c := containerOf(deployment(t, render(t, chartNamespace, map[string]any{"image": map[string]any{"repository": "registry.example.com/platform/gitpeer", "tag": "6854991"}}), chartNamespace))
		if c["image"] != "registry.example.com/platform/gitpeer:6854991" {
			t.Errorf("image %v", c["image"])
		}
		const d = "sha256:fd65531952efb2fb4f505f451766cad565716ad8d47835362954900731e4e44b"
		c = containerOf(deployment(t, render(t, chartNamespace, map[string]any{"image": map[string]any{"repository": "registry.example.com/platform/gitpeer", "tag": "x", "digest": d}}), chartNamespace))
		if c["image"] != "registry.example.com/platform/gitpeer@"+d {
			t.Errorf("image %v, want the digest to win over the tag", c["image"])
		}
	})
	t.Run("the backend's Liqo namespace moves the Role and --liqo-namespace", func(t *testing.T) {
		objs := render(t, chartNamespace, map[string]any{"backend": map[string]any{"type": "kubernetes", "liqoNamespace": "liqo-system"}})
		if _, ok := objs["Role/liqo-system/gitpeer"]; !ok {
			t.Errorf("no Role liqo-system/gitpeer in %v", slices.Sorted(maps.Keys(objs)))
		}
		c := containerOf(deployment(t, objs, chartNamespace))
		if !slices.ContainsFunc(c["env"].([]any), func(e any) bool {
			m := e.(map[string]any)
			return m["name"] == "LIQO_NAMESPACE" && m["value"] == "liqo-system"
		}) {
			t.Errorf("env %v: want LIQO_NAMESPACE=liqo-system", c["env"])
		}
	})
	t.Run("the Git credentials Secret: named, or created from values with Flux's keys", func(t *testing.T) {
		objs := render(t, chartNamespace, map[string]any{"git": map[string]any{"secretName": "peering-deploy-key", "create": true,
			"credentials": map[string]any{"identity": "KEY", "known_hosts": "git.example.invalid ssh-ed25519 AAAA"}}})
		s, ok := objs["Secret/"+chartNamespace+"/peering-deploy-key"]
		if !ok {
			t.Fatalf("no Secret peering-deploy-key in %v", slices.Sorted(maps.Keys(objs)))
		}
		if got := sortedKeys(s["stringData"]); !slices.Equal(got, []string{"identity", "known_hosts"}) {
			t.Errorf("Secret keys %v", got)
		}
		vols := dig(deployment(t, objs, chartNamespace), "spec", "template", "spec", "volumes").([]any)
		if dig(vols[0], "secret", "secretName") != "peering-deploy-key" {
			t.Errorf("volume %v mounts another Secret", vols[0])
		}
	})
	t.Run("openpgp signing for Argo CD, with its Role and without Flux's", func(t *testing.T) {
		objs := render(t, chartNamespace, map[string]any{"signingFormat": "openpgp", "flux": map[string]any{"enabled": false}, "argocd": map[string]any{"enabled": true}})
		args := containerOf(deployment(t, objs, chartNamespace))["args"].([]any)
		if !slices.Contains(args, any("--signing-format=openpgp")) {
			t.Errorf("args %v: no --signing-format=openpgp", args)
		}
		if _, ok := objs["Role/argocd/gitpeer-argocd"]; !ok {
			t.Error("no Role argocd/gitpeer-argocd")
		}
		if r := dig(objs["Role/argocd/gitpeer-argocd"], "rules", "0"); fmt.Sprint(dig(r, "resourceNames")) != "[gitpeer-alpha]" {
			t.Errorf("Role gitpeer-argocd's first rule %v: want Application gitpeer-alpha alone", r)
		}
		if _, ok := objs["Role/flux-system/gitpeer-flux"]; ok {
			t.Error("Role flux-system/gitpeer-flux with flux.enabled=false")
		}
	})

	t.Run("the push webhook: --webhook-addr, its secret from a Secret, its port", func(t *testing.T) {
		off := containerOf(deployment(t, render(t, chartNamespace, nil), chartNamespace))
		for _, a := range off["args"].([]any) {
			if strings.HasPrefix(fmt.Sprint(a), "--webhook-addr") {
				t.Errorf("webhook off by default, yet args hold %v", a)
			}
		}
		c := containerOf(deployment(t, render(t, chartNamespace, map[string]any{"webhook": map[string]any{"enabled": true, "secretName": "hook"}}), chartNamespace))
		if args := c["args"].([]any); !slices.Contains(args, any("--webhook-addr=:9292")) {
			t.Errorf("args %v: no --webhook-addr=:9292", args)
		}
		var secret, port any
		for _, e := range c["env"].([]any) {
			if e := e.(map[string]any); e["name"] == "GITPEER_WEBHOOK_SECRET" {
				secret = dig(e, "valueFrom", "secretKeyRef")
			}
		}
		for _, p := range c["ports"].([]any) {
			if p := p.(map[string]any); p["name"] == "webhook" {
				port = p["containerPort"]
			}
		}
		if fmt.Sprint(secret) != "map[key:token name:hook]" {
			t.Errorf("GITPEER_WEBHOOK_SECRET from %v, want key token of Secret hook", secret)
		}
		if fmt.Sprint(port) != "9292" {
			t.Errorf("containerPort webhook %v, want 9292", port)
		}
	})

	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"no cluster ID", map[string]any{"clusterID": ""}, "clusterID is required"},
		{"a cluster ID gitpeer refuses", map[string]any{"clusterID": "Alpha_1"}, `clusterID "Alpha_1": not a DNS-1123 label`},
		{"no repo URL", map[string]any{"repoURL": ""}, "repoURL is required"},
		{"the file backend", map[string]any{"backend": map[string]any{"type": "file"}}, `backend.type "file": in a cluster gitpeer runs the kubernetes backend only`},
		{"an unknown signing format", map[string]any{"signingFormat": "x509"}, `signingFormat "x509": not one of ssh (Flux), openpgp (Argo CD)`},
		{"a credential key Flux does not read", map[string]any{"git": map[string]any{"create": true, "credentials": map[string]any{"privateKey": "x"}}}, "git.credentials.privateKey: not a key of Flux's Git Secret"},
		{"a Secret to create with nothing in it", map[string]any{"git": map[string]any{"create": true}}, "git.create is true but git.credentials is empty"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			vals := base()
			maps.Copy(vals, tc.set)
			_, err := renderChart(t, chartNamespace, vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestChartValuesAreDocumented: every value the templates read is in
// values.yaml, so `helm show values` lists every knob.
func TestChartValuesAreDocumented(t *testing.T) {
	ch, err := loader.Load("chart")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	ref := regexp.MustCompile(`\.Values\.([A-Za-z0-9_.]+)`)
	for _, f := range ch.Templates {
		for _, m := range ref.FindAllStringSubmatch(string(f.Data), -1) {
			used[m[1]] = true
		}
	}
	var missing []string
	for p := range used {
		var v any = map[string]any(ch.Values)
		for _, k := range strings.Split(p, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			if v, ok = m[k]; !ok {
				missing = append(missing, p)
				break
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("values the templates read but values.yaml does not set: %v", missing)
	}
}

// TestREADMEHelmInstallRenders takes README's `helm install` line as a
// user would paste it: the archive it names is the one make chart writes
// (the chart's version), and its namespace and --set values render the
// Deployment for that cluster, repo and image.
func TestREADMEHelmInstallRenders(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "helm install ") {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		t.Fatal("README has no helm install line")
	}
	ch, err := loader.Load("chart")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(line)
	if want := "_output/chart/gitpeer-" + ch.Metadata.Version + ".tgz"; words[3] != want || !strings.Contains(string(data), want) {
		t.Errorf("README installs %s, make chart writes %s", words[3], want)
	}
	ns := ""
	vals := map[string]any{}
	for i := 4; i < len(words); i++ {
		switch words[i] {
		case "-n", "--namespace":
			i++
			ns = words[i]
		case "--set":
			i++
			if err := strvals.ParseInto(words[i], vals); err != nil {
				t.Fatalf("--set %s: %v", words[i], err)
			}
		case "--create-namespace":
		default:
			t.Fatalf("README's helm install has %q, beyond this test", words[i])
		}
	}
	rendered, err := renderChart(t, ns, vals)
	if err != nil {
		t.Fatalf("README's helm install: %v", err)
	}
	b := decodeBuild(t, chartResMap(t, rendered))
	dep := b.deployment(t)
	if img := container(t, dep).Image; img != vals["image"].(map[string]any)["repository"].(string)+":"+ch.Metadata.AppVersion {
		t.Errorf("image %s", img)
	}
	if dep.Namespace != ns || b.configMap(t, dep, "CLUSTER_ID").Data["CLUSTER_ID"] != vals["clusterID"] {
		t.Errorf("Deployment in %q for cluster %v", dep.Namespace, b.configMap(t, dep, "CLUSTER_ID").Data)
	}
}
