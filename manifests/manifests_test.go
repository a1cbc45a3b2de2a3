// Package manifests holds deployable YAML; this test keeps it buildable.
package manifests

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/imagebuild"
)

func TestManifestsBuildWithKustomize(t *testing.T) {
	cases := map[string][]string{
		"rbac": {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"},
		// flux and argocd are components, built through overlays
		// (gitops_test.go).
		"deploy": {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
			"ConfigMap", "Deployment"},
	}
	for dir, kinds := range cases {
		t.Run(dir, func(t *testing.T) {
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			have := map[string]bool{}
			for _, r := range rm.Resources() {
				have[r.GetKind()] = true
			}
			for _, k := range kinds {
				if !have[k] {
					t.Errorf("%s builds no %s", dir, k)
				}
			}
		})
	}
}

// The keys of Flux's Git Secret (GitRepository.spec.secretRef), which
// --git-credentials reads from the mounted Secret.
var fluxGitSecretKeys = []string{"identity", "identity.pub", "password", "known_hosts", "username", "bearerToken", "ca.crt"}

// credentialsSecret is the Secret the Deployment mounts for --git-credentials.
const credentialsSecret = "gitpeer-git"

// TestDeploy checks what manifests/deploy promises (docs/deploy.md).
func TestDeploy(t *testing.T) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "deploy")
	if err != nil {
		t.Fatalf("kustomize build deploy: %v", err)
	}
	objs := decodeBuild(t, rm)
	checkDeployment(t, objs)

	dep := objs.deployment(t)
	t.Run("runs one replica by default", func(t *testing.T) {
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
			t.Errorf("replicas = %v, want 1", dep.Spec.Replicas)
		}
	})
	t.Run("leaves manifests/rbac's Liqo Role and RoleBinding in Liqo's namespace", func(t *testing.T) {
		rbac, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "rbac")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, r := range rbac.Resources() {
			if k := r.GetKind(); k == "Role" || k == "RoleBinding" {
				want[k+"/"+r.GetName()] = r.GetNamespace()
			}
		}
		for _, r := range rm.Resources() {
			id := r.GetKind() + "/" + r.GetName()
			if ns, ok := want[id]; ok && r.GetNamespace() != ns {
				t.Errorf("%s is in %q, manifests/rbac puts it in %q (a namespace: transformer?)", id, r.GetNamespace(), ns)
			}
		}
	})
	t.Run("holds placeholders that cannot reach a repo", func(t *testing.T) {
		cm := objs.configMap(t, dep, "REPO_URL")
		if !strings.Contains(cm.Data["REPO_URL"], ".invalid/") {
			t.Errorf("the base's REPO_URL %q is not under the reserved .invalid domain", cm.Data["REPO_URL"])
		}
	})
	t.Run("runs the image make image builds", func(t *testing.T) {
		mk, err := os.ReadFile("../Makefile")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^IMAGE_DEFAULT\s*:=\s*(\S+)`).FindSubmatch(mk)
		if m == nil {
			t.Fatal("the Makefile sets no IMAGE_DEFAULT := (the name make image gives the image without IMAGE)")
		}
		if got := container(t, dep).Image; got != string(m[1]) {
			t.Errorf("image %q, but make image builds %q", got, m[1])
		}
	})
	t.Run("leaves the credentials Secret out of the build, in the shape of its example", func(t *testing.T) {
		for _, s := range objs.secrets {
			t.Errorf("the build holds Secret %s/%s: credentials are created out of band", s.Namespace, s.Name)
		}
		data, err := os.ReadFile("deploy/secret-example.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var s corev1.Secret
		if err := yaml.UnmarshalStrict(data, &s); err != nil {
			t.Fatalf("secret-example.yaml: %v", err)
		}
		if s.Name != credentialsSecret || s.Namespace != dep.Namespace {
			t.Errorf("secret-example.yaml is %s/%s, want %s/%s", s.Namespace, s.Name, dep.Namespace, credentialsSecret)
		}
		for k, v := range s.StringData {
			if !slices.Contains(fluxGitSecretKeys, k) {
				t.Errorf("secret-example.yaml: key %q is not one of Flux's Git Secret keys %v", k, fluxGitSecretKeys)
			}
			if v != "" {
				t.Errorf("secret-example.yaml: key %q has a value", k)
			}
		}
		if len(s.Data) != 0 {
			t.Error("secret-example.yaml has data")
		}
	})
}

// TestDeployOverlaysFromDocs builds the overlays docs/deploy.md shows (code
// blocks whose first line is "# overlays/<name>/<file>"), against this
// repository's manifests, and checks that each keeps what the base promises
// and sets what the docs say it sets.
func TestDeployOverlaysFromDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	files := fencedBlocks(doc, "# overlays/")
	remote := regexp.MustCompile(`github\.com/gitpeer/gitpeer//manifests/deploy\?ref=\S+`)
	remoteComponent := regexp.MustCompile(`github\.com/gitpeer/gitpeer//manifests/((?:deploy|rbac)/[a-z-]+)\?ref=\S+`)
	mem := filesys.MakeFsInMemory()
	copyManifests(t, mem, "rbac", "deploy")
	var overlays []string
	for name, content := range files {
		if dir, ok := strings.CutSuffix(name, "/kustomization.yaml"); ok {
			overlays = append(overlays, dir)
		}
		// The docs use the base remotely; the test builds this checkout's.
		content = remote.ReplaceAllString(content, "../../manifests/deploy")
		content = remoteComponent.ReplaceAllString(content, "../../manifests/$1")
		if err := mem.WriteFile("/src/overlays/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(overlays)
	if !slices.Contains(overlays, "alpha") || files["alpha/params.env"] == "" {
		t.Fatalf("docs/deploy.md shows no overlays/alpha/kustomization.yaml and overlays/alpha/params.env, only %v", overlays)
	}
	if !remote.MatchString(files["alpha/kustomization.yaml"]) {
		t.Fatalf("the documented overlay alpha does not use the base github.com/gitpeer/gitpeer//manifests/deploy?ref=…")
	}
	params := docParams(files["alpha/params.env"])

	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/overlays/"+overlay)
			if err != nil {
				t.Fatalf("kustomize build of the documented overlay %s: %v\n%s", overlay, err, files[overlay+"/kustomization.yaml"])
			}
			objs := decodeBuild(t, rm)
			checkDeployment(t, objs)
			dep := objs.deployment(t)
			// Every documented overlay is alpha's, or built on it.
			for _, key := range []string{"CLUSTER_ID", "REPO_URL"} {
				cm := objs.configMap(t, dep, key)
				if params[key] == "" || cm.Data[key] != params[key] {
					t.Errorf("%s = %q in ConfigMap %s, want alpha's %q", key, cm.Data[key], cm.Name, params[key])
				}
			}
			if img := container(t, dep).Image; img == "gitpeer:dev" || !strings.Contains(img, ":") {
				t.Errorf("image %q: the overlay does not set one", img)
			}
			// The one GitOps source gitpeer may read and pin is the
			// cluster's own.
			for _, r := range objs.roles {
				if r.Name == "gitpeer-flux" && (len(r.Rules) < 2 || !slices.Equal(r.Rules[0].ResourceNames, []string{"gitpeer-" + params["CLUSTER_ID"]}) ||
					!slices.Equal(r.Rules[1].Resources, []string{"kustomizations"}) || !slices.Equal(r.Rules[1].ResourceNames, []string{"gitpeer-" + params["CLUSTER_ID"]})) {
					t.Errorf("Role gitpeer-flux rules %+v: want its first rules limited to GitRepository and Kustomization gitpeer-%s (manifests/deploy/cluster-id)", r.Rules, params["CLUSTER_ID"])
				}
			}
			if check := documentedOverlays[overlay]; check != nil {
				check(t, objs)
			} else {
				t.Errorf("docs/deploy.md shows overlay %s, which this test does not know: say what it sets in documentedOverlays", overlay)
			}
		})
	}
}

