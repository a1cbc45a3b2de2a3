package gitsync

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	utilclock "k8s.io/utils/clock"

	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

func TestSyncCommitsAndPushes(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	if r.Head() != "" {
		t.Fatalf("Head of an empty remote = %q, want empty", r.Head())
	}

	msg := "cl-a: publish identity\n\nGitpeer-Cluster: cl-a\nGitpeer-Pass: 1\n"
	res := mustSync(t, r, writes(msg, map[string]string{
		"clusters/cl-a/cluster.yaml":       "clusterID: cl-a\n",
		"clusters/cl-a/kustomization.yaml": "resources: []\n",
	}))

	tip := runGit(t, bare, "rev-parse", "refs/heads/main")
	want := Result{Commit: tip, Message: msg, Attempts: 1,
		Files: []string{"clusters/cl-a/cluster.yaml", "clusters/cl-a/kustomization.yaml"}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("Sync = %+v, want %+v", res, want)
	}
	if r.Head() != tip {
		t.Errorf("Head = %s, want %s", r.Head(), tip)
	}
	fsck(t, bare)

	// Author, committer, time and message exactly as given.
	got := runGit(t, bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%at|%ct|%P", "main")
	wantLog := fmt.Sprintf("gitpeer cl-a <cl-a@gitpeer.example>|gitpeer cl-a <cl-a@gitpeer.example>|%d|%d|", clock.Unix(), clock.Unix())
	if got != wantLog {
		t.Errorf("git log = %q, want %q", got, wantLog)
	}
	if raw := runGit(t, bare, "cat-file", "commit", "main"); !strings.HasSuffix(raw+"\n", "\n\n"+msg) {
		t.Errorf("commit message not verbatim:\n%s", raw)
	}
	stat := runGit(t, bare, "log", "--stat", "--format=%s", "main")
	for _, f := range want.Files {
		if !strings.Contains(stat, f) {
			t.Errorf("git log --stat lacks %s:\n%s", f, stat)
		}
	}
	if c := runGit(t, bare, "show", "main:clusters/cl-a/cluster.yaml"); c != "clusterID: cl-a" {
		t.Errorf("git show = %q", c)
	}

	// A plain git clone checks out main.
	clone := filepath.Join(t.TempDir(), "clone")
	runGit(t, t.TempDir(), "clone", "-q", bare, clone)
	if b := runGit(t, clone, "rev-parse", "--abbrev-ref", "HEAD"); b != "main" {
		t.Errorf("clone checked out %q, want main", b)
	}
	if !exists(clone, "clusters/cl-a/kustomization.yaml") {
		t.Error("clone lacks the committed file")
	}
	assertClean(t, r.Dir())

	// The same pass again changes nothing, hence no commit.
	res = mustSync(t, r, writes(msg, map[string]string{
		"clusters/cl-a/cluster.yaml":       "clusterID: cl-a\n",
		"clusters/cl-a/kustomization.yaml": "resources: []\n",
	}))
	if !reflect.DeepEqual(res, Result{}) {
		t.Errorf("identical pass = %+v, want no commit", res)
	}
	if n := runGit(t, bare, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("main has %s commits, want 1", n)
	}
	// An empty Change and a nil Change make no commit either.
	for _, ch := range []*Change{nil, {}, {Message: "nothing"}} {
		res = mustSync(t, r, func(context.Context, *TreeFS) (*Change, error) { return ch, nil })
		if res.Commit != "" {
			t.Errorf("empty change %+v committed %s", ch, res.Commit)
		}
	}
	if r.Head() != tip {
		t.Errorf("Head after no-op syncs = %s, want %s", r.Head(), tip)
	}
}

func TestOpenReusesClone(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "cl-a")
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	res := mustSync(t, r, writes("one", map[string]string{"a.yaml": "a: 1\n"}))

	// A second Repo on the same Dir (a restarted process) sees the tip.
	r2, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if r2.Head() != res.Commit {
		t.Errorf("reopened Head = %s, want %s", r2.Head(), res.Commit)
	}

	// Relative paths are made absolute and match the stored origin.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, bare)
	if err == nil {
		o := opts
		o.URL = rel
		if _, err := Open(context.Background(), o); err != nil {
			t.Errorf("reopen with relative URL %s: %v", rel, err)
		}
	}

	// Another URL (the repo moved, or another transport): origin follows
	// it and the clone mirrors the new remote, with no manual fix.
	other := opts
	other.URL = newBare(t)
	r3, err := Open(context.Background(), other)
	if err != nil {
		t.Fatalf("Open with another URL: %v", err)
	}
	if r3.Head() != "" {
		t.Errorf("Head after moving to an empty remote = %s, want none", r3.Head())
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "a.yaml")); !os.IsNotExist(err) {
		t.Errorf("a.yaml of the old remote is still in the clone: %v", err)
	}
	if got := runGit(t, opts.Dir, "remote", "get-url", "--all", "origin"); got != other.URL {
		t.Errorf("origin = %q, want %q", got, other.URL)
	}
	res3 := mustSync(t, r3, writes("on the new remote", map[string]string{"b.yaml": "b: 1\n"}))
	if got := runGit(t, other.URL, "rev-parse", "main"); got != res3.Commit {
		t.Errorf("new remote main = %s, want %s", got, res3.Commit)
	}
	if n := runGit(t, other.URL, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("new remote has %s commits, want 1 (nothing of the old remote)", n)
	}

	junk := opts
	junk.Dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(junk.Dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), junk); err == nil {
		t.Error("Open into a non-empty, non-git directory succeeded")
	}
	for _, bad := range []Options{{Dir: "d", Author: opts.Author}, {URL: bare, Author: opts.Author}, {URL: bare, Dir: "d"},
		{URL: bare, Dir: t.TempDir(), Author: opts.Author, Branch: "no..dots"}} {
		if _, err := Open(context.Background(), bad); err == nil {
			t.Errorf("Open(%+v) succeeded", bad)
		}
	}
}

