//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/test/e2eharness"
)

// Versions and places the suite depends on. The Liqo version is the one
// go.mod requires: its CRDs are the schemas the API servers check against.
const (
	liqoModule   = "github.com/liqotech/liqo@v1.2.0"
	liqoCRDs     = "deployments/liqo/charts/liqo-crds/crds"
	fieldManager = "gitpeer-e2e"
	// commandTimeout bounds every command the suite runs: a hung kubectl or
	// reconciler fails its step instead of eating the whole -timeout. It
	// exceeds readyTimeout, which kubectl wait is given.
	commandTimeout = 6 * time.Minute
	// readyTimeout bounds each wait for something to be ready (CRDs
	// Established, Flux's controllers' /readyz, an RBAC change reaching the
	// authorizer). The waits end as soon as it is, so the bound costs nothing
	// on a good run and is generous for a cold, loaded 2-core machine.
	readyTimeout = 5 * time.Minute
)

// clusterSpecs are the two control planes. Their IDX picks the port block
// 20000+IDX*100 of hack/start-cluster.sh; 31 and 32 are reserved for this
// suite (33 for internal/controller/daemon/'s) so it never collides with other suites or a
// developer's clusters.
var clusterSpecs = []struct {
	id  string
	idx int
}{{"alpha", 31}, {"beta", 32}}

// suite is the state TestMain sets up once for every test: two clusters, a
// Git server and the binaries. Everything lives under tmp.
type suite struct {
	root     string // the gitpeer module's root
	tmp      string
	kubeBin  string // etcd, kube-apiserver, kube-controller-manager, kubectl
	kubectl  string
	gitpeer  string
	gitserve *exec.Cmd
	bare     string // the peering repo, served at gitURL
	gitURL   string
	flux     string // the checkout the "GitOps tool" applies from
	clusters map[string]*cluster
	started  []string // clusters whose start was attempted: stop these
	// reconcileFlags are added to every `gitpeer reconcile`, e.g.
	// --liqo-cluster-roles when the CLI has it (nothing here runs Liqo).
	reconcileFlags []string

	stopOnce sync.Once
	stopping atomic.Bool
	// failed is set when set-up or a test failed, or the run was cut short:
	// stop then keeps the logs (e2eharness.Dispose).
	failed atomic.Bool
	mu     sync.Mutex
	// consumerKubeconfig is alpha's kubeconfig for beta, read from the Secret
	// the backend wrote, once a step has fetched it.
	consumerKubeconfig string
}

// cluster is one control plane and what the suite last applied to it.
type cluster struct {
	id         string
	idx        int
	dir        string
	kubeconfig string // system:masters
	apiServer  string
	// inventory is the set of objects of the last successful apply of
	// clusters/<id>/: what a later apply prunes when they leave the build,
	// as Flux's kustomize-controller does with its inventory. Values are the
	// apiVersion each object was applied with, for deleting it.
	inventory map[objRef]string
}

// objRef identifies an applied object across apiVersion changes: an object
// whose manifest moves to a new version of its group is the same object.
type objRef struct {
	Group, Kind, Namespace, Name string
}

func (r objRef) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace != "" {
		return k + " " + r.Namespace + "/" + r.Name
	}
	return k + " " + r.Name
}