// TestDeployCommentsShowWorkingOverlays builds the overlay snippets that
// the comments of manifests/deploy's kustomization.yaml and params.env show
// (the indented lines after the line ending ":" that introduces them), with
// alpha's params.env of docs/deploy.md: a snippet whose generator misses
// the base's ConfigMap (kustomize matches it by name and namespace) fails
// the build, and one that moves the Role out of Liqo's namespace fails it
// too.
func TestDeployCommentsShowWorkingOverlays(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	params := fencedBlocks(doc, "# overlays/")["alpha/params.env"]
	if params == "" {
		t.Fatal("docs/deploy.md shows no overlays/alpha/params.env")
	}
	remote := regexp.MustCompile(`github\.com/gitpeer/gitpeer//manifests/deploy\?ref=\S+`)
	for file, intro := range map[string]string{
		"deploy/kustomization.yaml": "an overlay sets params and the image",
		"deploy/params.env":         "in an overlay (docs/deploy.md), with",
	} {
		t.Run(file, func(t *testing.T) {
			snippet := commentSnippet(t, file, intro)
			if !strings.Contains(snippet, "configMapGenerator:") {
				t.Fatalf("the snippet in %s sets no configMapGenerator:\n%s", file, snippet)
			}
			if !remote.MatchString(snippet) {
				// params.env shows the generator alone.
				snippet = "resources: [../../manifests/deploy]\n" + snippet
			}
			// The comments use the base remotely; the test builds this checkout's.
			snippet = remote.ReplaceAllString(snippet, "../../manifests/deploy")
			mem := filesys.MakeFsInMemory()
			copyManifests(t, mem, "rbac", "deploy")
			for name, content := range map[string]string{"kustomization.yaml": snippet, "params.env": params} {
				if err := mem.WriteFile("/src/overlays/comment/"+name, []byte(content)); err != nil {
					t.Fatal(err)
				}
			}
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/overlays/comment")
			if err != nil {
				t.Fatalf("kustomize build of the overlay %s shows: %v\n%s", file, err, snippet)
			}
			objs := decodeBuild(t, rm)
			checkDeployment(t, objs)
			dep := objs.deployment(t)
			for key, want := range docParams(params) {
				if cm := objs.configMap(t, dep, key); cm.Data[key] != want {
					t.Errorf("%s = %q in ConfigMap %s, want the overlay's %q", key, cm.Data[key], cm.Name, want)
				}
			}
		})
	}
}

