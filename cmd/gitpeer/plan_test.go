package main

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// snapshot is what a read-only command must leave as it was: the remote's
// refs and each cluster's state dir (pins, tokens, kubeconfigs, checkout).
func snapshot(t *testing.T, root, remote string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(git(t, remote, "show-ref"))
	err := filepath.WalkDir(filepath.Join(root, "state"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "\n" + string(data) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPlanShowsTheNextPassAndChangesNothing(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	state := func(id string) string { return filepath.Join(root, "state", id) }
	plan := func(args ...string) (int, string, string) {
		t.Helper()
		before := snapshot(t, root, remote)
		code, out, stderr := gitpeer(t, append([]string{"plan"}, args...)...)
		if after := snapshot(t, root, remote); after != before {
			t.Fatalf("plan %v changed the remote or a state dir", args)
		}
		return code, out, stderr
	}
	reconcile := func(id string) {
		t.Helper()
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", state(id)); code != 0 {
			t.Fatalf("reconcile %s: %s", id, stderr)
		}
	}

	// beta's first pass: a nonce for alpha, beta's own tree re-signed.
	code, out, stderr := plan("--cluster", "beta", remote, "--state-dir", state("beta"))
	if code != 1 {
		t.Fatalf("plan of beta's first pass: exit %d, want 1\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"commit message:\n    beta: send nonce to alpha\n\n    Gitpeer-Cluster: beta\n    Gitpeer-Step: send nonce to alpha\n\ndiff --git ",
		"\n    Gitpeer-Cluster: beta\n",
		"\ndiff --git a/clusters/alpha/inbox/beta/nonce.yaml b/clusters/alpha/inbox/beta/nonce.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/clusters/alpha/inbox/beta/nonce.yaml\n@@ -0,0 +1,",
		"\n+kind: Secret\n",
		"\ndiff --git a/clusters/alpha/inbox/beta/manifest.yaml b/clusters/alpha/inbox/beta/manifest.yaml\nnew file mode 100644\n",
		"\n--- a/clusters/beta/manifest.yaml\n+++ b/clusters/beta/manifest.yaml\n",
		"\n-sequence: ", "\n+sequence: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	// The same through --repo, as reconcile takes it.
	if code, out2, _ := plan("--cluster", "beta", "--repo", remote, "--state-dir", state("beta")); code != 1 || !sameDiff(out, out2) {
		t.Errorf("plan --repo: exit %d\n%s", code, out2)
	}

	reconcile("beta")
	if code, out, stderr := plan("--cluster", "beta", "file://"+remote, "--state-dir", state("beta")); code != 0 || out != "beta: up to date\n" {
		t.Fatalf("plan after the pass: exit %d %q %s", code, out, stderr)
	}
	git(t, work, "pull", "-q", "--ff-only")
	code, out, _ = plan("--cluster", "alpha", work, "--state-dir", state("alpha"))
	if code != 1 || !strings.Contains(out, "    alpha: send tenant to beta") || !strings.Contains(out, "+++ b/clusters/beta/inbox/alpha/tenant.yaml") {
		t.Fatalf("plan of alpha on a checkout: exit %d\n%s", code, out)
	}

	// beta would issue alpha's Identity: with a placeholder certificate.
	reconcile("alpha")
	code, out, _ = plan("--cluster", "beta", remote, "--state-dir", state("beta"))
	if code != 1 || !strings.Contains(out, "    beta: issue identity to alpha") || !strings.Contains(out, "note: 1 certificate(s) above are placeholders from a throwaway CA") {
		t.Fatalf("plan of the Identity: exit %d\n%s", code, out)
	}

	// A spec edit committed in the checkout, not pushed: plan shows what
	// it would do (plan reads the committed tree, as the pass does).
	git(t, work, "pull", "-q", "--ff-only")
	write(t, filepath.Join(work, "peering.cue"), `clusters: [{id: "alpha"}, {id: "beta"}]`+"\n")
	git(t, work, "commit", "-qam", "drop the peering")
	if code, out, _ := plan("--cluster", "beta", work, "--state-dir", state("beta")); code != 1 || !strings.Contains(out, "deleted file mode 100644\n--- a/clusters/alpha/inbox/beta/nonce.yaml\n+++ /dev/null\n") {
		t.Fatalf("plan of an unpushed revocation: exit %d\n%s", code, out)
	}

	// A key staged by rotate-key: plan shows the pass that announces it,
	// as reconcile's pass would write it, and switches nothing.
	if code, _, stderr := gitpeer(t, "rotate-key", "--cluster", "beta", "--state-dir", state("beta")); code != 0 {
		t.Fatalf("rotate-key: %s", stderr)
	}
	code, out, _ = plan("--cluster", "beta", remote, "--state-dir", state("beta"))
	if code != 1 || !strings.Contains(out, "Gitpeer-Step: update the keys Flux verifies beta's commits with\n") ||
		!strings.Contains(out, "+++ b/clusters/beta/flux/secret-gitpeer-signing.yaml") || !strings.Contains(out, "beta-next.sshpub") {
		t.Fatalf("plan with a staged key: exit %d\n%s", code, out)
	}
	// The key promoted (a reconciler killed before its push): plan shows
	// the switch the next pass publishes, read with the key it replaced.
	fb, err := file.Open(state("beta"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fb.PromoteNextKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = plan("--cluster", "beta", remote, "--state-dir", state("beta"))
	if code != 1 || !strings.Contains(out, "Gitpeer-Step: publish the rolled-over cluster key\n") || !strings.Contains(out, "+++ b/clusters/beta/cluster.yaml") {
		t.Fatalf("plan with a promoted key: exit %d\n%s%s", code, out, stderr)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"without --cluster", []string{remote, "--state-dir", state("beta")}, "--cluster is required"},
		{"another cluster's state dir", []string{"--cluster", "alpha", remote, "--state-dir", state("beta")}, `--cluster is "alpha" but state dir`},
		{"DIR and --repo", []string{"--cluster", "beta", work, "--repo", remote, "--state-dir", state("beta")}, "not both"},
		{"an unknown flag", []string{"--cluster", "beta", "--nope"}, "unknown flag: --nope"},
		{"two repos", []string{"--cluster", "beta", work, remote, "--state-dir", state("beta")}, "accepts at most 1 arg(s)"},
		{"an invalid spec", []string{"--cluster", "beta", filepath.Join(root, "bad"), "--state-dir", state("beta")}, "problems found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(t, filepath.Join(root, "bad", "peering.cue"), "clusters: [{id: \"Beta\"}]\n")
			code, stdout, stderr := plan(tc.args...)
			if code != 2 || !strings.Contains(stdout+stderr, tc.want) && !(tc.want == "problems found" && strings.Contains(stdout, "clusters[0].id")) {
				t.Fatalf("exit %d, want 2; output:\n%s%s\nwant %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// sameDiff compares two plans but for what differs between passes run at
// different instants (signatures over the time, nonces are derived).
func sameDiff(a, b string) bool {
	// The same commit message and the same files changed: the content
	// itself carries the pass's clock (nonce epochs, sequences, transition
	// times), which moves when the two plans straddle a second.
	keep := func(s string) string {
		var out []string
		inMessage := true
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "diff --git ") {
				inMessage = false
				out = append(out, l)
			} else if inMessage {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	return keep(a) == keep(b)
}

// signingBackend fails the test if the pass asks it to sign.
type signingBackend struct {
	backend.Backend
	t *testing.T
}

func (b signingBackend) SignCSR(context.Context, []byte, time.Duration) ([]byte, error) {
	b.t.Error("plan asked the cluster's backend to sign (with --backend kubernetes: a CertificateSigningRequest approved in the cluster)")
	return nil, errors.New("no")
}

func TestPlanSignsNothingWithTheClustersCA(t *testing.T) {
	root, _, _ := peeringRepo(t, spec)
	b, err := file.Open(filepath.Join(root, "state", "beta"))
	if err != nil {
		t.Fatal(err)
	}
	pb := newPlanBackend(signingBackend{Backend: b, t: t})
	wrapped := backend.Backend(pb)
	// It reads the tokens as the pass does, and writes, stages and
	// removes nothing.
	ctx := context.Background()
	if err := b.SetToken(ctx, "alpha", []byte("t0ken")); err != nil {
		t.Fatal(err)
	}
	if tok, err := wrapped.Token(ctx, "alpha"); err != nil || string(tok) != "t0ken" {
		t.Errorf("the wrapper reads token %q, %v; want the file backend's", tok, err)
	}
	if err := wrapped.SetToken(ctx, "alpha", []byte("other")); err == nil {
		t.Error("the wrapper stored a token")
	}
	if _, err := wrapped.StageKey(ctx, ""); err == nil {
		t.Error("the wrapper staged a key")
	}
	if err := wrapped.RemoveKubeconfig(ctx, "alpha"); err == nil {
		t.Error("the wrapper removed a kubeconfig")
	}
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := handshake.ControlPlaneCSR(key, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := wrapped.SignCSR(context.Background(), csr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(key.Public())
	if err := handshake.VerifyClientCertificate(cert, b.CABundle(), pub, "alpha", handshake.ControlPlaneOrganization, time.Now()); err == nil {
		t.Error("the placeholder certificate verifies with beta's CA")
	}
	if pb.placeholders() != 1 {
		t.Errorf("%d placeholders counted, want 1", pb.placeholders())
	}
}
