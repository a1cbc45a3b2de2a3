package layout_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// The bad-input suite for the repo layout: the files each cluster publishes
// (cluster.yaml, status.yaml, kustomization.yaml) and the shape of the
// checkout itself. Each is refused with a *layout.FieldError naming the file
// and field, or a path error naming the path and the reason (ErrSymlink,
// fs.ErrInvalid, not a regular file, not a directory), and never panics. The
// file tables also seed the fuzz targets of fuzz_test.go.

// layoutFile says which reader a case's input goes to.
type layoutFile int

const (
	clusterYAML layoutFile = iota
	statusYAML
	kustomizationYAML
)

// The files the cases are read as.
const (
	clusterFile       = "clusters/alpha/cluster.yaml"
	statusFile        = "clusters/alpha/status.yaml"
	kustomizationFile = "clusters/alpha/kustomization.yaml"
)

// badLayoutFile is one malformed file of a cluster's tree.
type badLayoutFile struct {
	name  string
	file  layoutFile
	input []byte
	field string // the field the *FieldError names; "" for the whole file
	says  string
}

// badLayoutFiles builds the cases from a valid cluster.yaml of alpha.
func badLayoutFiles(t testing.TB) []badLayoutFile {
	t.Helper()
	info := validClusterInfo(t, "alpha")
	valid := encodeInfo(t, info)
	other := validClusterInfo(t, "beta")
	// A private key pasted into a CA bundle: generated, never committed.
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	privPEM, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("%q not in\n%s", old, valid)
		}
		return bytes.Replace(valid, []byte(old), []byte(new), 1)
	}
	with := func(mod func(c *layout.ClusterInfo)) []byte {
		c := *info
		mod(&c)
		return encodeInfo(t, &c)
	}
	const status = "apiVersion: gitpeer.io/v1alpha1\nkind: ClusterStatus\nclusterID: alpha\npeerings: []\n"
	return []badLayoutFile{
		// cluster.yaml
		{name: "an empty cluster.yaml", file: clusterYAML, input: nil, field: "apiVersion", says: `is "", want`},
		{name: "a cluster.yaml of another apiVersion", file: clusterYAML, input: edit("apiVersion: gitpeer.io/v1alpha1", "apiVersion: gitpeer.io/v2"), field: "apiVersion", says: `is "gitpeer.io/v2"`},
		{name: "a cluster.yaml of another kind", file: clusterYAML, input: edit("kind: Cluster", "kind: Tenant"), field: "kind", says: `is "Tenant", want "Cluster"`},
		{name: "a cluster.yaml filed under another cluster", file: clusterYAML, input: edit("clusterID: alpha", "clusterID: beta"), field: "clusterID", says: "but the file is under clusters/alpha"},
		{name: "a cluster.yaml with an unknown field", file: clusterYAML, input: append(bytes.Clone(valid), "kubeconfig: x\n"...), says: `unknown field "kubeconfig"`},
		{name: "a cluster.yaml with a duplicate key", file: clusterYAML, input: append(bytes.Clone(valid), "apiServer: https://mallory.example\n"...), says: "already set"},
		{name: "a cluster.yaml with invalid UTF-8", file: clusterYAML, input: edit("clusterID: alpha", "clusterID: al\xffpha"), says: "invalid"},
		{name: "a cluster.yaml whose key is truncated PEM", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.PublicKey = c.PublicKey[:50] }), field: "publicKey", says: "malformed PEM block"},
		{name: "a cluster.yaml whose key is a certificate", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.PublicKey = c.CA }), field: "publicKey", says: `PEM type "CERTIFICATE", want "PUBLIC KEY"`},
		{name: "a cluster.yaml whose fingerprint is another key's", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.Fingerprint = other.Fingerprint }), field: "fingerprint", says: "but the public key's is"},
		{name: "a cluster.yaml with a plain http API server", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.APIServer = "http://alpha.example:6443" }), field: "apiServer", says: "not an https URL"},
		{name: "a cluster.yaml with an API server without host", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.APIServer = "https:///api" }), field: "apiServer", says: "not an https URL"},
		{name: "a cluster.yaml whose CA bundle holds a private key", file: clusterYAML, input: with(func(c *layout.ClusterInfo) {
			c.CA += string(privPEM)
		}), field: "ca", says: "holds a PRIVATE KEY block"},
		{name: "a cluster.yaml whose CA bundle has text before the certificate", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.CA = "alpha's CA:\n" + c.CA }), field: "ca", says: "before certificate 1"},
		{name: "a cluster.yaml whose CA bundle hides text between certificates", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.CA += "garbage\n" + other.CA }), field: "ca", says: "before certificate 2"},
		{name: "a cluster.yaml whose CA bundle is truncated", file: clusterYAML, input: with(func(c *layout.ClusterInfo) { c.CA = c.CA[:len(c.CA)-40] }), field: "ca", says: "malformed PEM block 1"},

		// status.yaml
		{name: "a status.yaml of another kind", file: statusYAML, input: []byte(strings.Replace(status, "ClusterStatus", "Cluster", 1)), field: "kind", says: `is "Cluster", want "ClusterStatus"`},
		{name: "a status.yaml of another cluster", file: statusYAML, input: []byte(strings.Replace(status, "clusterID: alpha", "clusterID: beta", 1)), field: "clusterID", says: `is "beta" but the file is under clusters/alpha`},
		{name: "a status.yaml with an unknown field", file: statusYAML, input: []byte(status + "ready: true\n"), says: `unknown field "ready"`},
		{name: "a status.yaml that is a list", file: statusYAML, input: []byte("- kind: ClusterStatus\n"), says: "cannot unmarshal array"},

		// kustomization.yaml
		{name: "a kustomization climbing out with ../", file: kustomizationYAML, input: []byte("resources: [../beta/liqo]\n"), field: "resources[0]", says: "outside the cluster's tree"},
		{name: "a kustomization with an absolute path", file: kustomizationYAML, input: []byte("resources: [liqo/x.yaml, /etc/kubernetes/admin.conf]\n"), field: "resources[1]", says: "outside the cluster's tree"},
		{name: "a kustomization with a remote base", file: kustomizationYAML, input: []byte("resources: [\"https://example.com/evil.yaml\"]\n"), field: "resources[0]", says: "outside the cluster's tree"},
		{name: "a kustomization applying the inbox", file: kustomizationYAML, input: []byte("resources: [inbox/beta/identity.yaml]\n"), field: "resources[0]", says: "unverified inbox artifact"},
		{name: "a kustomization reaching the inbox through liqo/..", file: kustomizationYAML, input: []byte("resources: [liqo/../inbox/beta]\n"), field: "resources[0]", says: "unverified inbox artifact"},
		{name: "a kustomization with patches", file: kustomizationYAML, input: []byte("resources: []\npatches: [{path: inbox/beta/x.yaml}]\n"), says: `unknown field "patches"`},
	}
}