// setUp builds what the suite needs, starts both clusters and the Git
// server. On error the caller still runs stop: whatever started is stopped.
func (s *suite) setUp(ctx context.Context) error {
	var err error
	if s.root, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		return err
	}
	if s.tmp, err = os.MkdirTemp("", "gitpeer-e2e-"); err != nil {
		return err
	}
	s.kubeBin = e2eharness.KubeBin()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(s.kubeBin, b)); err != nil {
			return fmt.Errorf("%s not in KUBE_BIN=%s: run `make e2e-tools` (builds Kubernetes and etcd from the Go module proxy)", b, s.kubeBin)
		}
	}
	s.kubectl = filepath.Join(s.kubeBin, "kubectl")
	if _, err := os.Stat(s.kubectl); err != nil {
		if s.kubectl, err = exec.LookPath("kubectl"); err != nil {
			return errors.New("kubectl neither in KUBE_BIN nor on PATH: run `make e2e-tools`")
		}
	}
	for _, d := range []string{"bin", "logs", "git", "checkout", "kube-cache"} {
		if err := os.MkdirAll(filepath.Join(s.tmp, d), 0o755); err != nil {
			return err
		}
	}

	// Binaries: gitpeer as the Makefile built it (or built here for a bare
	// `go test -tags e2e ./e2e/`), and the Git server, which only this suite uses.
	if s.gitpeer, err = e2eharness.GitpeerBinary(ctx, s.root, filepath.Join(s.tmp, "bin")); err != nil {
		return err
	}
	gitserve := filepath.Join(s.tmp, "bin", "gitserve")
	if _, err := s.run(ctx, s.root, nil, "go", "build", "-o", gitserve, "./hack/gitserve"); err != nil {
		return err
	}
	if help, err := s.run(ctx, "", nil, s.gitpeer, "reconcile", "--help"); err == nil && strings.Contains(help, "--liqo-cluster-roles") {
		s.reconcileFlags = append(s.reconcileFlags, "--liqo-cluster-roles")
	} else {
		fmt.Fprintln(os.Stderr, "e2e: gitpeer reconcile has no --liqo-cluster-roles: Liqo's ClusterRoles will be missing on the provider")
	}

	// Both clusters at once: each is ~5 s of mostly waiting.
	s.clusters = map[string]*cluster{}
	errs := make([]error, len(clusterSpecs))
	var wg sync.WaitGroup
	for i, cs := range clusterSpecs {
		c := &cluster{id: cs.id, idx: cs.idx, dir: filepath.Join(s.tmp, "clusters", cs.id), inventory: map[objRef]string{}}
		c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
		s.clusters[c.id] = c
		s.started = append(s.started, c.id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.startCluster(ctx, c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// Liqo's CRDs, from the module go.mod requires.
	out, err := s.run(ctx, s.root, nil, "go", "mod", "download", "-json", liqoModule)
	if err != nil {
		return err
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download %s: no module directory in %q", liqoModule, out)
	}
	crds := filepath.Join(mod.Dir, filepath.FromSlash(liqoCRDs))
	for i, cs := range clusterSpecs {
		c := s.clusters[cs.id]
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Server-side: the CRDs are too large for the last-applied annotation.
			if _, err := s.kube(ctx, c, nil, "apply", "--server-side", "--field-manager", fieldManager, "-f", crds); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = s.kube(ctx, c, nil, "wait", "--for=condition=Established", "crd", "--all", "--timeout="+readyTimeout.String())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("install Liqo CRDs: %w", err)
	}

	return s.startGitServer(ctx)
}

// controlPlane is the control plane of cluster id, port block idx, under
// the suite's temp dir: clusters/<id>, its start-up logs in logs/.
func (s *suite) controlPlane(id string, idx int) *e2eharness.ControlPlane {
	return &e2eharness.ControlPlane{Name: id, Idx: idx, Root: filepath.Join(s.tmp, "clusters"), Bin: s.kubeBin,
		Hack: filepath.Join(s.root, "hack"), Logs: filepath.Join(s.tmp, "logs"), Prefix: "e2e"}
}

// startCluster starts c's control plane (with its one retry) and reads its
// API server's URL.
func (s *suite) startCluster(ctx context.Context, c *cluster) error {
	cp := s.controlPlane(c.id, c.idx)
	if err := cp.Start(ctx); err != nil {
		return err
	}
	var err error
	c.apiServer, err = cp.APIServer()
	return err
}

// startGitServer creates the bare peering repo and serves it over smart
// HTTP on a free loopback port.
func (s *suite) startGitServer(ctx context.Context) error {
	s.bare = filepath.Join(s.tmp, "git", "peering.git")
	if _, err := s.git(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", s.bare); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(s.tmp, "logs", "gitserve.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(s.tmp, "bin", "gitserve"), "-addr", "127.0.0.1:0", "-root", filepath.Join(s.tmp, "git"), "-push")
	cmd.Stderr = log
	cmd.SysProcAttr = dieWithParent()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.gitserve = cmd
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case base := <-line:
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			return fmt.Errorf("gitserve did not start: %q\n%s", base, e2eharness.Tail(log.Name(), 10))
		}
		s.gitURL = base + "peering.git"
	case <-time.After(30 * time.Second):
		return errors.New("gitserve did not report its address within 30s")
	}
	return nil
}

