//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// The Liqo test's own two clusters: Liqo's controllers act on every Tenant,
// Identity and ResourceSlice they see, so they must not run on the suite's
// alpha and beta, which the other tests peer and revoke their own way. Port
// blocks 34 and 35 of hack/start-cluster.sh (31-33: the suite and internal/controller/daemon/).
const (
	liqoConsumerID = "gamma"
	liqoProviderID = "delta"
	liqoNamespace  = "liqo"
	// liqoTimeout bounds each wait for Liqo, Flux or a reconciler pass to
	// reach a state. Every wait polls the state itself and ends as soon as
	// it holds.
	liqoTimeout = 3 * time.Minute
	// liqoPasses is how many passes of each reconciler the flip-flop count
	// covers, with every Liqo component running.
	liqoPasses = 10
	// grantedSlice is the slice the spec grants; deniedSlice the one a
	// consumer admin creates in the cluster, as `liqoctl create
	// resourceslice` would, which the spec does not grant.
	grantedSlice = "granted"
	deniedSlice  = "denied"
	// offloadNS is the consumer namespace offloaded to the provider for the
	// reflected pod.
	offloadNS = "offload-e2e"
)

var liqoClusterSpecs = []struct {
	id  string
	idx int
}{{liqoConsumerID, 34}, {liqoProviderID, 35}}

const liqoSpec = `// The Liqo test's spec: gamma consumes what delta provides, one slice.
clusters: [
	{id: "gamma"},
	{id: "delta"},
]

peerings: [
	{consumer: "gamma", provider: "delta", slices: [
		{name: "granted", resources: {cpu: "2", memory: "4Gi"}},
	]},
]
`

const liqoNoPeeringSpec = `// The Liqo test's spec after revocation: both clusters, no peering; the
// test drives every pass, so no drain period is needed.
clusters: [
	{id: "gamma"},
	{id: "delta", provider: {drainPeriod: "0s"}},
]

peerings: []
`

// liqoTools are Liqo's binaries, gitpeer's Liqo driver and Liqo's chart, as
// hack/build-liqo.sh puts them in the e2e cache (make e2e-liqo-tools).
type liqoTools struct {
	controllerManager, crdReplicator, virtualKubelet, webhook, driver, chart string
}

func findLiqoTools(t *testing.T) liqoTools {
	t.Helper()
	lt := liqoTools{
		controllerManager: filepath.Join(s.kubeBin, "liqo-controller-manager"),
		crdReplicator:     filepath.Join(s.kubeBin, "liqo-crd-replicator"),
		virtualKubelet:    filepath.Join(s.kubeBin, "liqo-virtual-kubelet"),
		webhook:           filepath.Join(s.kubeBin, "liqo-webhook"),
		driver:            filepath.Join(s.kubeBin, "gitpeer-liqo-driver"),
		chart:             e2eharness.Env("LIQO_CHART", filepath.Join(e2eharness.CacheDir(), "liqo-chart")),
	}
	for _, f := range []string{lt.controllerManager, lt.crdReplicator, lt.virtualKubelet, lt.webhook, lt.driver, filepath.Join(lt.chart, "Chart.yaml")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run `make e2e-liqo-tools` (builds Liqo %s's components and gitpeer's Liqo driver)", err, strings.TrimPrefix(liqoModule, "github.com/liqotech/liqo@"))
		}
	}
	return lt
}

// liqoCluster is one of the test's clusters with Liqo running beside it.
type liqoCluster struct {
	*cluster
	dir  string              // logs and state of its Liqo processes
	args map[string][]string // the chart's Deployments' args, by component
}

