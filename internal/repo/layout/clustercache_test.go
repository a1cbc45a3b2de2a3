package layout_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// The cache answers what ParseClusterInfo answers, at the first call and
// from the cache, and hands out copies: a caller's edit of what it got
// never reaches the next caller.
func TestClusterInfoCacheAnswersAsParse(t *testing.T) {
	c := layout.NewClusterInfoCache()
	info := validClusterInfo(t, "alpha")
	info.Rotation = &layout.Rotation{PreviousPublicKey: info.PublicKey, Signature: []byte("sig")}
	data := encodeInfo(t, info)
	want, err := layout.ParseClusterInfo("clusters/alpha/cluster.yaml", "alpha", data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, err := c.Read(fstest.MapFS{"clusters/alpha/cluster.yaml": {Data: data}}, "alpha")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: %+v, %v; want %+v", i, got, err, want)
		}
		got.APIServer = "https://edited.example"
		got.Rotation.Signature[0] = 'X'
	}
	for _, tree := range []fstest.MapFS{{}, {"clusters/alpha/cluster.yaml": {Data: data, Mode: 0o777 | 1<<27}}} {
		_, err := c.Read(tree, "alpha")
		_, want := layout.ReadClusterInfo(tree, "alpha")
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("read %v: %v, want %v", tree, err, want)
		}
	}
}

// Attacks on a warm cache: bytes changed by one character (an API server
// swapped, a fingerprint that no longer matches), and the same accepted
// bytes filed under another cluster's directory, are each parsed and
// refused or read anew, never answered with what was accepted before.
func TestClusterInfoCacheServesNoChangedBytes(t *testing.T) {
	c := layout.NewClusterInfoCache()
	info := validClusterInfo(t, "alpha")
	data := encodeInfo(t, info)
	if _, err := c.Parse("alpha", data); err != nil {
		t.Fatal(err)
	}
	swapped := bytes.Replace(data, []byte("https://alpha.example"), []byte("https://evil0.example"), 1)
	got, err := c.Parse("alpha", swapped)
	if err != nil || got.APIServer != "https://evil0.example:6443" {
		t.Fatalf("an edited API server: %+v, %v", got, err)
	}
	fp := info.Fingerprint
	last := fp[len(fp)-1:]
	other := "0"
	if last == "0" {
		other = "1"
	}
	badFP := bytes.Replace(data, []byte(fp), []byte(fp[:len(fp)-1]+other), 1)
	if _, err := c.Parse("alpha", badFP); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("a fingerprint changed by one character: %v", err)
	}
	if _, err := c.Parse("beta", data); err == nil || !strings.Contains(err.Error(), "clusters/beta/cluster.yaml: clusterID") {
		t.Fatalf("alpha's accepted cluster.yaml under beta: %v", err)
	}
}

func FuzzClusterInfoCache(f *testing.F) {
	f.Add("alpha", []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Cluster\nclusterID: alpha\n"))
	f.Fuzz(func(t *testing.T, id string, data []byte) {
		c := layout.NewClusterInfoCache()
		want, werr := layout.ParseClusterInfo(layout.ClusterPath(id, layout.ClusterFile), id, data)
		for range 2 {
			got, err := c.Parse(id, data)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || !reflect.DeepEqual(got, want) {
				t.Fatalf("cache: %+v, %v; ParseClusterInfo: %+v, %v", got, err, want, werr)
			}
		}
	})
}
