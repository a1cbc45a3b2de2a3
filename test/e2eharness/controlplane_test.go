package e2eharness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStartRetriesOnceKeepingTheFirstAttempt: with stand-in scripts whose
// first start fails, Start stops what started, keeps the first attempt's
// directory aside, starts again and reads the API server's port; a start
// that fails twice is an error holding the end of the second log.
func TestStartRetriesOnceKeepingTheFirstAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int
	}{{"a first attempt that fails", 1}, {"two attempts that fail", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			hack, root, logs := t.TempDir(), t.TempDir(), t.TempDir()
			count := filepath.Join(hack, "count")
			start := `set -e
n=$(( $(cat "` + count + `" 2>/dev/null || echo 0) + 1 )); echo $n > "` + count + `"
mkdir -p "$ROOT/$1"; echo "attempt $n of $1 at $2 with $BIN" > "$ROOT/$1/attempt"
if [ $n -le ` + strconv.Itoa(tc.fails) + ` ]; then echo "etcd not ready (attempt $n)"; exit 1; fi
echo API_PORT=20100 > "$ROOT/$1/env"
`
			stop := `echo stopped >> "$ROOT/$1.stops"` + "\n"
			for name, body := range map[string]string{"start-cluster.sh": start, "stop-cluster.sh": stop} {
				if err := os.WriteFile(filepath.Join(hack, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			c := &ControlPlane{Name: "alpha", Idx: 1, Root: root, Bin: "/kube/bin", Hack: hack, Logs: logs, Prefix: "test"}
			err := c.Start(context.Background())
			if tc.fails == 2 {
				if err == nil || !strings.Contains(err.Error(), "second attempt") || !strings.Contains(err.Error(), "etcd not ready (attempt 2)") {
					t.Fatalf("Start: %v, want the second attempt's failure and its log", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if api, err := c.APIServer(); err != nil || api != "https://127.0.0.1:20100" {
				t.Errorf("APIServer: %q %v", api, err)
			}
			first, _ := os.ReadFile(filepath.Join(root, "alpha-attempt-1", "attempt"))
			second, _ := os.ReadFile(c.Dir() + "/attempt")
			if string(first) != "attempt 1 of alpha at 1 with /kube/bin\n" || string(second) != "attempt 2 of alpha at 1 with /kube/bin\n" {
				t.Errorf("attempts: %q in alpha-attempt-1, %q in alpha", first, second)
			}
			if stops, _ := os.ReadFile(filepath.Join(root, "alpha.stops")); string(stops) != "stopped\n" {
				t.Errorf("stop-cluster.sh ran %q times between the attempts, want once", stops)
			}
			for _, log := range []string{"start-alpha.log", "start-alpha-attempt-2.log"} {
				if _, err := os.Stat(filepath.Join(logs, log)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
