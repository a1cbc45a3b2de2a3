package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/reasons"
)

// TestAPassThatLostEveryPushShowsInStatusUntilOneLands runs the daemon on a
// real bare repo whose branch another writer moves during each of its push
// attempts, as a burst of reconcilers does: the pass gives up after its
// push timeout, and GET /status and the status file beside the checkout
// say PushRejected, with the attempts, since when and when the next pass
// runs. Once the other writer stops, the early retry lands and the status
// says committed.
func TestAPassThatLostEveryPushShowsInStatusUntilOneLands(t *testing.T) {
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "peering.git")
	if err := gitsync.InitBare(bare, "main"); err != nil {
		t.Fatal(err)
	}
	opts := func(name string) gitsync.Options {
		return gitsync.Options{URL: bare, Dir: filepath.Join(t.TempDir(), name),
			Author: gitsync.Signature{Name: "gitpeer " + name, Email: name + "@gitpeer.example"}}
	}
	other, err := gitsync.Open(ctx, opts("beta"))
	if err != nil {
		t.Fatal(err)
	}
	var moving atomic.Bool
	moving.Store(true)
	generation := 0
	o := opts("alpha")
	// Bounded by attempts, not time: a loaded machine fits fewer attempts
	// in a timeout (each clock reading here is a whole pass of beta's).
	o.Push.Timeout, o.Push.MaxAttempts = time.Minute, 3
	// The clock is read while alpha pushes, among others when it dates
	// its commit, between its fetch and its push: beta lands a commit at
	// every reading while moving.
	o.Clock = gitsync.ClockFunc(func() time.Time {
		if moving.Load() {
			generation++
			if _, err := other.SyncTree(ctx, func(context.Context, *gitsync.TreeFS) (*gitsync.Change, error) {
				return &gitsync.Change{Writes: map[string][]byte{"clusters/beta/status.yaml": fmt.Appendf(nil, "generation: %d\n", generation)}, Message: "beta pass"}, nil
			}); err != nil {
				t.Error(err)
			}
		}
		return time.Now()
	})
	alpha, err := gitsync.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	pass := func(ctx context.Context) (*runner.Result, error) {
		res, err := alpha.SyncTree(ctx, func(context.Context, *gitsync.TreeFS) (*gitsync.Change, error) {
			return &gitsync.Change{Writes: map[string][]byte{"clusters/alpha/status.yaml": []byte("ready\n")}, Message: "alpha pass"}, nil
		})
		return &runner.Result{Result: res}, err
	}

	status := &Status{File: StatusFile(alpha.Dir())}
	servers, err := Endpoints{HealthAddr: "127.0.0.1:0", Health: NewHealth(), Status: status}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := servers["127.0.0.1:0"]
	defer srv.Close(ctx)
	if code, body := get(t, "http://"+srv.Addr()+"/status"); code != 200 || !strings.Contains(body, `"result": ""`) {
		t.Errorf("GET /status before any pass: %d %s", code, body)
	}

	var passes atomic.Int32
	lost := make(chan PassStatus, 1)
	release := make(chan struct{})
	d := &Daemon{Cluster: "alpha", Interval: time.Hour, RetryBase: 200 * time.Millisecond, Status: status,
		Pass: func(ctx context.Context) (*runner.Result, error) {
			n := passes.Add(1)
			if n == 2 {
				<-release // the status is read between the two passes
			}
			res, err := pass(ctx)
			if n == 1 {
				lost <- status.Last()
			}
			return res, err
		}}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the first pass did not end")
	}
	// The pass returned; the loop records it just after.
	var got PassStatus
	eventually(t, "the lost pass in the status", func() bool { got = status.Last(); return got.Result != "" })
	if got.Result != ResultFailed || got.Reason != reasons.PushRejected || got.Attempts < 2 ||
		got.RejectedInARow != 1 || got.FailingSince.IsZero() || !got.RetryAt.After(got.Ended) || got.RetryAt.Sub(got.Ended) > time.Second ||
		!strings.Contains(got.Message, "remote moved on every attempt") {
		t.Errorf("status after a lost pass = %+v", got)
	}
	code, body := get(t, "http://"+srv.Addr()+"/status")
	var served PassStatus
	if err := json.Unmarshal([]byte(body), &served); code != 200 || err != nil || served.Reason != reasons.PushRejected || served.Attempts != got.Attempts {
		t.Errorf("GET /status = %d %s (%v)", code, body, err)
	}
	onDisk, err := ReadStatusFile(StatusFile(alpha.Dir()))
	if err != nil || onDisk.Reason != reasons.PushRejected || onDisk.Attempts != got.Attempts || !onDisk.RetryAt.Equal(got.RetryAt) {
		t.Errorf("status file = %+v, %v", onDisk, err)
	}
	if s := onDisk.Summary(); !strings.Contains(s, "failed (PushRejected)") || !strings.Contains(s, "push attempts") || !strings.Contains(s, "next pass at") {
		t.Errorf("summary %q does not say PushRejected, the attempts and the next pass", s)
	}

	// The other writer stops: the early retry (not the hourly tick) lands.
	moving.Store(false)
	close(release)
	eventually(t, "a committed pass in the status", func() bool { return status.Last().Result == ResultCommitted })
	got = status.Last()
	if got.Reason != "" || got.Message != "" || !got.FailingSince.IsZero() || !got.RetryAt.IsZero() || got.RejectedInARow != 0 ||
		got.Commit != alpha.Head() || got.LastSuccess.IsZero() {
		t.Errorf("status after a landed pass = %+v", got)
	}
	onDisk, err = ReadStatusFile(StatusFile(alpha.Dir()))
	if err != nil || onDisk.Result != ResultCommitted || onDisk.Reason != "" {
		t.Errorf("status file after a landed pass = %+v, %v", onDisk, err)
	}
}