func TestOpenUnreachableRemote(t *testing.T) {
	opts := testOptions(t, filepath.Join(t.TempDir(), "missing.git"), "cl-a")
	if _, err := Open(context.Background(), opts); err == nil {
		t.Fatal("Open of a missing remote succeeded")
	}
}

func TestSyncReappliesTheChangeOnARejectedPush(t *testing.T) {
	bare := newBare(t)
	if _, err := Seed(context.Background(), testOptions(t, bare, "seed"), map[string][]byte{"peering.cue": []byte("peerings: []\n")}, "init"); err != nil {
		t.Fatal(err)
	}
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")

	var aCommit string
	var calls int
	res, err := b.SyncTree(context.Background(), func(ctx context.Context, tip *TreeFS) (*Change, error) {
		calls++
		// A wins the race while B is computing on the old tip.
		aCommit = mustSync(t, a, writes("cl-a pass", map[string]string{"clusters/cl-a/cluster.yaml": "clusterID: cl-a\n"})).Commit
		return &Change{
			Writes:  map[string][]byte{"clusters/cl-b/cluster.yaml": []byte("clusterID: cl-b\n")},
			Deletes: []string{"peering.cue"},
			Message: "cl-b pass",
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || calls != 1 {
		t.Errorf("Attempts = %d, pass calls = %d, want 2 pushes of one pass", res.Attempts, calls)
	}
	if !reflect.DeepEqual(res.Files, []string{"clusters/cl-b/cluster.yaml", "peering.cue"}) || res.Message != "cl-b pass" {
		t.Errorf("Result = %+v, want the pass's files and message", res)
	}
	fsck(t, bare)
	if m := runGit(t, bare, "rev-list", "--merges", "main"); m != "" {
		t.Errorf("history has merges: %s", m)
	}
	if _, err := gitOutput(bare, "merge-base", "--is-ancestor", aCommit, "main"); err != nil {
		t.Errorf("A's commit %s is not an ancestor of main: history was forced", aCommit)
	}
	if p := runGit(t, bare, "rev-parse", "main^"); p != aCommit {
		t.Errorf("B's parent = %s, want A's commit %s", p, aCommit)
	}
	if got := runGit(t, bare, "rev-parse", "main"); got != res.Commit || b.Head() != res.Commit {
		t.Errorf("main = %s, Head = %s, want the re-applied commit %s", got, b.Head(), res.Commit)
	}
	if n := runGit(t, bare, "rev-list", "--count", "main"); n != "3" {
		t.Errorf("main has %s commits, want 3", n)
	}
	// B's commit is exactly B's change on A's tree: A's file kept, B's
	// written and deleted.
	if tree := runGit(t, bare, "ls-tree", "-r", "--name-only", "main"); tree != "clusters/cl-a/cluster.yaml\nclusters/cl-b/cluster.yaml" {
		t.Errorf("tree:\n%s", tree)
	}
	if diff := runGit(t, bare, "diff", "--name-status", "main^", "main"); diff != "A\tclusters/cl-b/cluster.yaml\nD\tpeering.cue" {
		t.Errorf("B's commit changes:\n%s", diff)
	}
	assertClean(t, b.Dir())
}

// movingRemote is a Repo.onDate that lets other make a commit each time a
// commit is dated, that is while a Sync makes its commit: the Sync's every
// push is then rejected.
func movingRemote(t *testing.T, other *Repo) func() {
	n := 0
	return func() {
		n++
		mustSync(t, other, writes("cl-c pass", map[string]string{"clusters/cl-c/status.yaml": "generation: " + strconv.Itoa(n) + "\n"}))
	}
}

func TestSyncGivesUpWhenRemoteKeepsMoving(t *testing.T) {
	bare := newBare(t)
	if _, err := Seed(context.Background(), testOptions(t, bare, "seed"), map[string][]byte{"peering.cue": []byte("x: 1\n")}, "init"); err != nil {
		t.Fatal(err)
	}
	c := openRepo(t, bare, "cl-c")
	opts := testOptions(t, bare, "cl-b")
	opts.Push.MaxAttempts = 3
	var waits []int
	opts.Push.Backoff = func(c Contention) time.Duration { waits = append(waits, c.Attempt); return 0 }
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	moving := movingRemote(t, c)
	b.onDate = moving

	calls := 0
	res, err := b.SyncTree(context.Background(), func(ctx context.Context, tip *TreeFS) (*Change, error) {
		calls++
		return &Change{Writes: map[string][]byte{"clusters/cl-b/status.yaml": []byte("ready\n")}, Message: "cl-b pass"}, nil
	})
	if !errors.Is(err, ErrPushConflict) {
		t.Fatalf("Sync = %v, want ErrPushConflict", err)
	}
	if res.Attempts != 3 || calls != 1 || !reflect.DeepEqual(waits, []int{1, 2}) {
		t.Errorf("Attempts = %d, calls = %d, backoffs = %v; want 3, 1, [1 2]", res.Attempts, calls, waits)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("error %q does not count the attempts", err)
	}
	if res.Commit != "" {
		t.Errorf("Result.Commit = %s after a conflict", res.Commit)
	}
	fsck(t, bare)
	if got, want := runGit(t, bare, "rev-parse", "main"), c.Head(); got != want {
		t.Errorf("main = %s, want C's last commit %s", got, want)
	}
	if log := runGit(t, bare, "log", "--all", "--format=%s"); strings.Contains(log, "cl-b pass") {
		t.Errorf("a rejected commit reached the remote:\n%s", log)
	}
	assertClean(t, b.Dir())
	if atHead(b.Dir(), "clusters/cl-b/status.yaml") {
		t.Error("the rejected write is on the clone's main")
	}

	// Once the remote holds still, the same Repo pushes fine.
	b.onDate = nil
	res = mustSync(t, b, writes("cl-b pass", map[string]string{"clusters/cl-b/status.yaml": "ready\n"}))
	if res.Commit == "" || res.Attempts != 1 {
		t.Errorf("Sync after the conflict = %+v", res)
	}
}

func TestSyncRetriesAreBoundedInTimeNotCount(t *testing.T) {
	bare := newBare(t)
	c := openRepo(t, bare, "cl-c")
	opts := testOptions(t, bare, "cl-b")
	opts.Push.Timeout = 2 * time.Second
	clk := newSkippingClock()
	opts.Clock = clk
	// Each attempt takes no time on the fake clock, so the backoff alone
	// sets how many fit in the timeout: few, for a fast test.
	const backoff = 250 * time.Millisecond
	var waits []int
	opts.Push.Backoff = func(c Contention) time.Duration { waits = append(waits, c.Attempt); return backoff }
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	b.onDate = movingRemote(t, c)
	start := clk.Now()
	res, err := b.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		return &Change{Writes: map[string][]byte{"clusters/cl-b/status.yaml": []byte("ready\n")}, Message: "cl-b pass"}, nil
	})
	took := clk.Since(start)
	if !errors.Is(err, ErrPushConflict) {
		t.Fatalf("Sync = %v, want ErrPushConflict", err)
	}
	if want := 2 + int(opts.Push.Timeout/backoff); res.Attempts != want || res.Attempts != len(waits)+1 {
		t.Errorf("Attempts = %d after %d backoffs, want %d: retries until the timeout", res.Attempts, len(waits), want)
	}
	// cl-c, the one writer, is new to the pass once: at the first refetch,
	// after one backoff. The timeout runs from there, and the last backoff
	// ends at it.
	if want := backoff + opts.Push.Timeout; took != want {
		t.Errorf("gave up after %s, want %s: the push timeout %s after cl-c's first commit", took, want, opts.Push.Timeout)
	}
	if want := fmt.Sprintf("after %d attempts in %s, the last %s without", res.Attempts, took, opts.Push.Timeout); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say how many attempts in how long (%q)", err, want)
	}

	// The count alone never stops the retries, however high; the time does.
	rejected := errors.New("non-fast-forward update: refs/heads/main")
	b.opts.Push.Backoff = func(Contention) time.Duration { return 0 }
	if err := b.waitRetry(context.Background(), Contention{Attempt: 1000}, clk.Now(), clk.Now(), rejected); err != nil {
		t.Errorf("attempt 1001 within the timeout: %v, want a retry", err)
	}
	if err := b.waitRetry(context.Background(), Contention{Attempt: 2}, clk.Now().Add(-opts.Push.Timeout), clk.Now().Add(-opts.Push.Timeout), rejected); !errors.Is(err, ErrPushConflict) {
		t.Errorf("attempt 3 after the timeout: %v, want ErrPushConflict", err)
	}
	// A backoff longer than the time left ends at the deadline, for one
	// last attempt.
	b.opts.Push.Backoff = func(Contention) time.Duration { return time.Hour }
	start = clk.Now()
	if err := b.waitRetry(context.Background(), Contention{Attempt: 2}, start.Add(-opts.Push.Timeout+50*time.Millisecond), start.Add(-opts.Push.Timeout+50*time.Millisecond), rejected); err != nil || clk.Since(start) != 50*time.Millisecond {
		t.Errorf("a backoff past the deadline: %v after %s, want a last attempt at the deadline, 50ms on", err, clk.Since(start))
	}
}

