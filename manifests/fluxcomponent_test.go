package manifests

import (
	"path"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/backend/kubernetes"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// fluxTree is a cluster's tree as the reconciler renders it, by hand: a
// Namespace in its kustomization, and the Flux-only Component flux/ with
// the verify Secret holding the current and, during a key rollover, the
// next key.
func fluxTree(id string) map[string]string {
	return map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [namespace.yaml]\n",
		"namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: liqo-tenant-beta}\n",
		"flux/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n" +
			"resources: [secret-gitpeer-signing.yaml]\n",
		"flux/secret-gitpeer-signing.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: gitpeer-signing, namespace: flux-system}\n" +
			"stringData:\n  " + id + ".sshpub: ssh-ed25519 AAAAcurrent\n  " + id + "-next.sshpub: ssh-ed25519 AAAAnext\n",
	}
}

// TestFluxAppliesTheVerifySecretTheTreeKeeps builds docs/gitops.md's Flux
// overlay, then a hand-written tree of the cluster as kustomize-controller
// does with that Kustomization (it adds spec.components, relative to
// spec.path, to the kustomization.yaml there: fluxcd/pkg/kustomize's
// generator) and as Argo CD does (the path alone). Flux must apply the
// tree's Secret under the very name and namespace the GitRepository
// verifies with, so that a key the tree adds is trusted; Argo CD must not
// see it; and the overlay's bootstrap copy must never overwrite it.
func TestFluxAppliesTheVerifySecretTheTreeKeeps(t *testing.T) {
	const id = "alpha"
	blocks := gitopsDocBlocks(t)
	mem, _ := gitopsFS(t, blocks)
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/docs/flux/"+id)
	if err != nil {
		t.Fatal(err)
	}
	overlay := toObjects(t, rm)
	repo := overlay.get(t, "GitRepository", "gitpeer-"+id)
	ks := overlay.get(t, "Kustomization", "gitpeer-"+id)
	verify := repo.str("spec", "verify", "secretRef", "name")
	bootstrap := overlay.get(t, "Secret", verify)
	if got := dig(bootstrap.m, "metadata", "annotations", "kustomize.toolkit.fluxcd.io/ssa"); got != "IfNotPresent" {
		t.Errorf("the overlay's %s would overwrite the tree's keys on every apply (ssa annotation %v)", bootstrap.id, got)
	}

	// The tree, in the repository root /repo, at the Kustomization's path.
	root := "/repo"
	dir := path.Join(root, ks.str("spec", "path"))
	if dir != path.Join(root, layout.ClusterPath(id)) {
		t.Fatalf("Kustomization spec.path %q is not the tree of %s", ks.str("spec", "path"), id)
	}
	for name, content := range fluxTree(id) {
		if err := mem.WriteFile(path.Join(dir, name), []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	build := func(components []string) objects {
		t.Helper()
		var k types.Kustomization
		if err := yaml.Unmarshal([]byte(fluxTree(id)["kustomization.yaml"]), &k); err != nil {
			t.Fatal(err)
		}
		k.Components = append(k.Components, components...)
		data, err := yaml.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteFile(path.Join(dir, "kustomization.yaml"), data); err != nil {
			t.Fatal(err)
		}
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
		if err != nil {
			t.Fatalf("kustomize build of %s with components %v: %v", layout.ClusterPath(id), components, err)
		}
		return toObjects(t, rm)
	}

	components, _ := dig(ks.m, "spec", "components").([]any)
	var comps []string
	for _, c := range components {
		comps = append(comps, c.(string))
	}
	asFlux := build(comps)
	secret := asFlux.get(t, "Secret", verify)
	if ns := secret.str("metadata", "namespace"); ns != repo.str("metadata", "namespace") || ns != kubernetes.FluxNamespace {
		t.Errorf("Flux applies %s, the GitRepository verifies with %s/%s", secret.id, repo.str("metadata", "namespace"), verify)
	}
	for _, k := range []string{id + ".sshpub", id + "-next.sshpub"} {
		if v, _ := dig(secret.m, "stringData", k).(string); !strings.HasPrefix(v, "ssh-ed25519 ") {
			t.Errorf("Flux applies %s without the tree's key %s", secret.id, k)
		}
	}
	if dig(secret.m, "metadata", "annotations", "kustomize.toolkit.fluxcd.io/ssa") != nil {
		t.Errorf("the tree's %s is created only if absent: the next key would never reach Flux", secret.id)
	}

	for _, o := range build(nil) {
		if o.str("kind") == "Secret" && o.str("metadata", "namespace") == kubernetes.FluxNamespace {
			t.Errorf("the tree without the Flux component (as Argo CD builds it) holds %s", o.id)
		}
	}
}