// commentSnippet is the YAML a comment of manifests/<file> shows after the
// comment line containing intro: the following comment lines indented by
// at least three spaces, unindented by three.
func commentSnippet(t *testing.T, file, intro string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case !found:
			found = strings.HasPrefix(line, "#") && strings.Contains(line, intro)
		case line == "#" && len(out) == 0:
		case strings.HasPrefix(line, "#   "):
			out = append(out, strings.TrimPrefix(line, "#   "))
		default:
			if len(out) > 0 {
				return strings.Join(out, "\n") + "\n"
			}
		}
	}
	t.Fatalf("%s shows no overlay after a comment line with %q", file, intro)
	return ""
}

// documentedOverlays check what each overlay of docs/deploy.md is shown to set.
var documentedOverlays = map[string]func(*testing.T, *built){
	"alpha": func(t *testing.T, objs *built) {},
	"alpha-large": func(t *testing.T, objs *built) {
		dep := objs.deployment(t)
		c := container(t, dep)
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
			t.Errorf("replicas = %v, want 2", dep.Spec.Replicas)
		}
		if got := expand(t, c, flags(c.Args)["spec-memory"]); got != "1Gi" {
			t.Errorf("--spec-memory %s, want 1Gi", got)
		}
		if got := c.Resources.Limits[corev1.ResourceMemory]; got.String() != "2Gi" {
			t.Errorf("memory limit %s, want 2Gi", got.String())
		}
	},
	"alpha-openpgp": func(t *testing.T, objs *built) {
		c := container(t, objs.deployment(t))
		if got := flags(c.Args)["signing-format"]; got != "openpgp" {
			t.Errorf("--signing-format=%q, want openpgp", got)
		}
	},
	"alpha-webhook": func(t *testing.T, objs *built) {
		c := container(t, objs.deployment(t))
		if got := flags(c.Args)["webhook-addr"]; got != ":9292" {
			t.Errorf("--webhook-addr=%q, want :9292", got)
		}
		var secret bool
		for _, e := range c.Env {
			secret = secret || e.Name == "GITPEER_WEBHOOK_SECRET" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}
		if !secret {
			t.Errorf("no GITPEER_WEBHOOK_SECRET from a Secret in %+v", c.Env)
		}
	},
	"alpha-liqo-system": func(t *testing.T, objs *built) {
		for _, r := range objs.roles {
			if r.Name == "gitpeer" && r.Namespace != "liqo-system" {
				t.Errorf("Role gitpeer is in %s, want liqo-system", r.Namespace)
			}
		}
		for _, rb := range objs.roleBindings {
			if rb.Name == "gitpeer" && rb.Namespace != "liqo-system" {
				t.Errorf("RoleBinding gitpeer is in %s, want liqo-system", rb.Namespace)
			}
		}
	},
}

