package verify_test

import (
	"crypto"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/verifytest"
)

// demoKeys are the cluster keys of the demo repo, from its state dirs.
func demoKeys(t *testing.T) map[string]crypto.Signer {
	t.Helper()
	cleanRepo(t)
	keys := map[string]crypto.Signer{}
	for _, id := range []string{"alpha", "beta", "gamma", "delta"} {
		data, err := os.ReadFile(filepath.Join(workDir, "demo", "state", id, "cluster.key"))
		if err != nil {
			t.Fatal(err)
		}
		if keys[id], err = handshake.ParsePrivateKey(data); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func checkTree(t *testing.T, dir string, require bool) []verify.Finding {
	t.Helper()
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return verify.CheckTree(layout.NewTree(dir), spec, verify.Options{Now: time.Now(), RequireManifests: require})
}

func TestARepoMadeByTheReconcilersPassesEveryCheck(t *testing.T) {
	dir := checkout(t)
	if findings := checkTree(t, dir, true); len(findings) != 0 {
		t.Fatalf("findings in a repo the reconcilers made and signed:\n%s", list(findings))
	}
}

// hasFinding reports whether a finding names file, has exactly field and
// the reason code.
func hasFinding(findings []verify.Finding, file, field, reason string) bool {
	for _, f := range findings {
		if f.File == file && f.Field == field && f.Reason == reason {
			return true
		}
	}
	return false
}

func TestTreeAttacksAreFound(t *testing.T) {
	evilCRB := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: evil\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: User\n  name: alpha\n"
	type want struct{ file, field, reason string }
	cases := []struct {
		name   string
		attack tamper
		want   []want
	}{
		{"a ClusterRoleBinding planted and listed in beta's kustomization", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml"), evilCRB)
			appendTo(t, filepath.Join(dir, "clusters/beta/kustomization.yaml"), "- liqo/alpha/clusterrolebinding-evil.yaml\n")
		}, []want{
			{"clusters/beta/kustomization.yaml", "ClusterRoleBinding/evil", reasons.UnexpectedObject},
			{"clusters/beta/kustomization.yaml", "", reasons.UnsignedChange},
			{"clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml", "", reasons.UnsignedChange},
		}},

		{"a ClusterRoleBinding planted as a nested kustomization's generated object", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/beta/extra/kustomization.yaml"), "resources: [crb.yaml]\n")
			writeFile(t, filepath.Join(dir, "clusters/beta/extra/crb.yaml"), evilCRB)
			appendTo(t, filepath.Join(dir, "clusters/beta/kustomization.yaml"), "- extra\n")
		}, []want{{"clusters/beta/kustomization.yaml", "ClusterRoleBinding/evil", reasons.UnexpectedObject}}},

		{"a patch that rebinds a rendered RoleBinding to cluster-admin", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "clusters/beta/kustomization.yaml"),
				"patches:\n- path: rb.yaml\n")
			writeFile(t, filepath.Join(dir, "clusters/beta/rb.yaml"),
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: liqo-binding-liqo-remote-controlplane, namespace: liqo-tenant-alpha}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n")
		}, []want{{"clusters/beta/kustomization.yaml", "RoleBinding/liqo-tenant-alpha/liqo-binding-liqo-remote-controlplane", reasons.UnexpectedObject}}},

		{"a nested kustomization pulling an Identity from alpha's inbox", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/alpha/overlay/kustomization.yaml"), "resources:\n- ../inbox/beta/identity.yaml\n")
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- overlay\n")
		}, []want{{"clusters/alpha/overlay/kustomization.yaml", "resources[0]", reasons.OutsideReference}}},

		{"a nested kustomization, listed nowhere, reaching into another cluster's tree", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/alpha/liqo-extra/kustomization.yaml"), "components:\n- ../../beta/liqo\n")
		}, []want{{"clusters/alpha/liqo-extra/kustomization.yaml", "components[0]", reasons.OutsideReference}}},

		{"a configMapGenerator reading a file outside the cluster's tree", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/alpha/gen/kustomization.yaml"), "configMapGenerator:\n- name: x\n  files:\n  - spec=../../../peering.cue\n")
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- gen\n")
		}, []want{{"clusters/alpha/gen/kustomization.yaml", "configMapGenerator[0].files[0]", reasons.OutsideReference}}},

		{"a remote base", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/alpha/base/kustomization.yaml"), "resources:\n- https://github.com/mallory/manifests//evil?ref=main\n")
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- base\n")
		}, []want{{"clusters/alpha/base/kustomization.yaml", "resources[0]", reasons.RemoteBase}}},

		{"a kustomization that does not build", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/gamma/broken/kustomization.yaml"), "resources:\n- missing.yaml\n")
			appendTo(t, filepath.Join(dir, "clusters/gamma/kustomization.yaml"), "- broken\n")
		}, []want{{"clusters/gamma/kustomization.yaml", "", reasons.BuildFailed}}},

		{"a cluster's kustomization removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "clusters/delta/kustomization.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []want{{"clusters/delta/kustomization.yaml", "", reasons.MissingKustomization}}},

		{"a private key under docs/", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "docs/setup/key.pem"), privateKeyPEM(t))
		}, []want{{"docs/setup/key.pem", "", reasons.PrivateMaterial}}},

		{"a private key at the root", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "id_ed25519"), privateKeyPEM(t))
		}, []want{{"id_ed25519", "", reasons.PrivateMaterial}}},

		{"an unsigned edit of a signed Identity", editFile("clusters/alpha/inbox/beta/identity.yaml", func(t *testing.T, data []byte) []byte {
			return append(data, "# edited\n"...)
		}), []want{{"clusters/alpha/inbox/beta/identity.yaml", "", reasons.UnsignedChange}}},

		{"a signed nonce deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "clusters/alpha/inbox/gamma/nonce.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []want{{"clusters/alpha/inbox/gamma/nonce.yaml", "", reasons.UnsignedChange}}},

		// Bindings stand on a Tenant: with the Tenant gone from the inbox,
		// what the provider rendered for it is no longer what render lists.
		{"a provider's bindings with no Tenant behind them", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "clusters/beta/inbox/alpha/tenant.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []want{
			{"clusters/beta/inbox/alpha/tenant.yaml", "", reasons.UnsignedChange},
			{"clusters/beta/liqo/alpha/tenant-alpha.yaml", "", reasons.UnexpectedObject},
			{"clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml", "", reasons.UnexpectedObject},
			{"clusters/beta/liqo/alpha/clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml", "", reasons.UnexpectedObject},
		}},

		{"an inbox manifest deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "clusters/beta/inbox/alpha/manifest.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []want{{"clusters/beta/inbox/alpha/tenant.yaml", "", reasons.ManifestInvalid}}},

		{"alpha's signed manifest copied over beta's", func(t *testing.T, dir string) {
			data, err := os.ReadFile(filepath.Join(dir, "clusters/alpha/manifest.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "clusters/beta/manifest.yaml"), string(data))
		}, []want{
			{"clusters/beta/manifest.yaml", "clusterID", reasons.OwnershipViolation},
			{"clusters/beta/kustomization.yaml", "", reasons.ManifestInvalid},
		}},

		{"a manifest re-signed with a key beta does not publish", func(t *testing.T, dir string) {
			mallory, err := handshake.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			appendTo(t, filepath.Join(dir, "clusters/beta/kustomization.yaml"), "- liqo/alpha/clusterrolebinding-evil.yaml\n")
			writeFile(t, filepath.Join(dir, "clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml"), evilCRB)
			if err := verifytest.SignDir(dir, "beta", "clusters/beta", mallory, 9); err != nil {
				t.Fatal(err)
			}
		}, []want{
			{"clusters/beta/kustomization.yaml", "", reasons.ManifestInvalid},
			{"clusters/beta/kustomization.yaml", "ClusterRoleBinding/evil", reasons.UnexpectedObject},
		}},
	}
	for _, tc := range cases {
		t.Run("finds "+tc.name, func(t *testing.T) {
			dir := checkout(t)
			tc.attack(t, dir)
			findings := checkTree(t, dir, true)
			for _, w := range tc.want {
				if !hasFinding(findings, w.file, w.field, w.reason) {
					t.Errorf("no %s on %s field %q; got:\n%s", w.reason, w.file, w.field, list(findings))
				}
			}
		})
	}
}

