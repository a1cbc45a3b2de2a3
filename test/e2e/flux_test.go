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

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// gitpeerFieldsOfSource is what field manager gitpeer owns of a cluster's
// GitRepository: the pin to the newest seal and the request to apply it
// now, in one server-side apply; no other field is gitpeer's.
const gitpeerFieldsOfSource = `{"f:metadata":{"f:annotations":{"f:reconcile.fluxcd.io/requestedAt":{}}},"f:spec":{"f:ref":{"f:commit":{}}}}`

const (
	// fluxInterval is the reconcilers' --interval and the GitRepositories'
	// spec.interval in this test (1m in manifests/flux and manifests/deploy).
	fluxInterval = "2s"
	// fluxTimeout bounds each wait for Flux and the reconcilers to reach a
	// state; every wait polls the state itself.
	fluxTimeout = 3 * time.Minute
	// fluxDrainPeriod is beta's provider.drainPeriod once the peering is
	// removed: many polls of the GitRepository, so Flux applies the drained
	// Tenant before beta withdraws it, yet within fluxTimeout. 30s was too
	// short on a 2-core machine kept busy by other work: Flux applied the
	// drained tree after beta had withdrawn it (the handshake's apply alone
	// took 71s there).
	fluxDrainPeriod = "2m"
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
// straight to the applied branch, is never applied; alpha rolls its key
// over mid-flight (rollOverKey) without its Flux ever refusing a head; and a
// peering removed from the spec is drained, then pruned.
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
	host := startGitHost(t, root, rwToken, roToken)
	repoURL := host.repoURL
	clone := func(t *testing.T, url, dir string) { host.clone(ctx, t, url, dir) }
	remoteHead := func(ref string) string {
		sha, err := host.remoteHead(ctx, ref)
		if err != nil {
			return ""
		}
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
		pushCRDs(ctx, t, liqoWork, crds)
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
			"--interval", fluxInterval, "--health-addr", testgit.FreeLoopbackAddr(t), "--log-level", "debug",
			"--key-rollover-wait", "5s"} // rollOverKey: announced 5s at least, then until Flux trusts it
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

	// The seal of beta's that holds alpha's RoleBinding and
	// ClusterRoleBinding: a writer replays it once the peering is revoked.
	var sealWithRBAC string
	if !check(t, "each reconciler pins its cluster's GitRepository to its newest seal (spec.ref.commit and the reconcile request, field manager gitpeer), branch and verify kept", func(t *testing.T) {
		for _, c := range order {
			repo := "gitpeer-" + c.id
			err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
				head := remoteHead("gitpeer/applied/" + c.id)
				if pin := fluxField(ctx, c, "gitrepository", repo, "{.spec.ref.commit}"); pin == "" || pin != head {
					return fmt.Errorf("%s's GitRepository pinned to %q, applied branch at %s", c.id, pin, head)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]string{"{.spec.ref.branch}": "gitpeer/applied/" + c.id, "{.spec.verify.mode}": "HEAD", "{.spec.verify.secretRef.name}": "gitpeer-signing"} {
				if got := fluxField(ctx, c, "gitrepository", repo, path); got != want {
					t.Errorf("%s's GitRepository %s = %q, want %q", c.id, path, got, want)
				}
			}
			// The pin and the request to apply it now, in one apply: no other
			// field of the object is gitpeer's.
			if owned := fieldsOwnedBy(ctx, c, "gitrepository", repo, "gitpeer"); owned != gitpeerFieldsOfSource {
				t.Errorf("field manager gitpeer owns %s of %s's GitRepository, want spec.ref.commit and the annotation reconcile.fluxcd.io/requestedAt alone", owned, c.id)
			}
		}
		sealWithRBAC = remoteHead("gitpeer/applied/" + providerID)
	}) {
		return
	}

	check(t, "kustomize-controller applying manifests/flux's GitRepository from a fleet repo leaves spec.ref.commit to gitpeer", func(t *testing.T) {
		// As a cluster's own Flux applies the overlay of docs/gitops.md:
		// its build, from a Git repo (here liqo.git, under fleet/beta),
		// by a Kustomization, server-side and forced.
		overlay := filepath.Join(root, providerID, "overlay")
		build, err := s.kube(ctx, beta, nil, "kustomize", overlay)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(build, "commit:") {
			t.Fatalf("the build of manifests/flux's overlay sets a commit:\n%s", build)
		}
		fleet := filepath.Join(root, "fleet-work")
		clone(t, host.URL("liqo.git"), fleet)
		testgit.WriteFiles(t, filepath.Join(fleet, "fleet", providerID), map[string][]byte{
			"gitpeer.yaml":       []byte(build),
			"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [gitpeer.yaml]\n"),
		})
		commitAndPush(ctx, t, fleet, "beta's gitpeer objects, as the cluster's fleet repo holds them")
		if _, err := s.kube(ctx, beta, []byte(fleetKustomization(providerID)), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-"); err != nil {
			t.Fatal(err)
		}
		pin := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.spec.ref.commit}")
		if err := reconcileNow(ctx, beta, "gitrepository", "liqo"); err != nil {
			t.Fatal(err)
		}
		err = eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := reconcileNow(ctx, beta, "kustomization", "fleet-"+providerID); err != nil {
				return err
			}
			if st, reason, msg := condition(ctx, beta, "kustomization", "fleet-"+providerID, "Ready"); st != "True" {
				return fmt.Errorf("Kustomization fleet-%s Ready %s (%s): %s", providerID, st, reason, msg)
			}
			if owned := fieldsOwnedBy(ctx, beta, "gitrepository", "gitpeer-beta", fluxManager); !strings.Contains(owned, `"f:branch"`) {
				return fmt.Errorf("%s does not own spec.ref.branch of GitRepository gitpeer-beta yet: %s", fluxManager, owned)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The pin may have moved since (beta's reconciler runs): it is
		// gitpeer's value, and gitpeer's alone.
		now := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.spec.ref.commit}")
		if now == "" || (now != pin && now != remoteHead("gitpeer/applied/"+providerID)) {
			t.Errorf("spec.ref.commit %q after %s applied the GitRepository, was %s", now, fluxManager, pin)
		}
		if owned := fieldsOwnedBy(ctx, beta, "gitrepository", "gitpeer-beta", fluxManager); strings.Contains(owned, `"f:commit"`) {
			t.Errorf("%s owns spec.ref.commit: %s", fluxManager, owned)
		}
		if owned := fieldsOwnedBy(ctx, beta, "gitrepository", "gitpeer-beta", "gitpeer"); owned != gitpeerFieldsOfSource {
			t.Errorf("field manager gitpeer owns %s, want spec.ref.commit and the annotation reconcile.fluxcd.io/requestedAt alone", owned)
		}
		// The rest of the test applies the overlay itself; the fleet's
		// objects stay (prune: false).
		if _, err := s.kube(ctx, beta, nil, "-n", fluxNamespace, "delete", "kustomization", "fleet-"+providerID); err != nil {
			t.Fatal(err)
		}
	})

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
	// plantBeyond tries what a writer of main can do besides editing beta's
	// kustomization: .sourceignore files at the root and under clusters/ that
	// drop beta's kustomization.yaml (Flux then generates one from every
	// manifest under ./clusters/beta), a ConfigMap planted in beta's inbox,
	// and, as alpha (a hostile peer: the test reads alpha's key from its
	// authentication-keys Secret), a ConfigMap alpha signs into its own
	// outbox to beta. None of it is in beta's applied tree.
	plantBeyond := func(t *testing.T) {
		t.Helper()
		configMap := func(name string) []byte {
			return []byte(strings.Replace(planted, "name: "+plantedName, "name: "+name, 1))
		}
		files := map[string][]byte{
			".sourceignore":          []byte("clusters/" + providerID + "/kustomization.yaml\n"),
			"clusters/.sourceignore": []byte(providerID + "/kustomization.yaml\n"),
			"clusters/" + providerID + "/inbox/" + consumerID + "/" + plantedName + "-inbox.yaml": configMap(plantedName + "-inbox"),
			"clusters/" + providerID + "/inbox/" + consumerID + "/" + plantedName + "-peer.yaml":  configMap(plantedName + "-peer"),
		}
		testgit.WriteTree(t, attacker, files)
		out, err := s.kube(ctx, alpha, nil, "get", "secret", "authentication-keys", "-n", "liqo", "-o", "jsonpath={.data.privateKey}")
		if err != nil {
			t.Fatal(err)
		}
		pemKey, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil {
			t.Fatal(err)
		}
		key, err := handshake.ParsePrivateKey(pemKey)
		if err != nil {
			t.Fatal(err)
		}
		outbox := "clusters/" + providerID + "/inbox/" + consumerID
		// Re-sign alpha's outbox as it stands, the inbox ConfigMap aside:
		// alpha's key vouches for the peer one only.
		inbox := filepath.Join(attacker, filepath.FromSlash(outbox), plantedName+"-inbox.yaml")
		away := filepath.Join(t.TempDir(), "inbox.yaml")
		if err := os.Rename(inbox, away); err != nil {
			t.Fatal(err)
		}
		m, err := dirmanifest.Reseal(layout.NewTree(attacker), key, consumerID, outbox, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(away, inbox); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(attacker, filepath.FromSlash(outbox), dirmanifest.FileName), m, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notPlanted := func() error {
		for _, name := range []string{plantedName, plantedName + "-inbox", plantedName + "-peer"} {
			if ok, err := exists(ctx, beta, "configmap", name, "-n", "default"); err != nil {
				return err
			} else if ok {
				return fmt.Errorf("FLUX APPLIED the planted ConfigMap default/%s on beta", name)
			}
		}
		return nil
	}

	check(t, "nothing planted on main (in clusters/beta/, its inbox, .sourceignore, a peer-signed outbox) is ever applied by beta's Flux", func(t *testing.T) {
		if _, err := s.git(ctx, attacker, "pull", "--quiet", "--ff-only"); err != nil {
			t.Fatal(err)
		}
		before := remoteHead("gitpeer/applied/" + providerID)
		plant(t)
		plantBeyond(t)
		if _, err := s.git(ctx, attacker, "add", "--all"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.git(ctx, attacker, "commit", "--quiet", "--amend", "--no-edit"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.git(ctx, attacker, "push", "--quiet", "origin", "HEAD:main"); err != nil {
			t.Fatal(err)
		}
		evil, _ := s.git(ctx, attacker, "rev-parse", "HEAD")
		evil = strings.TrimSpace(evil)
		// beta's next pass removes what it did not sign from its own tree,
		// on top of the attacker's commit. Its applied tree held none of it
		// before and holds none after, so the applied branch, which only
		// ever holds what beta signed, does not even move; Flux keeps
		// applying it, and the handshake stays Ready.
		var cleaned string
		err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := notPlanted(); err != nil {
				return err
			}
			if _, err := s.git(ctx, attacker, "fetch", "--quiet", "origin"); err != nil {
				return err
			}
			tip, _ := s.git(ctx, attacker, "rev-parse", "origin/main")
			tip = strings.TrimSpace(tip)
			if _, err := s.git(ctx, attacker, "merge-base", "--is-ancestor", evil, tip); err != nil {
				return fmt.Errorf("main at %s, not yet after the attacker's %s", tip, evil)
			}
			if out, _ := s.git(ctx, attacker, "ls-tree", "--name-only", tip, "clusters/"+providerID+"/planted.yaml"); strings.TrimSpace(out) != "" {
				return fmt.Errorf("main (%s) still holds clusters/%s/planted.yaml: beta has not passed yet", tip, providerID)
			}
			cleaned = tip
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// beta's status names what it ignored (UnexpectedArtifact), and
		// alpha's next pass drops what it did not write from its outbox,
		// so beta's applied branch may move a few times: every head it
		// points at holds only beta's own signed files, and Flux ends on
		// the last one.
		checkHead := func(head string) error {
			if _, err := s.git(ctx, attacker, "fetch", "--quiet", "origin", "gitpeer/applied/"+providerID); err != nil {
				return err
			}
			files, err := s.git(ctx, attacker, "ls-tree", "-r", "--name-only", head)
			if err != nil {
				return err
			}
			for _, f := range strings.Fields(files) {
				if !strings.HasPrefix(f, "clusters/"+providerID+"/") || strings.Contains(f, "/inbox/") || strings.Contains(f, "/.") || strings.Contains(f, plantedName) {
					t.Errorf("beta's applied tree %s holds %s", head, f)
				}
			}
			return nil
		}
		if head := remoteHead("gitpeer/applied/" + providerID); head != before {
			t.Logf("beta's applied branch moved from %s to %s while main went to %s", before, head, cleaned)
		}
		var last string
		err = eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := notPlanted(); err != nil {
				return err
			}
			head := remoteHead("gitpeer/applied/" + providerID)
			if head != last {
				if err := checkHead(head); err != nil {
					return err
				}
				last = head
			}
			if err := requestReconcile(ctx, beta, "gitrepository", "gitpeer-beta"); err != nil {
				return err
			}
			if rev := fluxField(ctx, beta, "kustomization", "gitpeer-beta", "{.status.lastAppliedRevision}"); !strings.HasSuffix(rev, head) {
				return fmt.Errorf("beta's Flux applied %s, not yet %s", rev, head)
			}
			if st, reason, msg := condition(ctx, beta, "kustomization", "gitpeer-beta", "Ready"); st != "True" {
				return fmt.Errorf("beta's Kustomization Ready %s (%s): %s", st, reason, msg)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}
		// The handshake did not notice: alpha's Flux still applies its
		// Identity, beta's its Tenant.
		for _, o := range []struct {
			c    *cluster
			args []string
		}{
			{beta, []string{"tenants.authentication.liqo.io", consumerID, "-n", providerTenantNS}},
			{alpha, []string{"identities.authentication.liqo.io", identityName, "-n", consumerTenantNS}},
		} {
			if ok, err := exists(ctx, o.c, o.args...); err != nil || !ok {
				t.Errorf("%s: %v not there (%v)", o.c.id, o.args, err)
			}
		}
	})

	check(t, "an unsigned commit pushed to gitpeer/applied/beta is not what Flux fetches, is not applied, and beta's reconciler reseals", func(t *testing.T) {
		// beta's reconciler stops, so that the forged head stays long
		// enough for Flux to see it.
		daemons[providerID].stop()
		good := remoteHead("gitpeer/applied/" + providerID)
		// The GitRepository is pinned to that last seal: a commit pushed on
		// top of it changes nothing Flux checks out (before pinning, Flux
		// fetched the forged head and refused its signature).
		if pin := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.spec.ref.commit}"); pin != good {
			t.Fatalf("beta's GitRepository is pinned to %q, the applied branch is at %s: beta's reconciler stopped between its push and its pin", pin, good)
		}
		if err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
			if err := reconcileNow(ctx, beta, "gitrepository", "gitpeer-beta"); err != nil {
				return err
			}
			if rev := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.status.artifact.revision}"); !strings.HasSuffix(rev, good) {
				return fmt.Errorf("artifact revision %s, want the last seal %s", rev, good)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
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
		if err := reconcileNow(ctx, beta, "gitrepository", "gitpeer-beta"); err != nil {
			t.Fatal(err)
		}
		if rev := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.status.artifact.revision}"); !strings.HasSuffix(rev, good) {
			t.Errorf("artifact revision %s with the forged %s on the branch, want the pinned seal %s", rev, forged, good)
		}
		if st, reason, msg := condition(ctx, beta, "gitrepository", "gitpeer-beta", "SourceVerified"); st != "True" || !strings.Contains(msg, good) {
			t.Errorf("SourceVerified %s (%s): %s; want the pinned seal %s verified", st, reason, msg, good)
		}
		if err := notPlanted(); err != nil {
			t.Fatal(err)
		}

		startDaemon(t, beta)
		err := eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
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

	check(t, "alpha rolls its key over mid-flight: its Flux never refuses a head, the grant stays, the old key ends up trusted nowhere", func(t *testing.T) {
		rollOverKey(ctx, t, alpha, beta, work)
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

	// Issue 28, case 1: the seal a writer replays is validly signed by
	// beta, and spec.verify checks only that. The pin is what keeps it out,
	// with beta's reconciler down too (nothing then moves the branch
	// back).
	check(t, "a writer points gitpeer/applied/beta back at an older seal holding alpha's RBAC: with beta's reconciler down, Flux keeps the newest seal and the RBAC stays revoked", func(t *testing.T) {
		daemons[providerID].stop()
		newest := remoteHead("gitpeer/applied/" + providerID)
		if pin := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.spec.ref.commit}"); pin != newest {
			t.Fatalf("beta's GitRepository is pinned to %q, the applied branch is at %s", pin, newest)
		}
		if _, err := s.git(ctx, attacker, "fetch", "--quiet", "origin"); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{roleBinding, clusterRoleBinding} {
			if out, _ := s.git(ctx, attacker, "grep", "-l", "name: "+name, sealWithRBAC, "--", "clusters/"+providerID); strings.TrimSpace(out) == "" {
				t.Fatalf("the older seal %s holds no %s", sealWithRBAC, name)
			}
		}
		if _, err := s.git(ctx, attacker, "push", "--quiet", "--force", "origin", sealWithRBAC+":refs/heads/gitpeer/applied/"+providerID); err != nil {
			t.Fatal(err)
		}
		// Two fetches, each after the replay, each applied.
		for range 2 {
			if err := reconcileNow(ctx, beta, "gitrepository", "gitpeer-beta"); err != nil {
				t.Fatal(err)
			}
			if rev := fluxField(ctx, beta, "gitrepository", "gitpeer-beta", "{.status.artifact.revision}"); !strings.HasSuffix(rev, newest) {
				t.Fatalf("FLUX FETCHED %s with the branch replayed to %s, want the newest seal %s", rev, sealWithRBAC, newest)
			}
			st, reason, msg := condition(ctx, beta, "gitrepository", "gitpeer-beta", "FetchFailed")
			t.Logf("beta's GitRepository: FetchFailed %s (%s): %s", st, reason, msg)
			if err := reconcileNow(ctx, beta, "kustomization", "gitpeer-beta"); err != nil {
				t.Fatal(err)
			}
			if rev := fluxField(ctx, beta, "kustomization", "gitpeer-beta", "{.status.lastAppliedRevision}"); !strings.HasSuffix(rev, newest) {
				t.Errorf("beta's Kustomization last applied %s, want the newest seal %s", rev, newest)
			}
			for _, r := range [][]string{{"rolebinding", roleBinding, "-n", providerTenantNS}, {"clusterrolebinding", clusterRoleBinding}} {
				if ok, err := exists(ctx, beta, r...); err != nil || ok {
					t.Fatalf("%v on beta after the replay (%v): the revoked consumer's RBAC is back", r, err)
				}
			}
		}
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

// fleetKustomization is a Kustomization fleet-<id> applying ./fleet/<id>
// of liqo.git (GitRepository liqo): as a cluster's Flux applies the
// gitpeer objects its fleet repo holds.
func fleetKustomization(id string) string {
	return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: fleet-%s
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: liqo
  path: ./fleet/%s
  prune: false
`, id, id)
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
// (params.env, <id>.sshpub as the bootstrap verify Secret gitpeer-signing,
// the component), plus patches for this test's
// pace: the GitRepository polls every fluxInterval, and a failed apply (a
// namespace still terminating) is retried after as long.
func writeFluxOverlay(t *testing.T, dir, id, repoURL, sshpub string) {
	t.Helper()
	writeFluxOverlayIntervals(t, dir, id, repoURL, sshpub, fluxInterval)
}

// writeFluxOverlayIntervals is writeFluxOverlay with the GitRepository's
// interval and the Kustomization's retryInterval set to interval, or left
// as manifests/flux ships them (1m, 1m) when interval is "".
func writeFluxOverlayIntervals(t *testing.T, dir, id, repoURL, sshpub, interval string) {
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
    options:
      disableNameSuffixHash: true
      annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}
`, filepath.ToSlash(component), id)
	if interval != "" {
		kustomization += fmt.Sprintf(`patches:
  - target: {group: source.toolkit.fluxcd.io, kind: GitRepository}
    patch: '[{"op": "replace", "path": "/spec/interval", "value": "%s"}]'
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: '[{"op": "replace", "path": "/spec/retryInterval", "value": "%s"}]'
`, interval, interval)
	}
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
