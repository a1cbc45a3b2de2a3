//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// rollOverKey rolls c's cluster key over mid-flight, with c's reconciler
// running as a daemon and real Flux applying c's tree (issue 19): after
// gitpeer rotate-key, it watches every half second until the switch is done
// and the peering is back on the new key, and fails if at any point c's
// Flux reports a verification failure or the provider's grant or the
// consumer's Identity is missing. At the end the old key is trusted
// nowhere: not by Flux's verify Secret, not by the published cluster.yaml,
// not by the provider's Tenant.
func rollOverKey(ctx context.Context, t *testing.T, c, provider *cluster, work string) {
	t.Helper()
	authKey := func(field string) []byte {
		out, err := s.kube(ctx, c, nil, "get", "secret", "authentication-keys", "-n", "liqo", "-o", "jsonpath={.data."+field+"}")
		if err != nil {
			t.Fatal(err)
		}
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	oldPriv := authKey("privateKey")
	oldKey, err := handshake.ParsePrivateKey(oldPriv)
	if err != nil {
		t.Fatal(err)
	}
	oldFP, _ := handshake.Fingerprint(oldKey.Public())
	if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := s.runBoth(ctx, "", nil, s.gitpeer, "rotate-key", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig, "--cluster", c.id, "--repo", work)
	if err != nil || !strings.Contains(stderr, "staged key sha256:") {
		t.Fatalf("rotate-key: %v\n%s", err, stderr)
	}
	started := time.Now()
	grant := []struct {
		c    *cluster
		args []string
	}{
		{provider, []string{"tenants.authentication.liqo.io", c.id, "-n", providerTenantNS}},
		{provider, []string{"rolebinding", roleBinding, "-n", providerTenantNS}},
		{provider, []string{"clusterrolebinding", clusterRoleBinding}},
		{c, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
	}
	repo := "gitpeer-" + c.id
	var violations []string
	seen := map[string]bool{}
	violate := func(format string, a ...any) {
		v := fmt.Sprintf(format, a...)
		if !seen[v] {
			seen[v] = true
			violations = append(violations, fmt.Sprintf("%.1fs: %s", time.Since(started).Seconds(), v))
		}
	}
	var newFP string
	err = eventually(ctx, 2*fluxTimeout, 500*time.Millisecond, func() error {
		if st, reason, msg := condition(ctx, c, "gitrepository", repo, "SourceVerified"); st == "False" {
			violate("GitRepository %s: SourceVerified False (%s: %s)", repo, reason, msg)
		}
		if st, reason, msg := condition(ctx, c, "gitrepository", repo, "Ready"); st == "False" && strings.Contains(reason+msg, "erif") {
			violate("GitRepository %s: Ready False (%s: %s)", repo, reason, msg)
		}
		for _, o := range grant {
			if ok, err := exists(ctx, o.c, o.args...); err == nil && !ok {
				violate("%v gone from %s", o.args, o.c.id)
			}
		}
		if priv := authKey("privateKey"); string(priv) == string(oldPriv) {
			return fmt.Errorf("authentication-keys still holds the old key")
		}
		key, err := handshake.ParsePrivateKey(authKey("privateKey"))
		if err != nil {
			return err
		}
		newFP, _ = handshake.Fingerprint(key.Public())
		// Flux trusts the new key alone.
		line, err := fluxtrust.SSHKey(c.id, key.Public(), false)
		if err != nil {
			return err
		}
		data, err := s.kube(ctx, c, nil, "-n", fluxNamespace, "get", "secret", fluxtrust.SecretName, "-o", "jsonpath={.data}")
		if err != nil {
			return err
		}
		if strings.Contains(data, "-next.sshpub") || !strings.Contains(data, base64.StdEncoding.EncodeToString(line)) {
			return fmt.Errorf("Secret %s/%s holds %s", fluxNamespace, fluxtrust.SecretName, data)
		}
		// Flux applies a head the new key signed.
		rev := fluxField(ctx, c, "gitrepository", repo, "{.status.artifact.revision}")
		head, ok := strings.CutPrefix(rev, layout.AppliedBranch(c.id)+"@sha1:")
		if !ok {
			return fmt.Errorf("GitRepository %s at %q", repo, rev)
		}
		if _, err := s.git(ctx, work, "fetch", "--quiet", "origin", layout.AppliedBranch(c.id), "main"); err != nil {
			return err
		}
		if err := signedBy(work, head, key.Public()); err != nil {
			return fmt.Errorf("the applied head Flux verified, %s: %w", head, err)
		}
		if _, err := s.git(ctx, work, "merge", "--quiet", "--ff-only", "origin/main"); err != nil {
			return err
		}
		published, err := layout.ReadClusterInfo(layout.NewTree(work), c.id)
		if err != nil {
			return err
		}
		if published.Fingerprint != newFP || published.VerifyRotation(oldFP) != nil {
			return fmt.Errorf("cluster.yaml publishes %s", published.Fingerprint)
		}
		// The provider answered the new key's Tenant.
		tenantKey, err := s.kube(ctx, provider, nil, "get", "tenants.authentication.liqo.io", c.id, "-n", providerTenantNS, "-o", "jsonpath={.spec.publicKey}")
		if err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tenantKey))
		if err != nil {
			return err
		}
		pub, _, err := handshake.ParsePublicKey(raw)
		if err != nil {
			return fmt.Errorf("the provider's Tenant: publicKey: %w", err)
		}
		if fp, _ := handshake.Fingerprint(pub); fp != newFP {
			return fmt.Errorf("the provider's Tenant carries %s", fp)
		}
		// And the consumer took the provider's answers for the new key:
		// its slices are granted again, the peering Ready.
		return s.oneReady(ctx, work)
	})
	if err != nil {
		t.Fatalf("the rollover did not complete: %v\nviolations so far: %v", err, violations)
	}
	t.Logf("key rollover %s -> %s done %.1fs after rotate-key", oldFP, newFP, time.Since(started).Seconds())
	if len(violations) > 0 {
		t.Errorf("during the rollover:\n%s", strings.Join(violations, "\n"))
	}
	s.wantOneReady(ctx, t, work)
	// The old key's statement is what the peers followed: the allowed
	// signers of the repo name the new key for c.
	signers, err := s.gitpeerCmd(ctx, "allowed-signers", work)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := commitsig.AuthorizedKey(oldKey.Public(), "")
	if strings.Contains(signers, strings.Fields(line)[1]) {
		t.Errorf("allowed-signers still trusts %s's old key:\n%s", c.id, signers)
	}
}

// signedBy checks that commit rev of the repository at dir carries a
// signature by key.
func signedBy(dir, rev string, key crypto.PublicKey) error {
	repo, err := gitobj.Open(dir)
	if err != nil {
		return err
	}
	c, err := repo.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return err
	}
	_, err = commitsig.Verify(c, map[string]crypto.PublicKey{"new": key})
	return err
}
