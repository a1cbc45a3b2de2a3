package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/schema"
)

// runMainEnv makes this test binary run main(), for tests that signal a
// real gitpeer process.
const runMainEnv = "GITPEER_TEST_RUN_MAIN"

// TestMain lets this test binary serve as the spec evaluator the commands
// start (schema.LoadBounded), and as gitpeer itself.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
	}
	schema.RunEvaluatorIfChild()
	os.Exit(m.Run())
}

// bomb is 200 bytes of nested comprehensions (10^8 lists) that CUE takes
// hours to evaluate.
const bomb = `// Peering spec (or is it?)
l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: [for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l {l}]
clusters: [{id: "alpha"}, {id: "beta"}]
`

// memoryBomb is a struct of 10^7 fields: CUE grows by hundreds of MiB a
// second evaluating it.
const memoryBomb = `l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: {for i, _ in l for j, _ in l for k, _ in l for m, _ in l for n, _ in l for o, _ in l for p, _ in l {"\(i)\(j)\(k)\(m)\(n)\(o)\(p)": l}}
`

func TestACostlySpecIsRefusedWithAClearError(t *testing.T) {
	root, remote, work := peeringRepo(t, bomb)
	mem := t.TempDir()
	write(t, filepath.Join(mem, "peering.cue"), memoryBomb)
	timeout := func(dir string) string {
		return filepath.Join(dir, "peering.cue") + ": evaluation exceeded 2s (raise --spec-timeout)"
	}
	cases := []struct {
		name string
		args []string
		code int // verify and status exit 2 when they cannot read the repo
		want string
	}{
		{"validate", []string{"validate", work, "--spec-timeout", "2s"}, 1, timeout(work)},
		{"verify", []string{"verify", work, "--spec-timeout", "2s"}, 2, timeout(work)},
		{"status", []string{"status", work, "--spec-timeout=2s"}, 2, timeout(work)},
		{"reconcile", []string{"reconcile", "--once", "--cluster", "alpha", "--repo", remote,
			"--state-dir", filepath.Join(root, "state", "alpha"), "--spec-timeout", "2s"}, 1,
			"peering.cue: evaluation exceeded 2s (raise --spec-timeout)"},
		{"validate out of memory", []string{"validate", mem, "--spec-memory", "256Mi", "--spec-timeout", "5m"}, 1,
			filepath.Join(mem, "peering.cue") + ": evaluation used more than 256Mi of memory (raise --spec-memory)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != tc.code || stderr != "gitpeer: "+tc.want+"\n" && !strings.HasSuffix(stderr, ": "+tc.want+"\n") {
				t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s\nwant exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}

func TestSpecLimitFlags(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "peering.cue"), spec)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"defaults", []string{"validate", dir}, 0, "valid (2 clusters, 1 peerings)"},
		{"raised limits", []string{"validate", dir, "--spec-timeout", "10m", "--spec-memory", "4Gi"}, 0, "valid (2 clusters, 1 peerings)"},
		{"memory in bytes", []string{"validate", dir, "--spec-memory", "1073741824"}, 0, "valid (2 clusters, 1 peerings)"},
		{"zero timeout", []string{"validate", dir, "--spec-timeout", "0s"}, 1, "--spec-timeout must be positive, got 0s"},
		{"memory not a size", []string{"validate", dir, "--spec-memory", "lots"}, 1, `invalid argument "lots" for "--spec-memory" flag: not a quantity of bytes such as 2Gi or 512Mi`},
		{"fractional bytes", []string{"validate", dir, "--spec-memory", "0.5"}, 1, "not a positive whole number of bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d, want %d; output:\n%s%s\nwant it to contain %q", code, tc.code, stdout, stderr, tc.want)
			}
		})
	}
	for _, verb := range []string{"validate", "verify", "status", "reconcile"} {
		_, out, _ := gitpeer(t, verb, "--help")
		if !strings.Contains(out, "--spec-timeout duration") || !strings.Contains(out, "(default 1m0s)") ||
			!strings.Contains(out, "--spec-memory bytes") || !strings.Contains(out, "(default 2Gi)") {
			t.Errorf("%s --help does not show the spec limits and their defaults:\n%s", verb, out)
		}
	}
}