// read runs a case through its reader, as a reconciler or verify reads it.
func (c badLayoutFile) read() (string, error) {
	switch c.file {
	case clusterYAML:
		_, err := layout.ParseClusterInfo(clusterFile, "alpha", c.input)
		return clusterFile, err
	case statusYAML:
		_, err := layout.ReadStatus(fstest.MapFS{statusFile: {Data: c.input}}, "alpha")
		return statusFile, err
	default:
		_, err := layout.ParseKustomization(kustomizationFile, c.input)
		return kustomizationFile, err
	}
}

// TestBadInputLayoutFiles: every malformed file of a cluster's tree is
// refused with a *FieldError naming the file, the field and why.
func TestBadInputLayoutFiles(t *testing.T) {
	for _, c := range badLayoutFiles(t) {
		t.Run(c.name, func(t *testing.T) {
			file, err := c.read()
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			var fe *layout.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v, want a *layout.FieldError", err, err)
			}
			if fe.File != file || fe.Field != c.field {
				t.Errorf("error names %s field %q, want %s field %q", fe.File, fe.Field, file, c.field)
			}
			if !strings.Contains(fe.Reason, c.says) {
				t.Errorf("reason %q does not say %q", fe.Reason, c.says)
			}
		})
	}
}

// seedBadLayoutFiles adds the cases of one file to a fuzz target's corpus.
func seedBadLayoutFiles(f *testing.F, file layoutFile) {
	for _, c := range badLayoutFiles(f) {
		if c.file == file {
			f.Add(c.input)
		}
	}
}

// TestBadInputCheckoutShapes: a checkout whose shape is not a peering
// repo's (links, a file where a directory belongs and the reverse, a
// cluster ID that is a path) is refused with an error naming the path and
// the reason; nothing is read through a link.
func TestBadInputCheckoutShapes(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "cluster.yaml")
	if err := os.WriteFile(secret, encodeInfo(t, validClusterInfo(t, "alpha")), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, root string) // builds clusters/alpha
		id    string
		want  error  // sentinel the error wraps
		says  string // a part of the message
	}{
		{"cluster.yaml is a link out of the repo", func(t *testing.T, root string) {
			mkdir(t, root, "clusters/alpha")
			symlink(t, secret, root, "clusters/alpha/cluster.yaml")
		}, "alpha", layout.ErrSymlink, "clusters/alpha/cluster.yaml"},
		{"the cluster's directory is a link to another cluster's", func(t *testing.T, root string) {
			mkdir(t, root, "clusters/beta")
			symlink(t, "beta", root, "clusters/alpha")
		}, "alpha", layout.ErrSymlink, "clusters/alpha/cluster.yaml"},
		{"clusters/ itself is a link", func(t *testing.T, root string) {
			symlink(t, outside, root, "clusters")
		}, "alpha", layout.ErrSymlink, "clusters/alpha/cluster.yaml"},
		{"cluster.yaml is a directory", func(t *testing.T, root string) {
			mkdir(t, root, "clusters/alpha/cluster.yaml")
		}, "alpha", nil, "not a regular file"},
		{"the cluster's directory is a file", func(t *testing.T, root string) {
			mkdir(t, root, "clusters")
			write(t, root, "clusters/alpha", "clusterID: alpha\n")
		}, "alpha", syscall.ENOTDIR, "clusters/alpha/cluster.yaml"},
		{"a cluster ID that climbs into another cluster's tree with ../", func(t *testing.T, root string) {
			mkdir(t, root, "clusters/beta")
			write(t, root, "clusters/beta/cluster.yaml", string(encodeInfo(t, validClusterInfo(t, "beta"))))
		}, "../beta", fs.ErrInvalid, "not a DNS-1123 label"},
		{"a cluster ID with capitals", func(t *testing.T, root string) {
			mkdir(t, root, "clusters/Alpha")
		}, "Alpha", fs.ErrInvalid, "not a DNS-1123 label"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			_, err := layout.ReadClusterInfo(layout.NewTree(root), c.id)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			if errors.Is(err, layout.ErrNotPublished) {
				t.Fatalf("error %v reads as a cluster not yet published", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}

func mkdir(t *testing.T, root, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(name)), 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, root, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
		t.Skipf("symlinks unsupported: %v", err)
	}
}
