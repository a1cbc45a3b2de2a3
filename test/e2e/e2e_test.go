//go:build e2e

// Package e2e peers two real Kubernetes control planes through a peering repo
// served over Git's smart HTTP protocol, with gitpeer's kubernetes backend on
// both sides, and checks what the handshake grants on the real API servers.
//
// TestMain starts two clusters (etcd, kube-apiserver with RBAC and
// client-certificate authentication, kube-controller-manager signing CSRs)
// with hack/start-cluster.sh on loopback, installs Liqo's CRDs from the Liqo
// module go.mod requires, and serves a bare repo with hack/gitserve. It stops
// every process it started, by PID, whatever happens, and removes its temp
// dir. The tests then play both cluster admins and the GitOps tool:
//
//   - `gitpeer init` publishes each cluster; the spec and both trees are
//     pushed with the git CLI;
//   - the reconcilers run passes beta, alpha, beta, alpha; after each pass,
//     each cluster's clusters/<id>/ is applied as Flux would: server-side apply
//     of its kustomize build, strict schema validation, pruning of what left
//     the build;
//   - the consumer's kubeconfig is exercised against the provider;
//   - the peering is removed from the spec and access must go with it.
//
// Run with `make e2e` (it builds the Kubernetes binaries once into a cache
// and bin/gitpeer), or `go test -tags e2e -count=1 -v ./e2e/` with KUBE_BIN
// and optionally GITPEER_E2E_BIN set. GITPEER_E2E_KEEP=1 keeps the temp dir
// (logs, repo, PKI) for debugging.
package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

var s = &suite{}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	start := time.Now()
	var timeout time.Duration
	if f := flag.Lookup("test.timeout"); f != nil {
		timeout, _ = f.Value.(flag.Getter).Get().(time.Duration)
	}
	s.stopOnSignal(timeout)
	defer s.stop()
	if err := s.setUp(context.Background()); err != nil {
		s.failed.Store(true)
		fmt.Fprintf(os.Stderr, "e2e: set-up failed: %v\n", err)
		fmt.Println("e2e: 0 passed, 1 failed (set-up)")
		return 1
	}
	fmt.Printf("e2e: clusters, Liqo CRDs and git server up in %.1fs\n", time.Since(start).Seconds())
	code := m.Run()
	results.Lock()
	defer results.Unlock()
	for _, f := range results.failures {
		fmt.Printf("e2e: FAILED %s\n", f)
	}
	fmt.Printf("e2e: %d passed, %d failed (%.0fs)\n", results.passed, results.failed, time.Since(start).Seconds())
	if code == 0 && results.failed > 0 {
		code = 1
	}
	s.failed.Store(code != 0)
	return code
}

const (
	consumerID = "alpha"
	providerID = "beta"
)

// Names Liqo v1.2 gives the objects of a ControlPlane peering.
var (
	providerTenantNS   = "liqo-tenant-" + consumerID // on the provider
	consumerTenantNS   = "liqo-tenant-" + providerID // on the consumer
	kubeconfigSecret   = "kubeconfig-controlplane-" + providerID
	identityName       = "controlplane-" + providerID
	roleBinding        = "liqo-binding-liqo-remote-controlplane"
	clusterRoleBinding = "liqo-binding-liqo-virtual-kubelet-remote-clusterwide-" + consumerID
)

const peeringSpec = `// The e2e suite's spec: alpha consumes what beta provides.
clusters: [
	{id: "alpha"},
	{id: "beta"},
]

peerings: [
	{consumer: "alpha", provider: "beta", slices: [
		{name: "e2e-probe", resources: {cpu: "1", memory: "1Gi"}},
	]},
]
`

const noPeeringSpec = `// The e2e suite's spec after revocation: both clusters, no peering.
// The test applies each pass itself, so nothing races beta's withdrawal:
// no drain period.
clusters: [
	{id: "alpha"},
	{id: "beta", provider: {drainPeriod: "0s"}},
]

peerings: []
`