// checkDeployment checks the promises of manifests/deploy on a build of it
// (the base, or an overlay of it).
func checkDeployment(t *testing.T, objs *built) {
	t.Helper()
	dep := objs.deployment(t)
	c := container(t, dep)
	pod := dep.Spec.Template.Spec
	args := flags(c.Args)
	ns := dep.Namespace

	t.Run("runs gitpeer reconcile on the kubernetes backend", func(t *testing.T) {
		if len(c.Args) == 0 || c.Args[0] != "reconcile" {
			t.Errorf("args %v do not start with reconcile", c.Args)
		}
		for flag, want := range map[string]string{"backend": "kubernetes", "cluster": "$(CLUSTER_ID)", "repo": "$(REPO_URL)"} {
			if args[flag] != want {
				t.Errorf("--%s=%q, want %q", flag, args[flag], want)
			}
		}
	})

	t.Run("runs non-root with a read-only root filesystem and no capabilities", func(t *testing.T) {
		psc := pod.SecurityContext
		csc := c.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		if csc == nil {
			t.Fatal("the container has no securityContext")
		}
		nonRoot := csc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			t.Error("runAsNonRoot is not true")
		}
		uid := csc.RunAsUser
		if uid == nil {
			uid = psc.RunAsUser
		}
		if uid == nil || *uid != 65532 {
			t.Errorf("runAsUser = %v, want 65532", uid)
		}
		seccomp := csc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccompProfile = %v, want RuntimeDefault", seccomp)
		}
		if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			t.Error("readOnlyRootFilesystem is not true")
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Error("allowPrivilegeEscalation is not false")
		}
		if csc.Privileged != nil && *csc.Privileged {
			t.Error("the container is privileged")
		}
		if csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) != 0 {
			t.Errorf("capabilities = %+v, want drop [ALL] and no add", csc.Capabilities)
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			t.Error("the pod shares a host namespace")
		}
		if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
			t.Error("automountServiceAccountToken is false: the backend needs the in-cluster config")
		}
	})

	t.Run("mounts the Git credentials Secret read-only where --git-credentials points", func(t *testing.T) {
		dir := args["git-credentials"]
		if dir == "" {
			t.Fatal("no --git-credentials")
		}
		m, v := mountAt(c, pod, dir)
		if m == nil || m.MountPath != dir {
			t.Fatalf("nothing is mounted at --git-credentials %s", dir)
		}
		if m.SubPath != "" {
			t.Error("mounted with subPath: a rotated Secret would never reach the pod")
		}
		if !m.ReadOnly {
			t.Error("the credentials are mounted writable")
		}
		if v.Secret == nil || v.Secret.SecretName != credentialsSecret {
			t.Fatalf("volume %s is not Secret %s", v.Name, credentialsSecret)
		}
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o400 {
			t.Errorf("defaultMode = %v, want 0400", v.Secret.DefaultMode)
		}
		if v.Secret.Optional != nil && *v.Secret.Optional {
			t.Error("the Secret is optional: the pod would start without credentials")
		}
		if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil {
			t.Error("no fsGroup: uid 65532 cannot read root-owned files of mode 0400")
		}
	})

	t.Run("writes only to emptyDirs: the checkout and /tmp", func(t *testing.T) {
		for _, p := range []string{args["checkout"], "/tmp"} {
			if p == "" {
				t.Error("no --checkout")
				continue
			}
			m, v := mountAt(c, pod, p)
			if m == nil || m.ReadOnly || v.EmptyDir == nil {
				t.Errorf("%s is not on a writable emptyDir", p)
			} else if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				t.Errorf("%s is in memory: it would count against the memory limit", p)
			}
		}
	})

	t.Run("elects a leader, with the rights to its Lease and its Events", func(t *testing.T) {
		if v, ok := args["leader-elect"]; !ok || v != "true" {
			t.Errorf("--leader-elect is %q", v)
		}
		// The Lease gitpeer-<cluster>, and the Events on it, live in Liqo's
		// namespace (--lease-namespace defaults to --liqo-namespace).
		leaseNS := expand(t, c, args["liqo-namespace"])
		if v, ok := args["lease-namespace"]; ok {
			leaseNS = expand(t, c, v)
		}
		granted := map[string]bool{}
		for _, rb := range objs.roleBindings {
			if rb.Namespace != leaseNS || !bindsServiceAccount(rb.Subjects, pod.ServiceAccountName, ns) {
				continue
			}
			for _, r := range objs.roles {
				if r.Namespace != leaseNS || rb.RoleRef.Kind != "Role" || r.Name != rb.RoleRef.Name {
					continue
				}
				for _, rule := range r.Rules {
					for _, res := range rule.Resources {
						if res == "leases" && slices.Contains(rule.APIGroups, "coordination.k8s.io") || res == "events" {
							for _, verb := range rule.Verbs {
								granted[res+"/"+verb] = true
							}
						}
					}
				}
			}
		}
		for _, want := range []string{"leases/get", "leases/create", "leases/update", "events/create"} {
			if !granted[want] {
				t.Errorf("the ServiceAccount may not %s in %s", want, leaseNS)
			}
		}
	})

	t.Run("probes the health port and names the metrics port", func(t *testing.T) {
		health := addrPort(t, args["health-addr"])
		metrics := addrPort(t, args["metrics-addr"])
		if health == 0 || metrics == 0 {
			t.Fatalf("--health-addr %q, --metrics-addr %q", args["health-addr"], args["metrics-addr"])
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["http-metrics"] != metrics {
			t.Errorf("port http-metrics = %d, --metrics-addr port %d", ports["http-metrics"], metrics)
		}
		for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
			if probe == nil || probe.HTTPGet == nil {
				t.Errorf("no HTTP probe for %s", name)
				continue
			}
			port := probe.HTTPGet.Port.IntVal
			if probe.HTTPGet.Port.StrVal != "" {
				port = ports[probe.HTTPGet.Port.StrVal]
			}
			if probe.HTTPGet.Path != name || port != health {
				t.Errorf("probe %s:%d, want %s on the health port %d", probe.HTTPGet.Path, port, name, health)
			}
		}
	})

	t.Run("keeps --spec-memory below the memory limit, with room for the reconciler", func(t *testing.T) {
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			t.Fatal("no memory limit")
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			t.Error("no memory request")
		}
		if args["spec-memory"] == "" {
			t.Fatal("no --spec-memory: its default 2Gi is for a machine, not this container")
		}
		spec, err := resource.ParseQuantity(expand(t, c, args["spec-memory"]))
		if err != nil {
			t.Fatalf("--spec-memory %q: %v", args["spec-memory"], err)
		}
		parent := resource.MustParse("256Mi")
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				parent = resource.MustParse(strings.TrimSuffix(e.Value, "B"))
			}
		}
		if spec.Value()+parent.Value() > limit.Value() {
			t.Errorf("--spec-memory %s + the reconciler's %s exceed the memory limit %s: the kernel would kill the container before gitpeer refuses a costly spec",
				spec.String(), parent.String(), limit.String())
		}
	})

	t.Run("puts every namespaced object in the namespace it belongs to", func(t *testing.T) {
		if !slices.Contains(objs.namespaces, ns) {
			t.Errorf("the build creates no Namespace %s for the Deployment", ns)
		}
		for _, id := range objs.unnamespaced {
			t.Errorf("%s has no namespace: it would land in kubectl's current one", id)
		}
	})

	t.Run("binds every RBAC subject to the Deployment's ServiceAccount in its namespace", func(t *testing.T) {
		sa := pod.ServiceAccountName
		if sa == "" {
			t.Fatal("no serviceAccountName")
		}
		if !slices.ContainsFunc(objs.serviceAccounts, func(s corev1.ServiceAccount) bool { return s.Name == sa && s.Namespace == ns }) {
			t.Errorf("the build creates no ServiceAccount %s/%s", ns, sa)
		}
		var subjects []rbacv1.Subject
		for _, rb := range objs.roleBindings {
			subjects = append(subjects, rb.Subjects...)
			if rb.RoleRef.Kind == "Role" && !slices.ContainsFunc(objs.roles, func(r rbacv1.Role) bool { return r.Name == rb.RoleRef.Name && r.Namespace == rb.Namespace }) {
				t.Errorf("RoleBinding %s/%s refers to Role %s, which the build has not in %s", rb.Namespace, rb.Name, rb.RoleRef.Name, rb.Namespace)
			}
		}
		for _, crb := range objs.clusterRoleBindings {
			subjects = append(subjects, crb.Subjects...)
		}
		if len(subjects) == 0 {
			t.Fatal("no RBAC subjects")
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Name != sa || s.Namespace != ns {
				t.Errorf("subject %s %s/%s, want ServiceAccount %s/%s", s.Kind, s.Namespace, s.Name, ns, sa)
			}
		}
	})

	t.Run("passes --liqo-namespace as the namespace of the RBAC's Liqo Role", func(t *testing.T) {
		liqo := expand(t, c, args["liqo-namespace"])
		i := slices.IndexFunc(objs.roles, func(r rbacv1.Role) bool { return r.Name == "gitpeer" })
		if i < 0 {
			t.Fatal("no Role gitpeer")
		}
		if liqo != objs.roles[i].Namespace {
			t.Errorf("--liqo-namespace %q, but Role gitpeer is in %q", liqo, objs.roles[i].Namespace)
		}
	})

	t.Run("takes the cluster ID and repo URL from the generated ConfigMap", func(t *testing.T) {
		for _, key := range []string{"CLUSTER_ID", "REPO_URL"} {
			cm := objs.configMap(t, dep, key)
			if cm.Data[key] == "" {
				t.Errorf("ConfigMap %s has no %s", cm.Name, key)
			}
		}
	})

	t.Run("defines every $(VAR) its args use", func(t *testing.T) {
		defined := map[string]bool{}
		for _, e := range c.Env {
			defined[e.Name] = true
		}
		for _, a := range c.Args {
			for _, m := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(a, -1) {
				if !defined[m[1]] {
					t.Errorf("arg %q uses $(%s), which no env var defines: the kubelet would pass it literally", a, m[1])
				}
			}
		}
	})
}

