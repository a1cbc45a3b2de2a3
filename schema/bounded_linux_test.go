package schema

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children are the processes whose parent is this one, zombies included
// (an evaluator killed but not waited for would be one).
func children(t *testing.T) []int {
	t.Helper()
	return childrenOf(t, os.Getpid())
}

// childrenOf are the processes whose parent is process ppid.
func childrenOf(t *testing.T, ppid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			pids = append(pids, pid)
		}
	}
	return pids
}

func noChildren(t *testing.T) {
	t.Helper()
	if pids := children(t); len(pids) > 0 {
		t.Fatalf("processes left behind: %v", pids)
	}
}

func TestLoadBoundedRefusesACostlySpec(t *testing.T) {
	noChildren(t)
	tests := []struct {
		name     string
		src      string
		lim      Limits
		resource string
		flag     string
		within   time.Duration // to refuse it, generously on a loaded machine
	}{
		// The time bomb stays far under 2 GiB for minutes.
		{"too slow", timeBomb, Limits{Timeout: 2 * time.Second, MemoryBytes: 2 << 30}, ResourceTime, "--spec-timeout", 2*time.Second + 3*time.Second},
		// The memory bomb reaches 256 MiB in about a second.
		{"too big", memoryBomb, Limits{Timeout: 2 * time.Minute, MemoryBytes: 256 << 20}, ResourceMemory, "--spec-memory", time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"peering.cue": tc.src})
			start := time.Now()
			spec, path, err := LoadBounded(context.Background(), dir, tc.lim)
			took := time.Since(start)
			t.Logf("refused in %s: %v", took, err)
			if spec != nil {
				t.Fatalf("spec = %+v", spec)
			}
			var cerr *CostError
			if !errors.As(err, &cerr) || !errors.Is(err, ErrSpecTooCostly) {
				t.Fatalf("error = %v (%T), want a *CostError", err, err)
			}
			if cerr.Resource != tc.resource || cerr.File != path || cerr.Limits != tc.lim {
				t.Errorf("error = %+v, want resource %s, file %s, limits %+v", cerr, tc.resource, path, tc.lim)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, filepath.Join(dir, "peering.cue")+": ") || !strings.Contains(msg, tc.flag) {
				t.Errorf("message %q names neither the spec nor %s", msg, tc.flag)
			}
			if took > tc.within {
				t.Errorf("refused after %s, want within %s", took, tc.within)
			}
			noChildren(t)
		})
	}

	// The same constructs, two levels deep, are cheap: the limits refuse
	// the cost, not the syntax.
	dir := writeFiles(t, map[string]string{"peering.cue": defused})
	_, _, err := LoadBounded(context.Background(), dir, Limits{Timeout: 2 * time.Second, MemoryBytes: 256 << 20})
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("defused bomb: error = %v, want its problems", err)
	}
}

func TestLoadBoundedStopsAtOnceWhenCancelled(t *testing.T) {
	noChildren(t)
	dir := writeFiles(t, map[string]string{"peering.cue": timeBomb})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		spec *Spec
		err  error
	}
	done := make(chan result, 1)
	go func() {
		spec, _, err := LoadBounded(ctx, dir, Limits{Timeout: 10 * time.Minute})
		done <- result{spec, err}
	}()

	// Wait for the evaluator to be well into the spec.
	deadline := time.Now().Add(30 * time.Second)
	for len(children(t)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no evaluator process started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second)
	select {
	case r := <-done:
		t.Fatalf("LoadBounded returned before the cancellation: %v", r.err)
	default:
	}

	cancel()
	start := time.Now()
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("LoadBounded still running 20s after the cancellation")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("returned %s after the cancellation, want at once", took)
	}
	if r.spec != nil || !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "peering.cue") {
		t.Errorf("spec, error = %v, %v; want none and context.Canceled naming the spec", r.spec, r.err)
	}
	noChildren(t)
}

func TestTheEvaluatorDiesWithItsParent(t *testing.T) {
	dir := writeFiles(t, map[string]string{"peering.cue": timeBomb})
	parent := exec.Command("/proc/self/exe", "-test.run=^$")
	parent.Env = append(os.Environ(), loadBoundedEnv+"="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	evaluator := 0
	for deadline := time.Now().Add(30 * time.Second); evaluator == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no evaluator process started")
		}
		if pids := childrenOf(t, parent.Process.Pid); len(pids) > 0 {
			evaluator = pids[0]
		}
	}
	time.Sleep(500 * time.Millisecond)
	// SIGKILL: the parent has no chance to kill its child itself.
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(evaluator); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("evaluator %d still running 5s after its parent was killed", evaluator)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// BenchmarkLoadBoundedLargeSpec measures what DefaultLimits must allow:
// time per evaluation and the evaluator's peak resident memory. The peak
// is over every child this process has waited for: run one sub-benchmark
// at a time (-bench LoadBoundedLargeSpec/peering.yaml) for each one's own.
func BenchmarkLoadBoundedLargeSpec(b *testing.B) {
	for name, src := range largeSpecs() {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, _, err := LoadBounded(context.Background(), dir, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
			// The largest RSS of any waited-for child: all are evaluators.
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
		})
	}
}
