//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// fluxNamespace is where Flux runs and where its objects live.
const fluxNamespace = "flux-system"

// fluxTools are the Flux binaries and CRDs hack/build-flux.sh put in the
// e2e cache (make e2e-flux-tools).
type fluxTools struct {
	sourceController, kustomizeController, crds string
}

// findFluxTools finds the controllers in KUBE_BIN and the CRDs in FLUX_CRDS
// (default: the cache's flux-crds).
func findFluxTools(t *testing.T) fluxTools {
	t.Helper()
	ft := fluxTools{
		sourceController:    filepath.Join(s.kubeBin, "source-controller"),
		kustomizeController: filepath.Join(s.kubeBin, "kustomize-controller"),
		crds:                e2eharness.Env("FLUX_CRDS", filepath.Join(e2eharness.CacheDir(), "flux-crds")),
	}
	for _, f := range []string{ft.sourceController, ft.kustomizeController, filepath.Join(ft.crds, "source.toolkit.fluxcd.io_gitrepositories.yaml")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run `make e2e-flux-tools` (builds Flux's source-controller and kustomize-controller from the Go module proxy)", err)
		}
	}
	return ft
}

// proc is a long-running process this test started; it is stopped (SIGTERM,
// then SIGKILL) when owner (the test, not the step that starts it) ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

