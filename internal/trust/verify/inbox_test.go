package verify_test

import (
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/test/verifytest"
)

// TestAnythingButArtifactsInAnInboxIsAFinding: in the demo repo (alpha
// consumes from beta and gamma, delta from gamma) a file in an inbox that is
// not an artifact its writer sends in its part is UnexpectedArtifact, named,
// whether a repo writer planted it unsigned or the writer signed it: a
// ClusterRoleBinding, a kustomization in a subfolder, a slice request from
// a provider.
func TestAnythingButArtifactsInAnInboxIsAFinding(t *testing.T) {
	const crb = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: evil\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: evil\n  namespace: evil\n"
	for _, tc := range []struct {
		name, writer, file, content string
		signed                      bool
	}{
		{"an unsigned ClusterRoleBinding in alpha's inbox at beta", "beta", "clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml", crb, false},
		{"a ClusterRoleBinding alpha signs into its folder of beta's inbox", "alpha", "clusters/beta/inbox/alpha/clusterrolebinding-evil.yaml", crb, true},
		{"a kustomization gamma signs in a subfolder of delta's inbox", "gamma", "clusters/delta/inbox/gamma/sub/kustomization.yaml", "resources: [crb.yaml]\n", true},
		{"a slice request beta, a provider, signs into alpha's inbox", "beta", "clusters/alpha/inbox/beta/resourceslice-evil.yaml", crb, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := checkout(t)
			writeFile(t, filepath.Join(dir, filepath.FromSlash(tc.file)), tc.content)
			if tc.signed {
				folder := filepath.ToSlash(filepath.Dir(tc.file))
				if filepath.Base(folder) == "sub" {
					folder = filepath.ToSlash(filepath.Dir(folder))
				}
				if err := verifytest.SignDir(dir, tc.writer, folder, demoKeys(t)[tc.writer], 1<<40); err != nil {
					t.Fatal(err)
				}
			}
			findings := checkTree(t, dir, true)
			if !hasFinding(findings, tc.file, "", reasons.UnexpectedArtifact) {
				t.Fatalf("no UnexpectedArtifact on %s; got:\n%s", tc.file, list(findings))
			}
			if signed := !hasFinding(findings, tc.file, "", reasons.UnsignedChange); signed != tc.signed {
				t.Errorf("%s signed: %t, want %t; got:\n%s", tc.file, signed, tc.signed, list(findings))
			}
			for _, f := range findings {
				if f.Reason == reasons.UnexpectedArtifact && f.File != tc.file {
					t.Errorf("UnexpectedArtifact on another file: %s", f)
				}
			}
		})
	}
}
