package testgit

import (
	"fmt"
	"io"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HTTPBackend is Git's smart HTTP server: git-http-backend run as a CGI
// program, serving the bare repositories under root (an absolute path) at
// the URL paths below the handler's mount ("/<name>.git/info/refs" and so
// on), with info/refs discovery, upload-pack and, with push, receive-pack.
// It is the one handler of testgit's HTTPS server and of hack/gitserve, the
// e2e suite's plain HTTP Git host; it takes no testing.TB so that a
// command can use it.
//
// Every repository under root is served without a git-daemon-export-ok
// file, and only the repositories' own config counts, nothing of the user's
// or the system's. With push, receive-pack is enabled for every request
// (git-http-backend otherwise refuses it to a request without REMOTE_USER):
// the caller authenticates, or serves loopback only. backend is the path of
// git-http-backend, "" for the one in `git --exec-path`; stderr receives
// the program's standard error, nil for os.Stderr. The error names a
// git-http-backend that cannot be found.
func HTTPBackend(root, backend string, push bool, stderr io.Writer) (*cgi.Handler, error) {
	if backend == "" {
		dir, err := ExecPath()
		if err != nil {
			return nil, fmt.Errorf("find git-http-backend: %w", err)
		}
		backend = filepath.Join(dir, "git-http-backend")
	}
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git-http-backend: %w", err)
	}
	env := []string{
		"GIT_PROJECT_ROOT=" + root,
		"GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
	}
	if push {
		// Through the environment, so that the repositories need no
		// config of their own.
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true")
	}
	return &cgi.Handler{Path: backend, Root: "/", Env: env, InheritEnv: []string{"PATH"}, Stderr: stderr}, nil
}

// ExecPath is the directory of git's helper programs (git-http-backend,
// git-shell's neighbours), as `git --exec-path` prints it.
func ExecPath() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