// stop stops every process the suite started, by PID, and removes its
// files unless GITPEER_E2E_KEEP is set. It is safe to call more than once
// and from a signal handler.
func (s *suite) stop() {
	s.stopping.Store(true)
	s.stopOnce.Do(func() {
		if s.gitserve != nil && s.gitserve.Process != nil {
			_ = s.gitserve.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = s.gitserve.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = s.gitserve.Process.Kill()
			}
		}
		var wg sync.WaitGroup
		for _, id := range s.started {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.stopCluster(id)
			}()
		}
		wg.Wait()
		e2eharness.Dispose(s.tmp, "e2e", "e2e", s.failed.Load())
	})
}

// stopCluster stops the processes hack/start-cluster.sh started for id, by
// the PIDs it recorded.
func (s *suite) stopCluster(id string) { s.controlPlane(id, 0).Stop() }

// stopOnSignal stops everything when the run is interrupted, and shortly
// before go test's -timeout would kill the process without running any
// cleanup: the control planes are not our children and would outlive it.
func (s *suite) stopOnSignal(timeout time.Duration) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping clusters\n", sig)
		s.failed.Store(true)
		s.stop()
		os.Exit(2)
	}()
	if timeout > 0 {
		margin := min(30*time.Second, timeout/10)
		time.AfterFunc(timeout-margin, func() {
			if s.stopping.Load() {
				return // the run is over and already cleaning up
			}
			fmt.Fprintf(os.Stderr, "e2e: -timeout %v is near: stopping clusters\n", timeout)
			s.failed.Store(true)
			s.stop()
		})
	}
}

// run runs a command and returns its stdout; the error carries the command
// line and its stderr.
func (s *suite) run(ctx context.Context, dir string, stdin []byte, name string, args ...string) (string, error) {
	stdout, _, err := s.runBoth(ctx, dir, stdin, name, args...)
	return stdout, err
}

// runBoth is run returning stderr as well, for commands that report there.
func (s *suite) runBoth(ctx context.Context, dir string, stdin []byte, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), e2eharness.GitEnv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, msg)
	}
	return stdout.String(), stderr.String(), nil
}

func (s *suite) git(ctx context.Context, dir string, args ...string) (string, error) {
	return s.run(ctx, dir, nil, "git", args...)
}

// kube runs kubectl as the cluster's admin. Its discovery cache goes to the
// suite's temp dir, not ~/.kube.
func (s *suite) kube(ctx context.Context, c *cluster, stdin []byte, args ...string) (string, error) {
	return s.kubeAs(ctx, c.kubeconfig, stdin, args...)
}

func (s *suite) kubeAs(ctx context.Context, kubeconfig string, stdin []byte, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(s.tmp, "kube-cache")}, args...)
	return s.run(ctx, "", stdin, s.kubectl, full...)
}

// gitpeerCmd runs bin/gitpeer.
func (s *suite) gitpeerCmd(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "", nil, s.gitpeer, args...)
}

// reconcile runs one pass of c's reconciler with the kubernetes backend
// against the repo over HTTP, from c's own working clone.
func (s *suite) reconcile(ctx context.Context, c *cluster) (string, error) {
	args := []string{"reconcile", "--backend", "kubernetes", "--kubeconfig", c.kubeconfig, "--cluster", c.id,
		"--repo", s.gitURL, "--checkout", filepath.Join(s.tmp, "checkout", c.id), "--once"}
	return s.gitpeerCmd(ctx, append(args, s.reconcileFlags...)...)
}

// pull brings the GitOps tool's checkout to the tip of main.
func (s *suite) pull(ctx context.Context) error {
	if s.flux == "" {
		dir := filepath.Join(s.tmp, "flux")
		if _, err := s.git(ctx, "", "clone", "--quiet", "--branch", "main", s.gitURL, dir); err != nil {
			return err
		}
		s.flux = dir
		return nil
	}
	if _, err := s.git(ctx, s.flux, "fetch", "--quiet", "origin"); err != nil {
		return err
	}
	_, err := s.git(ctx, s.flux, "reset", "--quiet", "--hard", "origin/main")
	return err
}

