package e2eharness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKeepCopiesTheLogsOfARunAndNothingElse(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := map[string]string{
		"clusters/alpha/logs/etcd.log":          "alpha's etcd\n",
		"clusters/beta/logs/etcd.log":           "beta's etcd\n",
		"flux-e2e/beta/source-controller.log":   "sc\n",
		"logs/start-alpha.log":                  "start\n",
		"clusters/alpha/pki/ca.key":             "PRIVATE KEY\n",
		"clusters/alpha/admin.kubeconfig":       "client-key-data\n",
		"clusters/alpha/etcd-data/member/wal/0": "data\n",
		"clusters/alpha/logs/not-a-log.log.gz":  "gz\n",
	}
	for p, data := range files {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := Keep(src, dst, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if out != filepath.Join(dst, "e2e") {
		t.Errorf("kept in %s, want %s", out, filepath.Join(dst, "e2e"))
	}
	var kept []string
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			kept = append(kept, filepath.ToSlash(rel))
			data, _ := os.ReadFile(p)
			if string(data) != files[filepath.ToSlash(rel)] {
				t.Errorf("%s holds %q, want %q", rel, data, files[filepath.ToSlash(rel)])
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"clusters/alpha/logs/etcd.log", "clusters/beta/logs/etcd.log", "flux-e2e/beta/source-controller.log", "logs/start-alpha.log"}
	if len(kept) != len(want) {
		t.Fatalf("kept %v, want %v (logs only: no keys, kubeconfigs or data)", kept, want)
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Errorf("kept %v, want %v", kept, want)
			break
		}
	}
}

// TestDisposeKeepsTheLogsOfAFailedRunAndRemovesTheRest: a failed run's logs
// go to GITPEER_E2E_LOGS and its temp dir is removed; a passed run keeps no
// logs; GITPEER_E2E_KEEP keeps the whole temp dir.
func TestDisposeKeepsTheLogsOfAFailedRunAndRemovesTheRest(t *testing.T) {
	for _, tc := range []struct {
		name           string
		failed, keep   bool
		wantLogs, want bool // logs kept; temp dir still there
	}{
		{"a failed run", true, false, true, false},
		{"a passed run", false, false, false, false},
		{"a failed run with GITPEER_E2E_KEEP", true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, logs := filepath.Join(t.TempDir(), "run"), t.TempDir()
			if err := os.MkdirAll(filepath.Join(tmp, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, "logs", "etcd.log"), []byte("etcd\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(EnvDir, logs)
			t.Setenv(EnvKeep, map[bool]string{true: "1"}[tc.keep])
			Dispose(tmp, "suite", "test", tc.failed)
			if _, err := os.Stat(filepath.Join(logs, "suite", "logs", "etcd.log")); (err == nil) != tc.wantLogs {
				t.Errorf("logs kept: %v, want %v", err == nil, tc.wantLogs)
			}
			if _, err := os.Stat(tmp); (err == nil) != tc.want {
				t.Errorf("temp dir still there: %v, want %v", err == nil, tc.want)
			}
		})
	}
}
