// Package e2eharness is what the end-to-end suites (e2e/, e2e/forge/ and
// internal/controller/daemon/'s e2e tests, all under the e2e build tag) share: the cache of the
// binaries `make e2e-tools` builds, a control plane started by
// hack/start-cluster.sh with one retry, the gitpeer binary under test, the
// git environment, and the end of a run, which keeps the logs of a failed
// one (GITPEER_E2E_LOGS, the directory `make e2e` names on its last line)
// and removes the run's temp dir (unless GITPEER_E2E_KEEP is set).
//
// It is a test harness: only tests import it.
package e2eharness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CacheDir is where the Makefile's e2e targets (hack/build-*.sh) put what
// they build: GITPEER_E2E_CACHE, else $XDG_CACHE_HOME/gitpeer-e2e, else
// ~/.cache/gitpeer-e2e; the same expression as the Makefile's and the
// scripts'.
func CacheDir() string {
	if d := os.Getenv("GITPEER_E2E_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gitpeer-e2e")
}

// Env is the environment variable name, or def when it is unset or empty.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// KubeBin is the directory of etcd, kube-apiserver, kube-controller-manager
// and kubectl: KUBE_BIN, else CacheDir()/bin, where `make e2e-tools` builds
// them.
func KubeBin() string { return Env("KUBE_BIN", filepath.Join(CacheDir(), "bin")) }

// GitEnv, added to a command's environment, keeps git and go-git away from
// the user's configuration, never prompts, and gives the commits a suite
// makes an author.
var GitEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_AUTHOR_NAME=gitpeer e2e",
	"GIT_AUTHOR_EMAIL=e2e@gitpeer.invalid",
	"GIT_COMMITTER_NAME=gitpeer e2e",
	"GIT_COMMITTER_EMAIL=e2e@gitpeer.invalid",
}

// GitpeerBinary is the gitpeer binary under test: GITPEER_E2E_BIN as an
// absolute path (make e2e builds bin/gitpeer), which must exist, else a
// build of root/cmd/gitpeer (root: the module's root) into dir/gitpeer, for
// a bare `go test -tags e2e`.
func GitpeerBinary(ctx context.Context, root, dir string) (string, error) {
	if bin := os.Getenv("GITPEER_E2E_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("GITPEER_E2E_BIN: %w (make build writes bin/gitpeer)", err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "gitpeer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gitpeer")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gitpeer: %w\n%s", err, out)
	}
	return bin, nil
}