// built is a kustomize build decoded with the Kubernetes API types.
type built struct {
	deployments         []appsv1.Deployment
	configMaps          []corev1.ConfigMap
	secrets             []corev1.Secret
	serviceAccounts     []corev1.ServiceAccount
	roles               []rbacv1.Role
	roleBindings        []rbacv1.RoleBinding
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	namespaces          []string
	unnamespaced        []string // kind/name of namespaced objects without a namespace
}

// clusterScoped are the cluster-scoped kinds a build of manifests/ holds.
var clusterScoped = []string{"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

func decodeBuild(t *testing.T, rm resmap.ResMap) *built {
	t.Helper()
	b := &built{}
	for _, r := range rm.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		id := r.GetKind() + "/" + r.GetName()
		if !slices.Contains(clusterScoped, r.GetKind()) && r.GetNamespace() == "" {
			b.unnamespaced = append(b.unnamespaced, id)
		}
		var into any
		switch r.GetKind() {
		case "Deployment":
			b.deployments = append(b.deployments, appsv1.Deployment{})
			into = &b.deployments[len(b.deployments)-1]
		case "ConfigMap":
			b.configMaps = append(b.configMaps, corev1.ConfigMap{})
			into = &b.configMaps[len(b.configMaps)-1]
		case "Secret":
			b.secrets = append(b.secrets, corev1.Secret{})
			into = &b.secrets[len(b.secrets)-1]
		case "ServiceAccount":
			b.serviceAccounts = append(b.serviceAccounts, corev1.ServiceAccount{})
			into = &b.serviceAccounts[len(b.serviceAccounts)-1]
		case "Role":
			b.roles = append(b.roles, rbacv1.Role{})
			into = &b.roles[len(b.roles)-1]
		case "RoleBinding":
			b.roleBindings = append(b.roleBindings, rbacv1.RoleBinding{})
			into = &b.roleBindings[len(b.roleBindings)-1]
		case "ClusterRoleBinding":
			b.clusterRoleBindings = append(b.clusterRoleBindings, rbacv1.ClusterRoleBinding{})
			into = &b.clusterRoleBindings[len(b.clusterRoleBindings)-1]
		case "Namespace":
			b.namespaces = append(b.namespaces, r.GetName())
			into = &corev1.Namespace{}
		default:
			continue
		}
		// Strict: an unknown field is an error, not a setting the API
		// server would drop. encoding/json matches names regardless of case,
		// the API server does not: a round trip through the type must give
		// back every field as written (readOnlyRootFileSystem would not).
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("decode %s: %v", id, err)
		}
		var written, typed any
		if err := yaml.Unmarshal(data, &written); err != nil {
			t.Fatal(err)
		}
		back, err := yaml.Marshal(into)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(back, &typed); err != nil {
			t.Fatal(err)
		}
		if p := lost(written, typed, ""); p != "" {
			t.Fatalf("decode %s: field %s is not the API's (misspelled, or in the wrong case)", id, p)
		}
	}
	return b
}

