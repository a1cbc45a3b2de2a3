package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election defaults, those of Flux controllers
// (fluxcd/pkg/runtime/leaderelection).
const (
	DefaultLeaseDuration = 35 * time.Second
	DefaultRenewDeadline = 30 * time.Second
	DefaultRetryPeriod   = 5 * time.Second
)

// LeaseName is the name of a cluster's Lease: leader election among its
// reconcilers, and the object its Events are about.
func LeaseName(cluster string) string { return "gitpeer-" + cluster }

// LeaderElection makes passes run only in the process holding a
// coordination.k8s.io/v1 Lease, with client-go's leader election:
//
//   - a replica runs no pass until it holds the Lease;
//   - the leader renews it every RetryPeriod; when it cannot renew it for
//     RenewDeadline, it has lost it: the running pass is abandoned through
//     its context (pins are saved before the push, and the push is a pass's
//     last write to the repo: the repo holds the whole commit or none of
//     it), no pass starts, and the replica waits for the Lease again;
//   - another replica takes the Lease over LeaseDuration after the last
//     renewal it observed (LeaseDuration > RenewDeadline leaves the old
//     leader the margin to stop), or at once when the leader released it;
//   - on shutdown (the context ends), the leader stops its pass first and
//     only then, with ReleaseOnCancel, releases the Lease.
type LeaderElection struct {
	// Leases reaches the Lease Namespace/Name (get, create, update).
	Leases          coordinationv1client.LeasesGetter
	Namespace, Name string
	// Identity names this replica in the Lease's holderIdentity; default
	// "<hostname>_<random UUID>", as controller-runtime does.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to Default*.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel releases the Lease on shutdown, once the pass has
	// stopped, so that another replica takes over at once.
	ReleaseOnCancel bool
	// EventRecorder, when set, records "became leader" events on the Lease.
	EventRecorder resourcelock.EventRecorder

	watchdog *leaderelection.HealthzAdaptor
}

// Check is a liveness check (healthz.Checker): it fails when this process
// believes it leads but has not renewed the Lease for longer than the lease
// duration plus a margin, e.g. stuck on an API server it cannot reach.
func (le *LeaderElection) Check(req *http.Request) error {
	if le.watchdog == nil {
		return nil
	}
	return le.watchdog.Check(req)
}

// defaults fills the zero fields, once.
func (le *LeaderElection) defaults() error {
	if le.Leases == nil || le.Namespace == "" || le.Name == "" {
		return errors.New("leader election: a Lease client, namespace and name are required")
	}
	if le.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election: identity: %w", err)
		}
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	if le.watchdog == nil {
		le.watchdog = leaderelection.NewLeaderHealthzAdaptor(le.RenewDeadline)
	}
	return nil
}

// Prepare validates the configuration and fills its defaults; call it
// before using Check.
func (le *LeaderElection) Prepare() error { return le.defaults() }

// run campaigns for the Lease until ctx ends, and runs lead while holding
// it. lead must return once its context ends; run returns only after it has.
func (le *LeaderElection) run(ctx context.Context, log logr.Logger, lead func(context.Context)) error {
	if err := le.defaults(); err != nil {
		return err
	}
	log = log.WithValues("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	lock := &acquiredLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     le.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity, EventRecorder: le.EventRecorder},
	}}
	for {
		lock.acquired.Store(false)
		done := make(chan struct{})
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: le.LeaseDuration,
			RenewDeadline: le.RenewDeadline,
			RetryPeriod:   le.RetryPeriod,
			Name:          le.Name,
			// Not client-go's release: it would free the Lease while the
			// pass may still run. run releases it after lead returned.
			ReleaseOnCancel: false,
			WatchDog:        le.watchdog,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					defer close(done)
					log.Info("leading: passes run in this process")
					lead(ctx)
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					if id != le.Identity {
						log.Info("standing by: another replica holds the Lease", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.watchdog.SetLeaderElection(elector)
		log.Info("waiting for the Lease")
		elector.Run(ctx)
		// OnStartedLeading runs in its own goroutine, started once the Lease
		// was acquired: wait until the passes have stopped.
		led := lock.acquired.Load()
		if led {
			<-done
		}
		if ctx.Err() != nil {
			if led && le.ReleaseOnCancel {
				le.release(context.WithoutCancel(ctx), lock, log)
			}
			return nil
		}
		log.Info("lost the Lease: passes stopped")
	}
}

// release gives up the Lease if this replica still holds it, as client-go
// does: no holder, and a one-second duration, so another replica takes it
// at once.
func (le *LeaderElection) release(ctx context.Context, lock resourcelock.Interface, log logr.Logger) {
	ctx, cancel := context.WithTimeout(ctx, le.RenewDeadline)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		log.Error(err, "could not release the Lease")
		return
	}
	if rec.HolderIdentity != le.Identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		log.Error(err, "could not release the Lease")
		return
	}
	log.Info("released the Lease")
}

// acquiredLock records whether this replica wrote itself into the Lease
// (acquired or renewed it): then client-go has started OnStartedLeading.
type acquiredLock struct {
	resourcelock.Interface
	acquired atomic.Bool
}

func (l *acquiredLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, rec)
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	return err
}

func (l *acquiredLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, rec)
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	return err
}
