//go:build e2e

package daemon

// The daemon's e2e tests run against a real control plane (etcd,
// kube-apiserver, kube-controller-manager) started once by TestMain with
// hack/start-cluster.sh, as the e2e/ suite does (`make e2e` runs both; KUBE_BIN
// holds the binaries `make e2e-tools` builds). The daemon talks to it as
// ServiceAccount gitpeer-system/gitpeer bound by manifests/rbac, so every
// request is also an RBAC check.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitpeer/gitpeer/test/e2eharness"
)

// e2eClusterIdx is the port block of hack/start-cluster.sh for this suite
// (20000+33*100); e2e/ uses 31 and 32, so both suites can run at once.
const e2eClusterIdx = 33

// e2eCluster is the name of the control plane's directory.
const e2eCluster = "gitpeer-daemon-e2e"

// cp is the control plane every e2e test uses.
var cp = &controlPlane{}

type controlPlane struct {
	root, tmp, kubeBin, kubectl string
	// plane is the control plane hack/start-cluster.sh runs.
	plane           *e2eharness.ControlPlane
	adminKubeconfig string
	admin           *rest.Config
	// sa is ServiceAccount gitpeer-system/gitpeer with manifests/rbac
	// applied; saKubeconfig is the same as a kubeconfig file.
	sa           *rest.Config
	saKubeconfig string
	started      bool
	stopOnce     sync.Once
	// failed keeps the logs (e2eharness.Dispose) when the control plane is
	// stopped.
	failed bool
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runE2E(m))
}

func runE2E(m *testing.M) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "daemon e2e: %v: stopping the control plane\n", sig)
		cp.failed = true
		cp.stop()
		os.Exit(2)
	}()
	defer cp.stop()
	start := time.Now()
	if err := cp.setUp(context.Background()); err != nil {
		cp.failed = true
		fmt.Fprintf(os.Stderr, "daemon e2e: set-up failed: %v\n", err)
		return 1
	}
	fmt.Printf("daemon e2e: control plane and manifests/rbac up in %.1fs\n", time.Since(start).Seconds())
	code := m.Run()
	cp.failed = code != 0
	return code
}

func (c *controlPlane) setUp(ctx context.Context) error {
	var err error
	if c.root, err = filepath.Abs(filepath.Join("..", "..", "..")); err != nil {
		return err
	}
	c.kubeBin = e2eharness.KubeBin()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(c.kubeBin, b)); err != nil {
			return fmt.Errorf("%s not in KUBE_BIN=%s: run `make e2e-tools`", b, c.kubeBin)
		}
	}
	c.kubectl = filepath.Join(c.kubeBin, "kubectl")
	if c.tmp, err = os.MkdirTemp("", "gitpeer-daemon-e2e-"); err != nil {
		return err
	}
	c.plane = &e2eharness.ControlPlane{Name: e2eCluster, Idx: e2eClusterIdx, Root: filepath.Join(c.tmp, "clusters"), Bin: c.kubeBin,
		Hack: filepath.Join(c.root, "hack"), Logs: c.tmp, Prefix: "daemon e2e"}
	c.started = true
	if err := c.plane.Start(ctx); err != nil {
		return err
	}
	c.adminKubeconfig = c.plane.Kubeconfig()
	if c.admin, err = clientcmd.BuildConfigFromFlags("", c.adminKubeconfig); err != nil {
		return err
	}
	core := corev1client.NewForConfigOrDie(c.admin)
	// flux-system: manifests/rbac holds Role gitpeer-flux there, as on a
	// cluster Flux applies (docs/deploy.md: without Flux, an overlay drops it).
	for _, ns := range []string{"liqo", "gitpeer-system", "flux-system"} {
		_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if _, err := c.kube(ctx, "apply", "-k", filepath.Join(c.root, "manifests", "rbac")); err != nil {
		return err
	}
	tok, err := core.ServiceAccounts("gitpeer-system").CreateToken(ctx, "gitpeer", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for gitpeer-system/gitpeer: %w", err)
	}
	c.sa = &rest.Config{Host: c.admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.admin.CAData, CAFile: c.admin.CAFile}}
	kc := clientcmdapi.NewConfig()
	ca := c.admin.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(c.admin.CAFile); err != nil {
			return err
		}
	}
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.admin.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["gitpeer"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["gitpeer"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "gitpeer"}
	kc.CurrentContext = "gitpeer"
	c.saKubeconfig = filepath.Join(c.tmp, "gitpeer.kubeconfig")
	return clientcmd.WriteToFile(*kc, c.saKubeconfig)
}

// stop stops the control plane, keeps its logs when the run failed and
// removes the temp dir (e2eharness.Dispose).
func (c *controlPlane) stop() {
	c.stopOnce.Do(func() {
		if c.started {
			c.plane.Stop()
		}
		e2eharness.Dispose(c.tmp, "daemon", "daemon e2e", c.failed)
	})
}

// kube runs kubectl as the cluster's admin and returns its output.
func (c *controlPlane) kube(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", c.adminKubeconfig, "--cache-dir", filepath.Join(c.tmp, "kube-cache")}, args...)
	out, err := exec.CommandContext(ctx, c.kubectl, full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func ptr[T any](v T) *T { return &v }

// errNotYet is returned by a polled condition that does not hold yet.
var errNotYet = errors.New("not yet")