// lost is the path of the first value of written that typed lacks or holds
// differently, "" if typed holds all of written.
func lost(written, typed any, at string) string {
	switch w := written.(type) {
	case map[string]any:
		t, ok := typed.(map[string]any)
		if !ok {
			return at
		}
		for k, v := range w {
			if p := lost(v, t[k], at+"."+k); p != "" {
				return p
			}
		}
	case []any:
		t, ok := typed.([]any)
		if !ok || len(t) != len(w) {
			return at
		}
		for i := range w {
			if p := lost(w[i], t[i], at+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	default:
		if !reflect.DeepEqual(written, typed) {
			return at
		}
	}
	return ""
}

func (b *built) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	if len(b.deployments) != 1 {
		t.Fatalf("the build holds %d Deployments, want 1", len(b.deployments))
	}
	return &b.deployments[0]
}

// configMap is the ConfigMap the Deployment's env var key is read from.
func (b *built) configMap(t *testing.T, dep *appsv1.Deployment, key string) *corev1.ConfigMap {
	t.Helper()
	for _, e := range container(t, dep).Env {
		if e.Name != key {
			continue
		}
		if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Key != key {
			t.Fatalf("env %s is not read from key %s of a ConfigMap", key, key)
		}
		name := e.ValueFrom.ConfigMapKeyRef.Name
		for i := range b.configMaps {
			if cm := &b.configMaps[i]; cm.Name == name && cm.Namespace == dep.Namespace {
				return cm
			}
		}
		t.Fatalf("env %s reads ConfigMap %s, which the build has not in %s", key, name, dep.Namespace)
	}
	t.Fatalf("no env var %s", key)
	return nil
}

func container(t *testing.T, dep *appsv1.Deployment) *corev1.Container {
	t.Helper()
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(cs))
	}
	return &cs[0]
}

