package layout_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// validClusterInfo is the cluster.yaml `gitpeer init` would publish for id,
// with a freshly generated key and CA (no key material is a fixture).
func validClusterInfo(t testing.TB, id string) *layout.ClusterInfo {
	t.Helper()
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	fp, err := handshake.Fingerprint(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	ca, _, err := handshake.NewCA(id+"-ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &layout.ClusterInfo{
		APIVersion:  layout.APIVersion,
		Kind:        layout.ClusterKind,
		ClusterID:   id,
		PublicKey:   string(pub),
		Fingerprint: fp,
		APIServer:   "https://" + id + ".example:6443",
		CA:          string(ca.CertPEM),
	}
}

func encodeInfo(t testing.TB, c *layout.ClusterInfo) []byte {
	t.Helper()
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseClusterInfoAcceptsWhatInitPublishes(t *testing.T) {
	want := validClusterInfo(t, "alpha")
	got, err := layout.ParseClusterInfo("clusters/alpha/cluster.yaml", "alpha", encodeInfo(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if *got != *want {
		t.Errorf("round trip changed the cluster info:\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseClusterInfoNamesTheFileAndField(t *testing.T) {
	const file = "clusters/alpha/cluster.yaml"
	other := validClusterInfo(t, "beta")
	cases := []struct {
		name   string
		edit   func(c *layout.ClusterInfo)
		raw    func(data []byte) []byte
		field  string
		reason string // a substring of the message
	}{
		{name: "refuses another apiVersion", edit: func(c *layout.ClusterInfo) { c.APIVersion = "gitpeer.io/v1" },
			field: "apiVersion", reason: `"gitpeer.io/v1alpha1"`},
		{name: "refuses another kind", edit: func(c *layout.ClusterInfo) { c.Kind = "Tenant" },
			field: "kind", reason: `"Tenant"`},
		{name: "refuses a cluster ID that is not the directory's", edit: func(c *layout.ClusterInfo) { c.ClusterID = "beta" },
			field: "clusterID", reason: "clusters/alpha"},
		{name: "refuses a fingerprint of another key", edit: func(c *layout.ClusterInfo) { c.Fingerprint = other.Fingerprint },
			field: "fingerprint", reason: other.Fingerprint},
		{name: "refuses an empty fingerprint", edit: func(c *layout.ClusterInfo) { c.Fingerprint = "" },
			field: "fingerprint"},
		{name: "refuses another cluster's public key under this fingerprint", edit: func(c *layout.ClusterInfo) { c.PublicKey = other.PublicKey },
			field: "fingerprint"},
		{name: "refuses a public key that is not PEM", edit: func(c *layout.ClusterInfo) { c.PublicKey = "not a key" },
			field: "publicKey"},
		{name: "refuses an http API server", edit: func(c *layout.ClusterInfo) { c.APIServer = "http://alpha.example:6443" },
			field: "apiServer", reason: "https"},
		{name: "refuses an empty API server", edit: func(c *layout.ClusterInfo) { c.APIServer = "" },
			field: "apiServer"},
		{name: "refuses a missing CA", edit: func(c *layout.ClusterInfo) { c.CA = "" },
			field: "ca", reason: "no PEM certificate"},
		{name: "refuses a CA that is the public key", edit: func(c *layout.ClusterInfo) { c.CA = c.PublicKey },
			field: "ca"},
		{name: "refuses an unknown field", raw: func(d []byte) []byte { return append(d, "privateKey: x\n"...) },
			reason: `unknown field "privateKey"`},
		{name: "refuses a document that is not YAML", raw: func([]byte) []byte { return []byte("\t: [") }},
		{name: "refuses an empty document", raw: func([]byte) []byte { return nil }, field: "apiVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validClusterInfo(t, "alpha")
			c.CA = other.CA // any parseable CA will do
			if tc.edit != nil {
				tc.edit(c)
			}
			data := encodeInfo(t, c)
			if tc.raw != nil {
				data = tc.raw(data)
			}
			got, err := layout.ParseClusterInfo(file, "alpha", data)
			if err == nil {
				t.Fatalf("accepted %+v", got)
			}
			var fe *layout.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			if fe.File != file || fe.Field != tc.field {
				t.Errorf("error names %q field %q, want %q field %q (%v)", fe.File, fe.Field, file, tc.field, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, file+": ") || (tc.field != "" && !strings.Contains(msg, ": "+tc.field+": ")) {
				t.Errorf("message %q does not start with the file and field", msg)
			}
			if !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q does not say %q", msg, tc.reason)
			}
		})
	}
}

func TestReadClusterInfo(t *testing.T) {
	info := validClusterInfo(t, "alpha")
	tree := fstest.MapFS{
		"clusters/alpha/cluster.yaml": {Data: encodeInfo(t, info)},
		"clusters/beta/cluster.yaml":  {Data: []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Cluster\nclusterID: alpha\n")},
	}
	t.Run("reads a published cluster", func(t *testing.T) {
		got, err := layout.ReadClusterInfo(tree, "alpha")
		if err != nil || got.Fingerprint != info.Fingerprint {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("says a cluster without cluster.yaml is not published", func(t *testing.T) {
		_, err := layout.ReadClusterInfo(tree, "gamma")
		if !errors.Is(err, layout.ErrNotPublished) || !strings.Contains(err.Error(), "clusters/gamma/cluster.yaml") {
			t.Fatalf("error %v, want ErrNotPublished naming the file", err)
		}
	})
	t.Run("names the file of a malformed cluster.yaml", func(t *testing.T) {
		_, err := layout.ReadClusterInfo(tree, "beta")
		var fe *layout.FieldError
		if !errors.As(err, &fe) || fe.File != "clusters/beta/cluster.yaml" || fe.Field != "clusterID" {
			t.Fatalf("error %v, want a FieldError on clusters/beta/cluster.yaml clusterID", err)
		}
		if errors.Is(err, layout.ErrNotPublished) {
			t.Error("a malformed cluster.yaml is reported as not published")
		}
	})
}

func TestPublishFilesWritesAKustomizationOnlyOnce(t *testing.T) {
	info := validClusterInfo(t, "alpha")
	files, err := layout.PublishFiles(fstest.MapFS{}, info)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := files["clusters/alpha/kustomization.yaml"]
	if !ok || len(files) != 2 {
		t.Fatalf("first publication wrote %v, want cluster.yaml and kustomization.yaml", keys(files))
	}
	if res, err := layout.ParseKustomization("k", k); err != nil || len(res) != 0 {
		t.Errorf("initial kustomization lists %v (%v), want nothing", res, err)
	}
	if _, err := layout.ParseClusterInfo("c", "alpha", files["clusters/alpha/cluster.yaml"]); err != nil {
		t.Errorf("published cluster.yaml does not parse: %v", err)
	}
	existing := fstest.MapFS{"clusters/alpha/kustomization.yaml": {Data: []byte("resources: [liqo/beta/x.yaml]\n")}}
	files, err = layout.PublishFiles(existing, info)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["clusters/alpha/kustomization.yaml"]; ok || len(files) != 1 {
		t.Errorf("republication wrote %v, want only cluster.yaml", keys(files))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