func TestSyncRefusesToReapplyOverAForeignChangeToItsPaths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign map[string]string // what the writer that beats the push commits
		owns    func(string) bool
		want    string // the path the error must name
	}{
		{name: "a file the pass writes", foreign: map[string]string{"clusters/cl-b/status.yaml": "forged\n"}, want: "clusters/cl-b/status.yaml"},
		{name: "a file under a directory the pass deletes", foreign: map[string]string{"clusters/cl-b/old/planted.yaml": "x\n"}, want: "clusters/cl-b/old/planted.yaml"},
		{
			name: "a file the pass owns but leaves alone", foreign: map[string]string{"clusters/cl-b/planted.yaml": "x\n"},
			owns: func(p string) bool { return strings.HasPrefix(p, "clusters/cl-b/") }, want: "clusters/cl-b/planted.yaml",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := newBare(t)
			if _, err := Seed(context.Background(), testOptions(t, bare, "seed"), map[string][]byte{
				"clusters/cl-b/status.yaml": []byte("old\n"), "clusters/cl-b/old/a.yaml": []byte("a\n"),
			}, "init"); err != nil {
				t.Fatal(err)
			}
			hostile := openRepo(t, bare, "hostile")
			b := openRepo(t, bare, "cl-b")
			var theirs string
			res, err := b.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
				theirs = mustSync(t, hostile, writes("hostile", tc.foreign)).Commit
				return &Change{
					Writes:  map[string][]byte{"clusters/cl-b/status.yaml": []byte("ready\n")},
					Deletes: []string{"clusters/cl-b/old"},
					Message: "cl-b pass", Owns: tc.owns,
				}, nil
			})
			if !errors.Is(err, ErrForeignWrite) {
				t.Fatalf("Sync = %v, want ErrForeignWrite", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), theirs[:12]) {
				t.Errorf("error %q does not name the path %s and the commit %s", err, tc.want, theirs[:12])
			}
			if res.Commit != "" || res.Attempts != 1 {
				t.Errorf("Result = %+v, want one rejected push and nothing pushed", res)
			}
			if got := runGit(t, bare, "rev-parse", "main"); got != theirs {
				t.Errorf("main = %s, want the foreign commit %s left as it was", got, theirs)
			}
			for name, content := range tc.foreign {
				if got := runGit(t, bare, "show", "main:"+name); got+"\n" != content {
					t.Errorf("%s = %q, want the foreign content kept", name, got)
				}
			}
			assertClean(t, b.Dir())
		})
	}
}

