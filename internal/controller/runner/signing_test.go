package runner

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// TestSignedByManifestKeepsExactlyWhatTheClusterSigned: the applied tree of
// alpha holds its manifest and the files it lists with their content;
// a file it does not list, one whose content changed, and anything of a
// manifest signed by another key or for another writer are not vouched for.
func TestSignedByManifestKeepsExactlyWhatTheClusterSigned(t *testing.T) {
	_, alpha, _ := ed25519.GenerateKey(nil)
	_, mallory, _ := ed25519.GenerateKey(nil)
	signed := map[string][]byte{
		"cluster.yaml":                []byte("clusterID: alpha\n"),
		"kustomization.yaml":          []byte("resources: [liqo/beta/tenant.yaml]\n"),
		"liqo/beta/identity.yaml":     []byte("kind: Identity\n"),
		"liqo/beta/resourceslice.yml": []byte("kind: ResourceSlice\n"),
	}
	tree := func(key ed25519.PrivateKey, writer string) fstest.MapFS {
		_, m, err := dirmanifest.Build(key, writer, "clusters/alpha", signed, 7)
		if err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{"clusters/alpha/manifest.yaml": {Data: m}}
		for p, data := range signed {
			fsys["clusters/alpha/"+p] = &fstest.MapFile{Data: data}
		}
		fsys["clusters/alpha/liqo/beta/resourceslice.yml"] = &fstest.MapFile{Data: []byte("kind: ResourceSlice\nspec: {cpu: 64}\n")}
		fsys["clusters/alpha/liqo/beta/clusterrolebinding.yaml"] = &fstest.MapFile{Data: []byte("kind: ClusterRoleBinding\n")}
		return fsys
	}
	filter := SignedByManifest("alpha", alpha.Public())

	keep, err := filter(tree(alpha, "alpha"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"clusters/alpha/manifest.yaml":                     true,
		"clusters/alpha/cluster.yaml":                      true,
		"clusters/alpha/kustomization.yaml":                true,
		"clusters/alpha/liqo/beta/identity.yaml":           true,
		"clusters/alpha/liqo/beta/resourceslice.yml":       false, // content changed since signed
		"clusters/alpha/liqo/beta/clusterrolebinding.yaml": false, // never signed
		"clusters/alpha/inbox/beta/nonce.yaml":             false,
		"clusters/beta/cluster.yaml":                       false,
		"clusters/alphabet/cluster.yaml":                   false,
	} {
		if got := keep(name); got != want {
			t.Errorf("keep(%s) = %t, want %t", name, got, want)
		}
	}

	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want error
	}{
		{"signed by another key", tree(mallory, "alpha"), dirmanifest.ErrBadSignature},
		{"signed for another writer", tree(alpha, "beta"), dirmanifest.ErrWrongScope},
		{"missing", fstest.MapFS{"clusters/alpha/cluster.yaml": {Data: []byte("x")}}, nil},
		{"malformed", fstest.MapFS{"clusters/alpha/manifest.yaml": {Data: []byte("kind: [")}}, dirmanifest.ErrMalformed},
	} {
		_, err := filter(tc.fsys)
		if err == nil || !strings.Contains(err.Error(), "clusters/alpha/manifest.yaml") || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: filter = %v, want an error naming clusters/alpha/manifest.yaml (%v)", tc.name, err, tc.want)
		}
	}
}
