//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/testgit"
)

const (
	// fluxInterval is the reconcilers' --interval and the GitRepositories'
	// spec.interval in this test (1m in manifests/flux and manifests/deploy).
	fluxInterval = "2s"
	// fluxTimeout bounds each wait for Flux and the reconcilers to reach a
	// state; every wait polls the state itself.
	fluxTimeout = 3 * time.Minute
	// fluxDrainPeriod is beta's provider.drainPeriod once the peering is
	// removed: many polls of the GitRepository, so Flux applies the drained
	// Tenant before beta withdraws it, yet well within fluxTimeout.
	fluxDrainPeriod = "30s"
	fluxManager     = "kustomize-controller"
	plantedName     = "gitpeer-e2e-planted"
)

// TestFluxAppliesOnlyWhatEachReconcilerSigned runs real Flux (issue 10):
// source-controller and kustomize-controller for each cluster, with the
// objects of manifests/flux built from an overlay as docs/gitops.md shows:
// a GitRepository that reads the peering repo over HTTPS with a read-only
// token (the Secret keys of --git-credentials, ca.crt for the host's private
// CA), tracks gitpeer/applied/<id> and verifies the tip against <id>'s
// commit-signing key alone, and a Kustomization on ./clusters/<id>. Both
// reconcilers run as daemons (kubernetes backend, short --interval); nothing
// but Flux applies the trees. Then a commit somebody else pushes, to main or
// straight to the applied branch, is never applied; and a peering removed
// from the spec is drained, then pruned.
func TestFluxAppliesOnlyWhatEachReconcilerSigned(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	ft := findFluxTools(t)
	alpha, beta := s.clusters[consumerID], s.clusters[providerID]
	order := []*cluster{alpha, beta}
	root := filepath.Join(s.tmp, "flux-e2e")
	owner := t // the processes live as long as the test, not the step that starts them

	// Earlier tests peered these clusters and pruned the tenant namespaces:
	// wait until the namespace controller has finished, so that what this
	// test sees is what Flux applies.
	for _, o := range []struct {
		c  *cluster
		ns string
	}{{beta, providerTenantNS}, {alpha, consumerTenantNS}} {
		if err := eventually(ctx, time.Minute, 250*time.Millisecond, func() error {
			out, err := s.kube(ctx, o.c, nil, "get", "namespace", o.ns, "--ignore-not-found", "-o", "name")
			if err == nil && strings.TrimSpace(out) != "" {
				err = fmt.Errorf("namespace %s still on %s", o.ns, o.c.id)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	// The Git host: HTTPS with a private CA. The reconcilers, the admins and
	// the attacker push with a read-write token; Flux reads with a token that
	// may not push.
	const (
		rwToken = "flux-e2e-rw-token"
		roToken = "flux-e2e-read-only-token"
	)
	gitRoot := filepath.Join(root, "git")
	if err := os.MkdirAll(gitRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.Bare(t, filepath.Join(gitRoot, "peering.git"))
	testgit.Bare(t, filepath.Join(gitRoot, "liqo.git"))
	host := testgit.StartHTTPS(t, gitRoot, testgit.HTTPAuth{Token: rwToken, ReadOnlyToken: roToken})
	repoURL := host.URL("peering.git")
	caFile := filepath.Join(root, "git-ca.crt")
	if err := os.WriteFile(caFile, host.CACert, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSL_CAINFO", caFile)
	header := "http.extraHeader=Authorization: Bearer " + rwToken
	clone := func(t *testing.T, url, dir string) {
		t.Helper()
		if _, err := s.git(ctx, "", "-c", header, "clone", "--quiet", url, dir); err != nil {
			t.Fatal(err)
		}
		k, v, _ := strings.Cut(header, "=")
		if _, err := s.git(ctx, dir, "config", k, v); err != nil {
			t.Fatal(err)
		}
	}
	remoteHead := func(ref string) string {
		out, err := s.git(ctx, "", "-c", header, "ls-remote", repoURL, "refs/heads/"+ref)
		if err != nil {
			return ""
		}
		sha, _, _ := strings.Cut(strings.TrimSpace(out), "\t")
		return sha
	}

	if !check(t, "source-controller and kustomize-controller run for each cluster", func(t *testing.T) {
		for _, c := range order {
			startFlux(ctx, t, owner, ft, c, filepath.Join(root, c.id))
		}
	}) {
		return
	}

	work := filepath.Join(root, "work")
	if !check(t, "gitpeer init publishes both clusters and the spec is pushed over HTTPS", func(t *testing.T) {
		clone(t, repoURL, work)
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(peeringSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			if _, err := s.gitpeerCmd(ctx, "init", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig,
				"--cluster", c.id, "--api-server", c.apiServer, "--repo", work); err != nil {
				t.Fatal(err)
			}
		}
		commitAndPush(ctx, t, work, "Peer alpha (consumer) with beta (provider), applied by Flux")
	}) {
		return
	}

	// Liqo's CRDs, from a repo of their own, as the Kustomization liqo-crds
	// that gitpeer's Kustomization depends on (docs/gitops.md).
	if !check(t, "Kustomization liqo-crds installs Liqo's CRDs from Git and is Ready", func(t *testing.T) {
		liqoWork := filepath.Join(root, "liqo-work")
		clone(t, host.URL("liqo.git"), liqoWork)
		out, err := s.run(ctx, s.root, nil, "go", "mod", "download", "-json", liqoModule)
		if err != nil {
			t.Fatal(err)
		}
		var mod struct{ Dir string }
		if err := json.Unmarshal([]byte(out), &mod); err != nil {
			t.Fatal(err)
		}
		crds, err := filepath.Glob(filepath.Join(mod.Dir, filepath.FromSlash(liqoCRDs), "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no Liqo CRDs in %s (%v)", mod.Dir, err)
		}
		files := map[string][]byte{}
		var names []string
		for _, f := range crds {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(f)] = data
			names = append(names, filepath.Base(f))
		}
		files["kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " +
			strings.Join(names, "\n  - ") + "\n")
		testgit.WriteFiles(t, filepath.Join(liqoWork, "infrastructure", "liqo"), files)
		commitAndPush(ctx, t, liqoWork, "Liqo's CRDs")
		for _, c := range order {
			createGitSecret(ctx, t, c, roToken, host.CACert)
			if _, err := s.kube(ctx, c, []byte(liqoCRDsObjects(host.URL("liqo.git"), gitSecretName(c.id))),
				"apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
				t.Fatal(err)
			}
		}
		waitReady(ctx, t, order, "kustomization", func(*cluster) string { return "liqo-crds" })
	}) {
		return
	}

	if !check(t, "manifests/flux builds with an overlay of docs/gitops.md per cluster, and both API servers accept it", func(t *testing.T) {
		signers, err := s.gitpeerCmd(ctx, "allowed-signers", work)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			overlay := filepath.Join(root, c.id, "overlay")
			writeFluxOverlay(t, overlay, c.id, repoURL, signingKey(t, signers, c.id))
			build, err := s.kube(ctx, c, nil, "kustomize", overlay)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.kube(ctx, c, []byte(build), "apply", "--server-side", "--field-manager", fieldManager,
				"--validate=strict", "-f", "-"); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"mode: HEAD", "branch: gitpeer/applied/" + c.id, "path: ./clusters/" + c.id, c.id + ".sshpub: "} {
				if !strings.Contains(build, want) {
					t.Errorf("the build of %s's overlay has no %q", c.id, want)
				}
			}
		}
	}) {
		return
	}

	daemons := map[string]*proc{}
	startDaemon := func(t *testing.T, c *cluster) {
		t.Helper()
		creds := filepath.Join(root, c.id, "git-credentials")
		testgit.WriteFiles(t, creds, map[string][]byte{"bearerToken": []byte(rwToken), "ca.crt": host.CACert})
		args := []string{"reconcile", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig, "--cluster", c.id,
			"--repo", repoURL, "--git-credentials", creds, "--checkout", filepath.Join(root, c.id, "checkout"),
			"--interval", fluxInterval, "--health-addr", testgit.FreeLoopbackAddr(t), "--log-level", "debug"}
		n := len(daemons)
		p := startProc(t, owner, c.id+"'s reconciler", filepath.Join(root, c.id, fmt.Sprintf("reconciler-%d.log", n)),
			[]string{"HOME=" + filepath.Join(root, c.id)}, s.gitpeer, append(args, s.reconcileFlags...)...)
		daemons[c.id] = p
	}
	for _, c := range order {
		startDaemon(t, c)
	}

	if !check(t, "the handshake completes with Flux applying both sides: Tenant and RBAC on beta, Identity on alpha", func(t *testing.T) {
		objs := []struct {
			c    *cluster
			args []string
		}{
			{beta, []string{"namespace", providerTenantNS}},
			{beta, []string{"tenants.authentication.liqo.io", consumerID, "-n", providerTenantNS}},
			{beta, []string{"rolebinding", roleBinding, "-n", providerTenantNS}},
			{beta, []string{"clusterrolebinding", clusterRoleBinding}},
			{alpha, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
		}
		err := eventually(ctx, fluxTimeout, 500*time.Millisecond, func() error {
			for _, p := range daemons {
				if !p.running() {
					return fmt.Errorf("%s exited: %v", p.name, p.err)
				}
			}
			for _, o := range objs {
				m, err := managers(ctx, o.c, o.args...)
				if err != nil {
					return fmt.Errorf("on %s: %w", o.c.id, err)
				}
				if !slices.Contains(m, fluxManager) {
					return fmt.Errorf("%v on %s: managed by %v, not by Flux's %s", o.args, o.c.id, m, fluxManager)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("applied by Flux on both sides %.1fs after the test started", time.Since(start).Seconds())
		for _, c := range order {
			rev := fluxField(ctx, c, "gitrepository", "gitpeer-"+c.id, "{.status.artifact.revision}")
			if !strings.HasPrefix(rev, "gitpeer/applied/"+c.id+"@sha1:") {
				t.Errorf("%s's GitRepository has revision %q, want one of gitpeer/applied/%s", c.id, rev, c.id)
			}
			if st, reason, msg := condition(ctx, c, "gitrepository", "gitpeer-"+c.id, "SourceVerified"); st != "True" {
				t.Errorf("%s's GitRepository: SourceVerified %s (%s: %s)", c.id, st, reason, msg)
			}
		}
	}) {
		return
	}

	check(t, "alpha's kubeconfig Secret authenticates to beta as user alpha", func(t *testing.T) {
		var out string
		err := eventually(ctx, fluxTimeout, 500*time.Millisecond, func() error {
			var err error
			out, err = s.kube(ctx, alpha, nil, "get", "secret", kubeconfigSecret, "-n", consumerTenantNS, "-o", "jsonpath={.data.kubeconfig}")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		data, err := base64.StdEncoding.DecodeString(out)
		if err != nil || len(data) == 0 {
			t.Fatalf("key kubeconfig: empty or not base64 (%v)", err)
		}
		path := filepath.Join(root, "alpha-to-beta.kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		who, err := s.kubeAs(ctx, path, nil, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil {
			t.Fatal(err)
		}
		if who != consumerID {
			t.Errorf("beta sees user %q, want %q", who, consumerID)
		}
	})

	// The attacker holds a write credential to the repo (any cluster's
	// deploy key, a human's token) but not beta's cluster key.
	attacker := filepath.Join(root, "attacker")
	clone(t, repoURL, attacker)
	planted := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  planted: \"true\"\n", plantedName)
	plant := func(t *testing.T) {
		t.Helper()
		dir := filepath.Join(attacker, "clusters", providerID)
		if err := os.WriteFile(filepath.Join(dir, "planted.yaml"), []byte(planted), 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		kust := strings.Replace(string(k), "resources:\n", "resources:\n  - planted.yaml\n", 1)
		if kust == string(k) {
			t.Fatalf("clusters/%s/kustomization.yaml has no resources list:\n%s", providerID, k)
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.git(ctx, attacker, "add", "--all"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.git(ctx, attacker, "commit", "--quiet", "-m", "Add a ConfigMap to beta"); err != nil {
			t.Fatal(err)
		}
	}
	notPlanted := func() error {
		if ok, err := exists(ctx, beta, "configmap", plantedName, "-n", "default"); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("FLUX APPLIED the planted ConfigMap default/%s on beta", plantedName)
		}
		return nil
	}

	check(t, "an unsigned commit to clusters/beta/ on main is never applied by beta's Flux", func(t *testing.T) {
		if _, err := s.git(ctx, attacker, "pull", "--quiet", "--ff-only"); err != nil {
			t.Fatal(err)
		}
		plant(t)
		if _, err := s.git(ctx, attacker, "push", "--quiet", "origin", "HEAD:main"); err != nil {
			t.Fatal(err)
		}
		evil, _ := s.git(ctx, attacker, "rev-parse", "HEAD")
		evil = strings.TrimSpace(evil)
		// Until beta's applied branch holds a commit on top of the
		// attacker's, and Flux has applied it, the ConfigMap never appears.
		err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := notPlanted(); err != nil {
				return err
			}
			head := remoteHead("gitpeer/applied/" + providerID)
			if _, err := s.git(ctx, attacker, "fetch", "--quiet", "origin"); err != nil {
				return err
			}
			if _, err := s.git(ctx, attacker, "merge-base", "--is-ancestor", evil, head); err != nil {
				return fmt.Errorf("gitpeer/applied/beta at %s: not yet after the attacker's %s", head, evil)
			}
			if rev := fluxField(ctx, beta, "kustomization", "gitpeer-beta", "{.status.lastAppliedRevision}"); !strings.HasSuffix(rev, head) {
				return fmt.Errorf("beta's Flux applied %s, not yet %s", rev, head)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}
	})

	check(t, "an unsigned commit pushed to gitpeer/applied/beta fails verification, is not applied, and beta's reconciler reseals", func(t *testing.T) {
		// beta's reconciler stops, so that the forged head stays long
		// enough for Flux to see it.
		daemons[providerID].stop()
		good := remoteHead("gitpeer/applied/" + providerID)
		if _, err := s.git(ctx, attacker, "fetch", "--quiet", "origin"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.git(ctx, attacker, "checkout", "--quiet", "-B", "forged", good); err != nil {
			t.Fatal(err)
		}
		plant(t)
		forged, _ := s.git(ctx, attacker, "rev-parse", "HEAD")
		forged = strings.TrimSpace(forged)
		if _, err := s.git(ctx, attacker, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/gitpeer/applied/"+providerID); err != nil {
			t.Fatal(err)
		}
		if err := requestReconcile(ctx, beta, "gitrepository", "gitpeer-beta"); err != nil {
			t.Fatal(err)
		}
		var msg string
		err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := notPlanted(); err != nil {
				return err
			}
			var st, reason string
			st, reason, msg = condition(ctx, beta, "gitrepository", "gitpeer-beta", "SourceVerified")
			if st != "False" || reason != "InvalidCommitSignature" || !strings.Contains(msg, forged) {
				return fmt.Errorf("SourceVerified %s (%s): %s", st, reason, msg)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("beta's GitRepository: SourceVerified False: %s", msg)
		if rev := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.status.artifact.revision}"); !strings.HasSuffix(rev, good) {
			t.Errorf("artifact revision %s, want the last signed one %s", rev, good)
		}
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}

		startDaemon(t, beta)
		err = eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := notPlanted(); err != nil {
				return err
			}
			head := remoteHead("gitpeer/applied/" + providerID)
			if head == forged {
				return fmt.Errorf("gitpeer/applied/beta still at the forged %s", forged)
			}
			if st, _, msg := condition(ctx, beta, "gitrepository", "gitpeer-beta", "SourceVerified"); st != "True" {
				return fmt.Errorf("SourceVerified %s: %s", st, msg)
			}
			if rev := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.status.artifact.revision}"); !strings.HasSuffix(rev, head) {
				return fmt.Errorf("artifact %s, applied branch %s", rev, head)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("removing the peering from the spec drains, then Flux prunes", func(t *testing.T) {
		tenant := []string{"tenants.authentication.liqo.io", consumerID, "-n", providerTenantNS}
		rbac := [][]string{{"rolebinding", roleBinding, "-n", providerTenantNS}, {"clusterrolebinding", clusterRoleBinding}}
		// beta's daemon keeps running at --interval 2s: its drain period
		// (fluxDrainPeriod), not the test, keeps the drained Tenant in the
		// repo long enough for Flux to apply it before pruning it.
		check(t, "the spec without the peering is pushed", func(t *testing.T) {
			if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
				t.Fatal(err)
			}
			spec := strings.Replace(noPeeringSpec, `drainPeriod: "0s"`, `drainPeriod: "`+fluxDrainPeriod+`"`, 1)
			if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			commitAndPush(ctx, t, work, "Unpeer alpha from beta")
		})
		check(t, "Flux applies beta's drained Tenant and prunes its RBAC, the Tenant stays", func(t *testing.T) {
			err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
				cond, err := s.kube(ctx, beta, nil, append([]string{"get", "-o", "jsonpath={.spec.tenantCondition}"}, tenant...)...)
				if err != nil {
					return err
				}
				if cond != "Drained" {
					return fmt.Errorf("Tenant alpha on beta: tenantCondition %q", cond)
				}
				for _, r := range rbac {
					if ok, err := exists(ctx, beta, r...); err != nil || ok {
						return fmt.Errorf("%v still on beta (%v)", r, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		check(t, "after the drain period Flux prunes the Tenant on beta and the Identity on alpha", func(t *testing.T) {
			err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
				for _, o := range []struct {
					c    *cluster
					args []string
				}{
					{beta, tenant},
					{beta, []string{"namespace", providerTenantNS}},
					{alpha, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
				} {
					if ok, err := exists(ctx, o.c, o.args...); err != nil || ok {
						return fmt.Errorf("%v still on %s (%v)", o.args, o.c.id, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	})

	check(t, "the planted ConfigMap never appeared on beta", func(t *testing.T) {
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("flux test: %.1fs", time.Since(start).Seconds())
}

// gitSecretName is the Secret GIT_SECRET of the overlay.
func gitSecretName(id string) string { return "gitpeer-" + id + "-auth" }

// createGitSecret creates the Secret Flux reads the repos with: the keys of
// --git-credentials for HTTPS (bearerToken, ca.crt).
func createGitSecret(ctx context.Context, t *testing.T, c *cluster, token string, ca []byte) {
	t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"namespace":%q},"data":{"bearerToken":%q,"ca.crt":%q}}`,
		gitSecretName(c.id), fluxNamespace, base64.StdEncoding.EncodeToString([]byte(token)), base64.StdEncoding.EncodeToString(ca))
	if _, err := s.kube(ctx, c, []byte(doc), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// liqoCRDsObjects is the source and the Kustomization liqo-crds of
// docs/gitops.md, for a repo holding Liqo's CRDs in infrastructure/liqo.
func liqoCRDsObjects(url, secret string) string {
	return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: liqo
  namespace: flux-system
spec:
  interval: 10m
  url: %s
  ref:
    branch: main
  secretRef:
    name: %s
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: liqo-crds
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: liqo
  path: ./infrastructure/liqo
  prune: false
  healthChecks:
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: tenants.authentication.liqo.io
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: identities.authentication.liqo.io
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: resourceslices.authentication.liqo.io
`, url, secret)
}

// signingKey is cluster id's key from `gitpeer allowed-signers` output, as
// docs/gitops.md's awk line extracts it: one authorized_keys line.
func signingKey(t *testing.T, allowedSigners, id string) string {
	t.Helper()
	for _, line := range strings.Split(allowedSigners, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == id {
			return f[2] + " " + f[3] + "\n"
		}
	}
	t.Fatalf("no line for %s in gitpeer allowed-signers:\n%s", id, allowedSigners)
	return ""
}

// writeFluxOverlay writes the overlay of docs/gitops.md for cluster id
// (params.env, <id>.sshpub, the component), plus patches for this test's
// pace: the GitRepository polls every fluxInterval, and a failed apply (a
// namespace still terminating) is retried after as long.
func writeFluxOverlay(t *testing.T, dir, id, repoURL, sshpub string) {
	t.Helper()
	component, err := filepath.Rel(dir, filepath.Join(s.root, "manifests", "flux"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
components:
  - %s
configMapGenerator:
  - name: gitpeer-flux
    namespace: flux-system
    envs: [params.env]
secretGenerator:
  - name: gitpeer-signing
    namespace: flux-system
    files: [%s.sshpub]
patches:
  - target: {group: source.toolkit.fluxcd.io, kind: GitRepository}
    patch: '[{"op": "replace", "path": "/spec/interval", "value": "%s"}]'
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: '[{"op": "replace", "path": "/spec/retryInterval", "value": "%s"}]'
`, filepath.ToSlash(component), id, fluxInterval, fluxInterval)
	params := fmt.Sprintf("CLUSTER_ID=%s\nREPO_URL=%s\nGIT_SECRET=%s\n", id, repoURL, gitSecretName(id))
	testgit.WriteFiles(t, dir, map[string][]byte{
		"kustomization.yaml": []byte(kustomization),
		"params.env":         []byte(params),
		id + ".sshpub":       []byte(sshpub),
	})
}

// waitReady waits until the named Flux object of every cluster is Ready.
func waitReady(ctx context.Context, t *testing.T, cs []*cluster, kind string, name func(*cluster) string) {
	t.Helper()
	for _, c := range cs {
		err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if st, reason, msg := condition(ctx, c, kind, name(c), "Ready"); st != "True" {
				return fmt.Errorf("%s %s on %s: Ready %q (%s: %s)", kind, name(c), c.id, st, reason, msg)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