func TestSyncHonoursContext(t *testing.T) {
	bare := newBare(t)
	other := openRepo(t, bare, "other")
	opts := testOptions(t, bare, "cl-b")
	opts.Push.Backoff = func(Contention) time.Duration { return time.Hour }
	opts.Clock = utilclock.RealClock{} // the wait is real: the context ends it
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err = b.SyncTree(ctx, func(context.Context, *TreeFS) (*Change, error) {
		n++
		mustSync(t, other, writes("move", map[string]string{"o.yaml": strconv.Itoa(n)}))
		time.AfterFunc(50*time.Millisecond, cancel)
		return &Change{Writes: map[string][]byte{"b.yaml": []byte("b")}, Message: "b"}, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sync = %v, want context.Canceled", err)
	}
}

func privateKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestSyncRefusesSecrets(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	base := mustSync(t, r, writes("init", map[string]string{"clusters/cl-a/cluster.yaml": "clusterID: cl-a\n"})).Commit

	res, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		return &Change{
			Writes: map[string][]byte{
				"clusters/cl-a/status.yaml":       []byte("ready: true\n"),
				"clusters/cl-a/liqo/key.yaml":     privateKeyPEM(t),
				"clusters/cl-a/kustomization.yml": []byte("resources: []\n"),
			},
			Deletes: []string{"clusters/cl-a/cluster.yaml"},
			Message: "leak",
		}, nil
	})
	if !errors.Is(err, guard.ErrSecret) {
		t.Fatalf("Sync = %v, want guard.ErrSecret", err)
	}
	if !strings.Contains(err.Error(), "clusters/cl-a/liqo/key.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
	if res.Commit != "" || res.Attempts != 0 {
		t.Errorf("Result = %+v, want nothing pushed", res)
	}
	if got := runGit(t, bare, "rev-parse", "main"); got != base {
		t.Errorf("main moved to %s", got)
	}
	if r.Head() != base {
		t.Errorf("Head = %s, want %s", r.Head(), base)
	}
	assertClean(t, r.Dir())
	for _, f := range []string{"clusters/cl-a/status.yaml", "clusters/cl-a/liqo", "clusters/cl-a/kustomization.yml"} {
		if atHead(r.Dir(), f) {
			t.Errorf("%s was written despite the refusal", f)
		}
	}
	if !atHead(r.Dir(), "clusters/cl-a/cluster.yaml") {
		t.Error("the refused change's deletion was applied")
	}
	findings, err := guard.ScanHistory(bare)
	if err != nil || len(findings) != 0 {
		t.Errorf("ScanHistory = %v, %v", findings, err)
	}
}