func TestReadStatusFileOfACheckoutWithoutDaemon(t *testing.T) {
	if _, err := ReadStatusFile(StatusFile(filepath.Join(t.TempDir(), "checkout"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadStatusFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}

// A status file that is not one a daemon wrote is refused, naming the file
// and what is wrong, rather than printed as a pass of no cluster at year 1.
func TestReadStatusFileRefusesWhatNoDaemonWrote(t *testing.T) {
	for _, tc := range []struct{ content, says string }{
		{`{"result": 12, garbage`, "invalid character"},
		{`{"result":"failed","reason":"PushRejected","ended":"2026-11-23T10:00:00Z"}`, "no cluster"},
		{`{"cluster":"alpha","ended":"2026-11-23T10:00:00Z"}`, "no result"},
		{`{"cluster":"alpha","result":"failed"}`, "no end time"},
	} {
		path := filepath.Join(t.TempDir(), "checkout.status.json")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadStatusFile(path)
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadStatusFile(%s) = %v, want an error naming the file and %q", tc.content, err, tc.says)
		}
	}
}

// A pass that found a tenant namespace stuck terminating records it in the
// status file, which `gitpeer status` on the checkout prints, with the
// reason RevocationStuck; the next pass without it clears it.
func TestStuckRevocationsShowInTheStatus(t *testing.T) {
	file := filepath.Join(t.TempDir(), "checkout.status.json")
	d := &Daemon{Cluster: "alpha", Status: &Status{File: file}}
	since := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	res := &runner.Result{Stuck: []backend.Stuck{{Object: "namespace/liqo-tenant-beta", Since: since,
		Message: "tenant namespace liqo-tenant-beta has been terminating for 6m0s: tenant.liqo.io/finalizer"}}}
	now := since.Add(6 * time.Minute)
	d.recordStatus(ResultUnchanged, false, 0, res, nil, now, now, 0)
	onDisk, err := ReadStatusFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk.Stuck) != 1 || onDisk.Stuck[0].Object != "namespace/liqo-tenant-beta" || !onDisk.Stuck[0].Since.Equal(since) {
		t.Fatalf("status file's stuck = %+v", onDisk.Stuck)
	}
	if s := onDisk.Summary(); !strings.Contains(s, "RevocationStuck: namespace/liqo-tenant-beta: tenant namespace liqo-tenant-beta has been terminating for 6m0s") {
		t.Errorf("summary %q does not name the stuck namespace", s)
	}
	d.recordStatus(ResultUnchanged, false, 0, &runner.Result{}, nil, now, now, 0)
	if got := d.Status.Last(); len(got.Stuck) != 0 {
		t.Errorf("a pass with nothing stuck kept %+v", got.Stuck)
	}
}