func startProc(t, owner *testing.T, name, log string, env []string, bin string, args ...string) *proc {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, log: log, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = dieWithParent()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	owner.Cleanup(func() {
		p.stop()
		if owner.Failed() {
			t.Logf("log of %s:\n%s", name, e2eharness.Tail(log, 40))
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the exit, killing after 20s.
func (p *proc) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitHTTPOK polls url until it answers 200, the process exits or timeout;
// the error names the process and ends with the last lines of its log.
func waitHTTPOK(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	c := http.Client{Timeout: 5 * time.Second}
	exited := false
	err := eventually(ctx, timeout, 100*time.Millisecond, func() error {
		if !p.running() {
			exited = true
			return nil
		}
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
	switch {
	case exited:
		return fmt.Errorf("%s exited before %s answered 200: %v; last lines of %s:\n%s", p.name, url, p.err, p.log, e2eharness.Tail(p.log, 20))
	case err != nil:
		return fmt.Errorf("%s not ready after %s (%v); last lines of %s:\n%s", p.name, timeout, err, p.log, e2eharness.Tail(p.log, 20))
	}
	return nil
}

// startFlux installs Flux's CRDs and namespace on c and runs
// source-controller and kustomize-controller for it as local processes, with
// c's admin kubeconfig (they have no --kubeconfig flag: KUBECONFIG), every
// listener on a free loopback port. It returns once both are ready.
func startFlux(ctx context.Context, t, owner *testing.T, ft fluxTools, c *cluster, dir string) {
	t.Helper()
	if _, err := s.kube(ctx, c, nil, "apply", "--server-side", "--field-manager", fieldManager, "-f", ft.crds); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube(ctx, c, nil, "wait", "--for=condition=Established", "crd",
		"gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io", "--timeout="+readyTimeout.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube(ctx, c, nil, "create", "namespace", fluxNamespace); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + c.kubeconfig, "RUNTIME_NAMESPACE=" + fluxNamespace}
	storage := testgit.FreeLoopbackAddr(t)
	scHealth, kcHealth := testgit.FreeLoopbackAddr(t), testgit.FreeLoopbackAddr(t)
	sc := startProc(t, owner, c.id+"'s source-controller", filepath.Join(dir, "source-controller.log"), env, ft.sourceController,
		"--watch-all-namespaces", "--storage-path="+filepath.Join(dir, "storage"),
		"--storage-addr="+storage, "--storage-adv-addr="+storage,
		"--metrics-addr="+testgit.FreeLoopbackAddr(t), "--health-addr="+scHealth,
		"--enable-leader-election=false", "--log-level=info")
	kc := startProc(t, owner, c.id+"'s kustomize-controller", filepath.Join(dir, "kustomize-controller.log"), env, ft.kustomizeController,
		"--watch-all-namespaces", "--metrics-addr="+testgit.FreeLoopbackAddr(t), "--health-addr="+kcHealth,
		"--requeue-dependency=2s",
		"--enable-leader-election=false", "--log-level=info")
	for _, w := range []struct {
		p    *proc
		addr string
	}{{sc, scHealth}, {kc, kcHealth}} {
		if err := waitHTTPOK(ctx, w.p, "http://"+w.addr+"/readyz", readyTimeout); err != nil {
			t.Fatal(err)
		}
	}
}

// fluxField reads one jsonpath of a Flux object in flux-system ("" when
// the object or the field is missing).
func fluxField(ctx context.Context, c *cluster, kind, name, jsonpath string) string {
	out, err := s.kube(ctx, c, nil, "-n", fluxNamespace, "get", kind, name, "--ignore-not-found", "-o", "jsonpath="+jsonpath)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// condition returns status, reason and message of a condition of a Flux
// object.
func condition(ctx context.Context, c *cluster, kind, name, typ string) (status, reason, message string) {
	f := func(field string) string {
		return fluxField(ctx, c, kind, name, fmt.Sprintf(`{.status.conditions[?(@.type=="%s")].%s}`, typ, field))
	}
	return f("status"), f("reason"), f("message")
}

// requestReconcile asks a Flux controller to reconcile an object now, as
// `flux reconcile` does.
func requestReconcile(ctx context.Context, c *cluster, kind, name string) error {
	_, err := s.kube(ctx, c, nil, "-n", fluxNamespace, "annotate", "--overwrite", kind, name,
		"reconcile.fluxcd.io/requestedAt="+time.Now().Format(time.RFC3339Nano))
	return err
}

// reconcileNow asks a Flux controller to reconcile an object now, as
// requestReconcile does, and waits until the controller says it handled
// that request (status.lastHandledReconcileAt): what the object's status
// says afterwards is the outcome of a reconciliation after the request.
func reconcileNow(ctx context.Context, c *cluster, kind, name string) error {
	token := time.Now().Format(time.RFC3339Nano)
	if _, err := s.kube(ctx, c, nil, "-n", fluxNamespace, "annotate", "--overwrite", kind, name,
		"reconcile.fluxcd.io/requestedAt="+token); err != nil {
		return err
	}
	return eventually(ctx, fluxTimeout, 250*time.Millisecond, func() error {
		if got := fluxField(ctx, c, kind, name, "{.status.lastHandledReconcileAt}"); got != token {
			return fmt.Errorf("%s %s on %s: last handled request %q, not yet %q", kind, name, c.id, got, token)
		}
		return nil
	})
}

// fieldsOwnedBy is the fieldsV1 JSON of manager's entries (any
// operation) in the managedFields of a Flux object in flux-system.
func fieldsOwnedBy(ctx context.Context, c *cluster, kind, name, manager string) string {
	return fluxField(ctx, c, kind, name, fmt.Sprintf(`{.metadata.managedFields[?(@.manager=="%s")].fieldsV1}`, manager))
}

// managers lists the field managers of an object, or an error when it is
// missing.
func managers(ctx context.Context, c *cluster, args ...string) ([]string, error) {
	out, err := s.kube(ctx, c, nil, append([]string{"get", "-o", "jsonpath={.metadata.managedFields[*].manager}"}, args...)...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// exists reports whether kubectl get finds the object (and it is not being
// deleted).
func exists(ctx context.Context, c *cluster, args ...string) (bool, error) {
	out, err := s.kube(ctx, c, nil, append([]string{"get", "--ignore-not-found", "-o",
		"jsonpath={.metadata.name}/{.metadata.deletionTimestamp}"}, args...)...)
	if err != nil {
		return false, err
	}
	out = strings.TrimSpace(out)
	return out != "" && strings.HasSuffix(out, "/"), nil
}

// gitHost is the Git host of the Flux tests: git http-backend over HTTPS
// with a private CA (testgit.StartHTTPS) serving the bare repos
// peering.git and liqo.git under root/git. The reconcilers, the admins and
// an attacker push with the read-write token; Flux reads with one that may
// not push. It sets GIT_SSL_CAINFO for the test, so that git trusts it.
type gitHost struct {
	*testgit.HTTPSServer
	rwToken, roToken string
	// repoURL is peering.git's URL.
	repoURL string
	// header is the `git -c` setting that sends the read-write token.
	header string
}

func startGitHost(t *testing.T, root, rwToken, roToken string) *gitHost {
	t.Helper()
	gitRoot := filepath.Join(root, "git")
	if err := os.MkdirAll(gitRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.Bare(t, filepath.Join(gitRoot, "peering.git"))
	testgit.Bare(t, filepath.Join(gitRoot, "liqo.git"))
	host := testgit.StartHTTPS(t, gitRoot, testgit.HTTPAuth{Token: rwToken, ReadOnlyToken: roToken})
	caFile := filepath.Join(root, "git-ca.crt")
	if err := os.WriteFile(caFile, host.CACert, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSL_CAINFO", caFile)
	return &gitHost{HTTPSServer: host, rwToken: rwToken, roToken: roToken, repoURL: host.URL("peering.git"),
		header: "http.extraHeader=Authorization: Bearer " + rwToken}
}

// clone clones url into dir with the read-write token, and keeps the token
// in the clone's config for its pushes.
func (g *gitHost) clone(ctx context.Context, t *testing.T, url, dir string) {
	t.Helper()
	if _, err := s.git(ctx, "", "-c", g.header, "clone", "--quiet", url, dir); err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(g.header, "=")
	if _, err := s.git(ctx, dir, "config", k, v); err != nil {
		t.Fatal(err)
	}
}

// remoteHead is the commit peering.git's branch ref points at.
func (g *gitHost) remoteHead(ctx context.Context, ref string) (string, error) {
	out, err := s.git(ctx, "", "-c", g.header, "ls-remote", g.repoURL, "refs/heads/"+ref)
	sha, _, _ := strings.Cut(strings.TrimSpace(out), "\t")
	return sha, err
}

// pushCRDs commits the CRD files crds to infrastructure/liqo of the clone
// work, with a kustomization listing them, and pushes: what Flux's
// Kustomization liqo-crds applies.
func pushCRDs(ctx context.Context, t *testing.T, work string, crds []string) {
	t.Helper()
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
	testgit.WriteFiles(t, filepath.Join(work, "infrastructure", "liqo"), files)
	commitAndPush(ctx, t, work, "Liqo's CRDs")
}