func TestSyncDeletesAndCleansDirs(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{
		"keep.yaml":                     "k\n",
		"clusters/a/inbox/b/nonce.yaml": "n\n",
		"clusters/a/inbox/b/tenant.yml": "t\n",
		"clusters/a/status.yaml":        "s\n",
		"clusters/x/inbox/y/a.yaml":     "a\n",
		"clusters/x/inbox/y/deep/b.txt": "b\n",
	}))

	res := mustSync(t, r, func(_ context.Context, tip *TreeFS) (*Change, error) {
		return &Change{
			Deletes: []string{
				"clusters/a/inbox/b/nonce.yaml", "clusters/a/inbox/b/tenant.yml", // every file of a dir
				"clusters/x",         // a whole directory
				"clusters/nope.yaml", // not there: not a change
			},
			Writes:  map[string][]byte{"clusters/n/m/o.yaml": []byte("o\n"), "keep.yaml": []byte("k\n")},
			Message: "revoke",
		}, nil
	})
	want := []string{
		"clusters/a/inbox/b/nonce.yaml", "clusters/a/inbox/b/tenant.yml", "clusters/n/m/o.yaml",
		"clusters/x/inbox/y/a.yaml", "clusters/x/inbox/y/deep/b.txt",
	}
	if !reflect.DeepEqual(res.Files, want) {
		t.Errorf("Files = %v, want %v", res.Files, want)
	}
	if tree := runGit(t, bare, "ls-tree", "-r", "--name-only", "main"); tree != "clusters/a/status.yaml\nclusters/n/m/o.yaml\nkeep.yaml" {
		t.Errorf("tree:\n%s", tree)
	}
	fsck(t, bare)
	for _, d := range []string{"clusters/a/inbox", "clusters/x"} {
		if atHead(r.Dir(), d) {
			t.Errorf("empty directory %s left behind", d)
		}
	}
	assertClean(t, r.Dir())

	// Deleting what is not there is no change at all.
	res = mustSync(t, r, func(context.Context, *TreeFS) (*Change, error) {
		return &Change{Deletes: []string{"clusters/x", "gone.yaml"}, Message: "again"}, nil
	})
	if res.Commit != "" {
		t.Errorf("deleting missing paths committed %s", res.Commit)
	}

	// A file may replace a directory deleted in the same change, and a file
	// rewritten under a deleted directory survives it.
	res = mustSync(t, r, func(context.Context, *TreeFS) (*Change, error) {
		return &Change{
			Deletes: []string{"clusters/n/m", "clusters/a"},
			Writes:  map[string][]byte{"clusters/n": []byte("now a file\n"), "clusters/a/status.yaml": []byte("s\n")},
			Message: "reshape",
		}, nil
	})
	if !reflect.DeepEqual(res.Files, []string{"clusters/n", "clusters/n/m/o.yaml"}) {
		t.Errorf("Files = %v", res.Files)
	}
	if tree := runGit(t, bare, "ls-tree", "-r", "--name-only", "main"); tree != "clusters/a/status.yaml\nclusters/n\nkeep.yaml" {
		t.Errorf("tree:\n%s", tree)
	}
	assertClean(t, r.Dir())
}

func TestSyncRejectsInvalidChanges(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{"a.yaml": "a\n"}))
	tip := r.Head()
	for _, ch := range []*Change{
		{Writes: map[string][]byte{"/etc/passwd": nil}, Message: "m"},
		{Writes: map[string][]byte{"../escape": nil}, Message: "m"},
		{Writes: map[string][]byte{"a/../../b": nil}, Message: "m"},
		{Writes: map[string][]byte{"./a": nil}, Message: "m"},
		{Writes: map[string][]byte{"a//b": nil}, Message: "m"},
		{Writes: map[string][]byte{"dir/": nil}, Message: "m"},
		{Writes: map[string][]byte{"": nil}, Message: "m"},
		{Writes: map[string][]byte{".git/config": nil}, Message: "m"},
		{Writes: map[string][]byte{"x/.GIT/hooks/pre-commit": nil}, Message: "m"},
		{Writes: map[string][]byte{`a\b`: nil}, Message: "m"},
		{Writes: map[string][]byte{"a\nb": nil}, Message: "m"},
		{Writes: map[string][]byte{"GIT~1/config": nil}, Message: "m"},
		{Deletes: []string{".git"}, Message: "m"},
		{Writes: map[string][]byte{"b": []byte("1")}, Deletes: []string{"b"}, Message: "m"},
		{Writes: map[string][]byte{"d": []byte("1"), "d/e": []byte("2")}, Message: "m"},
		{Writes: map[string][]byte{"new.yaml": []byte("1")}},
	} {
		_, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) { return ch, nil })
		if !errors.Is(err, ErrInvalidChange) {
			t.Errorf("Sync(%v) = %v, want ErrInvalidChange", ch, err)
		}
	}
	if got := runGit(t, bare, "rev-parse", "main"); got != tip {
		t.Errorf("main moved")
	}
	assertClean(t, r.Dir())
}

