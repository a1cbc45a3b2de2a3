package layout_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// FuzzParseClusterInfo feeds cluster.yaml files a peer could commit. The
// parser must never panic, must refuse with a *FieldError naming the file,
// and whatever it accepts must hold every documented property.
func FuzzParseClusterInfo(f *testing.F) {
	const file = "clusters/alpha/cluster.yaml"
	valid := encodeInfo(f, validClusterInfo(f, "alpha"))
	f.Add(valid)
	f.Add([]byte(strings.Replace(string(valid), "https://", "http://", 1)))
	f.Add([]byte(strings.Replace(string(valid), "clusterID: alpha", "clusterID: beta", 1)))
	f.Add(append(append([]byte(nil), valid...), "extra: 1\n"...))
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: Cluster\nclusterID: alpha\npublicKey: |\n  -----BEGIN PUBLIC KEY-----\n  MCowBQYDK2VwAyEA\n  -----END PUBLIC KEY-----\n"))
	f.Add([]byte("[1, 2]"))
	f.Add([]byte(""))
	f.Add([]byte("&a [*a]"))
	seedBadLayoutFiles(f, clusterYAML)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := layout.ParseClusterInfo(file, "alpha", data)
		if err != nil {
			var fe *layout.FieldError
			if !errors.As(err, &fe) || fe.File != file {
				t.Fatalf("error %T %v is not a *FieldError on %s", err, err, file)
			}
			return
		}
		if c.APIVersion != layout.APIVersion || c.Kind != layout.ClusterKind || c.ClusterID != "alpha" {
			t.Fatalf("accepted a cluster.yaml of another kind or cluster: %+v", c)
		}
		pub, _, err := handshake.ParsePublicKey([]byte(c.PublicKey))
		if err != nil {
			t.Fatalf("accepted an unparseable public key: %v", err)
		}
		if fp, _ := handshake.Fingerprint(pub); fp != c.Fingerprint {
			t.Fatalf("accepted fingerprint %s for a key whose fingerprint is %s", c.Fingerprint, fp)
		}
		if err := layout.CheckAPIServer(c.APIServer); err != nil {
			t.Fatalf("accepted API server: %v", err)
		}
		if !strings.Contains(c.CA, "-----BEGIN CERTIFICATE-----") {
			t.Fatal("accepted a CA without a certificate")
		}
		// Nothing may hide before or between the certificates, which the
		// handshake's stricter reader would refuse at the Identity.
		for _, part := range strings.SplitAfter(c.CA, "-----END CERTIFICATE-----") {
			if p := strings.TrimLeft(part, " \t\r\n"); p != "" && !strings.HasPrefix(p, "-----BEGIN CERTIFICATE-----") {
				t.Fatalf("accepted a CA bundle with text between certificates: %q", c.CA)
			}
		}
	})
}

// FuzzParseKustomization feeds kustomization.yaml files. Whatever it accepts
// lists only paths inside the cluster's tree and outside its inbox.
func FuzzParseKustomization(f *testing.F) {
	const file = "clusters/alpha/kustomization.yaml"
	for _, seed := range []string{
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- liqo/beta/tenant-beta.yaml\n",
		"resources: [inbox/beta/tenant.yaml]\n",
		"resources: [./inbox]\n",
		"resources: [../beta]\n",
		"resources: [/etc/passwd]\n",
		"resources: [\"https://example.com/x.yaml\"]\n",
		"resources: [liqo/../inbox/x]\n",
		"components: [inbox/beta]\n",
		"resources: null\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	seedBadLayoutFiles(f, kustomizationYAML)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := layout.ParseKustomization(file, data)
		if err != nil {
			var fe *layout.FieldError
			if !errors.As(err, &fe) || fe.File != file {
				t.Fatalf("error %T %v is not a *FieldError on %s", err, err, file)
			}
			return
		}
		for _, r := range res {
			clean := path.Clean(r)
			if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				t.Fatalf("accepted %q, outside the tree", r)
			}
			if clean == layout.InboxDir || strings.HasPrefix(clean, layout.InboxDir+"/") {
				t.Fatalf("accepted %q, in the inbox", r)
			}
			if strings.Contains(r, "://") {
				t.Fatalf("accepted the URL %q", r)
			}
		}
	})
}

// FuzzReadStatus feeds status.yaml files. ReadStatus must never panic,
// must refuse with a *FieldError naming the file, and whatever it accepts is
// alpha's ClusterStatus.
func FuzzReadStatus(f *testing.F) {
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: ClusterStatus\nclusterID: alpha\npeerings:\n- consumer: alpha\n  provider: beta\n  role: consumer\n  step: Ready\n"))
	seedBadLayoutFiles(f, statusYAML)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := layout.ReadStatus(fstest.MapFS{statusFile: {Data: data}}, "alpha")
		if err != nil {
			var fe *layout.FieldError
			if !errors.As(err, &fe) || fe.File != statusFile {
				t.Fatalf("error %T %v is not a *FieldError on %s", err, err, statusFile)
			}
			return
		}
		if s.Kind != layout.StatusKind || s.ClusterID != "alpha" {
			t.Fatalf("accepted a status.yaml of another kind or cluster: %+v", s)
		}
	})
}