// TestLiqoRunsThePeeringGitpeerBootstraps runs Liqo v1.2.0's own
// controller-manager, crd-replicator and webhook beside two control planes
// (Liqo's networking module off), peers them with gitpeer (kubernetes
// backend, no --liqo-cluster-roles: the chart's ClusterRoles are there),
// with each cluster's clusters/<id>/ applied by real Flux with the
// spec.ignore of docs/gitops.md, and checks what Liqo makes of it: roles and
// conditions of the ForeignClusters, the Tenant accepted, the consumer's
// kubeconfig Secret and API-server check, a VirtualNode and a running
// virtual-kubelet for the slice the spec grants, a pod reflected to the
// provider, nothing for a slice the spec does not grant, no field with two
// writers over liqoPasses passes, and a clean revocation.
func TestLiqoRunsThePeeringGitpeerBootstraps(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	lt := findLiqoTools(t)
	ft := findFluxTools(t)
	root := filepath.Join(s.tmp, "liqo-e2e")
	owner := t

	var cons, prov *liqoCluster
	if !check(t, "two control planes with Liqo's CRDs", func(t *testing.T) {
		cs := startLiqoClusters(ctx, t, root)
		cons, prov = cs[0], cs[1]
	}) {
		return
	}
	order := []*liqoCluster{cons, prov}

	if !check(t, "the driver installs the chart's objects; Liqo's webhook, controller-manager and crd-replicator run for each cluster", func(t *testing.T) {
		for _, c := range order {
			startLiqo(ctx, t, owner, lt, c)
		}
		for _, c := range order {
			// The chart's ClusterRoles, found as the tenant controller
			// finds them (tenant_controller.go: by app.kubernetes.io/name).
			for _, app := range []string{"remote-controlplane", "virtual-kubelet-remote", "virtual-kubelet-remote-clusterwide"} {
				out, err := s.kube(ctx, c.cluster, nil, "get", "clusterroles", "-l", "app.kubernetes.io/name="+app, "-o", "name")
				if err != nil || strings.TrimSpace(out) == "" {
					t.Errorf("%s: no ClusterRole labelled app.kubernetes.io/name=%s (%v)", c.id, app, err)
				}
			}
		}
	}) {
		return
	}

	// The Git host and Flux, as in TestFluxAppliesOnlyWhatEachReconcilerSigned.
	const (
		rwToken = "liqo-e2e-rw-token"
		roToken = "liqo-e2e-read-only-token"
	)
	host := startGitHost(t, root, rwToken, roToken)
	repoURL := host.repoURL
	clone := func(t *testing.T, url, dir string) { host.clone(ctx, t, url, dir) }
	remoteHead := func(ref string) (string, error) { return host.remoteHead(ctx, ref) }

	work := filepath.Join(root, "work")
	if !check(t, "Flux runs for each cluster; gitpeer init publishes both and the spec grants one slice", func(t *testing.T) {
		for _, c := range order {
			startFlux(ctx, t, owner, ft, c.cluster, filepath.Join(c.dir, "flux"))
		}
		clone(t, repoURL, work)
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(liqoSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			if _, err := s.gitpeerCmd(ctx, "init", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig,
				"--cluster", c.id, "--api-server", c.apiServer, "--repo", work); err != nil {
				t.Fatal(err)
			}
		}
		commitAndPush(ctx, t, work, "Peer gamma (consumer) with delta (provider), one slice")

		liqoWork := filepath.Join(root, "liqo-work")
		clone(t, host.URL("liqo.git"), liqoWork)
		crds, err := filepath.Glob(filepath.Join(lt.chart, "charts", "liqo-crds", "crds", "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no CRDs in %s/charts/liqo-crds/crds (%v)", lt.chart, err)
		}
		pushCRDs(ctx, t, liqoWork, crds)

		signers, err := s.gitpeerCmd(ctx, "allowed-signers", work)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			createGitSecret(ctx, t, c.cluster, roToken, host.CACert)
			if _, err := s.kube(ctx, c.cluster, []byte(liqoCRDsObjects(host.URL("liqo.git"), gitSecretName(c.id))),
				"apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
				t.Fatal(err)
			}
			overlay := filepath.Join(c.dir, "flux", "overlay")
			writeFluxOverlay(t, overlay, c.id, repoURL, signingKey(t, signers, c.id))
			build, err := s.kube(ctx, c.cluster, nil, "kustomize", overlay)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(build, "authParams") {
				t.Errorf("%s's Kustomization has no spec.ignore of Identity authParams:\n%s", c.id, build)
			}
			if _, err := s.kube(ctx, c.cluster, []byte(build), "apply", "--server-side", "--field-manager", fieldManager,
				"--validate=strict", "-f", "-"); err != nil {
				t.Fatal(err)
			}
		}
		waitReady(ctx, t, []*cluster{cons.cluster, prov.cluster}, "kustomization", func(*cluster) string { return "liqo-crds" })
	}) {
		return
	}

	// pass runs one pass of c's reconciler (kubernetes backend, no
	// --liqo-cluster-roles), then has c's Flux fetch the applied branch
	// and apply it (as `flux reconcile kustomization --with-source`),
	// and waits until it has: every pass is followed by an apply, even
	// one that leaves the branch where it was, as Flux's interval would.
	creds := filepath.Join(root, "git-credentials")
	testgit.WriteFiles(t, creds, map[string][]byte{"bearerToken": []byte(rwToken), "ca.crt": host.CACert})
	pass := func(c *liqoCluster) error {
		if _, err := s.gitpeerCmd(ctx, "reconcile", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig, "--cluster", c.id,
			"--repo", repoURL, "--git-credentials", creds, "--checkout", filepath.Join(c.dir, "checkout"), "--once"); err != nil {
			return err
		}
		head, err := remoteHead("gitpeer/applied/" + c.id)
		if err != nil || head == "" {
			return fmt.Errorf("no gitpeer/applied/%s after %s's pass (%v)", c.id, c.id, err)
		}
		if err := eventually(ctx, liqoTimeout, 250*time.Millisecond, func() error {
			if rev := fluxField(ctx, c.cluster, "gitrepository", "gitpeer-"+c.id, "{.status.artifact.revision}"); !strings.HasSuffix(rev, head) {
				_ = requestReconcile(ctx, c.cluster, "gitrepository", "gitpeer-"+c.id)
				return fmt.Errorf("%s's GitRepository at %q, not yet %s", c.id, rev, head)
			}
			return nil
		}); err != nil {
			return err
		}
		token := time.Now().Format(time.RFC3339Nano)
		if _, err := s.kube(ctx, c.cluster, nil, "-n", fluxNamespace, "annotate", "--overwrite", "kustomization", "gitpeer-"+c.id,
			"reconcile.fluxcd.io/requestedAt="+token); err != nil {
			return err
		}
		return eventually(ctx, liqoTimeout, 250*time.Millisecond, func() error {
			handled := fluxField(ctx, c.cluster, "kustomization", "gitpeer-"+c.id, "{.status.lastHandledReconcileAt}")
			rev := fluxField(ctx, c.cluster, "kustomization", "gitpeer-"+c.id, "{.status.lastAppliedRevision}")
			st, reason, msg := condition(ctx, c.cluster, "kustomization", "gitpeer-"+c.id, "Ready")
			if handled != token || !strings.HasSuffix(rev, head) || st != "True" {
				return fmt.Errorf("%s's Flux: handled %q (want %s), applied %q (want %s), Ready %s %s: %s", c.id, handled, token, rev, head, st, reason, msg)
			}
			return nil
		})
	}
	round := func() error {
		for _, c := range []*liqoCluster{prov, cons} {
			if err := pass(c); err != nil {
				return err
			}
		}
		return nil
	}

	provTenantNS := "liqo-tenant-" + liqoConsumerID
	consTenantNS := "liqo-tenant-" + liqoProviderID
	// Every change of the fields with two candidate writers, on both
	// clusters, from before the handshake (their creation) to the end of
	// the passes below.
	fw := watchFields(ctx, t, []watchSpec{
		{c: cons.cluster, resource: "identities.authentication.liqo.io", ns: consTenantNS, field: "spec.authParams"},
		{c: cons.cluster, resource: "secrets", ns: consTenantNS, field: "data", name: "kubeconfig-controlplane-" + liqoProviderID},
		{c: cons.cluster, resource: "resourceslices.authentication.liqo.io", ns: consTenantNS, field: "spec"},
		{c: prov.cluster, resource: "resourceslices.authentication.liqo.io", ns: provTenantNS, field: "spec"},
	})
	t.Cleanup(func() { fw.stop() })
	if !check(t, "the handshake completes with Flux applying both trees and Liqo running", func(t *testing.T) {
		for i := 0; ; i++ {
			if err := round(); err != nil {
				t.Fatal(err)
			}
			ready, out := liqoPeeringReady(ctx, filepath.Join(cons.dir, "checkout"))
			if ready {
				t.Logf("Ready after %d rounds (provider pass, consumer pass), %.0fs into the test", i+1, time.Since(start).Seconds())
				return
			}
			if i == 5 {
				t.Fatalf("not Ready after %d rounds:\n%s", i+1, out)
			}
		}
	}) {
		return
	}

	check(t, "Liqo's ForeignClusters: delta sees gamma as Consumer with its Tenant Ready, gamma sees delta as Provider with APIServerStatus Established", func(t *testing.T) {
		err := eventually(ctx, liqoTimeout, time.Second, func() error {
			var errs []error
			if got := kubeField(ctx, prov.cluster, "{.status.role}", "foreignclusters.core.liqo.io", liqoConsumerID); got != "Consumer" {
				errs = append(errs, fmt.Errorf("ForeignCluster %s on %s: role %q, want Consumer", liqoConsumerID, prov.id, got))
			}
			if got := kubeField(ctx, prov.cluster, `{.status.modules.authentication.conditions[?(@.type=="AuthTenantStatus")].status}`,
				"foreignclusters.core.liqo.io", liqoConsumerID); got != "Ready" {
				errs = append(errs, fmt.Errorf("ForeignCluster %s on %s: AuthTenantStatus %q, want Ready", liqoConsumerID, prov.id, got))
			}
			if got := kubeField(ctx, cons.cluster, "{.status.role}", "foreignclusters.core.liqo.io", liqoProviderID); got != "Provider" {
				errs = append(errs, fmt.Errorf("ForeignCluster %s on %s: role %q, want Provider", liqoProviderID, cons.id, got))
			}
			if got := kubeField(ctx, cons.cluster, `{.status.modules.authentication.conditions[?(@.type=="AuthIdentityControlPlaneStatus")].status}`,
				"foreignclusters.core.liqo.io", liqoProviderID); got != "Ready" {
				errs = append(errs, fmt.Errorf("ForeignCluster %s on %s: AuthIdentityControlPlaneStatus %q, want Ready", liqoProviderID, cons.id, got))
			}
			if got := kubeField(ctx, cons.cluster, `{.status.conditions[?(@.type=="APIServerStatus")].status}`,
				"foreignclusters.core.liqo.io", liqoProviderID); got != "Established" {
				errs = append(errs, fmt.Errorf("ForeignCluster %s on %s: APIServerStatus %q, want Established", liqoProviderID, cons.id, got))
			}
			return errors.Join(errs...)
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	check(t, "the provider's Liqo accepts the Tenant: status filled, no Warning event", func(t *testing.T) {
		err := eventually(ctx, liqoTimeout, time.Second, func() error {
			ns := kubeField(ctx, prov.cluster, "{.status.tenantNamespace}", "tenants.authentication.liqo.io", liqoConsumerID, "-n", provTenantNS)
			ap := kubeField(ctx, prov.cluster, "{.status.authParams.apiServer}", "tenants.authentication.liqo.io", liqoConsumerID, "-n", provTenantNS)
			if ns != provTenantNS || ap == "" {
				return fmt.Errorf("Tenant %s/%s on %s: status.tenantNamespace %q, status.authParams.apiServer %q", provTenantNS, liqoConsumerID, prov.id, ns, ap)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if w := warnings(ctx, prov.cluster, "Tenant"); w != "" {
			t.Errorf("Warning events about the Tenant on %s:\n%s", prov.id, w)
		}
	})

	// The consumer's control-plane kubeconfig, as Liqo wrote it on the
	// consumer: what its crd-replicator reaches the provider with.
	consumerKubeconfig := filepath.Join(root, "gamma-to-delta.kubeconfig")
	check(t, "the consumer's kubeconfig Secret is there and authenticates to the provider as the consumer", func(t *testing.T) {
		var data string
		err := eventually(ctx, liqoTimeout, time.Second, func() error {
			data = kubeField(ctx, cons.cluster, "{.data.kubeconfig}", "secret", "kubeconfig-controlplane-"+liqoProviderID, "-n", consTenantNS)
			if data == "" {
				return fmt.Errorf("no Secret %s/kubeconfig-controlplane-%s on %s", consTenantNS, liqoProviderID, cons.id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		kc, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		path := consumerKubeconfig
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		who, err := s.kubeAs(ctx, path, nil, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil {
			t.Fatal(err)
		}
		if who != liqoConsumerID {
			t.Errorf("delta sees user %q, want %q", who, liqoConsumerID)
		}
	})

	// The slice the spec does not grant, created in the consumer cluster as
	// `liqoctl create resourceslice denied --remote-cluster-id delta
	// --cpu 32` would (forge.MutateResourceSlice): Liqo's local
	// ResourceSlice controller fills in the CSR, the replicator copies it
	// to the provider.
	check(t, "a consumer admin creates a slice the spec does not grant (class default, cpu 32) in the consumer cluster", func(t *testing.T) {
		doc := fmt.Sprintf(`apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  name: %s
  namespace: %s
  labels:
    liqo.io/replication: "true"
    liqo.io/remoteID: %s
    liqo.io/remote-cluster-id: %s
  annotations:
    liqo.io/create-virtual-node: "true"
spec:
  class: default
  providerClusterID: %s
  resources:
    cpu: "32"
`, deniedSlice, consTenantNS, liqoProviderID, liqoProviderID, liqoProviderID)
		if _, err := s.kube(ctx, cons.cluster, []byte(doc), "create", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	})

	var vkNode string
	check(t, "the granted slice becomes a VirtualNode and a virtual-kubelet Deployment on the consumer", func(t *testing.T) {
		err := eventually(ctx, liqoTimeout, time.Second, func() error {
			if got := kubeField(ctx, cons.cluster, "{.metadata.name}", "virtualnodes.offloading.liqo.io", grantedSlice, "-n", consTenantNS); got == "" {
				return fmt.Errorf("no VirtualNode %s/%s on %s yet (slice status: %s)", consTenantNS, grantedSlice, cons.id,
					kubeField(ctx, cons.cluster, "{.status}", "resourceslices.authentication.liqo.io", grantedSlice, "-n", consTenantNS))
			}
			if got := kubeField(ctx, cons.cluster, "{.items[*].metadata.name}", "deployments", "-n", consTenantNS, "-l", "liqo.io/virtual-node="+grantedSlice); got == "" {
				return fmt.Errorf("no virtual-kubelet Deployment in %s on %s yet", consTenantNS, cons.id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if cpu := kubeField(ctx, cons.cluster, "{.spec.resourceQuota.hard.cpu}", "virtualnodes.offloading.liqo.io", grantedSlice, "-n", consTenantNS); cpu != "2" {
			t.Errorf("VirtualNode %s: resourceQuota.hard.cpu %q, want the granted 2", grantedSlice, cpu)
		}
		vkNode = runVirtualKubelet(ctx, t, owner, lt, cons, consTenantNS, grantedSlice)
		if cpu := kubeField(ctx, cons.cluster, "{.status.capacity.cpu}", "node", vkNode); cpu != "2" {
			t.Errorf("Node %s: capacity cpu %q, want the granted 2", vkNode, cpu)
		}
	})

	check(t, "a pod bound to the virtual node is reflected to the provider", func(t *testing.T) {
		if vkNode == "" {
			t.Skip("no virtual-kubelet running")
		}
		// As `liqoctl offload namespace offload-e2e` would, then a pod
		// bound to the virtual node by name (no scheduler runs here).
		docs := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: offloading.liqo.io/v1beta1
kind: NamespaceOffloading
metadata:
  name: offloading
  namespace: %[1]s
spec:
  namespaceMappingStrategy: DefaultName
  podOffloadingStrategy: LocalAndRemote
  clusterSelector:
    nodeSelectorTerms: []
`, offloadNS)
		if _, err := s.kube(ctx, cons.cluster, []byte(docs), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
			t.Fatal(err)
		}
		pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: offloaded
  namespace: %s
spec:
  nodeName: %s
  tolerations:
    - key: virtual-node.liqo.io/not-allowed
      operator: Exists
  containers:
    - name: app
      image: registry.invalid/app:1
`, offloadNS, vkNode)
		err := eventually(ctx, liqoTimeout, time.Second, func() error {
			_, err := s.kube(ctx, cons.cluster, []byte(pod), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var where string
		err = eventually(ctx, liqoTimeout, time.Second, func() error {
			where = kubeField(ctx, prov.cluster, `{range .items[*]}{.metadata.namespace}/{.kind}{"\n"}{end}`,
				"shadowpods.offloading.liqo.io,pods", "-A", "--field-selector", "metadata.name=offloaded")
			if !strings.Contains(where, "/Pod") {
				return fmt.Errorf("pod offloaded not reflected on %s yet (found %q); its status on %s: %s", prov.id, where, cons.id,
					kubeField(ctx, cons.cluster, "{.status}", "pod", "offloaded", "-n", offloadNS))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the pod is reflected on %s as: %s", prov.id, strings.ReplaceAll(where, "\n", ", "))
	})

	// Liqo's chart gives the consumer's user every verb on
	// resourceslices/status, and the provider's Liqo sizes the slice's
	// offloading Quota from its status, which the consumer's crd-replicator
	// copies back into the VirtualNode's resourceQuota: a status grown by
	// the consumer would grow both (Liqo reconciles the slice only when its
	// spec changes, so nothing would correct it). The provider's admission
	// policy refuses the write, so there is nothing for Liqo to act on.
	check(t, "the consumer's user cannot grow the granted slice through its status: the provider's Quota and the consumer's VirtualNode keep the grant", func(t *testing.T) {
		if _, err := os.Stat(consumerKubeconfig); err != nil {
			t.Skip("no consumer kubeconfig")
		}
		sliceOn := func(c *cluster, ns string) (rv, res string) {
			return kubeField(ctx, c, "{.metadata.resourceVersion}", "resourceslices.authentication.liqo.io", grantedSlice, "-n", ns),
				kubeField(ctx, c, "{.status.resources}", "resourceslices.authentication.liqo.io", grantedSlice, "-n", ns)
		}
		quota := func() string {
			return kubeField(ctx, prov.cluster, "{.items[*].spec.resources}", "quotas.offloading.liqo.io", "-n", provTenantNS)
		}
		vnQuota := func() string {
			return kubeField(ctx, cons.cluster, "{.spec.resourceQuota.hard}", "virtualnodes.offloading.liqo.io", grantedSlice, "-n", consTenantNS)
		}
		granted := func(what, got string) {
			t.Helper()
			var m map[string]any
			if err := json.Unmarshal([]byte(got), &m); err != nil {
				t.Errorf("%s: %q: %v", what, got, err)
				return
			}
			if m["cpu"] != "2" || m["memory"] != "4Gi" || m["pods"] != "110" {
				t.Errorf("%s is %s, want the grant: cpu 2, memory 4Gi, pods 110 (Liqo's default)", what, got)
			}
		}
		// The Quota follows the slice's status a moment after Liqo
		// accepted it.
		if err := eventually(ctx, liqoTimeout, time.Second, func() error {
			if q := quota(); q == "" {
				return fmt.Errorf("no Quota in %s on %s yet", provTenantNS, prov.id)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		rvBefore, resBefore := sliceOn(prov.cluster, provTenantNS)
		granted("the provider's slice status.resources", resBefore)
		granted("the provider's Quota", quota())
		granted("the consumer's VirtualNode resourceQuota.hard", vnQuota())

		out, err := s.kubeAs(ctx, consumerKubeconfig, nil, "patch", "resourceslices.authentication.liqo.io", grantedSlice, "-n", provTenantNS,
			"--subresource=status", "--type=merge", "-p", `{"status":{"resources":{"cpu":"64","memory":"512Gi","pods":"1k"}}}`)
		const policy = "ValidatingAdmissionPolicy 'gitpeer-resourceslices-" + liqoConsumerID + "'"
		want := "ResourceSlice " + grantedSlice + ": status.resources may not grant more than the reviewed peering spec grants " + liqoConsumerID +
			" for it (cpu 2, ephemeral-storage 20Gi, memory 4Gi, pods 110)"
		switch {
		case err == nil:
			t.Fatalf("%s's API server admitted the consumer's status patch (cpu 64, memory 512Gi, pods 1k): %s", prov.id, out)
		case !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), want):
			t.Fatalf("the consumer's status patch: want %s's refusal %q, got: %v", policy, want, err)
		}
		t.Logf("the consumer's status patch is refused: %v", err)

		// A round of passes with Liqo running on both clusters; then the
		// slice is the object it was (no write reached it), and what Liqo
		// derives from it still holds the grant.
		if err := round(); err != nil {
			t.Fatal(err)
		}
		if rv, res := sliceOn(prov.cluster, provTenantNS); rv != rvBefore || res != resBefore {
			t.Errorf("the provider's slice changed: resourceVersion %s → %s, status.resources %s → %s", rvBefore, rv, resBefore, res)
		}
		granted("the provider's Quota", quota())
		granted("the consumer's VirtualNode resourceQuota.hard", vnQuota())
		_, res := sliceOn(cons.cluster, consTenantNS)
		granted("the consumer's slice status.resources", res)
		if vkNode != "" {
			if cpu := kubeField(ctx, cons.cluster, "{.status.capacity.cpu}", "node", vkNode); cpu != "2" {
				t.Errorf("Node %s: capacity cpu %q, want the granted 2", vkNode, cpu)
			}
		}
	})

	// The watch started before the handshake: creation, Liqo's handover,
	// then liqoPasses passes of each reconciler with every Liqo component
	// running.
	check(t, fmt.Sprintf("over %d passes of each reconciler with Liqo running, no field changes back and forth", liqoPasses), func(t *testing.T) {
		for i := 0; i < liqoPasses; i++ {
			if err := round(); err != nil {
				t.Fatalf("pass %d: %v", i+1, err)
			}
		}
		counts := fw.stop()
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			h := counts[k]
			t.Logf("%s: %d value(s) %v", k, len(h), h)
			if len(h) > 2 {
				t.Errorf("%s changed %d times over %d passes (values %v): more than creation and one handover", k, len(h)-1, liqoPasses, h)
			}
			for i := 2; i < len(h); i++ {
				if slices.Contains(h[:i-1], h[i]) {
					t.Errorf("%s went back to an earlier value %s (values %v): a flip-flop", k, h[i], h)
					break
				}
			}
		}
	})

	check(t, "the slice the spec does not grant gets nothing on either cluster: no certificate, no Identity, no VirtualNode", func(t *testing.T) {
		var errs []error
		for _, o := range []struct {
			c  *cluster
			ns string
		}{{cons.cluster, consTenantNS}, {prov.cluster, provTenantNS}} {
			if crt := kubeField(ctx, o.c, "{.status.authParams.signedCRT}", "resourceslices.authentication.liqo.io", deniedSlice, "-n", o.ns); crt != "" {
				errs = append(errs, fmt.Errorf("ResourceSlice %s/%s on %s has a signed certificate in its status", o.ns, deniedSlice, o.c.id))
			}
		}
		if got := kubeField(ctx, cons.cluster, "{.metadata.name}", "identities.authentication.liqo.io", "resourceslice-"+deniedSlice, "-n", consTenantNS); got != "" {
			errs = append(errs, fmt.Errorf("Identity %s/resourceslice-%s exists on %s", consTenantNS, deniedSlice, cons.id))
		}
		if got := kubeField(ctx, cons.cluster, "{.metadata.name}", "virtualnodes.offloading.liqo.io", deniedSlice, "-n", consTenantNS); got != "" {
			errs = append(errs, fmt.Errorf("VirtualNode %s/%s exists on %s", consTenantNS, deniedSlice, cons.id))
		}
		// The refusal is the provider's admission policy for this
		// consumer, answering the consumer's crd-replicator.
		policy := "ValidatingAdmissionPolicy 'gitpeer-resourceslices-" + liqoConsumerID + "'"
		refused := false
		if data, err := os.ReadFile(filepath.Join(cons.dir, "liqo-crd-replicator.log")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "with name "+deniedSlice+":") && strings.Contains(line, policy) &&
					strings.Contains(line, "ResourceSlice "+deniedSlice+" is not granted to "+liqoConsumerID+" by the reviewed peering spec") {
					refused = true
					t.Logf("%s's crd-replicator: %s", cons.id, strings.TrimSpace(line))
					break
				}
			}
		}
		if !refused {
			errs = append(errs, fmt.Errorf("%s's crd-replicator log has no refusal of %s by %s naming what is granted", cons.id, deniedSlice, policy))
		}
		if kubeField(ctx, prov.cluster, "{.metadata.name}", "resourceslices.authentication.liqo.io", deniedSlice, "-n", provTenantNS) == "" {
			t.Logf("the denied slice does not exist on %s (its crd-replicator's create was refused); on %s its status is %q", prov.id, cons.id,
				kubeField(ctx, cons.cluster, "{.status}", "resourceslices.authentication.liqo.io", deniedSlice, "-n", consTenantNS))
		} else {
			t.Logf("the denied slice on %s: status %s", prov.id, kubeField(ctx, prov.cluster, "{.status}", "resourceslices.authentication.liqo.io", deniedSlice, "-n", provTenantNS))
		}
		if err := errors.Join(errs...); err != nil {
			t.Error(err)
		}
	})

	check(t, "removing the peering from the spec: after the drain, Tenant, RBAC, slices, VirtualNode and Node are gone", func(t *testing.T) {
		if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(liqoNoPeeringSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		commitAndPush(ctx, t, work, "Unpeer gamma from delta")
		gone := []struct {
			c    *cluster
			args []string
		}{
			{prov.cluster, []string{"tenants.authentication.liqo.io", "-A"}},
			{prov.cluster, []string{"rolebindings", "-n", provTenantNS, "-l", "liqo.io/remote-cluster-id=" + liqoConsumerID}},
			{prov.cluster, []string{"clusterrolebindings", "-l", "liqo.io/remote-cluster-id=" + liqoConsumerID}},
			{prov.cluster, []string{"resourceslices.authentication.liqo.io", "-A"}},
			{cons.cluster, []string{"resourceslices.authentication.liqo.io", "-A"}},
			{cons.cluster, []string{"identities.authentication.liqo.io", "-A"}},
			{cons.cluster, []string{"virtualnodes.offloading.liqo.io", "-A"}},
			{cons.cluster, []string{"nodes"}},
		}
		began := time.Now()
		var rounds int
		err := eventually(ctx, 2*liqoTimeout, time.Second, func() error {
			if rounds < 4 {
				rounds++
				if err := round(); err != nil {
					return err
				}
			}
			var errs []error
			for _, g := range gone {
				if out := kubeField(ctx, g.c, `{range .items[*]}{.metadata.namespace}/{.metadata.name} {end}`, g.args...); out != "" {
					errs = append(errs, fmt.Errorf("on %s, %s still there: %s", g.c.id, g.args[0], out))
				}
			}
			return errors.Join(errs...)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("revocation: everything gone %.0fs after the spec change (%d rounds)", time.Since(began).Seconds(), rounds)
		// What Liqo keeps: its ForeignClusters (as after `liqoctl unpeer`;
		// `kubectl delete foreignclusters <id>` removes one), and whatever
		// else of the peering is left in the tenant namespaces.
		// Liqo recomputes a ForeignCluster's role on events of the objects
		// it watches (Tenant, Identity, VirtualNode, Node: foreigncluster_
		// controller.go:174-182), not Secrets; its fallback reads the
		// kubeconfig Secret (status.go, handleAuthenticationModuleStatus),
		// which the garbage collector deletes after the Identity. So the
		// consumer's may keep role Provider until its next resync: wait a
		// little, and log what is left.
		_ = eventually(ctx, 30*time.Second, time.Second, func() error {
			for _, c := range order {
				if r := kubeField(ctx, c.cluster, "{.items[*].status.role}", "foreignclusters.core.liqo.io"); r != "Unknown" {
					return fmt.Errorf("%s: %s", c.id, r)
				}
			}
			return nil
		})
		for _, c := range order {
			t.Logf("left on %s: ForeignClusters %s; in liqo-tenant-*: %s", c.id,
				kubeField(ctx, c.cluster, `{range .items[*]}{.metadata.name} role={.status.role} {end}`, "foreignclusters.core.liqo.io"),
				tenantLeftovers(ctx, c.cluster))
		}
	})

	check(t, "time to peer: both reconcilers started as daemons with default flags as the spec change is merged peer the clusters again within timeToPeerBound; the test prints the timeline from the merge", func(t *testing.T) {
		// Default flags: --interval 1m, --poll-interval 5s. Flux as
		// manifests/flux ships it: the suite's overlay makes the
		// GitRepository poll every fluxInterval, which would hide a seal
		// Flux was not asked to fetch, so its intervals go back to 1m
		// first. What makes it fast is the daemons' poll and the reconcile
		// request each pin carries. The daemons start with the merge, as a
		// new user's would: the time includes their start.
		signers, err := s.gitpeerCmd(ctx, "allowed-signers", work)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			overlay := filepath.Join(c.dir, "flux", "overlay-shipped")
			writeFluxOverlayIntervals(t, overlay, c.id, repoURL, signingKey(t, signers, c.id), "")
			build, err := s.kube(ctx, c.cluster, nil, "kustomize", overlay)
			if err != nil {
				t.Fatal(err)
			}
			// The GitRepository and the Kustomization; the verify Secret
			// is the tree's now.
			var docs []string
			for _, doc := range strings.Split(build, "\n---\n") {
				if strings.Contains(doc, "kind: GitRepository\n") || strings.Contains(doc, "kind: Kustomization\n") {
					docs = append(docs, doc)
				}
			}
			if len(docs) != 2 {
				t.Fatalf("%s: %d GitRepository and Kustomization documents in the overlay's build, want 2:\n%s", c.id, len(docs), build)
			}
			if _, err := s.kube(ctx, c.cluster, []byte(strings.Join(docs, "\n---\n")), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
				t.Fatal(err)
			}
			if got := fluxField(ctx, c.cluster, "gitrepository", "gitpeer-"+c.id, "{.spec.interval}"); got != "1m" && got != "1m0s" {
				t.Fatalf("%s's GitRepository interval %q after applying manifests/flux as shipped, want 1m", c.id, got)
			}
		}
		if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(liqoSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range order {
			startProc(t, owner, "gitpeer-daemon-"+c.id, filepath.Join(c.dir, "daemon.log"), nil, s.gitpeer,
				"reconcile", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig, "--cluster", c.id,
				"--repo", repoURL, "--git-credentials", creds, "--checkout", filepath.Join(c.dir, "checkout"),
				// Logs only: the timeline shows the passes that found
				// nothing to do and what each poll saw move.
				"--log-level", "debug")
		}
		commitAndPush(ctx, t, work, "Peer gamma (consumer) with delta (provider) again")
		merged, loadAtMerge := time.Now(), loadAverage()
		var established, virtualNode time.Duration
		err = eventually(ctx, 2*liqoTimeout, 250*time.Millisecond, func() error {
			p, err := readPeeringProgress(ctx, cons.cluster, liqoProviderID, consTenantNS, grantedSlice)
			if err != nil {
				return err
			}
			if established == 0 && p.established {
				established = time.Since(merged)
			}
			if virtualNode == 0 && p.virtualNode {
				virtualNode = time.Since(merged)
			}
			if established == 0 || virtualNode == 0 {
				return fmt.Errorf("%.0fs after the merge: %+v", time.Since(merged).Seconds(), p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		loadAtEnd := loadAverage()

		// The timeline, from the daemons' and Flux's logs.
		var timeline []timelineEvent
		var readyInGit time.Duration
		waits := map[string]int{}
		for _, c := range order {
			ev, ready, err := daemonTimeline(filepath.Join(c.dir, "daemon.log"), c.id, merged)
			if err != nil {
				t.Error(err)
			}
			if ready > 0 {
				readyInGit = ready
			}
			timeline = append(timeline, ev...)
			ev, n, err := fluxTimeline(filepath.Join(c.dir, "flux", "kustomize-controller.log"), c.id, merged)
			if err != nil {
				t.Error(err)
			}
			waits[c.id] = n
			timeline = append(timeline, ev...)
		}
		timeline = append(timeline,
			timelineEvent{established, cons.id + "'s Liqo: new Identity, AuthIdentityControlPlaneStatus Ready, APIServerStatus Established"},
			timelineEvent{virtualNode, cons.id + "'s Liqo: VirtualNode " + grantedSlice})
		slices.SortStableFunc(timeline, func(a, b timelineEvent) int { return int(a.at - b.at) })
		var b strings.Builder
		for _, e := range timeline {
			fmt.Fprintf(&b, "  %+6.1fs  %s\n", e.at.Seconds(), e.what)
		}
		t.Logf("timeline from the merge:\n%s", b.String())
		t.Logf("TIME TO PEER (default flags): merge → Ready in Git %.1fs, → consumer's Identity Ready with APIServerStatus Established %.1fs, → VirtualNode %s on the consumer %.1fs (bound %s; load average %s at the merge, %s at the end)",
			readyInGit.Seconds(), established.Seconds(), grantedSlice, virtualNode.Seconds(), timeToPeerBound, loadAtMerge, loadAtEnd)
		if readyInGit == 0 {
			t.Errorf("%s's daemon log has no event saying the peering is Ready after the merge", cons.id)
		}
		// A seal is applied as soon as Flux has it: Kustomization
		// gitpeer-<id> never waits for liqo-crds, which kustomize-controller
		// re-applies whenever gitpeer-<id>'s source moves (manifests/flux:
		// dependsOn's readyExpr).
		for _, c := range order {
			if waits[c.id] > 0 {
				t.Errorf("%s's Kustomization gitpeer-%s waited for its dependency %d time(s) after the merge (kustomize-controller's log)", c.id, c.id, waits[c.id])
			}
		}
		if established > timeToPeerBound {
			t.Errorf("merge → Established took %.1fs, over the %s bound", established.Seconds(), timeToPeerBound)
		}
	})

	for _, c := range order {
		if w := warnings(ctx, c.cluster, ""); w != "" {
			t.Logf("Warning events on %s:\n%s", c.id, w)
		}
	}
	t.Logf("liqo test: %.1fs", time.Since(start).Seconds())
}

// tenantLeftovers lists the Secrets, Identities, Tenants and Renews in
// liqo-tenant-* namespaces on c, and those namespaces.
func tenantLeftovers(ctx context.Context, c *cluster) string {
	out := kubeField(ctx, c, `{range .items[*]}{.kind} {.metadata.namespace} {.metadata.name}{"\n"}{end}`,
		"secrets,identities.authentication.liqo.io,tenants.authentication.liqo.io,renews.authentication.liqo.io,namespaces", "-A")
	var left []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && strings.HasPrefix(f[1], "liqo-tenant-"):
			left = append(left, f[0]+" "+f[1]+"/"+f[2])
		case len(f) == 2 && f[0] == "Namespace" && strings.HasPrefix(f[1], "liqo-tenant-"):
			left = append(left, "Namespace "+f[1])
		}
	}
	if len(left) == 0 {
		return "nothing"
	}
	return strings.Join(left, ", ")
}

// liqoPeeringReady reports whether `gitpeer status` of the checkout dir
// says the one peering is Ready, and its output.
func liqoPeeringReady(ctx context.Context, dir string) (bool, string) {
	out, err := s.gitpeerCmd(ctx, "status", dir, "-o", "json")
	if err != nil {
		return false, err.Error()
	}
	var list struct {
		Items []struct {
			Step  string
			Ready bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return false, out
	}
	return len(list.Items) == 1 && list.Items[0].Ready, out
}

// kubeField reads one jsonpath of an object ("" when it or the field is
// missing).
func kubeField(ctx context.Context, c *cluster, jsonpath string, args ...string) string {
	out, err := s.kube(ctx, c, nil, append([]string{"get", "--ignore-not-found", "-o", "jsonpath=" + jsonpath}, args...)...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// warnings lists the Warning events about objects of kind ("": any) on
// c, one a line: namespace, object, reason, message.
func warnings(ctx context.Context, c *cluster, kind string) string {
	sel := "type=Warning"
	if kind != "" {
		sel += ",involvedObject.kind=" + kind
	}
	out, err := s.kube(ctx, c, nil, "get", "events", "-A", "--field-selector", sel,
		"-o", `jsonpath={range .items[*]}{.metadata.namespace} {.involvedObject.name} {.reason}: {.message}{"\n"}{end}`)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

// startLiqoClusters starts the test's two control planes (registered with
// the suite, which stops them) and installs Liqo's CRDs from the chart.
func startLiqoClusters(ctx context.Context, t *testing.T, root string) []*liqoCluster {
	t.Helper()
	out := make([]*liqoCluster, len(liqoClusterSpecs))
	errs := make([]error, len(liqoClusterSpecs))
	var wg sync.WaitGroup
	for i, cs := range liqoClusterSpecs {
		c := &cluster{id: cs.id, idx: cs.idx, dir: filepath.Join(s.tmp, "clusters", cs.id), inventory: map[objRef]string{}}
		c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
		out[i] = &liqoCluster{cluster: c, dir: filepath.Join(root, cs.id)}
		if err := os.MkdirAll(out[i].dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.started = append(s.started, c.id)
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.startCluster(ctx, c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	crds := filepath.Join(e2eharness.Env("LIQO_CHART", filepath.Join(e2eharness.CacheDir(), "liqo-chart")), "charts", "liqo-crds", "crds")
	for _, c := range out {
		if _, err := s.kube(ctx, c.cluster, nil, "apply", "--server-side", "--field-manager", fieldManager, "-f", crds); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range out {
		if _, err := s.kube(ctx, c.cluster, nil, "wait", "--for=condition=Established", "crd", "--all", "--timeout="+readyTimeout.String()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// startLiqo runs the driver for c (the chart's objects, the webhook's
// certificate), then Liqo's webhook, controller-manager and crd-replicator
// as processes with c's admin kubeconfig, each with the args of its
// Deployment in the chart plus local listen addresses, and waits until the
// webhook and the controller-manager are ready.
func startLiqo(ctx context.Context, t, owner *testing.T, lt liqoTools, c *liqoCluster) {
	t.Helper()
	webhookAddr := testgit.FreeLoopbackAddr(t)
	_, webhookPort, _ := net.SplitHostPort(webhookAddr)
	// controller-runtime reads its serving certificate from
	// $TMPDIR/k8s-webhook-server/serving-certs: one TMPDIR per process.
	tmp := func(name string) string { return filepath.Join(c.dir, "tmp-"+name) }
	certs := func(name string) string { return filepath.Join(tmp(name), "k8s-webhook-server", "serving-certs") }
	argsFile := filepath.Join(c.dir, "chart-args.json")
	if out, err := s.run(ctx, "", nil, lt.driver, "--kubeconfig", c.kubeconfig, "--namespace", liqoNamespace,
		"--cluster-id", c.id, "--chart", lt.chart, "--webhook-port", webhookPort,
		"--cert-dir", certs("webhook"), "--out", argsFile,
		// Liqo finds the API server address to hand out (Tenant and
		// ResourceSlice status) on a control-plane Node, and there are no
		// Nodes here: the chart's value for such clusters
		// (--api-server-address-override; tenant_controller.go:231 fails
		// without either).
		"--set", "apiServer.address="+c.apiServer); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(c.dir, "driver.log"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &c.args); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"webhook", "controller-manager", "crd-replicator"} {
		if len(c.args[name]) == 0 {
			t.Fatalf("the chart gives no args for %s (driver output %s)", name, argsFile)
		}
	}
	// The controller-manager may serve webhooks too: same certificate.
	for _, f := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(certs("webhook"), f))
		if err != nil {
			t.Fatal(err)
		}
		testgit.WriteFiles(t, certs("controller-manager"), map[string][]byte{f: b})
	}
	kenv := func(name string) []string {
		return []string{"KUBECONFIG=" + c.kubeconfig, "TMPDIR=" + tmp(name)}
	}
	if err := os.MkdirAll(tmp("crd-replicator"), 0o755); err != nil {
		t.Fatal(err)
	}
	whHealth, cmHealth := testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t)
	// --secret-name is dropped: the webhook's certificate Secret is the
	// chart's job, done here by the driver's files (the process would
	// otherwise read the Secret and write the certificate under /tmp).
	wh := startProc(t, owner, c.id+"'s liqo-webhook", filepath.Join(c.dir, "liqo-webhook.log"), kenv("webhook"), lt.webhook,
		withFlags(dropFlags(c.args["webhook"], "--secret-name"),
			"--webhook-port="+webhookPort, "--metrics-address="+testgit.FreeLoopbackAddr(t), "--health-probe-address="+whHealth)...)
	if err := waitHTTPOK(ctx, wh, "http://"+whHealth+"/readyz", readyTimeout); err != nil {
		t.Fatal(err)
	}
	_, cmWebhookPort, _ := net.SplitHostPort(testgit.FreeLoopbackAddr(t))
	cmArgs := withFlags(c.args["controller-manager"],
		"--webhook-port="+cmWebhookPort, "--metrics-address="+testgit.FreeLoopbackAddr(t), "--health-probe-address="+cmHealth)
	if !slices.Contains(cmArgs, "--networking-enabled=false") {
		t.Fatalf("the controller-manager's args do not turn networking off: %q", cmArgs)
	}
	// The controller-manager runs as the chart's ServiceAccount, as its Pod
	// would: the provider's admission policy tells Liqo's own status writes
	// apart by that user (admission.LiqoControllerManager).
	cmEnv := []string{"KUBECONFIG=" + serviceAccountKubeconfig(ctx, t, c, liqoNamespace, "liqo-controller-manager",
		filepath.Join(c.dir, "controller-manager.kubeconfig")), "TMPDIR=" + tmp("controller-manager")}
	cm := startProc(t, owner, c.id+"'s liqo-controller-manager", filepath.Join(c.dir, "liqo-controller-manager.log"), cmEnv,
		lt.controllerManager, cmArgs...)
	startProc(t, owner, c.id+"'s liqo-crd-replicator", filepath.Join(c.dir, "liqo-crd-replicator.log"), kenv("crd-replicator"),
		lt.crdReplicator, withFlags(c.args["crd-replicator"], "--metrics-address="+testgit.FreeLoopbackAddr(t))...)
	if err := waitHTTPOK(ctx, cm, "http://"+cmHealth+"/readyz", readyTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: Liqo running; controller-manager args %q", c.id, cmArgs)
}

// withFlags returns args without the flags set names, then set: a local
// listen address replaces the chart's.
func withFlags(args []string, set ...string) []string {
	names := make([]string, 0, len(set))
	for _, f := range set {
		name, _, _ := strings.Cut(f, "=")
		names = append(names, name)
	}
	return append(dropFlags(args, names...), set...)
}

// dropFlags returns args without the --name=value flags of names.
func dropFlags(args []string, names ...string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !slices.Contains(names, name) {
			out = append(out, a)
		}
	}
	return out
}

// digest is a short hash of a value, for logs of what changed.
func digest(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:6])
}

// runVirtualKubelet runs the virtual-kubelet of the Deployment Liqo made in
// ns on c for VirtualNode vn, as its Pod would run: the Deployment's args and env
// (the Pod's fields: name, namespace, IP 127.0.0.1), the local cluster
// through a kubeconfig with a token of the Deployment's ServiceAccount (so
// that Liqo's CSR approver, which approves requestors of liqo-tenant-*
// ServiceAccounts, approves its serving certificate), local listen
// addresses. It returns the node name it registers, once the Node exists.
func runVirtualKubelet(ctx context.Context, t, owner *testing.T, lt liqoTools, c *liqoCluster, ns, vn string) string {
	t.Helper()
	out, err := s.kube(ctx, c.cluster, nil, "get", "deployments", "-n", ns, "-l", "liqo.io/virtual-node="+vn, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Spec     struct {
				Template struct {
					Spec struct {
						ServiceAccountName string
						Containers         []struct {
							Args []string
							Env  []struct {
								Name, Value string
								ValueFrom   *struct {
									FieldRef *struct{ FieldPath string }
								}
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || len(list.Items[0].Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("want one virtual-kubelet Deployment for %s in %s on %s, got:\n%s", vn, ns, c.id, out)
	}
	d := list.Items[0]
	pod := d.Spec.Template.Spec
	fields := map[string]string{"metadata.name": d.Metadata.Name + "-e2e", "metadata.namespace": ns, "status.podIP": "127.0.0.1"}
	vars := map[string]string{}
	var envs []string
	for _, e := range pod.Containers[0].Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = fields[e.ValueFrom.FieldRef.FieldPath]
		}
		vars[e.Name] = v
		envs = append(envs, e.Name+"="+v)
	}
	var args []string
	for _, a := range pod.Containers[0].Args {
		for k, v := range vars {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		args = append(args, a)
	}
	home := serviceAccountKubeconfig(ctx, t, c, ns, pod.ServiceAccountName, filepath.Join(c.dir, "virtual-kubelet.kubeconfig"))
	_, listen, _ := net.SplitHostPort(testgit.FreeLoopbackAddr(t))
	args = withFlags(args, "--home-kubeconfig="+home, "--listen-port="+listen, "--metrics-address="+testgit.FreeLoopbackAddr(t))
	var node string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--nodename="); ok {
			node = v
		}
	}
	if node == "" {
		t.Fatalf("the virtual-kubelet Deployment gives no --nodename: %q", args)
	}
	envs = append(envs, "TMPDIR="+filepath.Join(c.dir, "tmp-virtual-kubelet"))
	if err := os.MkdirAll(filepath.Join(c.dir, "tmp-virtual-kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	vk := startProc(t, owner, c.id+"'s liqo-virtual-kubelet", filepath.Join(c.dir, "liqo-virtual-kubelet.log"), envs, lt.virtualKubelet, args...)
	t.Logf("virtual-kubelet %s: args %q", d.Metadata.Name, args)
	err = eventually(ctx, liqoTimeout, time.Second, func() error {
		if !vk.running() {
			return fmt.Errorf("the virtual-kubelet exited: %v\n%s", vk.err, e2eharness.Tail(vk.log, 20))
		}
		if got := kubeField(ctx, c.cluster, `{.status.conditions[?(@.type=="Ready")].status}`, "node", node); got != "True" {
			return fmt.Errorf("Node %s on %s: Ready %q", node, c.id, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// serviceAccountKubeconfig writes to file a kubeconfig for c's API server
// with a token (2h) of ServiceAccount ns/sa, as a Pod running as it would
// hold, and returns file.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, c *liqoCluster, ns, sa, file string) string {
	t.Helper()
	token, err := s.kube(ctx, c.cluster, nil, "create", "token", sa, "-n", ns, "--duration", "2h")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := s.kube(ctx, c.cluster, nil, "config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	if err != nil {
		t.Fatal(err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: home, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: %s, user: {token: %s}}]
contexts: [{name: home, context: {cluster: home, user: %s}}]
current-context: home
`, c.apiServer, strings.TrimSpace(ca), sa, strings.TrimSpace(token), sa)
	if err := os.WriteFile(file, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// watchSpec names the objects a fieldWatch follows: every object of
// resource in ns on c (or only name), and the field (dotted path) whose
// changes are counted.
type watchSpec struct {
	c                  *cluster
	resource, ns, name string
	field              string
}

// fieldWatch follows objects with `kubectl get --watch` (every change the
// API server reports, not samples) and keeps, per object and field, the
// sequence of the field's values (digests), consecutive repeats folded.
type fieldWatch struct {
	once    sync.Once
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	history map[string][]string
}

func watchFields(ctx context.Context, t *testing.T, specs []watchSpec) *fieldWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	fw := &fieldWatch{cancel: cancel, history: map[string][]string{}}
	for _, ws := range specs {
		args := []string{"--kubeconfig", ws.c.kubeconfig, "--cache-dir", filepath.Join(s.tmp, "kube-cache"),
			"get", ws.resource, "-n", ws.ns, "--watch", "-o", "json"}
		if ws.name != "" {
			args = append(args, "--field-selector", "metadata.name="+ws.name)
		}
		cmd := exec.CommandContext(ctx, s.kubectl, args...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fw.wg.Add(1)
		go func() {
			defer fw.wg.Done()
			defer func() { _ = cmd.Wait() }()
			dec := json.NewDecoder(stdout)
			for {
				var o map[string]any
				if err := dec.Decode(&o); err != nil {
					return
				}
				items := []map[string]any{o}
				if l, ok := o["items"].([]any); ok {
					items = items[:0]
					for _, i := range l {
						if m, ok := i.(map[string]any); ok {
							items = append(items, m)
						}
					}
				}
				for _, it := range items {
					md, _ := it["metadata"].(map[string]any)
					name, _ := md["name"].(string)
					var v any = it
					for _, f := range strings.Split(ws.field, ".") {
						m, _ := v.(map[string]any)
						v = m[f]
					}
					b, _ := json.Marshal(v)
					key := fmt.Sprintf("%s: %s %s/%s %s", ws.c.id, ws.resource, ws.ns, name, ws.field)
					fw.mu.Lock()
					h := fw.history[key]
					if d := digest(string(b)); len(h) == 0 || h[len(h)-1] != d {
						fw.history[key] = append(h, d)
					}
					fw.mu.Unlock()
				}
			}
		}()
	}
	return fw
}

// stop ends the watches and returns the histories.
func (fw *fieldWatch) stop() map[string][]string {
	fw.once.Do(func() {
		fw.cancel()
		fw.wg.Wait()
	})
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return maps.Clone(fw.history)
}