func TestSyncRefusesWritingThroughSymlinks(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	mustSync(t, r, writes("init", map[string]string{"a.yaml": "a\n"}))

	// Another cluster commits a symlink pointing out of the repo.
	outside := t.TempDir()
	evil := filepath.Join(t.TempDir(), "evil")
	runGit(t, t.TempDir(), "clone", "-q", bare, evil)
	if err := os.Symlink(outside, filepath.Join(evil, "clusters")); err != nil {
		t.Fatal(err)
	}
	runGit(t, evil, "add", "clusters")
	runGit(t, evil, "-c", "user.name=e", "-c", "user.email=e@x", "commit", "-q", "-m", "link")
	runGit(t, evil, "push", "-q", "origin", "main")

	_, err := r.SyncTree(context.Background(), writes("w", map[string]string{"clusters/cl-a/status.yaml": "x\n"}))
	if !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Sync through a symlink = %v, want ErrInvalidChange", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the worktree: %v", entries)
	}
	// Replacing the link itself with a file is a normal write.
	res := mustSync(t, r, writes("w", map[string]string{"clusters": "a file now\n"}))
	if res.Commit == "" {
		t.Error("replacing a symlink by a file made no commit")
	}
	if mode := runGit(t, bare, "ls-tree", "main", "clusters"); !strings.HasPrefix(mode, "100644 blob") {
		t.Errorf("clusters is %q, want a regular file", mode)
	}
}

