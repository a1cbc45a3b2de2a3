package verify_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// The repo under test is made by the real flow: the three-cluster demo
// (alpha consumes from beta and gamma, delta from gamma; one slice denied)
// through a bare repo, then a fresh `git clone` of it, as a reviewer would
// check it out. It is built once and copied for every case.
var (
	repoOnce sync.Once
	repoDir  string // a clean clone, without .git
	repoErr  error
	workDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	os.Exit(code)
}

func cleanRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	repoOnce.Do(func() {
		if workDir, repoErr = os.MkdirTemp("", "gitpeer-verify-"); repoErr != nil {
			return
		}
		var rep *demo.Report
		rep, repoErr = demo.Run(context.Background(), demo.Options{Dir: filepath.Join(workDir, "demo"), Example: "three-clusters"}, io.Discard)
		if repoErr != nil {
			return
		}
		repoDir = filepath.Join(workDir, "clone")
		if out, err := testgit.Command("", "clone", "-q", rep.Remote, repoDir).CombinedOutput(); err != nil {
			repoErr = fmt.Errorf("git clone: %v: %s", err, out)
			return
		}
		repoErr = os.RemoveAll(filepath.Join(repoDir, ".git"))
	})
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	return repoDir
}

// checkout copies the clean repo into a directory of the test's own.
func checkout(t *testing.T) string {
	t.Helper()
	src := cleanRepo(t)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func run(t *testing.T, dir string) []verify.Finding {
	t.Helper()
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return verify.Tree(layout.NewTree(dir), spec, time.Now())
}

func TestARepoMadeByTheReconcilersVerifies(t *testing.T) {
	dir := checkout(t)
	if problems := run(t, dir); len(problems) != 0 {
		t.Fatalf("problems in a repo the reconcilers made:\n%s", list(problems))
	}
	// The repo is the complete three-cluster flow, so every check below had
	// something to check.
	for _, p := range []string{
		"clusters/beta/inbox/alpha/tenant.yaml",
		"clusters/alpha/inbox/beta/identity.yaml",
		"clusters/beta/inbox/alpha/resourceslice-web.yaml",
		"clusters/alpha/inbox/beta/resourceslice-web.status.yaml",
		"clusters/gamma/inbox/delta/resourceslice-bigbatch.yaml",
	} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("the demo repo lacks %s", p)
		}
	}
}

func TestAProblemAfterACertificateExpires(t *testing.T) {
	dir := checkout(t)
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	problems := verify.Tree(layout.NewTree(dir), spec, time.Now().Add(5*365*24*time.Hour))
	if !has(problems, "clusters/alpha/inbox/beta/identity.yaml", "spec.authParams.signedCRT", "expired") {
		t.Errorf("verify five years on does not report the expired certificate:\n%s", list(problems))
	}
}

// tamper edits one file of a checkout.
type tamper func(t *testing.T, dir string)

