//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Names manifests/deploy gives its objects, and Liqo's namespace (the
// namespace of manifests/rbac's Role).
const (
	deployNamespace  = "gitpeer-system"
	deployName       = "gitpeer"
	deployContainer  = "gitpeer"
	deployGitSecret  = "gitpeer-git"
	deployLiqoNS     = "liqo"
	deployManager    = "gitpeer-deploy-e2e"
	deployServiceAcc = "system:serviceaccount:gitpeer-system:gitpeer"
	// deployInterval replaces the Deployment's --interval=1m.
	deployInterval = "2s"
	// deployReadyTimeout bounds the whole handshake of the two daemons (a
	// few seconds on an idle machine; the wait ends when it is done).
	deployReadyTimeout = readyTimeout
)

// denial matches a refusal in a log line: the API server's (RBAC's "... is
// forbidden: User ... cannot get resource ...", 401 Unauthorized) and the Git
// host's (gitauth names its 401 Unauthorized and 403 Forbidden).
var denial = regexp.MustCompile(`(?i)forbidden|cannot [a-z]+ resource|unauthorized`)

// deployed is one cluster's deployment of the reconciler, as this test
// builds, applies and runs it.
type deployed struct {
	c      *cluster
	dir    string
	build  []byte   // kustomize build of the overlay
	objs   []object // its objects
	core   corev1client.CoreV1Interface
	apps   appsv1client.AppsV1Interface
	leases coordinationv1client.CoordinationV1Interface
	// creds is the Secret gitpeer-git this cluster's admin creates (docs
	// step 4): https with a private CA.
	creds map[string][]byte
	// saKubeconfig holds the API server, its CA and the ServiceAccount's
	// token, nothing else.
	saKubeconfig string
	// grace is the Pod's terminationGracePeriodSeconds: how long the
	// kubelet waits after SIGTERM before it kills.
	grace time.Duration
	proc  *daemonProc
}

// daemonProc is one running `gitpeer reconcile`.
type daemonProc struct {
	cmd     *exec.Cmd
	log     string
	metrics string // host:port of --metrics-addr
	health  string // host:port of --health-addr
	// probes are the paths of the container's liveness and readiness
	// probes, served on --health-addr.
	probes []string
	exited chan struct{}
	err    error
}

