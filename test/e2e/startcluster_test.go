package e2e

// Unit tests of hack/start-cluster.sh's readiness waits, with stand-in
// binaries: no build tag, so `make test` runs them (with -tags e2e they run
// after the suite's set-up too).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartClusterGivesUpNamingTheComponentAndItsLog: a component that dies,
// or never says it is ready, fails the start within START_TIMEOUT, and the
// error names it and shows the end of its log, instead of waiting out a
// fixed window and saying nothing about why.
func TestStartClusterGivesUpNamingTheComponentAndItsLog(t *testing.T) {
	for _, tool := range []string{"bash", "openssl", "curl", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "start-cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, etcd, want, logLine string
		within                    time.Duration
	}{
		{"a component that exits", "echo 'etcd: unknown flag --quota-backend-bytes' >&2; exit 2",
			"etcd exited before it was ready", "etcd: unknown flag --quota-backend-bytes", time.Minute},
		{"a component that never gets ready", "echo 'etcd: waiting for the data dir lock'; while :; do sleep 1; done",
			"etcd not ready after 2s", "etcd: waiting for the data dir lock", time.Minute},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, root := t.TempDir(), t.TempDir()
			for name, body := range map[string]string{"etcd": tc.etcd, "kube-apiserver": "exit 1", "kube-controller-manager": "exit 1"} {
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			name := "standin"
			idx := 47 + i // port blocks no suite uses
			cmd := exec.Command("bash", script, name, strconv.Itoa(idx))
			cmd.Env = append(os.Environ(), "ROOT="+root, "BIN="+bin, "START_TIMEOUT=2")
			t.Cleanup(func() {
				stop := exec.Command("bash", filepath.Join(filepath.Dir(script), "stop-cluster.sh"), name)
				stop.Env = append(os.Environ(), "ROOT="+root)
				_ = stop.Run()
			})
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("start-cluster.sh succeeded with a broken etcd:\n%s", out)
			}
			if took := time.Since(start); took > tc.within {
				t.Errorf("gave up after %s", took)
			}
			if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), tc.logLine) ||
				!strings.Contains(string(out), filepath.Join(root, name, "logs", "etcd.log")) {
				t.Errorf("output:\n%s\nwant %q, the log's path and its line %q", out, tc.want, tc.logLine)
			}
		})
	}
}
