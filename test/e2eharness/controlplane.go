package e2eharness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ControlPlane is one Kubernetes control plane (etcd, kube-apiserver with
// RBAC and client-certificate authentication, kube-controller-manager)
// that hack/start-cluster.sh runs on loopback and hack/stop-cluster.sh
// stops by the PIDs it recorded. Its files (PKI, admin.kubeconfig, env,
// logs/) are in Dir().
type ControlPlane struct {
	// Name is the cluster's name: its directory under Root and the
	// scripts' first argument.
	Name string
	// Idx picks the port block 20000+Idx*100 of hack/start-cluster.sh;
	// each suite has its own (e2e/: 31, 32; internal/controller/daemon/: 33; e2e/'s Liqo test:
	// 34, 35), so that suites can run at once.
	Idx int
	// Root is the scripts' ROOT, the directory of the control planes.
	Root string
	// Bin is the directory of the Kubernetes binaries (KubeBin).
	Bin string
	// Hack is the module's hack/ directory.
	Hack string
	// Logs is the directory of the start-up logs, start-<Name>.log and
	// start-<Name>-attempt-2.log.
	Logs string
	// Prefix starts what Start and Stop say on stderr ("e2e").
	Prefix string
}

// Dir is the directory of the control plane's files.
func (c *ControlPlane) Dir() string { return filepath.Join(c.Root, c.Name) }

// Kubeconfig is the path of its system:masters kubeconfig.
func (c *ControlPlane) Kubeconfig() string { return filepath.Join(c.Dir(), "admin.kubeconfig") }

// Start starts the control plane, retrying once after stopping what the
// first attempt started: a start that fails on a loaded machine
// (hack/start-cluster.sh waits up to its START_TIMEOUT for each component)
// is retried rather than failing the whole run. The retry is reported on
// stderr, and the first attempt's directory (its logs) is kept as
// Dir()-attempt-1. The error holds the end of the start-up log.
func (c *ControlPlane) Start(ctx context.Context) error {
	err := c.startOnce(ctx, "start-"+c.Name+".log")
	if err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n%s: cluster %s: stopping what started and retrying once\n", c.Prefix, err, c.Prefix, c.Name)
	c.Stop()
	if rerr := os.Rename(c.Dir(), c.Dir()+"-attempt-1"); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(err, rerr)
	}
	if err := c.startOnce(ctx, "start-"+c.Name+"-attempt-2.log"); err != nil {
		return fmt.Errorf("second attempt: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s: cluster %s started at the second attempt\n", c.Prefix, c.Name)
	return nil
}

// startOnce runs hack/start-cluster.sh, its output in Logs/logName.
func (c *ControlPlane) startOnce(ctx context.Context, logName string) error {
	if err := os.MkdirAll(c.Logs, 0o755); err != nil {
		return err
	}
	log := filepath.Join(c.Logs, logName)
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	// Output goes to a file, not a pipe: the control plane outlives the
	// script, and a pipe it inherited would keep Wait waiting.
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(c.Hack, "start-cluster.sh"), c.Name, strconv.Itoa(c.Idx))
	cmd.Env = append(os.Environ(), "ROOT="+c.Root, "BIN="+c.Bin)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start cluster %s: %w\n%s", c.Name, err, Tail(log, 30))
	}
	return nil
}

// Stop stops the control plane's processes by the PIDs
// hack/start-cluster.sh recorded; a failure is said on stderr.
func (c *ControlPlane) Stop() {
	cmd := exec.Command("bash", filepath.Join(c.Hack, "stop-cluster.sh"), c.Name)
	cmd.Env = append(os.Environ(), "ROOT="+c.Root)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stop cluster %s: %v\n%s", c.Prefix, c.Name, err, out)
	}
}

// APIServer is the https:// URL of the started control plane's API server,
// from the API_PORT of the env file hack/start-cluster.sh writes.
func (c *ControlPlane) APIServer() (string, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir(), "env"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if port, ok := strings.CutPrefix(line, "API_PORT="); ok {
			return "https://127.0.0.1:" + port, nil
		}
	}
	return "", fmt.Errorf("start cluster %s: no API_PORT in %s/env", c.Name, c.Dir())
}

// Tail is the last n lines of the file at path, "" when it cannot be read:
// for error messages.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