func privateKeyPEM(t *testing.T) string {
	t.Helper()
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	data, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestManifestsAreRequiredOnlyWhenAsked(t *testing.T) {
	dir := checkout(t)
	if err := os.Remove(filepath.Join(dir, "clusters/beta/inbox/alpha/manifest.yaml")); err != nil {
		t.Fatal(err)
	}
	findings := checkTree(t, dir, true)
	if !hasFinding(findings, "clusters/beta/inbox/alpha/tenant.yaml", "", reasons.ManifestInvalid) {
		t.Fatalf("a directory without its manifest, with RequireManifests: no ManifestInvalid for its files:\n%s", list(findings))
	}
	if findings := checkTree(t, dir, false); len(findings) != 0 {
		t.Fatalf("a directory without its manifest, without RequireManifests:\n%s", list(findings))
	}
	// A directory that is signed is checked even when manifests are not
	// required.
	appendTo(t, filepath.Join(dir, "clusters/alpha/inbox/beta/identity.yaml"), "# edited\n")
	if findings := checkTree(t, dir, false); len(findings) != 1 || !hasFinding(findings, "clusters/alpha/inbox/beta/identity.yaml", "", reasons.UnsignedChange) {
		t.Fatalf("an unsigned edit in a signed directory, manifests not required:\n%s", list(findings))
	}
	// Signed again by its writer, the directory passes.
	if err := verifytest.SignDir(dir, "beta", "clusters/alpha/inbox/beta", demoKeys(t)["beta"], 99); err != nil {
		t.Fatal(err)
	}
	if findings := checkTree(t, dir, false); len(findings) != 0 {
		t.Fatalf("re-signed by beta:\n%s", list(findings))
	}
}
