package attack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// timeBomb is 174 bytes of CUE that build 10^8 lists of ten: CUE evaluates
// it for hours (schema/bounded_test.go).
const timeBomb = `// 10^8 lists of ten
l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: [for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l {l}]
`

// memoryBomb is 180 bytes of CUE that build a struct of 10^7 fields,
// growing by hundreds of MiB a second.
const memoryBomb = `l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: {for i, _ in l for j, _ in l for k, _ in l for m, _ in l for n, _ in l for o, _ in l for p, _ in l {"\(i)\(j)\(k)\(m)\(n)\(o)\(p)": l}}
`

// evaluators are the spec evaluator processes this test binary started
// and that are still there (zombies included).
func evaluators(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	self := strconv.Itoa(os.Getpid())
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 2 || fields[1] != self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(stat), "cmdline"))
		if bytes.Contains(cmdline, []byte("peering spec evaluator")) || fields[0] == "Z" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestASpecBombFailsEveryPassWithinTheLimit: a writer pushes a peering.cue
// of a few hundred bytes whose evaluation never ends, or eats memory. Every
// reconciler, evaluating the spec bounded (schema.ParseBounded in a child
// process), fails its pass within the limit plus a margin, with an error
// naming peering.cue, the limit and its flag; it commits nothing, moves no
// applied branch, and leaves no process behind. Cancelling the pass's
// context (SIGTERM) ends it at once. Reverting the spec settles again.
//
// Not parallel: it measures time and looks for child processes.
func TestASpecBombFailsEveryPassWithinTheLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs Linux /proc to bound the evaluator's memory and to find its processes")
	}
	w := settled(t, twoSpec)
	var lim schema.Limits
	w.withLoadSpec(func(ctx context.Context, file string, data []byte) (*schema.Spec, error) {
		return schema.ParseBounded(ctx, file, data, lim)
	})
	applied := map[string]string{}
	for _, id := range w.ids {
		applied[id] = w.ref(layout.AppliedBranch(id))
	}
	before := w.signedAll()
	fail := func(id, flag, limit string, margin time.Duration) {
		t.Helper()
		tip := w.ref("main")
		start := time.Now()
		_, err := w.tryPass(id)
		took := time.Since(start)
		t.Logf("%s: refused in %s: %v", id, took.Round(time.Millisecond), err)
		if !errors.Is(err, schema.ErrSpecTooCostly) {
			t.Fatalf("%s's pass: %v, want a spec too costly", id, err)
		}
		assertContains(t, id+"'s error", err.Error(), "peering.cue", limit, flag)
		if took > margin {
			t.Fatalf("%s's pass took %s, over %s", id, took, margin)
		}
		if got := w.ref("main"); got != tip {
			t.Fatalf("%s committed %s", id, got)
		}
		for id, ref := range applied {
			if got := w.ref(layout.AppliedBranch(id)); got != ref {
				t.Fatalf("%s's applied branch moved", id)
			}
		}
		if pids := evaluators(t); len(pids) > 0 {
			t.Fatalf("evaluator processes left behind: %v", pids)
		}
	}

	bomb := w.attack("mallory <mallory@example.com>", "peering.cue: generate the clusters", func(a *writer) {
		if len(timeBomb) > 200 {
			t.Fatalf("the bomb is %d bytes", len(timeBomb))
		}
		a.write("peering.cue", []byte(timeBomb))
	})
	lim = schema.Limits{Timeout: time.Second, MemoryBytes: 1 << 30}
	for _, id := range w.ids {
		fail(id, "--spec-timeout", "exceeded 1s", lim.Timeout+4*time.Second)
	}

	// SIGTERM: the pass's context is cancelled while the evaluator runs.
	lim = schema.Limits{Timeout: time.Minute, MemoryBytes: 1 << 30}
	cctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(300*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	_, err := w.clusters["beta"].r.Pass(cctx)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || took > 3*time.Second {
		t.Fatalf("cancelled pass: %v after %s, want context.Canceled at once", err, took)
	}
	if pids := evaluators(t); len(pids) > 0 {
		t.Fatalf("evaluator processes left behind after a cancel: %v", pids)
	}

	w.attack("mallory <mallory@example.com>", "peering.cue: fewer lines", func(a *writer) {
		a.write("peering.cue", []byte(memoryBomb))
	})
	lim = schema.Limits{Timeout: 2 * time.Minute, MemoryBytes: 256 << 20}
	fail("beta", "--spec-memory", "more than 256Mi", 45*time.Second)

	// The admins revert to the reviewed spec: nothing was signed, and the
	// peering settles as it was.
	a := w.writer()
	a.git("checkout", "-q", bomb+"~1", "--", "peering.cue")
	a.commit("admin <admin@example.com>", "revert peering.cue")
	a.push()
	lim = schema.Limits{}
	w.converge()
	w.nothingSigned(before)
	w.mustBeReady("alpha", "beta")
}
