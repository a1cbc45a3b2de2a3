package layout

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/yamljson"
)

// Kustomization renders clusters/<self>/kustomization.yaml listing resources
// (paths relative to clusters/<self>/, sorted). It exists from init on: without
// one, Flux would generate a kustomization of every YAML file under the path,
// the unverified inbox included.
func Kustomization(resources []string) ([]byte, error) {
	rs := append([]string(nil), resources...)
	sort.Strings(rs)
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: rs,
	}
	out, err := yamljson.Marshal(&k)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		// types.Kustomization omits an empty list, and kustomize >= v5.3
		// (kubectl, Argo CD) refuses a kustomization with no field but its
		// kind: "kustomization.yaml is empty". An explicit empty list builds.
		out = append(out, "resources: []\n"...)
	}
	return out, nil
}

// ParseKustomization reads the resources of a kustomization.yaml, refusing any
// that points outside the cluster's own tree or into its inbox: the apply rule
// lets an artifact reach a cluster only through its own verified copy. Any
// field but apiVersion, kind and resources is refused too: gitpeer's
// kustomizations carry nothing else, and components, bases, patches and
// generators name files just as resources do.
func ParseKustomization(file string, data []byte) ([]string, error) {
	var k struct {
		APIVersion string   `json:"apiVersion,omitempty"`
		Kind       string   `json:"kind,omitempty"`
		Resources  []string `json:"resources,omitempty"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, &FieldError{File: file, Reason: err.Error()}
	}
	for i, r := range k.Resources {
		clean := path.Clean(r)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(r, "://") {
			return nil, &FieldError{File: file, Field: fmt.Sprintf("resources[%d]", i), Reason: fmt.Sprintf("%q is outside the cluster's tree", r)}
		}
		if clean == InboxDir || strings.HasPrefix(clean, InboxDir+"/") {
			return nil, &FieldError{File: file, Field: fmt.Sprintf("resources[%d]", i), Reason: fmt.Sprintf("%q applies an unverified inbox artifact", r)}
		}
	}
	return k.Resources, nil
}