func TestTwoRealClustersPeerThroughAGitRepoOverHTTP(t *testing.T) {
	ctx := t.Context()
	alpha, beta := s.clusters[consumerID], s.clusters[providerID]
	work := filepath.Join(s.tmp, "work")

	check(t, "gitpeer init publishes both clusters and the spec is pushed over smart HTTP", func(t *testing.T) {
		if _, err := s.git(ctx, "", "clone", "--quiet", s.gitURL, work); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(peeringSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*cluster{alpha, beta} {
			_, report, err := s.runBoth(ctx, "", nil, s.gitpeer, "init", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig,
				"--cluster", c.id, "--api-server", c.apiServer, "--repo", work)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(strings.TrimSpace(report))
			for _, f := range []string{"cluster.yaml", "kustomization.yaml"} {
				if _, err := os.Stat(filepath.Join(work, "clusters", c.id, f)); err != nil {
					t.Fatalf("gitpeer init for %s: %v", c.id, err)
				}
			}
		}
		commitValidateAndPush(ctx, t, work, "Peer alpha (consumer) with beta (provider)")
	})

	handshake := []*cluster{beta, alpha, beta, alpha}
	runPasses(ctx, t, handshake)

	check(t, "the peering is Ready on both sides and gitpeer verify accepts the repo", func(t *testing.T) {
		if err := s.pull(ctx); err != nil {
			t.Fatal(err)
		}
		s.wantOneReady(ctx, t, s.flux)
		if out, err := s.gitpeerCmd(ctx, "verify", s.flux); err != nil {
			t.Errorf("gitpeer verify: %v\n%s", err, out)
		}
	})

	check(t, "beta holds alpha's Tenant and RBAC, and alpha holds beta's Identity", func(t *testing.T) {
		for _, o := range []struct {
			c    *cluster
			args []string
		}{
			{beta, []string{"tenants.authentication.liqo.io", consumerID, "-n", providerTenantNS}},
			{beta, []string{"rolebinding", roleBinding, "-n", providerTenantNS}},
			{beta, []string{"clusterrolebinding", clusterRoleBinding}},
			{beta, []string{"clusterrole", "liqo-remote-controlplane"}},
			{alpha, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
			{alpha, []string{"secret", kubeconfigSecret, "-n", consumerTenantNS}},
		} {
			if _, err := s.kube(ctx, o.c, nil, append([]string{"get", "-o", "name"}, o.args...)...); err != nil {
				t.Errorf("on %s: %v", o.c.id, err)
			}
		}
	})

	check(t, "alpha's kubeconfig Secret authenticates to beta as user alpha in group liqo.io", func(t *testing.T) {
		kubeconfig := consumerKubeconfig(ctx, t)
		var kc struct {
			Clusters []struct {
				Cluster struct {
					Server string `json:"server"`
				} `json:"cluster"`
			} `json:"clusters"`
		}
		data, _ := os.ReadFile(kubeconfig)
		if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Clusters) != 1 {
			t.Fatalf("kubeconfig in Secret %s/%s: want one cluster (err %v)", consumerTenantNS, kubeconfigSecret, err)
		}
		if got := kc.Clusters[0].Cluster.Server; got != beta.apiServer {
			t.Errorf("kubeconfig server = %s, want beta's %s", got, beta.apiServer)
		}
		out, err := s.kubeAs(ctx, kubeconfig, nil, "auth", "whoami", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var review struct {
			Status struct {
				UserInfo struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &review); err != nil {
			t.Fatalf("SelfSubjectReview: %v\n%s", err, out)
		}
		u := review.Status.UserInfo
		if u.Username != consumerID || !slices.Contains(u.Groups, "liqo.io") {
			t.Errorf("beta sees user %q in groups %v, want %q in liqo.io", u.Username, u.Groups, consumerID)
		}
	})

	check(t, "with it alpha may create the ResourceSlice the spec grants in liqo-tenant-alpha on beta", func(t *testing.T) {
		kubeconfig := consumerKubeconfig(ctx, t)
		// RBAC and admission policy changes reach the API server within
		// ~100ms-1s on an idle machine: poll until they have.
		err := eventually(ctx, readyTimeout, 200*time.Millisecond, func() error {
			_, err := s.kubeAs(ctx, kubeconfig, resourceSlice("e2e-probe", "1"), "create", "-f", "-")
			if err != nil && strings.Contains(err.Error(), "AlreadyExists") {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	// What Liqo's crd-replicator would create for `liqoctl create
	// resourceslice` run on alpha: beta's API server admits none of it.
	check(t, "beta's API server refuses, even to alpha's identity, any ResourceSlice the spec does not grant", func(t *testing.T) {
		kubeconfig := consumerKubeconfig(ctx, t)
		for _, tc := range []struct {
			what string
			obj  []byte
			verb []string
			want string
		}{
			{"a slice the spec does not list", resourceSlice("e2e-ungranted", "1"), []string{"create"},
				"ResourceSlice e2e-ungranted is not granted to alpha by the reviewed peering spec (granted: e2e-probe)"},
			{"the granted slice with more cpu", resourceSlice("e2e-probe", "32"), []string{"apply", "--server-side", "--force-conflicts"},
				"ResourceSlice e2e-probe must request exactly what the reviewed peering spec grants alpha: class default, cpu 1, memory 1Gi"},
		} {
			out, err := s.kubeAs(ctx, kubeconfig, tc.obj, append(tc.verb, "--dry-run=server", "-f", "-")...)
			switch {
			case err == nil:
				t.Errorf("%s: admitted\n%s", tc.what, out)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "gitpeer-resourceslices-alpha"):
				t.Errorf("%s: want the policy's refusal %q, got: %v", tc.what, tc.want, err)
			}
		}
		// The same quantity written another way is the same grant.
		if out, err := s.kubeAs(ctx, kubeconfig, resourceSlice("e2e-probe", "1000m"), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"); err != nil {
			t.Errorf("cpu 1000m for a grant of cpu 1: %v\n%s", err, out)
		}
	})

	check(t, "with it alpha may not read Secrets in kube-system or any other namespace of beta", func(t *testing.T) {
		kubeconfig := consumerKubeconfig(ctx, t)
		for _, ns := range []string{"kube-system", "default", "liqo", providerTenantNS} {
			assertForbidden(ctx, t, kubeconfig, `cannot list resource "secrets"`, "get", "secrets", "-n", ns)
			assertForbidden(ctx, t, kubeconfig, `cannot get resource "secrets"`, "get", "secret", "liqo-probe", "-n", ns)
		}
		assertForbidden(ctx, t, kubeconfig, `cannot list resource "secrets"`, "get", "secrets", "--all-namespaces")
	})

	t.Run("removing the peering from peering.cue revokes alpha's access to beta", func(t *testing.T) {
		check(t, "the spec without the peering is pushed", func(t *testing.T) {
			if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(noPeeringSpec), 0o644); err != nil {
				t.Fatal(err)
			}
			commitValidateAndPush(ctx, t, work, "Unpeer alpha from beta")
		})

		runPasses(ctx, t, handshake)

		check(t, "beta no longer holds alpha's RoleBinding and ClusterRoleBinding", func(t *testing.T) {
			for _, args := range [][]string{
				{"rolebinding", roleBinding, "-n", providerTenantNS},
				{"clusterrolebinding", clusterRoleBinding},
			} {
				out, err := s.kube(ctx, beta, nil, append([]string{"get", "--ignore-not-found", "-o", "name"}, args...)...)
				if err != nil {
					t.Error(err)
				} else if strings.TrimSpace(out) != "" {
					t.Errorf("still on beta: %s", strings.TrimSpace(out))
				}
			}
		})

		check(t, "beta prunes alpha's Tenant and tenant namespace, alpha prunes beta's Identity and tenant namespace", func(t *testing.T) {
			for _, o := range []struct {
				c    *cluster
				args []string
			}{
				{beta, []string{"tenants.authentication.liqo.io", consumerID, "-n", providerTenantNS}},
				{beta, []string{"namespace", providerTenantNS}},
				{alpha, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
				{alpha, []string{"namespace", consumerTenantNS}},
			} {
				// Gone, or being deleted: a namespace's deletion finishes
				// seconds later, in the namespace controller.
				out, err := s.kube(ctx, o.c, nil, append([]string{"get", "--ignore-not-found",
					"-o", "jsonpath={.kind}/{.metadata.name} {.metadata.deletionTimestamp}"}, o.args...)...)
				if err != nil {
					t.Errorf("on %s: %v", o.c.id, err)
				} else if out = strings.TrimSpace(out); out != "" && !strings.Contains(out, " ") {
					t.Errorf("%s still on %s", out, o.c.id)
				}
			}
		})

		check(t, "alpha's kubeconfig may then no longer create ResourceSlices on beta", func(t *testing.T) {
			kubeconfig := consumerKubeconfig(ctx, t)
			err := eventually(ctx, readyTimeout, 200*time.Millisecond, func() error {
				_, err := s.kubeAs(ctx, kubeconfig, resourceSlice("e2e-probe-after-revocation", "1"), "create", "--dry-run=server", "-f", "-")
				if err == nil {
					return fmt.Errorf("creating a ResourceSlice in %s on beta is still allowed", providerTenantNS)
				}
				if !strings.Contains(err.Error(), `cannot create resource "resourceslices"`) {
					return fmt.Errorf("want an RBAC denial, got: %w", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	})

	check(t, "no private key appears in any commit of the peering repo", func(t *testing.T) {
		findings, err := guard.ScanHistory(s.bare)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("private material in Git: %s", f)
		}
		if out, err := s.git(ctx, s.bare, "rev-list", "--count", "main"); err == nil {
			t.Logf("scanned %s commits", strings.TrimSpace(out))
		}
	})
}

// runPasses runs one reconciler pass per cluster in order, and after each
// pass applies both clusters' trees as the GitOps tool would.
func runPasses(ctx context.Context, t *testing.T, order []*cluster) {
	t.Helper()
	for i, c := range order {
		check(t, fmt.Sprintf("pass %d: %s's reconciler runs once with the kubernetes backend", i+1, c.id), func(t *testing.T) {
			out, err := s.reconcile(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(strings.TrimSpace(out))
		})
		check(t, fmt.Sprintf("pass %d: both API servers accept every rendered object against Liqo's CRD schemas", i+1), func(t *testing.T) {
			if err := s.pull(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{consumerID, providerID} {
				applied, pruned, err := s.apply(ctx, s.clusters[id])
				if err != nil {
					t.Errorf("apply clusters/%s: %v", id, err)
					continue
				}
				t.Logf("%s: applied %d objects %v, pruned %v", id, len(applied), applied, pruned)
			}
		})
	}
}

// commitValidateAndPush commits the whole working tree, runs gitpeer
// validate on the commit (it reads the commit, as the reconcilers will, not
// the worktree), then pushes it to main.
func commitValidateAndPush(ctx context.Context, t *testing.T, work, msg string) {
	t.Helper()
	for _, args := range [][]string{{"add", "--all"}, {"commit", "--quiet", "--message", msg}} {
		if _, err := s.git(ctx, work, args...); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.gitpeerCmd(ctx, "validate", work); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := s.git(ctx, work, "push", "--quiet", "origin", "HEAD:main"); err != nil {
		t.Fatal(err)
	}
}

// commitAndPush commits the whole working tree and pushes it to main.
func commitAndPush(ctx context.Context, t *testing.T, work, msg string) {
	t.Helper()
	for _, args := range [][]string{
		{"add", "--all"},
		{"commit", "--quiet", "--message", msg},
	} {
		if _, err := s.git(ctx, work, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Reconcilers running as daemons push to main too: a push that loses
	// the race is rebased and pushed again, as a person would.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = s.git(ctx, work, "push", "--quiet", "origin", "HEAD:main"); err == nil {
			return
		}
		if _, rerr := s.git(ctx, work, "pull", "--quiet", "--rebase", "origin", "main"); rerr != nil {
			t.Fatalf("%v; then: %v", err, rerr)
		}
	}
	t.Fatal(err)
}

// consumerKubeconfig writes the kubeconfig alpha's backend stored in the
// Secret Liqo would write (kubeconfig-controlplane-beta in liqo-tenant-beta,
// key kubeconfig) to a 0600 file, once, and returns its path.
func consumerKubeconfig(ctx context.Context, t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.consumerKubeconfig != "" {
		return s.consumerKubeconfig
	}
	out, err := s.kube(ctx, s.clusters[consumerID], nil, "get", "secret", kubeconfigSecret, "-n", consumerTenantNS,
		"-o", "jsonpath={.data.kubeconfig}")
	if err != nil {
		t.Fatalf("alpha's kubeconfig for beta: %v", err)
	}
	data, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(data) == 0 {
		t.Fatalf("Secret %s/%s on alpha: key kubeconfig is empty or not base64 (%v)", consumerTenantNS, kubeconfigSecret, err)
	}
	path := filepath.Join(s.tmp, "alpha-to-beta.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s.consumerKubeconfig = path
	return path
}

// resourceSlice is a ResourceSlice alpha asks beta for, as Liqo's consumer
// replicates it into its tenant namespace on the provider, with cpu cores
// and 1Gi of memory.
func resourceSlice(name, cpu string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  name: %s
  namespace: %s
  labels:
    liqo.io/replicated: "true"
    liqo.io/originID: %s
    liqo.io/remote-cluster-id: %s
spec:
  class: default
  consumerClusterID: %s
  providerClusterID: %s
  resources:
    cpu: %q
    memory: 1Gi
`, name, providerTenantNS, consumerID, consumerID, consumerID, providerID, cpu))
}

// assertForbidden runs kubectl with kubeconfig and wants RBAC's denial,
// recognised by want (e.g. `cannot list resource "secrets"`): an
// authentication failure or a missing object would not prove anything.
func assertForbidden(ctx context.Context, t *testing.T, kubeconfig, want string, args ...string) {
	t.Helper()
	out, err := s.kubeAs(ctx, kubeconfig, nil, args...)
	switch {
	case err == nil:
		t.Errorf("kubectl %s: allowed, want Forbidden\n%s", strings.Join(args, " "), out)
	case !strings.Contains(err.Error(), want):
		t.Errorf("kubectl %s: want an RBAC denial (%s), got: %v", strings.Join(args, " "), want, err)
	}
}