func TestTamperingIsReportedWithFileAndField(t *testing.T) {
	cases := []struct {
		name  string
		edit  tamper
		file  string
		field string
		says  string
	}{
		{"a tenant signature", editFile("clusters/beta/inbox/alpha/tenant.yaml", func(t *testing.T, data []byte) []byte {
			tn, err := liqo.DecodeTenant(data)
			if err != nil {
				t.Fatal(err)
			}
			tn.Spec.Signature[0] ^= 0xff
			return encode(t, tn)
		}), "clusters/beta/inbox/alpha/tenant.yaml", "spec.signature", "SignatureVerificationFailed"},

		{"a slice request whose CSR is for another key", editFile("clusters/beta/inbox/alpha/resourceslice-web.yaml", func(t *testing.T, data []byte) []byte {
			rs, err := liqo.DecodeResourceSlice(data)
			if err != nil {
				t.Fatal(err)
			}
			key, err := handshake.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			if rs.Spec.CSR, err = handshake.ResourceSliceCSR(key, "web", "alpha"); err != nil {
				t.Fatal(err)
			}
			return encode(t, rs)
		}), "clusters/beta/inbox/alpha/resourceslice-web.yaml", "spec.csr", "InvalidCSR"},

		{"an accepted slice answer whose certificate another CA signed", editFile("clusters/alpha/inbox/beta/resourceslice-web.status.yaml", func(t *testing.T, data []byte) []byte {
			rs, err := liqo.DecodeResourceSlice(data)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Status.AuthParams == nil {
				t.Fatal("the demo's web slice is not accepted")
			}
			ca, _, err := handshake.NewCA("mallory", time.Now(), 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Status.AuthParams.SignedCRT, err = ca.SignCSR(rs.Spec.CSR, time.Now(), time.Hour); err != nil {
				t.Fatal(err)
			}
			return encode(t, rs)
		}), "clusters/alpha/inbox/beta/resourceslice-web.status.yaml", "status.authParams.signedCRT", "InvalidCertificate"},

		{"an identity whose CA is not the provider's", editFile("clusters/alpha/inbox/beta/identity.yaml", func(t *testing.T, data []byte) []byte {
			id, err := liqo.DecodeIdentity(data)
			if err != nil {
				t.Fatal(err)
			}
			ca, _, err := handshake.NewCA("mallory", time.Now(), 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			id.Spec.AuthParams.CA = ca.CertPEM
			return encode(t, id)
		}), "clusters/alpha/inbox/beta/identity.yaml", "spec.authParams.ca", "UntrustedCA"},

		{"a rendered identity that is not the verified one", editFile("clusters/alpha/liqo/beta/identity-controlplane-beta.yaml", func(t *testing.T, data []byte) []byte {
			return bytes.Replace(data, []byte("https://beta.gitpeer.test:6443"), []byte("https://evil.example:6443"), 1)
		}), "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml", "", "differs from the object gitpeer renders"},

		{"a rendered RoleBinding bound to another ClusterRole", editFile("clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml", func(t *testing.T, data []byte) []byte {
			return bytes.Replace(data, []byte("name: liqo-remote-controlplane"), []byte("name: cluster-admin"), 1)
		}), "clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml", "", "differs from the object gitpeer renders"},

		{"an extra binding among the rendered objects", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml"),
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: evil}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: User, name: alpha}]\n")
			appendTo(t, filepath.Join(dir, "clusters/beta/kustomization.yaml"), "- liqo/alpha/clusterrolebinding-evil.yaml\n")
		}, "clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml", "", "renders no such object"},

		{"a rendered slice Identity pointing at another API server", editFile("clusters/alpha/liqo/beta/identity-resourceslice-web.yaml", func(t *testing.T, data []byte) []byte {
			return bytes.Replace(data, []byte("https://beta.gitpeer.test:6443"), []byte("https://evil.example:6443"), 1)
		}), "clusters/alpha/liqo/beta/identity-resourceslice-web.yaml", "", "differs from the object gitpeer renders"},

		{"a kustomization listing an inbox file", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- inbox/beta/identity.yaml\n")
		}, "clusters/alpha/kustomization.yaml", "resources[", "unverified inbox artifact"},

		{"a kustomization listing a file that does not exist", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- github.com/mallory/manifests\n")
		}, "clusters/alpha/kustomization.yaml", "resources[", "does not exist"},

		{"a kustomization with a component", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "components: [inbox/beta]\n")
		}, "clusters/alpha/kustomization.yaml", "", "components"},

		{"a file in the inbox of a cluster that does not peer with its sender", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/delta/inbox/beta/identity.yaml"), "kind: Secret\n")
		}, "clusters/delta/inbox/beta/identity.yaml", "", "do not peer"},

		{"a file in the tree of an undeclared cluster", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "clusters/mallory/cluster.yaml"), "kind: Cluster\n")
		}, "clusters/mallory/cluster.yaml", "", "not declared"},

		{"a private key dropped into a cluster's liqo directory", func(t *testing.T, dir string) {
			key, err := handshake.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "clusters/alpha/liqo/beta/key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE " + "KEY", Bytes: der})))
		}, "clusters/alpha/liqo/beta/key.pem", "", "private material"},

		{"a link in an inbox to a secret outside the repo", func(t *testing.T, dir string) {
			secret := filepath.Join(t.TempDir(), "cluster.key")
			writeFile(t, secret, "secret")
			p := filepath.Join(dir, "clusters/beta/inbox/alpha/tenant.yaml")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, p); err != nil {
				t.Skipf("symlinks unsupported: %v", err)
			}
		}, "clusters/beta/inbox/alpha/tenant.yaml", "", "symbolic link"},

		{"a cluster.yaml whose fingerprint is not its key's", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "clusters/gamma/cluster.yaml")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, strings.Replace(string(data), "fingerprint: sha256:", "fingerprint: sha256:00", 1))
		}, "clusters/gamma/cluster.yaml", "fingerprint", "public key"},

		{"a cluster whose key is not the one the spec pins", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "peering.cue")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			pinned := strings.Replace(string(data), `{id: "alpha"}`, `{id: "alpha", fingerprint: "sha256:`+strings.Repeat("0", 64)+`"}`, 1)
			if pinned == string(data) {
				t.Fatal("the example's spec changed; cannot pin alpha")
			}
			writeFile(t, p, pinned)
		}, "clusters/alpha/cluster.yaml", "fingerprint", "the spec pins"},

		{"a tenant answering a nonce nobody issued", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "clusters/alpha/inbox/gamma/nonce.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "clusters/gamma/inbox/alpha/tenant.yaml", "", "answers no valid nonce"},
	}
	for _, tc := range cases {
		t.Run("reports "+tc.name, func(t *testing.T) {
			dir := checkout(t)
			tc.edit(t, dir)
			problems := run(t, dir)
			if !has(problems, tc.file, tc.field, tc.says) {
				t.Fatalf("no problem on %s field %q saying %q; got:\n%s", tc.file, tc.field, tc.says, list(problems))
			}
			for _, p := range problems {
				if p.File == "" {
					t.Errorf("a problem names no file: %s", p)
				}
			}
		})
	}
}

