package verify

import (
	"reflect"
	"slices"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/kustomize/api/provider"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// encoded is liqo.Encode of obj, as reconcile writes rendered files.
func encoded(t testing.TB, obj any) []byte {
	t.Helper()
	data, err := liqo.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// renderedSamples are rendered files and files that are not: objects of
// each kind grantFindings and compareBuilt meet, and broken ones.
func renderedSamples(t testing.TB) [][]byte {
	params := authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte("crt"), APIServer: "https://beta.example:6443"}
	return [][]byte{
		encoded(t, liqo.Namespace("beta")),
		encoded(t, liqo.ControlPlaneIdentity("alpha", "beta", params)),
		encoded(t, liqo.ResourceSliceIdentity("web", "beta", params)),
		encoded(t, liqo.ResourceSlice("web", "alpha", "beta", "default", nil, true, []byte("csr"))),
		[]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"),
		[]byte("apiVersion: authentication.liqo.io/v1beta1\nkind: Identity\nmetadata: [\n"),
		[]byte("kind: Identity\napiVersion: v1\n"),
		[]byte("apiVersion: authentication.liqo.io/v1beta1\nkind: ResourceSlice\nmetadata: {name: x}\nspec: {evil: true}\n"),
		[]byte("---\n---\n"),
		[]byte("just text\n"),
		{},
	}
}

// The objects of an accepted file taken from the cache are those a parse
// of the same bytes gives, on the first sighting, the second (kept) and
// after; a file with one byte changed is parsed for itself.
func TestAcceptedObjectsFromTheCacheAreThoseOfAParse(t *testing.T) {
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	c := newAcceptedObjects()
	for _, data := range renderedSamples(t) {
		want := (*acceptedObjects)(nil).objects(rf, data)
		for round := range 3 {
			if got := c.objects(rf, data); !reflect.DeepEqual(got, want) {
				t.Errorf("%q, round %d: %v, a parse gives %v", data, round, got, want)
			}
		}
	}
	ns := encoded(t, liqo.Namespace("beta"))
	evil := slices.Clone(ns)
	i := slices.Index(evil, 'b')
	evil[i] = 'e' // liqo-tenant-beta -> liqo-tenant-eeta
	got, orig := c.objects(rf, evil), c.objects(rf, ns)
	if want := (*acceptedObjects)(nil).objects(rf, evil); !reflect.DeepEqual(got, want) || reflect.DeepEqual(got, orig) {
		t.Fatalf("a changed byte: %v; a parse gives %v, the original %v", got, want, orig)
	}
}

// What sliceOrIdentity skips, neither decoder grantFindings tries accepts:
// skipping it changes no finding.
func TestSliceOrIdentitySkipsOnlyWhatNeitherDecoderAccepts(t *testing.T) {
	for _, data := range renderedSamples(t) {
		checkSliceOrIdentity(t, data)
	}
	if !sliceOrIdentity(renderedSamples(t)[1]) || !sliceOrIdentity(renderedSamples(t)[3]) {
		t.Fatal("an Identity or a ResourceSlice skipped")
	}
}

func checkSliceOrIdentity(t *testing.T, data []byte) {
	t.Helper()
	if sliceOrIdentity(data) {
		return
	}
	if rs, err := liqo.DecodeResourceSlice(data); err == nil {
		t.Errorf("%q skipped, but decodes as ResourceSlice %s", data, rs.Name)
	}
	if id, err := liqo.DecodeIdentity(data); err == nil {
		t.Errorf("%q skipped, but decodes as Identity %s", data, id.Name)
	}
}

func FuzzSliceOrIdentity(f *testing.F) {
	for _, data := range renderedSamples(f) {
		f.Add(data)
	}
	f.Fuzz(checkSliceOrIdentity)
}