// flags are the --name=value (or --name value; a bare --name is "true")
// arguments of args.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(name, "="); ok {
			out[k] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[name] = args[i+1]
			i++
		} else {
			out[name] = "true"
		}
	}
	return out
}

// expand resolves $(VAR) in s with the container's literal env values, as
// the kubelet does.
func expand(t *testing.T, c *corev1.Container, s string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			s = strings.ReplaceAll(s, "$("+e.Name+")", e.Value)
		}
	}
	if strings.Contains(s, "$(") {
		t.Fatalf("%q does not resolve to a literal", s)
	}
	return s
}

// mountAt is the container's mount that holds path p (the deepest one), and
// its volume.
func mountAt(c *corev1.Container, pod corev1.PodSpec, p string) (*corev1.VolumeMount, *corev1.Volume) {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) &&
			(best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = m
		}
	}
	if best == nil {
		return nil, nil
	}
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == best.Name {
			return best, &pod.Volumes[i]
		}
	}
	return nil, nil
}

func bindsServiceAccount(subjects []rbacv1.Subject, name, ns string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == name && s.Namespace == ns
	})
}

// addrPort is the port of a listen address such as ":8080", 0 if none.
func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	var n int32
	if err := json.Unmarshal([]byte(port), &n); err != nil {
		t.Fatalf("address %q: port %q", addr, port)
	}
	return n
}