// apply does what Flux's kustomize-controller does with clusters/<id>/:
// build it with kustomize, server-side apply the result with strict field
// validation (an unknown or misspelt field is an error, not silently
// dropped), then delete the objects of the previous build that are no longer
// in this one. Pruning happens only after a successful apply.
func (s *suite) apply(ctx context.Context, c *cluster) (applied []object, pruned []objRef, err error) {
	build, err := s.kube(ctx, c, nil, "kustomize", filepath.Join(s.flux, "clusters", c.id))
	if err != nil {
		if strings.Contains(err.Error(), "kustomization.yaml is empty") {
			// kustomize >= v5.3 refuses a kustomization with no field but
			// apiVersion/kind; `resources: []` is accepted (and Flux copes since fluxcd/pkg#757).
			err = fmt.Errorf("%w\n(hint: an empty clusters/%s/kustomization.yaml must say `resources: []`)", err, c.id)
		}
		return nil, nil, err
	}
	objs, err := parseObjects([]byte(build))
	if err != nil {
		return nil, nil, fmt.Errorf("kustomize build of clusters/%s: %w", c.id, err)
	}
	if len(objs) > 0 {
		if _, err := s.kube(ctx, c, []byte(build), "apply", "--server-side", "--field-manager", fieldManager,
			"--force-conflicts", "--validate=strict", "-f", "-"); err != nil {
			return nil, nil, err
		}
	}
	next := map[objRef]string{}
	for _, o := range objs {
		next[o.objRef] = o.apiVersion
	}
	for o := range c.inventory {
		if _, ok := next[o]; !ok {
			pruned = append(pruned, o)
		}
	}
	sort.Slice(pruned, func(i, j int) bool { return pruned[i].String() < pruned[j].String() })
	if len(pruned) > 0 {
		var stubs bytes.Buffer
		for _, o := range pruned {
			meta := map[string]string{"name": o.Name}
			if o.Namespace != "" {
				meta["namespace"] = o.Namespace
			}
			doc, err := yaml.Marshal(map[string]any{"apiVersion": c.inventory[o], "kind": o.Kind, "metadata": meta})
			if err != nil {
				return nil, nil, err
			}
			stubs.WriteString("---\n")
			stubs.Write(doc)
		}
		// --wait=false: a namespace's deletion finishes later, in the
		// namespace controller; its objects are unreachable at once.
		if _, err := s.kube(ctx, c, stubs.Bytes(), "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			return objs, nil, fmt.Errorf("prune: %w", err)
		}
	}
	c.inventory = next
	return objs, pruned, nil
}

// object is one object of a kustomize build.
type object struct {
	objRef
	apiVersion string
}

// parseObjects lists the objects of a multi-document YAML stream.
func parseObjects(stream []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, err
		}
		if o.Kind == "" {
			continue // an empty document
		}
		group := ""
		if i := strings.LastIndex(o.APIVersion, "/"); i >= 0 {
			group = o.APIVersion[:i]
		}
		out = append(out, object{objRef{group, o.Kind, o.Metadata.Namespace, o.Metadata.Name}, o.APIVersion})
	}
}

// results counts the leaf steps for the closing "N passed, N failed" line.
var results struct {
	sync.Mutex
	passed, failed int
	failures       []string
}

// check runs one assertion as a subtest and records its outcome.
func check(t *testing.T, name string, fn func(t *testing.T)) bool {
	t.Helper()
	full := t.Name() + "/" + name
	ok := t.Run(name, func(t *testing.T) {
		full = t.Name()
		fn(t)
	})
	results.Lock()
	defer results.Unlock()
	if ok {
		results.passed++
	} else {
		results.failed++
		results.failures = append(results.failures, full)
	}
	return ok
}

// eventually polls cond every interval until it returns nil or timeout
// passes, and returns its last error.
func eventually(ctx context.Context, timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// wantOneReady checks that gitpeer status of the checkout dir reports one
// peering, alpha → beta, Ready.
func (s *suite) wantOneReady(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	if err := s.oneReady(ctx, dir); err != nil {
		t.Error(err)
	}
}

// oneReady is nil when gitpeer status of the checkout dir reports one
// peering, alpha → beta, Ready (its slices granted), else says what it
// reports.
func (s *suite) oneReady(ctx context.Context, dir string) error {
	out, err := s.gitpeerCmd(ctx, "status", dir, "-o", "json")
	if err != nil {
		return err
	}
	var list struct {
		Items []struct {
			Consumer, Provider, Step string
			Ready                    bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return fmt.Errorf("gitpeer status -o json: %v\n%s", err, out)
	}
	if peerings := list.Items; len(peerings) != 1 || !peerings[0].Ready || peerings[0].Step != "Ready" {
		return fmt.Errorf("the repo's status: want alpha → beta Ready, got:\n%s", out)
	}
	return nil
}