// TestStrayFilesInTheCloneNeverReachAPass: files someone leaves in the
// clone's directory (a crash of an older version, a user's edit) are never
// what a pass reads nor what it commits, and the next Open removes them.
func TestStrayFilesInTheCloneNeverReachAPass(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "cl-a")
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, writes("init", map[string]string{"a/a.yaml": "a\n"}))
	for name, content := range map[string]string{"stray.yaml": "s", "new/dir/x": "x", "a/a.yaml": "modified"} {
		p := filepath.Join(r.Dir(), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := mustSync(t, r, func(_ context.Context, tip *TreeFS) (*Change, error) {
		if _, err := fs.Stat(tip, "stray.yaml"); err == nil {
			t.Error("the pass sees a stray file")
		}
		if b, _ := fs.ReadFile(tip, "a/a.yaml"); string(b) != "a\n" {
			t.Errorf("the pass sees a modified file: %q", b)
		}
		return &Change{Writes: map[string][]byte{"b.yaml": []byte("b\n")}, Message: "b"}, nil
	})
	if tree := runGit(t, bare, "ls-tree", "-r", "--name-only", res.Commit); tree != "a/a.yaml\nb.yaml" {
		t.Errorf("the commit holds:\n%s", tree)
	}
	if got := runGit(t, bare, "show", res.Commit+":a/a.yaml"); got != "a" {
		t.Errorf("the commit's a/a.yaml is %q", got)
	}
	if _, err := Open(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	assertClean(t, r.Dir())
}

func TestSyncPassError(t *testing.T) {
	bare := newBare(t)
	r := openRepo(t, bare, "cl-a")
	boom := errors.New("boom")
	_, err := r.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Sync = %v, want the pass's error", err)
	}
	if _, err := gitOutput(bare, "rev-parse", "--verify", "-q", "main"); err == nil {
		t.Error("a failed pass created the branch")
	}
}

func TestSyncConcurrentWriters(t *testing.T) {
	bare := newBare(t)
	const writers, rounds = 3, 3
	var wg sync.WaitGroup
	var pushes atomic.Int64
	errs := make(chan error, writers*rounds)
	for w := range writers {
		opts := testOptions(t, bare, "cl-"+strconv.Itoa(w))
		opts.Push.MaxAttempts = 50
		opts.Push.Backoff = func(Contention) time.Duration { return time.Duration(1+w) * 5 * time.Millisecond }
		r, err := Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				name := fmt.Sprintf("clusters/cl-%d/status-%d.yaml", w, i)
				res, err := r.SyncTree(context.Background(), writes(name, map[string]string{name: "ok\n"}))
				if err != nil {
					errs <- err
					return
				}
				pushes.Add(int64(res.Attempts))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fsck(t, bare)
	if n := runGit(t, bare, "rev-list", "--count", "main"); n != strconv.Itoa(writers*rounds) {
		t.Errorf("main has %s commits, want %d", n, writers*rounds)
	}
	if m := runGit(t, bare, "rev-list", "--merges", "main"); m != "" {
		t.Errorf("history has merges")
	}
	if files := strings.Count(runGit(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n") + 1; files != writers*rounds {
		t.Errorf("main has %d files, want %d", files, writers*rounds)
	}
	t.Logf("%d commits took %d push attempts", writers*rounds, pushes.Load())
}

func TestSeedAndInitBare(t *testing.T) {
	bare := newBare(t)
	if head := runGit(t, bare, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
		t.Errorf("bare HEAD = %s", head)
	}
	trunk := filepath.Join(t.TempDir(), "t.git")
	if err := InitBare(trunk, "trunk"); err != nil {
		t.Fatal(err)
	}
	if head := runGit(t, trunk, "symbolic-ref", "HEAD"); head != "refs/heads/trunk" {
		t.Errorf("bare HEAD = %s", head)
	}
	if err := InitBare(trunk, "trunk"); err == nil {
		t.Error("InitBare over an existing repository succeeded")
	}

	opts := testOptions(t, "file://"+bare, "seed")
	opts.Dir = ""
	files, err := ReadFiles(fstest.MapFS{
		"peering.cue":                   {Data: []byte("peerings: []\n")},
		"clusters/a/kustomization.yaml": {Data: []byte("resources: []\n")},
		".git/config":                   {Data: []byte("[core]\n")},
		"link":                          {Data: []byte("peering.cue"), Mode: fs.ModeSymlink},
	})
	if err != nil || len(files) != 2 {
		t.Fatalf("ReadFiles = %v, %v; want the two regular files", files, err)
	}
	commit, err := Seed(context.Background(), opts, files, "Initial peering repo")
	if err != nil {
		t.Fatal(err)
	}
	if got := runGit(t, bare, "rev-parse", "main"); got != commit {
		t.Errorf("main = %s, want %s", got, commit)
	}
	fsck(t, bare)
	if _, err := Seed(context.Background(), opts, files, "again"); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("second Seed = %v, want ErrNotEmpty", err)
	}
	// Seeding another branch of a non-empty remote makes a root commit there.
	opts.Branch = "other"
	if _, err := Seed(context.Background(), opts, files, "other"); err != nil {
		t.Errorf("Seed of a new branch: %v", err)
	}
	if p := runGit(t, bare, "rev-list", "--count", "other"); p != "1" {
		t.Errorf("other has %s commits, want 1", p)
	}
}

// fakeSigner produces an armoured blob where git expects a signature; git
// stores it in the commit header without checking it.
type fakeSigner struct{ signed atomic.Int32 }

func (s *fakeSigner) Sign(message io.Reader) ([]byte, error) {
	if _, err := io.ReadAll(message); err != nil {
		return nil, err
	}
	s.signed.Add(1)
	return []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"), nil
}

func TestSyncSignsCommits(t *testing.T) {
	bare := newBare(t)
	opts := testOptions(t, bare, "cl-a")
	signer := &fakeSigner{}
	opts.Signing.Signer = signer
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r, writes("signed", map[string]string{"a": "a\n"}))
	if raw := runGit(t, bare, "cat-file", "commit", "main"); !strings.Contains(raw, "gpgsig -----BEGIN SSH SIGNATURE-----") {
		t.Errorf("commit is not signed:\n%s", raw)
	}
	if signer.signed.Load() != 1 {
		t.Errorf("signer called %d times", signer.signed.Load())
	}
	fsck(t, bare)
}

func TestDefaultBackoff(t *testing.T) {
	for _, tc := range []struct {
		c        Contention
		min, max time.Duration
	}{
		{Contention{Attempt: 1, Landed: 0, Window: 100 * time.Millisecond}, 50 * time.Millisecond, 100 * time.Millisecond},
		{Contention{Attempt: 2, Landed: 4, Window: 100 * time.Millisecond}, 200 * time.Millisecond, 400 * time.Millisecond},
		// A writer that has lost 30 times waits no longer than a fresh one
		// under the same contention: the attempt count is not a measure of it.
		{Contention{Attempt: 30, Landed: 1, Window: 100 * time.Millisecond}, 50 * time.Millisecond, 100 * time.Millisecond},
		{Contention{Attempt: 30, Landed: 4, Window: 100 * time.Millisecond}, 200 * time.Millisecond, 400 * time.Millisecond},
		{Contention{Attempt: 3, Landed: 1, Window: 0}, minBackoff / 2, minBackoff},
		{Contention{Attempt: 3, Landed: 500, Window: time.Second}, maxBackoff / 2, maxBackoff},
	} {
		for range 20 {
			if d := DefaultBackoff(tc.c); d < tc.min || d > tc.max {
				t.Errorf("DefaultBackoff(%+v) = %v, want in [%v, %v]", tc.c, d, tc.min, tc.max)
			}
		}
	}
}

// TestSyncBacksOffByTheCommitsThatBeatIt: Backoff is told how many commits
// other writers landed between the Sync's fetches and how long an attempt
// took, measured on a real remote, and the default backs off by them, not
// ever longer with the attempt count: a Sync that has lost ten times
// retries as soon as one that has lost twice.
func TestSyncBacksOffByTheCommitsThatBeatIt(t *testing.T) {
	bare := newBare(t)
	c := openRepo(t, bare, "cl-c")
	opts := testOptions(t, bare, "cl-b")
	opts.Push.MaxAttempts = 10
	// The windows are what real pushes take.
	opts.Clock = utilclock.RealClock{}
	const perAttempt = 3 // commits the other writer lands during each attempt
	var seen []Contention
	var waits []time.Duration
	opts.Push.Backoff = func(ct Contention) time.Duration {
		seen = append(seen, ct)
		d := DefaultBackoff(ct)
		waits = append(waits, d)
		return d
	}
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b.onDate = func() {
		for range perAttempt {
			n++
			mustSync(t, c, writes("cl-c pass", map[string]string{"clusters/cl-c/status.yaml": "generation: " + strconv.Itoa(n) + "\n"}))
		}
	}
	res, err := b.SyncTree(context.Background(), writes("cl-b pass", map[string]string{"clusters/cl-b/status.yaml": "ready\n"}))
	if !errors.Is(err, ErrPushConflict) {
		t.Fatalf("Sync = %v, want ErrPushConflict", err)
	}
	if res.Attempts != 10 || len(seen) != 9 {
		t.Fatalf("Attempts = %d with %d backoffs, want 10 and 9", res.Attempts, len(seen))
	}
	for i, ct := range seen {
		want := perAttempt
		if i == 0 {
			want = 0 // no refetch yet
		}
		if ct.Attempt != i+1 || ct.Landed != want || ct.Window <= 0 {
			t.Errorf("backoff %d: %+v, want Attempt %d, Landed %d and a Window", i+1, ct, i+1, want)
		}
		if max := time.Duration(max(1, ct.Landed)) * max(ct.Window, minBackoff); waits[i] > max {
			t.Errorf("backoff %d: waited %s, more than %d landed × a %s window", i+1, waits[i], ct.Landed, ct.Window)
		}
	}
	fsck(t, bare)
}

// noChange is a pass that wants nothing.
func noChange() TreePassFunc {
	return func(context.Context, *TreeFS) (*Change, error) { return nil, nil }
}

// TestSyncWaitsItsTurnInABurstOfNewWriters: Push.Timeout counts from the
// last commit by a writer new to the pass, so a pass behind a burst of
// writers that each land once keeps its turn for longer than Push.Timeout
// in all, and lands when the burst has drained; a writer landing again and
// again ahead of it (TestSyncRetriesAreBoundedInTimeNotCount) does not.
func TestSyncWaitsItsTurnInABurstOfNewWriters(t *testing.T) {
	bare := newBare(t)
	const burst = 8
	var others []*Repo
	for i := range burst {
		others = append(others, openRepo(t, bare, fmt.Sprintf("cl-w%d", i)))
	}
	opts := testOptions(t, bare, "cl-b")
	// Between two writers new to the pass there is a backoff (attempts
	// take no time on the fake clock): the push timeout outlasts it, and
	// the burst (8 backoffs) lasts two push timeouts and more.
	opts.Push.Timeout = 2 * time.Second
	const backoff = 600 * time.Millisecond
	opts.Push.Backoff = func(Contention) time.Duration { return backoff }
	clk := newSkippingClock()
	opts.Clock = clk
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b.onDate = func() {
		// Between b's fetch and its push, the next writer of the burst
		// lands its one commit; then the burst is over.
		if n < burst {
			name := fmt.Sprintf("clusters/cl-w%d/status.yaml", n)
			mustSync(t, others[n], writes("cl-w pass", map[string]string{name: "ready\n"}))
			n++
		}
	}
	start := clk.Now()
	res, err := b.SyncTree(context.Background(), writes("cl-b pass", map[string]string{"clusters/cl-b/status.yaml": "ready\n"}))
	if err != nil {
		t.Fatalf("Sync behind a burst of %d writers: %v", burst, err)
	}
	if took := clk.Since(start); took < 2*opts.Push.Timeout || took != burst*backoff || res.Attempts != burst+1 {
		t.Errorf("landed after %d attempts in %s; want %d in %s, longer than the push timeout %s in all", res.Attempts, took, burst+1, burst*backoff, opts.Push.Timeout)
	}
	fsck(t, bare)
	if got := runGit(t, bare, "rev-list", "--count", "main"); got != strconv.Itoa(burst+1) {
		t.Errorf("main has %s commits, want %d: one per writer", got, burst+1)
	}
	if got := runGit(t, bare, "show", "main:clusters/cl-b/status.yaml"); got != "ready" {
		t.Errorf("cl-b's file on main: %q", got)
	}
}

// TestSyncGivesUpOnAnEndlessStreamOfNewWriters: commit authors are what a
// repo writer says they are; a writer landing a commit under a new name
// before every attempt would restart the push timeout forever. The pass
// gives up with ErrPushConflict once MaxPushWait push timeouts have passed
// since its first attempt, and nothing of it lands.
func TestSyncGivesUpOnAnEndlessStreamOfNewWriters(t *testing.T) {
	bare := newBare(t)
	mallory := openRepo(t, bare, "mallory")
	opts := testOptions(t, bare, "cl-b")
	opts.Push.Timeout = time.Second
	// Each attempt takes no time on the fake clock, so the backoff alone
	// sets how many fit in MaxPushWait push timeouts: few, for a fast test.
	const backoff = 500 * time.Millisecond
	opts.Push.Backoff = func(Contention) time.Duration { return backoff }
	clk := newSkippingClock()
	opts.Clock = clk
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b.onDate = func() {
		// Between b's fetch and its push, a commit by a new name lands.
		n++
		mallory.opts.Author.Email = fmt.Sprintf("writer-%d@example.com", n)
		mustSync(t, mallory, writes("burst", map[string]string{"clusters/m/status.yaml": fmt.Sprintf("n: %d\n", n)}))
	}
	start := clk.Now()
	res, err := b.SyncTree(context.Background(), writes("cl-b pass", map[string]string{"clusters/cl-b/status.yaml": "ready\n"}))
	took := clk.Since(start)
	if !errors.Is(err, ErrPushConflict) {
		t.Fatalf("Sync behind an endless stream of new writers: %v, want ErrPushConflict", err)
	}
	// The last backoff ends at the limit; the attempt there is rejected too.
	if limit := MaxPushWait * opts.Push.Timeout; took != limit || res.Attempts != 1+int(limit/backoff) {
		t.Errorf("gave up after %d attempts in %s, want %d in %s (%d push timeouts)", res.Attempts, took, 1+int(limit/backoff), limit, MaxPushWait)
	}
	if _, err := gitOutput(bare, "cat-file", "-e", "main:clusters/cl-b/status.yaml"); err == nil {
		t.Error("cl-b's file landed")
	}
}
