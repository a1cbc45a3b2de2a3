//go:build unix

package main

import (
	"crypto"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/crashpoint"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// handshakeOrder is who runs the passes of a handshake: the provider sends
// the nonce, the consumer its Tenant, the provider the Identity, the
// consumer takes it.
var handshakeOrder = []string{"beta", "alpha", "beta", "alpha"}

// crash is where a handshake's reconciler is killed: on pass number pass
// (0-based index into handshakeOrder) at step.
type crash struct {
	pass int
	step crashpoint.Step
}

// handshakeRun is what a handshake left on the remote.
type handshakeRun struct {
	subjects []string // of main's commits, oldest first
	issued   int      // nonce epochs beta issued to alpha
}

// TestAKilledReconcilerConvergesOnItsNextPass kills a real `gitpeer
// reconcile --once` process with SIGKILL (crashpoint, GITPEER_CRASH_AT) at
// every step boundary of every pass of a handshake between two clusters
// through a bare repo, then runs the next pass normally. Every time, the
// handshake converges as it does without a crash: the same commits on main,
// Ready after the same passes, idle passes after that, verify clean, both
// applied branches on their cluster's signed tree, the checkout lock free,
// no pin lost or rolled back, and the nonce epochs consistent (no
// NonceReplayed or NonceExpired; one epoch issued, as without the crash).
// With -short, only the passes of the provider's answer (pass 3) crash.
func TestAKilledReconcilerConvergesOnItsNextPass(t *testing.T) {
	base := runHandshake(t, nil)
	for _, step := range crashpoint.Steps {
		for pass, id := range handshakeOrder {
			if testing.Short() && pass != 2 {
				continue
			}
			t.Run(fmt.Sprintf("killed at %s of pass %d (%s)", step, pass+1, id), func(t *testing.T) {
				got := runHandshake(t, &crash{pass: pass, step: step})
				if !slices.Equal(got.subjects, base.subjects) {
					t.Errorf("main's commits:\n  %s\nwant, as without a crash:\n  %s",
						strings.Join(got.subjects, "\n  "), strings.Join(base.subjects, "\n  "))
				}
				if got.issued != base.issued {
					t.Errorf("beta issued %d nonce epochs to alpha, %d without a crash", got.issued, base.issued)
				}
			})
		}
	}
}

// runHandshake runs a whole handshake in handshakeOrder, killing the
// reconciler as c says (nil: never), and checks that it converged.
func runHandshake(t *testing.T, c *crash) handshakeRun {
	t.Helper()
	root, remote, work := peeringRepo(t, spec)
	state := func(id string) string { return filepath.Join(root, "state", id) }
	args := func(id string) []string {
		return []string{"reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", state(id)}
	}
	var outputs strings.Builder
	pass := func(id string) string {
		t.Helper()
		code, out, stderr := gitpeer(t, args(id)...)
		if code != 0 {
			t.Fatalf("%s's pass: exit %d\n%s%s", id, code, out, stderr)
		}
		outputs.WriteString(out)
		return out
	}
	for i, id := range handshakeOrder {
		if c != nil && c.pass == i {
			before := passState(t, remote, state(id))
			pid := killedPass(t, c.step, args(id))
			after := passState(t, remote, state(id))
			checkStoppedAt(t, c.step, id, before, after)
			// The dead process's lock record is still there; the next
			// pass takes the lock anyway (no --wait): the kernel released
			// the flock with the process.
			lock, _ := os.ReadFile(filepath.Join(state(id), "checkout.lock"))
			if !strings.Contains(string(lock), fmt.Sprintf("pid %d\n", pid)) {
				t.Errorf("the lock file holds %q, not the killed process %d", lock, pid)
			}
			pass(id)
			checkNotRolledBack(t, after.pins, loadPins(t, state(id)))
		}
		pass(id)
	}
	for _, id := range []string{"alpha", "beta"} {
		// A kill at a step boundary is never in the middle of a write.
		if tmp, _ := filepath.Glob(filepath.Join(state(id), ".*.tmp-*")); len(tmp) > 0 {
			t.Errorf("temporary files left in %s's state dir: %v", id, tmp)
		}
	}
	return checkConverged(t, root, remote, work, pass, &outputs)
}

// checkConverged runs an idle pass of each cluster with pass and checks
// that the handshake has converged: idle passes, no nonce refused in
// outputs, verify clean, the peering Ready, alpha's kubeconfig stored, the
// applied branches signed on their tree, pins that match the repo, and one
// nonce epoch on main, answered and current.
func checkConverged(t *testing.T, root, remote, work string, pass func(id string) string, outputs *strings.Builder) handshakeRun {
	t.Helper()
	state := func(id string) string { return filepath.Join(root, "state", id) }
	for _, id := range []string{"beta", "alpha"} {
		if out := pass(id); !strings.Contains(out, id+": up to date") {
			t.Errorf("%s's pass after the handshake is not idle:\n%s", id, out)
		}
	}
	for _, reason := range []string{"NonceReplayed", "NonceExpired"} {
		if strings.Contains(outputs.String(), reason) {
			t.Errorf("a pass reported %s:\n%s", reason, outputs.String())
		}
	}

	git(t, work, "pull", "-q", "--ff-only")
	if code, out, stderr := gitpeer(t, "verify", work); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ := gitpeer(t, "status", work, "-o", "json")
	var list struct{ Items []struct{ Ready bool } }
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 1 || !list.Items[0].Ready {
		t.Errorf("status: exit %d, %v\n%s", code, err, out)
	}
	if _, err := os.Stat(filepath.Join(state("alpha"), file.KubeconfigDir, "beta.kubeconfig")); err != nil {
		t.Errorf("alpha's kubeconfig for beta: %v", err)
	}
	for _, id := range []string{"alpha", "beta"} {
		checkApplied(t, remote, id, state(id))
		checkPinsMatchTheRepo(t, remote, id, loadPins(t, state(id)))
	}
	return handshakeRun{subjects: subjects(t, remote), issued: checkNonce(t, remote, loadPins(t, state("beta")))}
}

// TestAReconcilerKilledMidWriteConverges kills real reconcile processes
// with SIGKILL at moments spread over a pass, not at step boundaries: in
// the middle of go-git's writes of the index and refs, of a fetch or a
// push, of the pin store's write. Each pass of a handshake is first tried
// by processes killed after 1/5, 2/5, … of a pass's duration; then it runs
// whole. The handshake converges all the same.
func TestAReconcilerKilledMidWriteConverges(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	state := func(id string) string { return filepath.Join(root, "state", id) }
	args := func(id string) []string {
		return []string{"reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", state(id)}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var outputs strings.Builder
	pass := func(id string) string {
		t.Helper()
		code, out, stderr := gitpeer(t, args(id)...)
		if code != 0 {
			t.Fatalf("%s's pass: exit %d\n%s%s", id, code, out, stderr)
		}
		outputs.WriteString(out)
		return out
	}
	// A pass's duration as a process, measured on a pass with nothing to
	// do after a first one (the slowest, cloning, is killed too).
	start := func(id string) *exec.Cmd {
		cmd := exec.Command(exe, args(id)...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	began := time.Now()
	if err := start("beta").Wait(); err != nil {
		t.Fatal(err)
	}
	duration := time.Since(began)
	killed := 0
	for _, id := range handshakeOrder {
		for i := 1; i < 5; i++ {
			cmd := start(id)
			time.Sleep(duration * time.Duration(i) / 5)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				killed++
			}
		}
		pass(id)
	}
	if killed == 0 {
		t.Fatal("no process was killed before it finished: the kill moments are too late")
	}
	t.Logf("%d of %d passes killed before they finished (a pass takes %v)", killed, 4*len(handshakeOrder), duration)
	checkConverged(t, root, remote, work, pass, &outputs)
}

// killedPass runs args as a gitpeer process that kills itself at step, and
// returns its process ID. It fails the test unless the process died of
// SIGKILL: a pass that never reached step would otherwise go unnoticed.
func killedPass(t *testing.T, step crashpoint.Step, args []string) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", crashpoint.Env+"="+string(step))
	out, _ := cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("gitpeer %s with %s=%s ended with %v, want killed by SIGKILL at that step\n%s",
			strings.Join(args, " "), crashpoint.Env, step, cmd.ProcessState, out)
	}
	return cmd.Process.Pid
}

// stateAt is what one cluster's pass has left: the remote's branches and
// the cluster's clone and pins.
type stateAt struct {
	main, applied string // remote tips ("" when absent)
	appliedOn     string // the applied head's parent: the main commit it was computed from
	local         string // the clone's main ("" when absent)
	worktree      bool   // the clone holds something beside .git
	pins          *pins.Store
}

func passState(t *testing.T, remote, stateDir string) stateAt {
	t.Helper()
	id := filepath.Base(stateDir)
	s := stateAt{
		main:      revParse(remote, "refs/heads/main"),
		applied:   revParse(remote, "refs/heads/gitpeer/applied/"+id),
		appliedOn: revParse(remote, "refs/heads/gitpeer/applied/"+id+"^"),
		pins:      loadPins(t, stateDir),
	}
	checkout := filepath.Join(stateDir, "checkout")
	if _, err := os.Stat(checkout); err == nil {
		s.local = revParse(checkout, "refs/heads/main")
		entries, _ := os.ReadDir(checkout)
		s.worktree = len(entries) != 1 || entries[0].Name() != ".git"
	}
	return s
}

// checkStoppedAt checks that the killed pass stopped where step says: the
// hook sits at that boundary, not at another.
func checkStoppedAt(t *testing.T, step crashpoint.Step, id string, before, after stateAt) {
	t.Helper()
	pushed := after.main != before.main
	switch step {
	case crashpoint.PinsSaved, crashpoint.FilesWritten, crashpoint.Committed:
		if pushed || after.applied != before.applied {
			t.Errorf("killed at %s, the remote moved: main %s → %s", step, before.main, after.main)
		}
	case crashpoint.Pushed:
		// One atomic push: a seal that moved is the seal of main's new
		// commit, never left behind it.
		if !pushed || after.applied != before.applied && after.appliedOn != after.main {
			t.Errorf("killed at %s: main moved %v, applied branch %q → %q on %q, main %q; want main moved, with the seal of its commit if the applied branch moved", step, pushed, before.applied, after.applied, after.appliedOn, after.main)
		}
	case crashpoint.Applied:
		if !pushed || after.appliedOn != after.main {
			t.Errorf("killed at %s: main moved %v, applied branch %q on %q, main %q; want both moved: a seal on the pass's commit", step, pushed, after.applied, after.appliedOn, after.main)
		}
	}
	// reconcile's clone has no worktree, whatever the step; its main is
	// the fetched tip until the pass commits.
	if after.worktree {
		t.Errorf("killed at %s, the clone of %s holds a worktree", step, id)
	}
	switch step {
	case crashpoint.PinsSaved, crashpoint.FilesWritten:
		if after.local != before.main {
			t.Errorf("killed at %s, the clone of %s has main at %s; want the fetched tip %s", step, id, after.local, before.main)
		}
	case crashpoint.Committed:
		if after.local == before.main {
			t.Errorf("killed at %s, the clone of %s has no new commit", step, id)
		}
	}
}

// checkNotRolledBack checks that the pins after the pass that followed the
// crash hold everything the killed pass had saved: the same keys, no lower
// sequence, every nonce epoch issued still known.
func checkNotRolledBack(t *testing.T, saved, now *pins.Store) {
	t.Helper()
	for dir, seq := range saved.Own {
		if now.Own[dir] < seq {
			t.Errorf("own sequence of %s went back from %d to %d", dir, seq, now.Own[dir])
		}
	}
	for id, p := range saved.Peers {
		q := now.Lookup(id)
		if q == nil {
			t.Errorf("the pins of %s were lost", id)
			continue
		}
		if q.Fingerprint != p.Fingerprint || q.PublicKey != p.PublicKey {
			t.Errorf("the pinned key of %s changed from %s to %s", id, p.Fingerprint, q.Fingerprint)
		}
		for dir, seq := range p.Sequences {
			if q.Seen(dir) < seq {
				t.Errorf("sequence seen of %s went back from %d to %d", dir, seq, q.Seen(dir))
			}
		}
		if p.Nonce != nil {
			for _, e := range p.Nonce.Issued {
				if !q.WasIssued(e) {
					t.Errorf("nonce epoch %d issued to %s was forgotten", e, id)
				}
			}
		}
	}
}

// checkPinsMatchTheRepo checks that the sequences a cluster remembers are
// those of the manifests on main: what it signed, and what it saw of peers.
func checkPinsMatchTheRepo(t *testing.T, remote, id string, s *pins.Store) {
	t.Helper()
	seq := func(dir string) uint64 {
		f := path.Join(dir, dirmanifest.FileName)
		m, err := dirmanifest.Parse(f, []byte(git(t, remote, "show", "main:"+f)))
		if err != nil {
			t.Fatal(err)
		}
		return m.Sequence
	}
	for dir, n := range s.Own {
		if got := seq(dir); got != n {
			t.Errorf("%s remembers signing %s at sequence %d; main has %d", id, dir, n, got)
		}
	}
	for peer, p := range s.Peers {
		if p.Fingerprint == "" {
			t.Errorf("%s pinned no key for %s", id, peer)
		}
		for dir, n := range p.Sequences {
			if got := seq(dir); got != n {
				t.Errorf("%s saw %s at sequence %d; main has %d", id, dir, n, got)
			}
		}
	}
}

// checkNonce checks that the nonce on main, the epoch alpha's Tenant
// answered and beta's current epoch are one, and returns how many epochs
// beta issued to alpha.
func checkNonce(t *testing.T, remote string, beta *pins.Store) int {
	t.Helper()
	nonceFile := layout.ClusterPath("alpha", layout.InboxDir, "beta", "nonce.yaml")
	n, err := artifact.ParseNonce(nonceFile, []byte(git(t, remote, "show", "main:"+nonceFile)), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	tenantFile := layout.ClusterPath("beta", layout.InboxDir, "alpha", "tenant.yaml")
	tenant, err := artifact.DecodeTenant(tenantFile, []byte(git(t, remote, "show", "main:"+tenantFile)))
	if err != nil {
		t.Fatal(err)
	}
	answered, err := artifact.TenantEpoch(tenantFile, tenant)
	if err != nil {
		t.Fatal(err)
	}
	p := beta.Lookup("alpha")
	if p == nil || p.Nonce == nil || p.Nonce.Epoch != n.Epoch || answered != n.Epoch {
		t.Fatalf("nonce epoch on main %d, answered %d, beta's pins %+v: want one epoch", n.Epoch, answered, p)
	}
	return len(p.Nonce.Issued)
}

// checkApplied checks that the applied branch of id holds main's
// clusters/<id>, less its inbox, and nothing else, in a commit signed with
// id's key.
func checkApplied(t *testing.T, remote, id, stateDir string) {
	t.Helper()
	branch := "gitpeer/applied/" + id
	scope := layout.ClusterPath(id)
	var want []string
	for _, line := range strings.Split(git(t, remote, "ls-tree", "-r", "main", scope), "\n") {
		if line != "" && !strings.Contains(line, "\t"+scope+"/inbox/") {
			want = append(want, line)
		}
	}
	if got := strings.TrimSpace(git(t, remote, "ls-tree", "-r", branch)); got == "" || got != strings.Join(want, "\n") {
		t.Errorf("%s holds\n%s\nwant main's %s less its inbox:\n%s", branch, got, scope, strings.Join(want, "\n"))
	}
	b, err := file.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitobj.Open(remote)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(revParse(remote, branch)))
	if err != nil {
		t.Fatal(err)
	}
	if who, err := commitsig.Verify(c, map[string]crypto.PublicKey{id: b.Signer().Public()}); err != nil || who != id {
		t.Errorf("%s's head is not signed by %s: %v", branch, id, err)
	}
}

func loadPins(t *testing.T, stateDir string) *pins.Store {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir, file.PinsFile))
	if os.IsNotExist(err) {
		return pins.New(filepath.Base(stateDir))
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := pins.Parse(file.PinsFile, data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// revParse is the hash rev names in the repository dir, "" if none.
func revParse(dir, rev string) string {
	out, err := testgit.Command(dir, "rev-parse", "--verify", "-q", rev).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// subjects are the subjects of main's commits, oldest first.
func subjects(t *testing.T, remote string) []string {
	t.Helper()
	return strings.Split(strings.TrimSpace(git(t, remote, "log", "--reverse", "--format=%s", "main")), "\n")
}

// TestATornStateFileStopsTheReconcilerNamingIt cuts a state file short, as
// a crash in the middle of a write that is not atomic would, after a
// handshake: reconcile and init exit 1 naming the file and how to recover;
// nothing is pushed, and the state dir is left as it was (no new key, no
// emptied pins).
func TestATornStateFileStopsTheReconcilerNamingIt(t *testing.T) {
	root, remote, _ := peeringRepo(t, spec)
	state := func(id string) string { return filepath.Join(root, "state", id) }
	for _, id := range handshakeOrder {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", state(id)); code != 0 {
			t.Fatalf("%s: %s", id, stderr)
		}
	}
	cases := []struct {
		file string
		says string
	}{
		{file.KeyFile, "is damaged: "},
		{file.CAKeyFile, "is damaged: "},
		{file.NonceSecretFile, "is damaged: "},
		{file.ConfigFile, "is damaged: "},
		{file.PinsFile, ": cut short: "},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(state("beta"), tc.file)
			whole, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.WriteFile(p, whole, 0o600) })
			// Cut at the last line break before the middle: what survives
			// of a rewrite in place is whole lines, the last ones missing.
			n := len(whole) / 2
			if i := strings.LastIndexByte(string(whole[:n]), '\n'); i > 0 {
				n = i + 1
			}
			if err := os.WriteFile(p, whole[:n], 0o600); err != nil {
				t.Fatal(err)
			}
			tip := revParse(remote, "main")
			before := map[string][]byte{}
			entries, _ := os.ReadDir(state("beta"))
			for _, e := range entries {
				if !e.IsDir() {
					before[e.Name()], _ = os.ReadFile(filepath.Join(state("beta"), e.Name()))
				}
			}

			code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", state("beta"))
			if code != 1 || !strings.Contains(stderr, p) || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "restore") {
				t.Errorf("reconcile with %s cut short: exit %d\n%s%s\nwant exit 1 naming %s, saying %q and how to restore", tc.file, code, out, stderr, p, tc.says)
			}
			if tc.file != file.PinsFile {
				code, _, stderr = gitpeer(t, "init", "--cluster", "beta", "--api-server", "https://beta.example:6443", "--state-dir", state("beta"))
				if code != 1 || !strings.Contains(stderr, p) {
					t.Errorf("init over the damaged state dir: exit %d\n%s", code, stderr)
				}
			}
			if got := revParse(remote, "main"); got != tip {
				t.Errorf("main moved from %s to %s", tip, got)
			}
			for name, data := range before {
				got, err := os.ReadFile(filepath.Join(state("beta"), name))
				if err != nil || string(got) != string(data) {
					t.Errorf("%s was changed (%v)", name, err)
				}
			}
		})
	}
	// Whole again, the state dir works as before: nothing to do.
	if code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", state("beta")); code != 0 || !strings.Contains(out, "beta: up to date") {
		t.Fatalf("restored: exit %d\n%s%s", code, out, stderr)
	}
}
