// Package manifests holds deployable YAML; this test keeps it buildable.
package manifests

import (
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestManifestsBuildWithKustomize(t *testing.T) {
	cases := map[string][]string{
		"rbac": {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"},
		"flux": {"GitRepository", "Kustomization"},
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
