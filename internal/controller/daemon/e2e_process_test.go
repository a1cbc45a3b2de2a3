//go:build e2e

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitpeer/gitpeer/test/e2eharness"
	"github.com/gitpeer/gitpeer/test/testgit"
)

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), e2eharness.GitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gitpeerBinary is GITPEER_E2E_BIN (make e2e builds it), else one built here.
func gitpeerBinary(t *testing.T) string {
	bin, err := e2eharness.GitpeerBinary(context.Background(), cp.root, filepath.Join(cp.tmp, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// process is one `gitpeer reconcile` replica.
type process struct {
	name                    string
	cmd                     *exec.Cmd
	log                     string
	metricsAddr, healthAddr string
	exited                  chan struct{}
	exitErr                 error
}

func (p *process) get(path string) (int, string) {
	addr := p.metricsAddr
	if path != "/metrics" {
		addr = p.healthAddr
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metric is the value of one series of the process's /metrics, or -1.
func (p *process) metric(series string) float64 {
	_, body := p.get("/metrics")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func (p *process) leading() bool { return p.metric("gitpeer_leader") == 1 }

func (p *process) passes() float64 {
	var n float64
	for _, r := range []string{ResultCommitted, ResultUnchanged, ResultFailed, ResultAbandoned} {
		if v := p.metric(`gitpeer_passes_total{result="` + r + `"}`); v > 0 {
			n += v
		}
	}
	return n
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// passSpan is one pass of one process, from its log line.
type passSpan struct {
	process    string
	start, end time.Time
	msg        string
}

// passSpans reads the end-of-pass lines of a JSON log.
func passSpans(t *testing.T, p *process) []passSpan {
	f, err := os.Open(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []passSpan
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			TS       string `json:"ts"`
			Msg      string `json:"msg"`
			Duration string `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Duration == "" {
			continue
		}
		switch l.Msg {
		case "up to date", "pushed", "pass failed", "pass abandoned":
		default:
			continue
		}
		end, err1 := time.Parse("2006-01-02T15:04:05.000Z0700", l.TS)
		d, err2 := time.ParseDuration(l.Duration)
		if err1 != nil || err2 != nil {
			t.Errorf("%s: unreadable pass line %s", p.name, sc.Text())
			continue
		}
		out = append(out, passSpan{p.name, end.Add(-d), end, l.Msg})
	}
	return out
}

// TestE2EThreeGitpeerReplicasOneLeader runs three `gitpeer reconcile
// --leader-elect` processes for one cluster, as ServiceAccount
// gitpeer-system/gitpeer: one leads and runs passes; SIGTERM makes it
// release the Lease and exit 0, and another takes over at once; a leader
// killed outright is replaced once its Lease expires; no two passes ever
// overlap.
func TestE2EThreeGitpeerReplicasOneLeader(t *testing.T) {
	ctx := context.Background()
	bin := gitpeerBinary(t)
	dir := filepath.Join(cp.tmp, "replicas")
	bare, work := filepath.Join(dir, "peering.git"), filepath.Join(dir, "work")
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	testgit.Git(t, dir, "clone", "--quiet", bare, work)
	spec := "clusters: [{id: \"gamma\"}, {id: \"delta\"}]\npeerings: [{consumer: \"gamma\", provider: \"delta\"}]\n"
	if err := os.WriteFile(filepath.Join(work, "peering.cue"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// gamma: the kubernetes backend on the control plane; delta: a file
	// backend whose reconciler never runs, so gamma waits for its nonce.
	run(t, "", bin, "init", "--backend", "kubernetes", "--kubeconfig", cp.adminKubeconfig, "--cluster", "gamma", "--repo", work)
	run(t, "", bin, "init", "--cluster", "delta", "--state-dir", filepath.Join(dir, "delta"), "--api-server", "https://delta.example:6443", "--repo", work)
	testgit.Git(t, work, "add", "-A")
	testgit.Git(t, work, "commit", "--quiet", "-m", "peer gamma with delta")
	testgit.Git(t, work, "push", "--quiet", "origin", "main")

	start := func(name string) *process {
		p := &process{name: name, log: filepath.Join(dir, "logs", name+".log"), metricsAddr: testgit.FreeLoopbackAddr(t), healthAddr: testgit.FreeLoopbackAddr(t), exited: make(chan struct{})}
		logf, err := os.Create(p.log)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, "reconcile", "--backend", "kubernetes", "--kubeconfig", cp.saKubeconfig,
			"--cluster", "gamma", "--repo", bare, "--checkout", filepath.Join(dir, "checkout-"+name), "--interval", "300ms",
			"--leader-elect", "--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s",
			"--leader-election-retry-period", "500ms", "--metrics-addr", p.metricsAddr, "--health-addr", p.healthAddr,
			"--log-level", "debug")
		p.cmd.Env = append(os.Environ(), e2eharness.GitEnv...)
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			p.exitErr = p.cmd.Wait()
			logf.Close()
			close(p.exited)
		}()
		t.Cleanup(func() {
			if p.running() {
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
			if t.Failed() {
				data, _ := os.ReadFile(p.log)
				t.Logf("log of %s:\n%s", p.name, data)
			}
		})
		return p
	}
	procs := []*process{start("a"), start("b"), start("c")}
	wait := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting until %s", timeout, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	leaders := func(ps []*process) []*process {
		var out []*process
		for _, p := range ps {
			if p.running() && p.leading() {
				out = append(out, p)
			}
		}
		return out
	}

	wait("every replica is ready", time.Minute, func() bool {
		for _, p := range procs {
			if code, _ := p.get("/readyz"); code != http.StatusOK {
				return false
			}
		}
		return true
	})
	wait("one replica leads", 30*time.Second, func() bool { return len(leaders(procs)) == 1 })
	leader := leaders(procs)[0]
	wait("the leader runs passes", 30*time.Second, func() bool { return leader.passes() >= 3 })
	for _, p := range procs {
		if p != leader && (p.passes() != 0 || p.leading()) {
			t.Errorf("standby %s ran %v passes", p.name, p.passes())
		}
		if code, body := p.get("/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz %d %s", p.name, code, body)
		}
	}

	// Events a real pass and leader election posted about the Lease.
	wait("Events about the Lease", 30*time.Second, func() bool {
		events, _ := leaseEvents(ctx, t, "liqo", LeaseName("gamma"))
		found := map[string]corev1.Event{}
		for _, e := range events {
			found[e.Reason] = e
		}
		w, l := found["WaitingForNonce"], found["LeaderElection"]
		return strings.HasPrefix(w.Message, "gamma → delta (consumer, Pending): waiting for delta to send a nonce") &&
			strings.Contains(l.Message, "became leader")
	})

	// SIGTERM: the leader stops its pass, releases the Lease, exits 0.
	stopped := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.exited:
		if leader.exitErr != nil {
			t.Errorf("%s exited with %v after SIGTERM, want 0", leader.name, leader.exitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the leader did not exit after SIGTERM")
	}
	if data, _ := os.ReadFile(leader.log); !strings.Contains(string(data), `"released the Lease"`) {
		t.Errorf("%s did not release the Lease", leader.name)
	}
	wait("a standby takes over", 10*time.Second, func() bool { return len(leaders(procs)) == 1 })
	if took := time.Since(stopped); took > 4*time.Second {
		t.Errorf("takeover after SIGTERM took %s, not less than the lease duration: the Lease was not released", took)
	}
	second := leaders(procs)[0]
	wait("the new leader runs passes", 30*time.Second, func() bool { return second.passes() >= 2 })

	// SIGKILL: no release; the last replica waits for the Lease to expire.
	killed := time.Now()
	if err := second.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-second.exited
	wait("the last replica takes over", 30*time.Second, func() bool { return len(leaders(procs)) == 1 })
	if took := time.Since(killed); took < 2*time.Second {
		t.Errorf("takeover after SIGKILL took %s: before the Lease could expire", took)
	}
	third := leaders(procs)[0]
	wait("the last leader runs passes", 30*time.Second, func() bool { return third.passes() >= 2 })
	_ = third.cmd.Process.Signal(syscall.SIGTERM)
	<-third.exited

	// No two passes overlapped, across the three processes' logs.
	var spans []passSpan
	for _, p := range procs {
		spans = append(spans, passSpans(t, p)...)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	for i := 1; i < len(spans); i++ {
		prev, cur := spans[i-1], spans[i]
		// Timestamps have millisecond precision and durations are rounded.
		if cur.process != prev.process && cur.start.Before(prev.end.Add(-2*time.Millisecond)) {
			t.Errorf("passes overlap: %s %s–%s and %s %s–%s", prev.process, prev.start.Format(time.StampMilli), prev.end.Format(time.StampMilli),
				cur.process, cur.start.Format(time.StampMilli), cur.end.Format(time.StampMilli))
		}
	}
	byProcess := map[string]int{}
	for _, s := range spans {
		byProcess[s.process]++
	}
	if len(byProcess) != 3 {
		t.Errorf("passes by replica %v, want all three to have led", byProcess)
	}
	t.Logf("passes by replica: %v", byProcess)
}