// copyManifests copies this checkout's manifests/<sub> trees, test data
// left out, into mem under /src/manifests.
func copyManifests(t *testing.T, mem filesys.FileSystem, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		err := filepath.WalkDir(sub, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return mem.WriteFile(path.Join("/src/manifests", filepath.ToSlash(p)), data)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fencedBlocks are the fenced code blocks of a Markdown document whose first
// line is prefix followed by a file name, by that name (the first line
// kept: it is a comment in YAML and in an env file).
func fencedBlocks(doc []byte, prefix string) map[string]string {
	out := map[string]string{}
	var cur []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in && len(cur) > 0 {
				if name, ok := strings.CutPrefix(strings.TrimSpace(cur[0]), prefix); ok {
					out[name] = strings.Join(cur, "\n") + "\n"
				}
			}
			in, cur = !in, nil
			continue
		}
		if in {
			cur = append(cur, line)
		}
	}
	return out
}

// TestImageMatchesTheDeployment checks what the Deployment relies on in the
// image make image builds (internal/imagebuild): it runs as the image's
// numeric non-root user and group (runAsNonRoot is checked against it), its
// fsGroup lets that group read the mounted Secret, and the container sets
// no command, so the image's entrypoint (gitpeer) runs with the args, which
// start with the subcommand.
func TestImageMatchesTheDeployment(t *testing.T) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	dep := decodeBuild(t, rm).deployment(t)
	sc := dep.Spec.Template.Spec.SecurityContext
	if sc.RunAsUser == nil || *sc.RunAsUser != imagebuild.UID || sc.RunAsGroup == nil || *sc.RunAsGroup != imagebuild.GID ||
		sc.FSGroup == nil || *sc.FSGroup != imagebuild.GID || imagebuild.User != fmt.Sprintf("%d:%d", imagebuild.UID, imagebuild.GID) {
		t.Errorf("runAsUser %v runAsGroup %v fsGroup %v, want the image's user %s", sc.RunAsUser, sc.RunAsGroup, sc.FSGroup, imagebuild.User)
	}
	c := container(t, dep)
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "reconcile" {
		t.Errorf("command %q args %q: want no command (the image's entrypoint is %s) and args starting with the subcommand", c.Command, c.Args, imagebuild.BinaryPath)
	}
}

// TestClusterIDComponentNamesTheSources builds an overlay of
// manifests/deploy with manifests/rbac/argocd and manifests/deploy/cluster-id
// (as docs/deploy.md says) for a cluster ID with dashes: both Roles name
// the cluster's own GitOps source, and the base alone names none.
func TestClusterIDComponentNamesTheSources(t *testing.T) {
	mem := filesys.MakeFsInMemory()
	copyManifests(t, mem, "rbac", "deploy")
	overlay := `resources: [../../manifests/deploy]
components:
  - ../../manifests/rbac/argocd
  - ../../manifests/deploy/cluster-id
configMapGenerator:
  - name: gitpeer-config
    namespace: gitpeer-system
    behavior: replace
    envs: [params.env]
`
	for name, content := range map[string]string{"kustomization.yaml": overlay, "params.env": "CLUSTER_ID=eu-west-1\nREPO_URL=ssh://git@example.invalid/p.git\n"} {
		if err := mem.WriteFile("/src/overlays/argo/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/overlays/argo")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"flux-system/gitpeer-flux": "gitrepositories", "argocd/gitpeer-argocd": "applications"}
	for _, r := range decodeBuild(t, rm).roles {
		res, ok := want[r.Namespace+"/"+r.Name]
		if !ok {
			continue
		}
		delete(want, r.Namespace+"/"+r.Name)
		if len(r.Rules) == 0 || !slices.Equal(r.Rules[0].Resources, []string{res}) || !slices.Equal(r.Rules[0].ResourceNames, []string{"gitpeer-eu-west-1"}) {
			t.Errorf("Role %s/%s rules %+v: want %s named gitpeer-eu-west-1 first", r.Namespace, r.Name, r.Rules, res)
		}
	}
	if len(want) != 0 {
		t.Errorf("the build has no Roles %v", want)
	}
	base, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range decodeBuild(t, base).roles {
		if r.Name == "gitpeer-flux" && !slices.Equal(r.Rules[0].ResourceNames, []string{"gitpeer-CLUSTER_ID"}) {
			t.Errorf("the base's Role gitpeer-flux names %v, want the placeholder gitpeer-CLUSTER_ID", r.Rules[0].ResourceNames)
		}
	}
}