// running reports whether the process has not exited yet.
func (p *daemonProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// TestDeployedReconcilersHandshakeAsTheirServiceAccount checks that the RBAC
// we ship is the RBAC that works (issue 9): manifests/deploy, manifests/rbac
// in it, is applied server-side to both API servers, following
// docs/deploy.md step by step, and each cluster's reconciler runs as the
// Deployment runs it, authenticated only by a TokenRequest token of
// ServiceAccount gitpeer-system/gitpeer, through a whole handshake with the
// other, both at once, and meets no Forbidden.
//
// No kubelet runs here, so the test plays it: it reads the applied
// Deployment back from the API server, resolves its env (ConfigMap keys, the
// downward API) and expands $(VAR) in its args as the kubelet does, lays the
// mounted Secret out as the kubelet does, and runs the image's entrypoint
// (gitpeer) with those args. What differs from a Pod: the paths of the two
// volumes the args name (Git credentials, checkout) are temp dirs; the API
// server is reached through KUBECONFIG holding the token rather than the
// in-cluster config's fixed paths; and the overlay, besides CLUSTER_ID and
// REPO_URL as in docs/deploy.md, replaces --interval=1m (four alternating
// passes would take minutes) and the :8080/:8081 listen addresses (two
// processes on one host) with a JSON patch whose test ops pin the base's
// values.
func TestDeployedReconcilersHandshakeAsTheirServiceAccount(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	root := filepath.Join(s.tmp, "deploy")
	base := filepath.Join(s.root, "manifests", "deploy")

	// The Git host: git-http-backend over TLS with a private CA. alpha
	// authenticates with a bearer token, beta with basic auth, as the two
	// HTTPS shapes of Flux's Git Secret.
	const (
		alphaToken = "alpha-deploy-token"
		betaUser   = "beta-deploy"
		betaPass   = "beta-deploy-password"
	)
	gitRoot := filepath.Join(root, "git")
	if err := os.MkdirAll(gitRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.Bare(t, filepath.Join(gitRoot, "peering.git"))
	host := testgit.StartHTTPS(t, gitRoot, testgit.HTTPAuth{Token: alphaToken, Username: betaUser, Password: betaPass})
	repoURL := host.URL("peering.git")
	caFile := filepath.Join(root, "git-ca.crt")
	if err := os.WriteFile(caFile, host.CACert, 0o644); err != nil {
		t.Fatal(err)
	}

	// The admins' git trusts the host's CA (GIT_SSL_CAINFO: an environment's
	// own would win over http.sslCAInfo).
	t.Setenv("GIT_SSL_CAINFO", caFile)

	ds := map[string]*deployed{}
	order := []string{consumerID, providerID}
	for _, id := range order {
		c := s.clusters[id]
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		d := &deployed{c: c, dir: filepath.Join(root, id)}
		if d.core, err = corev1client.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if d.apps, err = appsv1client.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if d.leases, err = coordinationv1client.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		d.creds = map[string][]byte{"ca.crt": host.CACert}
		if id == consumerID {
			d.creds["bearerToken"] = []byte(alphaToken)
		} else {
			d.creds["username"], d.creds["password"] = []byte(betaUser), []byte(betaPass)
		}
		ds[id] = d
	}
	forEach := func(t *testing.T, fn func(t *testing.T, d *deployed)) {
		t.Helper()
		for _, id := range order {
			t.Run(id, func(t *testing.T) { fn(t, ds[id]) })
		}
	}
	// Last, as docs/deploy.md's "Removing it" does: the objects of the build
	// go, Liqo's namespace keeps the cluster's Secrets.
	t.Cleanup(func() {
		for _, d := range ds {
			if d.build == nil {
				continue
			}
			if _, err := s.kube(context.Background(), d.c, d.build, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
				t.Errorf("remove the deployment from %s: %v", d.c.id, err)
			}
		}
	})
	t.Cleanup(func() {
		for _, d := range ds {
			if d.proc == nil {
				continue
			}
			if d.proc.running() {
				_ = d.proc.cmd.Process.Kill()
				<-d.proc.exited
			}
			if t.Failed() {
				t.Logf("log of %s's reconciler:\n%s", d.c.id, e2eharness.Tail(d.proc.log, 60))
			}
		}
	})

	// alpha is installed from manifests/deploy (kustomize), beta from
	// manifests/chart (Helm): each install meets every check below, and
	// the handshake runs between the two.
	if !check(t, "manifests/deploy builds with an overlay of docs/deploy.md (alpha), manifests/chart renders with helm install's values (beta)", func(t *testing.T) {
		baseBuild, err := s.kube(ctx, ds[consumerID].c, nil, "kustomize", base)
		if err != nil {
			t.Fatal(err)
		}
		baseArgs := deploymentArgs(t, []byte(baseBuild))
		forEach(t, func(t *testing.T, d *deployed) {
			if d.c.id == providerID {
				d.build = renderChart(t, filepath.Join(s.root, "manifests", "chart"), d.c.id, repoURL)
			} else {
				overlay := filepath.Join(d.dir, "overlay")
				writeOverlay(t, overlay, base, baseArgs, d.c.id, repoURL)
				out, err := s.kube(ctx, d.c, nil, "kustomize", overlay)
				if err != nil {
					t.Fatal(err)
				}
				d.build = []byte(out)
			}
			var err error
			if d.objs, err = parseObjects(d.build); err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range d.objs {
				kinds = append(kinds, o.Kind)
			}
			slices.Sort(kinds)
			// Two Roles and RoleBindings: Liqo's namespace, and gitpeer-flux
			// in flux-system (the key rollover reads what Flux trusts).
			want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Namespace", "Role", "Role", "RoleBinding", "RoleBinding", "ServiceAccount"}
			if !slices.Equal(kinds, want) {
				t.Fatalf("build has %v, want %v", kinds, want)
			}
		})
	}) {
		return
	}

	if !check(t, "each admin creates Secret gitpeer-git in gitpeer-system with the keys of Flux's Git Secret (docs step 4)", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			if _, err := s.kube(ctx, d.c, nil, "create", "namespace", deployNamespace); err != nil {
				t.Fatal(err)
			}
			args := []string{"-n", deployNamespace, "create", "secret", "generic", deployGitSecret}
			for _, k := range slices.Sorted(maps.Keys(d.creds)) {
				f := filepath.Join(d.dir, "secret-src", k)
				testgit.WriteFiles(t, filepath.Dir(f), map[string][]byte{k: d.creds[k]})
				args = append(args, "--from-file="+k+"="+f)
			}
			if _, err := s.kube(ctx, d.c, nil, args...); err != nil {
				t.Fatal(err)
			}
		})
	}) {
		return
	}

	work := filepath.Join(root, "work")
	if !check(t, "gitpeer init --backend kubernetes as each admin, and the spec merged over HTTPS (docs step 5)", func(t *testing.T) {
		// The admin's git authenticates with alpha's token.
		header := "http.extraHeader=Authorization: Bearer " + alphaToken
		if _, err := s.git(ctx, "", "-c", header, "clone", "--quiet", repoURL, work); err != nil {
			t.Fatal(err)
		}
		k, v, _ := strings.Cut(header, "=")
		if _, err := s.git(ctx, work, "config", k, v); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(peeringSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, id := range order {
			c := s.clusters[id]
			if _, err := s.gitpeerCmd(ctx, "init", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig,
				"--cluster", c.id, "--api-server", c.apiServer, "--repo", work); err != nil {
				t.Fatal(err)
			}
		}
		commitAndPush(ctx, t, work, "Peer alpha (consumer) with beta (provider), deployed")
	}) {
		return
	}

	if !check(t, "both API servers accept every object of the build, applied server-side (docs step 6)", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			// These clusters run Flux in the docs' setting: its namespace
			// exists before the reconciler's Role gitpeer-flux goes into it.
			if out, err := s.kube(ctx, d.c, nil, "get", "namespace", "flux-system", "--ignore-not-found", "-o", "name"); err != nil {
				t.Fatal(err)
			} else if strings.TrimSpace(out) == "" {
				if _, err := s.kube(ctx, d.c, nil, "create", "namespace", "flux-system"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.kube(ctx, d.c, d.build, "apply", "--server-side", "--field-manager", deployManager,
				"--validate=strict", "-f", "-"); err != nil {
				t.Fatal(err)
			}
			// Read each object back: it exists, and this apply manages it.
			out, err := s.kube(ctx, d.c, d.build, "get", "-f", "-", "-o",
				`jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.managedFields[*].manager}{"\n"}{end}`)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				ref, managers, _ := strings.Cut(line, " ")
				got[ref] = managers
			}
			for _, o := range d.objs {
				ref := o.Kind + "/" + o.Namespace + "/" + o.Name
				if managers, ok := got[ref]; !ok {
					t.Errorf("%s: not on the API server after apply", ref)
				} else if !slices.Contains(strings.Fields(managers), deployManager) {
					t.Errorf("%s: managed by %q, not by this apply", ref, managers)
				}
			}
		})
	}) {
		return
	}

	podNames := map[string]string{}
	check(t, "the Pod the Deployment would create passes the namespace's restricted Pod Security admission", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			dep, err := d.apps.Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: dep.Name + "-", Namespace: dep.Namespace, Labels: dep.Spec.Template.Labels},
				Spec:       dep.Spec.Template.Spec,
			}
			got, err := d.core.Pods(deployNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("dry-run create of the Deployment's Pod: %v", err)
			}
			podNames[d.c.id] = got.Name
		})
	})

	if !check(t, "a TokenRequest token of ServiceAccount gitpeer-system/gitpeer is all the reconciler's kubeconfig holds", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			tok, err := d.core.ServiceAccounts(deployNamespace).CreateToken(ctx, deployName, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ca, err := os.ReadFile(filepath.Join(d.c.dir, "pki", "ca.crt"))
			if err != nil {
				t.Fatal(err)
			}
			kc := clientcmdapi.NewConfig()
			kc.Clusters[d.c.id] = &clientcmdapi.Cluster{Server: d.c.apiServer, CertificateAuthorityData: ca}
			kc.AuthInfos["gitpeer"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
			kc.Contexts["gitpeer"] = &clientcmdapi.Context{Cluster: d.c.id, AuthInfo: "gitpeer"}
			kc.CurrentContext = "gitpeer"
			d.saKubeconfig = filepath.Join(d.dir, "serviceaccount.kubeconfig")
			if err := clientcmd.WriteToFile(*kc, d.saKubeconfig); err != nil {
				t.Fatal(err)
			}
			out, err := s.kubeAs(ctx, d.saKubeconfig, nil, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
			if err != nil {
				t.Fatal(err)
			}
			if out != deployServiceAcc {
				t.Fatalf("the token authenticates as %q, want %s", out, deployServiceAcc)
			}
		})
	}) {
		return
	}

	if !check(t, "each reconciler starts with exactly the applied Deployment's args, env and mounted Secret", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			dep, err := d.apps.Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			podName := podNames[d.c.id]
			if podName == "" {
				podName = dep.Name + "-e2e"
			}
			d.proc = startFromDeployment(ctx, t, d, dep, podName)
		})
	}) {
		return
	}
	// Both run at once from here.

	check(t, "the peering becomes Ready on both sides, and gitpeer_peering_ready is 1 on each metrics endpoint", func(t *testing.T) {
		series := map[string]string{
			consumerID: `gitpeer_peering_ready{consumer="alpha",provider="beta",role="consumer"}`,
			providerID: `gitpeer_peering_ready{consumer="alpha",provider="beta",role="provider"}`,
		}
		err := eventually(ctx, deployReadyTimeout, 250*time.Millisecond, func() error {
			for _, id := range order {
				d := ds[id]
				if !d.proc.running() {
					return fmt.Errorf("%s's reconciler exited: %v", id, d.proc.err)
				}
				if v := metricValue(d.proc.metrics, series[id]); v != 1 {
					return fmt.Errorf("%s: %s = %v", id, series[id], v)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Ready on both sides %.1fs after the test started", time.Since(start).Seconds())
		if _, err := s.git(ctx, work, "pull", "--quiet", "--ff-only", "origin", "main"); err != nil {
			t.Fatal(err)
		}
		s.wantOneReady(ctx, t, work)
	})

	check(t, "the kubelet's liveness and readiness probes get 200", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			c := http.Client{Timeout: 5 * time.Second}
			for _, path := range d.proc.probes {
				resp, err := c.Get("http://" + d.proc.health + path)
				if err != nil {
					t.Error(err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s: %s\n%s", path, resp.Status, body)
				}
			}
		})
	})

	check(t, "Lease gitpeer-<cluster> in Liqo's namespace is held by the running reconciler", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			lease, err := d.leases.Leases(deployLiqoNS).Get(ctx, "gitpeer-"+d.c.id, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			holder := ""
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			identity := logField(t, d.proc.log, "leading: passes run in this process", "identity")
			if holder == "" || holder != identity {
				t.Errorf("Lease %s/gitpeer-%s: holder %q, want the reconciler's identity %q", deployLiqoNS, d.c.id, holder, identity)
			}
		})
	})

	check(t, "SIGTERM stops both within the Deployment's grace period, exit 0, Lease released", func(t *testing.T) {
		for _, d := range ds {
			if err := d.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("%s: %v", d.c.id, err)
			}
		}
		forEach(t, func(t *testing.T, d *deployed) {
			select {
			case <-d.proc.exited:
			case <-time.After(d.grace):
				t.Fatalf("still running %s after SIGTERM (terminationGracePeriodSeconds): the kubelet would SIGKILL it", d.grace)
			}
			if d.proc.err != nil {
				t.Errorf("exit after SIGTERM: %v", d.proc.err)
			}
			if logField(t, d.proc.log, "released the Lease", "identity") == "" {
				t.Error(`no "released the Lease" in the log`)
			}
			lease, err := d.leases.Leases(deployLiqoNS).Get(ctx, "gitpeer-"+d.c.id, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
				t.Errorf("Lease still held by %q after SIGTERM", *h)
			}
		})
	})

	check(t, "neither reconciler logged a Forbidden, an RBAC denial or an error", func(t *testing.T) {
		forEach(t, func(t *testing.T, d *deployed) {
			f, err := os.Open(d.proc.log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			lines := 0
			for sc.Scan() {
				lines++
				line := sc.Text()
				var l struct {
					Level string `json:"level"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Errorf("not a JSON log line (--log-encoding=json): %s", line)
					continue
				}
				if denial.MatchString(line) {
					t.Errorf("denied: %s", line)
				} else if l.Level == "error" {
					t.Errorf("error: %s", line)
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if lines == 0 {
				t.Error("empty log")
			}
		})
	})

	check(t, "the Events each reconciler posted during the handshake are on its Lease", func(t *testing.T) {
		want := map[string]string{consumerID: "IdentityAccepted", providerID: "IdentityIssued"}
		forEach(t, func(t *testing.T, d *deployed) {
			evs, err := d.core.Events(deployLiqoNS).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Lease,involvedObject.name=gitpeer-" + d.c.id,
			})
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Contains(reasons, want[d.c.id]) {
				t.Errorf("Events about Lease %s/gitpeer-%s have reasons %v, want %s among them", deployLiqoNS, d.c.id, reasons, want[d.c.id])
			}
		})
	})

	t.Logf("deploy test: %.1fs", time.Since(start).Seconds())
}

// renderChart renders the chart in dir as `helm template gitpeer dir -n
// gitpeer-system` does with the values of docs/deploy.md's helm install
// (cluster, repo, image, the namespace made as manifests/deploy makes it),
// and, as writeOverlay does for kustomize, --interval and the listen
// ports set for a test: the listen addresses are the chart's ":<port>".
func renderChart(t *testing.T, dir, clusterID, repoURL string) []byte {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := func() int {
		_, p, _ := strings.Cut(testgit.FreeLoopbackAddr(t), ":")
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	vals := map[string]any{
		"clusterID": clusterID,
		"repoURL":   repoURL,
		"namespace": map[string]any{"create": true},
		"image":     map[string]any{"repository": "registry.example.invalid/platform/gitpeer", "tag": "e2e"},
		"reconcile": map[string]any{"interval": deployInterval},
		"metrics":   map[string]any{"port": port()},
		"health":    map[string]any{"port": port()},
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "gitpeer", Namespace: deployNamespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, strings.TrimSpace(files[name]))
	}
	return []byte(out.String())
}

// deploymentArgs returns the args of the gitpeer container of the
// Deployment in a kustomize build.
func deploymentArgs(t *testing.T, build []byte) []string {
	t.Helper()
	dep := deploymentIn(t, build)
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == deployContainer {
			return c.Args
		}
	}
	t.Fatalf("no container %s in Deployment %s", deployContainer, dep.Name)
	return nil
}

// deploymentIn decodes the Deployment of a kustomize build.
func deploymentIn(t *testing.T, build []byte) *appsv1.Deployment {
	t.Helper()
	for _, doc := range strings.Split(string(build), "\n---\n") {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &dep); err != nil {
			t.Fatal(err)
		}
		if dep.Kind == "Deployment" {
			return &dep
		}
	}
	t.Fatal("no Deployment in the build")
	return nil
}

// writeOverlay writes an overlay of base as docs/deploy.md shows one (the
// ConfigMap's params.env replaced, the component cluster-id naming the
// cluster's GitOps source in the Roles, an image name), plus a JSON patch that
// replaces --interval, --metrics-addr and --health-addr: each replace comes
// after a test op on the base's value, so that the build fails if the base's
// args change under it.
func writeOverlay(t *testing.T, dir, base string, baseArgs []string, clusterID, repoURL string) {
	t.Helper()
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{
		"--interval=":     "--interval=" + deployInterval,
		"--metrics-addr=": "--metrics-addr=" + testgit.FreeLoopbackAddr(t),
		"--health-addr=":  "--health-addr=" + testgit.FreeLoopbackAddr(t),
	}
	var ops []map[string]string
	for i, a := range baseArgs {
		for prefix, with := range replace {
			if strings.HasPrefix(a, prefix) {
				path := fmt.Sprintf("/spec/template/spec/containers/0/args/%d", i)
				ops = append(ops, map[string]string{"op": "test", "path": path, "value": a},
					map[string]string{"op": "replace", "path": path, "value": with})
				delete(replace, prefix)
			}
		}
	}
	if len(replace) > 0 {
		t.Fatalf("the base's Deployment has no args %v", slices.Sorted(maps.Keys(replace)))
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
components:
  - %s/cluster-id
configMapGenerator:
  - name: gitpeer-config
    namespace: gitpeer-system
    behavior: replace
    envs: [params.env]
images:
  - name: gitpeer
    newName: registry.example.invalid/platform/gitpeer
    newTag: e2e
patches:
  - target: {kind: Deployment, name: gitpeer}
    patch: '%s'
`, filepath.ToSlash(rel), filepath.ToSlash(rel), patch)
	params := fmt.Sprintf("CLUSTER_ID=%s\nREPO_URL=%s\n", clusterID, repoURL)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"kustomization.yaml": kustomization, "params.env": params} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// startFromDeployment starts gitpeer as the kubelet would start the
// Deployment's container: the image's entrypoint with the container's args,
// $(VAR) expanded from its env; env from ConfigMaps and the downward API;
// the Secret volume written as the kubelet writes it. The paths of the
// Secret and emptyDir volumes are the only change: each mount path is mapped
// to a temp dir, in the args too. The API server is reached through
// KUBECONFIG (the ServiceAccount's token), not the in-cluster config's fixed
// paths.
func startFromDeployment(ctx context.Context, t *testing.T, d *deployed, dep *appsv1.Deployment, podName string) *daemonProc {
	t.Helper()
	spec := dep.Spec.Template.Spec
	var ctr *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == deployContainer {
			ctr = &spec.Containers[i]
		}
	}
	if ctr == nil {
		t.Fatalf("Deployment %s has no container %s", dep.Name, deployContainer)
	}
	if len(ctr.Command) > 0 || len(ctr.EnvFrom) > 0 {
		t.Fatalf("container %s has command %v or envFrom: this test runs the image's entrypoint with env only", ctr.Name, ctr.Command)
	}
	if spec.ServiceAccountName != deployName {
		t.Fatalf("the Pod runs as ServiceAccount %q, the token is for %q", spec.ServiceAccountName, deployName)
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		d.grace = time.Duration(*g) * time.Second
	} else {
		d.grace = 30 * time.Second
	}

	// Env, in order, as the kubelet resolves it: a value may refer to the
	// vars before it; valueFrom is taken as is.
	vars := map[string]string{}
	var env []string
	for _, e := range ctr.Env {
		var v string
		switch src := e.ValueFrom; {
		case src == nil:
			v = expandVars(e.Value, vars)
		case src.ConfigMapKeyRef != nil:
			cm, err := d.core.ConfigMaps(dep.Namespace).Get(ctx, src.ConfigMapKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("env %s: %v", e.Name, err)
			}
			val, ok := cm.Data[src.ConfigMapKeyRef.Key]
			if !ok {
				t.Fatalf("env %s: ConfigMap %s has no key %s", e.Name, cm.Name, src.ConfigMapKeyRef.Key)
			}
			v = val
		case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.name":
			v = podName
		case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.namespace":
			v = dep.Namespace
		default:
			t.Fatalf("env %s: a source this test does not resolve: %+v", e.Name, src)
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}

	// Volumes: the Secret written as the kubelet writes it, emptyDirs empty.
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	hostPath := map[string]string{} // mount path → temp dir
	for _, m := range ctr.VolumeMounts {
		v := volumes[m.Name]
		dir := filepath.Join(d.dir, "volumes", m.Name)
		switch {
		case v.Secret != nil:
			if len(v.Secret.Items) > 0 || m.SubPath != "" {
				t.Fatalf("volume %s: items or subPath: not handled here", m.Name)
			}
			sec, err := d.core.Secrets(dep.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", m.Name, err)
			}
			mode := os.FileMode(0o644)
			if v.Secret.DefaultMode != nil {
				mode = os.FileMode(*v.Secret.DefaultMode)
			}
			writeSecretVolume(t, dir, sec.Data, mode)
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("volume %s: neither a Secret nor an emptyDir", m.Name)
		}
		hostPath[m.MountPath] = dir
	}

	// Args: $(VAR) expanded from the env, then mount paths mapped.
	var args, mapped []string
	for _, a := range ctr.Args {
		a = expandVars(a, vars)
		if strings.Contains(a, "$(") {
			t.Fatalf("arg %q refers to a var the container does not define", a)
		}
		if flag, val, ok := strings.Cut(a, "="); ok {
			for mount, dir := range hostPath {
				if val == mount || strings.HasPrefix(val, mount+"/") {
					a = flag + "=" + dir + strings.TrimPrefix(val, mount)
					mapped = append(mapped, flag)
				}
			}
		}
		args = append(args, a)
	}
	slices.Sort(mapped)
	if !slices.Equal(mapped, []string{"--checkout", "--git-credentials"}) {
		t.Fatalf("args naming a volume's path: %v, want --checkout and --git-credentials", mapped)
	}
	var metrics, health string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--metrics-addr="); ok {
			metrics = v
		}
		if v, ok := strings.CutPrefix(a, "--health-addr="); ok {
			health = v
		}
	}
	if metrics == "" || health == "" {
		t.Fatal("the Deployment passes no --metrics-addr or no --health-addr")
	}
	var probes []string
	for _, pr := range []*corev1.Probe{ctr.LivenessProbe, ctr.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			t.Fatal("the container has no httpGet liveness or readiness probe")
		}
		probes = append(probes, pr.HTTPGet.Path)
	}
	t.Logf("gitpeer %s", strings.Join(args, " "))

	// The process's environment is the container's: no PATH holding git
	// (the image has none), HOME of its own, and KUBECONFIG for the token.
	home := filepath.Join(d.dir, "home")
	emptyPath := filepath.Join(d.dir, "empty-path")
	for _, dir := range []string{home, emptyPath} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &daemonProc{log: filepath.Join(d.dir, "reconciler.log"), metrics: metrics, health: health, probes: probes, exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(s.gitpeer, args...)
	p.cmd.Dir = home
	p.cmd.Env = append(env, "HOME="+home, "PATH="+emptyPath, "KUBECONFIG="+d.saKubeconfig, "TMPDIR="+os.TempDir())
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = dieWithParent()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p
}

// writeSecretVolume lays a Secret's data out as the kubelet's atomic writer
// does: the files in a timestamped directory, ..data a symlink to it, and
// one symlink per key to ..data/<key>.
func writeSecretVolume(t *testing.T, dir string, data map[string][]byte, mode os.FileMode) {
	t.Helper()
	ts := "..2026_01_01_00_00_00.000000001"
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		f := filepath.Join(dir, ts, k)
		if err := os.WriteFile(f, v, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for k := range data {
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
}

// expandVars expands $(VAR) in s from vars as the kubelet expands a
// container's env values, command and args (Kubernetes'
// third_party/forked/golang/expansion): $$ is a literal $, a reference to
// an undefined var is left as it is.
func expandVars(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func TestExpandVarsAsTheKubelet(t *testing.T) {
	vars := map[string]string{"A": "x", "EMPTY": ""}
	for in, want := range map[string]string{
		"--a=$(A)":         "--a=x",
		"$(A)$(A)":         "xx",
		"$$(A)":            "$(A)",
		"$(B)":             "$(B)",
		"$(EMPTY)-":        "-",
		"$(A":              "$(A",
		"a$":               "a$",
		"$b":               "$b",
		"--spec=$(A)Mi":    "--spec=xMi",
		"no references":    "no references",
		"$$$(A)":           "$x",
		"$(A)$$":           "x$",
		"--checkout=/x/$y": "--checkout=/x/$y",
	} {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// metricValue is the value of one series on a /metrics endpoint, or -1.
func metricValue(addr, series string) float64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return v
}

// logField returns field key of the last JSON log line whose msg is msg,
// or "".
func logField(t *testing.T, path, msg, key string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	val := ""
	for _, line := range strings.Split(string(data), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil || l["msg"] != msg {
			continue
		}
		if v, ok := l[key].(string); ok {
			val = v
		}
	}
	return val
}