func TestProblemsAreSortedByFile(t *testing.T) {
	dir := checkout(t)
	// The walk of the tree finds the first two; the handshake checks, which
	// run after it, find the third, whose file sorts first.
	writeFile(t, filepath.Join(dir, "clusters/zeta/x.yaml"), "a: b\n")
	writeFile(t, filepath.Join(dir, "clusters/delta/inbox/beta/x.yaml"), "a: b\n")
	tamperSignature := editFile("clusters/beta/inbox/alpha/tenant.yaml", func(t *testing.T, data []byte) []byte {
		return bytes.Replace(data, []byte("signature: "), []byte("signature: AAAA"), 1)
	})
	tamperSignature(t, dir)
	problems := run(t, dir)
	if len(problems) < 3 {
		t.Fatalf("problems:\n%s", list(problems))
	}
	for i := 1; i < len(problems); i++ {
		if problems[i-1].File > problems[i].File {
			t.Fatalf("not sorted by file:\n%s", list(problems))
		}
	}
}

func TestFindingString(t *testing.T) {
	cases := []struct {
		p    verify.Finding
		want string
	}{
		{verify.Finding{File: "a.yaml", Field: "spec.csr", Reason: "InvalidCSR", Message: "bad"}, "a.yaml: spec.csr: bad (InvalidCSR)"},
		{verify.Finding{File: "a.yaml", Message: "bad"}, "a.yaml: bad"},
		{verify.Finding{File: "a.yaml", Reason: "UnsignedChange", Message: "bad", Commit: "0123456789abcdef0123456789abcdef01234567"}, "a.yaml: bad (UnsignedChange, commit 0123456789ab)"},
	}
	for _, tc := range cases {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// has reports whether a finding names file, has a field starting with field
// (exactly "" when field is "") and a reason code or message containing says.
func has(problems []verify.Finding, file, field, says string) bool {
	for _, p := range problems {
		fieldOK := p.Field == field || (field != "" && strings.HasPrefix(p.Field, field))
		if p.File == file && fieldOK && (strings.Contains(p.Reason, says) || strings.Contains(p.Message, says)) {
			return true
		}
	}
	return false
}

func list(problems []verify.Finding) string {
	var b strings.Builder
	for _, p := range problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

func editFile(rel string, edit func(t *testing.T, data []byte) []byte) tamper {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out := edit(t, data)
		if bytes.Equal(out, data) {
			t.Fatalf("the edit of %s changed nothing", rel)
		}
		writeFile(t, p, string(out))
	}
}

func encode(t *testing.T, obj any) []byte {
	t.Helper()
	data, err := liqo.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t testing.TB, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t testing.TB, p, data string) {
	t.Helper()
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, string(old)+data)
}
