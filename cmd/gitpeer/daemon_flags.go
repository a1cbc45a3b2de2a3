package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/cobra"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/gitpeer/gitpeer/internal/controller/daemon"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
)

// daemonHelp is added to reconcile's help.
const daemonHelp = `

Without --once, reconcile is a daemon, run as Flux controllers run (package
daemon). It runs a pass every --interval, and at once when the remote's
branch (a peer's step, a merged spec change) or the cluster's applied branch
moved: it reads the remote's refs every --poll-interval (5s; one ref listing,
no fetch; backing off on errors and on a host's rate limit), and with
--watch it watches a local repository's refs. JSON logs (--log-encoding console for people; an idle pass is one
debug line), Prometheus metrics gitpeer_* on --metrics-addr, /healthz and
/readyz on --health-addr (ready once the repo has been fetched), the last
pass's outcome as JSON on --health-addr's /status and in <checkout>.status.json
(gitpeer status <checkout> prints it: a pass that lost every push to other
writers says PushRejected, its attempts, since when, and when it runs
again), and with
--backend kubernetes Kubernetes Events about the Lease gitpeer-<cluster> in
the Liqo namespace (kubectl describe lease gitpeer-<cluster> -n liqo): each
peering's change of condition with its reason (IdentityIssued, KeyChanged,
SignatureVerificationFailed, InvalidCSR, ...) and failed passes
(PushRejected, ReconciliationFailed). The file backend logs them. With
--leader-elect, passes run only in the replica holding that Lease. SIGTERM
abandons a running pass (nothing half-pushed: pins are saved before the push,
which lands whole or not at all), releases the Lease and exits 0.`

// daemonFlags configure reconcile's daemon mode (without --once).
type daemonFlags struct {
	log                       logger.Options
	metricsAddr, healthAddr   string
	leaderElect               bool
	leaseNamespace            string
	leaseDuration, renewAfter time.Duration
	retryPeriod               time.Duration
	releaseOnCancel           bool
	pollInterval              time.Duration
	webhookAddr, webhookFile  string
}

// webhookSecretEnv holds the webhook's secret when --webhook-secret-file
// is not given.
const webhookSecretEnv = "GITPEER_WEBHOOK_SECRET"

// Flags of daemon mode, refused with --once.
var daemonOnlyFlags = []string{
	"log-level", "log-encoding", "metrics-addr", "health-addr", "leader-elect", "lease-namespace",
	"leader-election-lease-duration", "leader-election-renew-deadline", "leader-election-retry-period",
	"leader-election-release-on-cancel", "poll-interval", "webhook-addr", "webhook-secret-file",
}

// register adds the daemon's flags to cmd, its help, and their checks
// (run before RunE).
func (f *daemonFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.log.BindFlags(fs) // --log-encoding json|console, --log-level trace|debug|info|error, as Flux's
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address, e.g. :8080 (default none)")
	fs.StringVar(&f.healthAddr, "health-addr", "", "serve /healthz and /readyz on this address, e.g. :9440 (default none)")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "run passes only while holding the Lease gitpeer-<cluster> (--backend kubernetes): for more than one replica, or rolling updates")
	fs.StringVar(&f.leaseNamespace, "lease-namespace", "", "namespace of the Lease gitpeer-<cluster>, of leader election and of Events (default --liqo-namespace)")
	fs.DurationVar(&f.leaseDuration, "leader-election-lease-duration", daemon.DefaultLeaseDuration, "how long a standby waits after the last renewal it saw before taking the Lease")
	fs.DurationVar(&f.renewAfter, "leader-election-renew-deadline", daemon.DefaultRenewDeadline, "how long the leader retries renewing before it gives up the Lease and stops its pass")
	fs.DurationVar(&f.retryPeriod, "leader-election-retry-period", daemon.DefaultRetryPeriod, "time between tries to acquire or renew the Lease")
	fs.BoolVar(&f.releaseOnCancel, "leader-election-release-on-cancel", true, "release the Lease on shutdown, after the pass stopped, so a standby takes over at once")
	fs.DurationVar(&f.pollInterval, "poll-interval", daemon.DefaultPollInterval, "how often to read the remote's refs (no fetch: one ref listing) and run a pass at once when the branch moved; jittered, backing off on errors and rate limits; 0: only every --interval")
	fs.StringVar(&f.webhookAddr, "webhook-addr", "", "serve the Git host's push webhook at /hook on this address, e.g. :9292 (GitHub, GitLab, Gitea, Forgejo; HMAC-verified): a push to --branch runs a pass at once (default none)")
	fs.StringVar(&f.webhookFile, "webhook-secret-file", "", "file holding the webhook's secret (default $"+webhookSecretEnv+"); required with --webhook-addr")
	cmd.Long += daemonHelp
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return f.check(cmd) }
}

// check refuses daemon flags with --once, unknown log options, and
// leader election without a Kubernetes API.
func (f *daemonFlags) check(cmd *cobra.Command) error {
	fs := cmd.Flags()
	if once, _ := fs.GetBool("once"); once {
		for _, name := range daemonOnlyFlags {
			if fs.Changed(name) {
				return fmt.Errorf("--%s does not apply to --once", name)
			}
		}
		return nil
	}
	if interval, _ := fs.GetDuration("interval"); interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", interval)
	}
	if f.pollInterval != 0 && f.pollInterval < time.Second {
		return fmt.Errorf("--poll-interval must be 0 (off) or 1s at least, got %s", f.pollInterval)
	}
	if !slices.Contains([]string{"json", "console"}, f.log.LogEncoding) {
		return fmt.Errorf("--log-encoding: %q is not one of: json, console", f.log.LogEncoding)
	}
	if !slices.Contains([]string{"trace", "debug", "info", "error"}, f.log.LogLevel) {
		return fmt.Errorf("--log-level: %q is not one of: trace, debug, info, error", f.log.LogLevel)
	}
	if f.webhookAddr != "" {
		if _, err := f.webhookSecret(); err != nil {
			return err
		}
	} else if f.webhookFile != "" {
		return errors.New("--webhook-secret-file needs --webhook-addr")
	}
	for name, addr := range map[string]string{"metrics-addr": f.metricsAddr, "health-addr": f.healthAddr, "webhook-addr": f.webhookAddr} {
		if _, port, err := net.SplitHostPort(addr); addr != "" && (err != nil || port == "") {
			return fmt.Errorf("--%s: %q is not host:port (for example :8080, or 127.0.0.1:8080)", name, addr)
		}
	}
	if kind, _ := fs.GetString("backend"); kind != backendKubernetes {
		for _, name := range []string{"leader-elect", "lease-namespace"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s needs --backend kubernetes (the Lease is in the cluster)", name)
			}
		}
	}
	if f.leaderElect {
		switch {
		case f.leaseDuration < time.Second:
			return fmt.Errorf("--leader-election-lease-duration must be 1s at least, got %s", f.leaseDuration)
		case f.renewAfter >= f.leaseDuration:
			return fmt.Errorf("--leader-election-renew-deadline (%s) must be shorter than --leader-election-lease-duration (%s)", f.renewAfter, f.leaseDuration)
		case f.retryPeriod <= 0 || float64(f.retryPeriod)*1.2 >= float64(f.renewAfter):
			return fmt.Errorf("--leader-election-retry-period (%s) must be positive and shorter than --leader-election-renew-deadline (%s) / 1.2", f.retryPeriod, f.renewAfter)
		}
	}
	return nil
}

// run runs r as a daemon until ctx ends: passes every interval and on
// trigger, with the logs, metrics, probes, Events and leader election the
// flags ask for.
// refs are the full names of the refs whose push events (--webhook-addr)
// run a pass.
func (f *daemonFlags) run(ctx context.Context, r *runner.Runner, bf *backendFlags, interval time.Duration, trigger <-chan struct{}, review *reviewFlow, refs []string) error {
	log := logger.NewLogger(f.log)
	logger.SetLogger(log) // client-go's (klog) lines go through it too
	cluster := r.Backend.ClusterID()
	metrics, registry := daemon.NewMetrics(buildVersion())
	health := daemon.NewHealth()
	health.MarkFetched() // gitsync.Open has fetched the repo
	r.Fetched = health.MarkFetched
	// Beside the checkout, where `gitpeer status <checkout>` finds it.
	status := &daemon.Status{File: daemon.StatusFile(r.Repo.Dir())}
	d := &daemon.Daemon{
		Cluster: cluster, Pass: r.Pass, Interval: interval, Log: log, Metrics: metrics, Status: status,
	}
	if f.pollInterval > 0 {
		d.Poller = &daemon.Poller{Refs: r.Repo, Interval: f.pollInterval}
	}
	if trigger != nil {
		go func() {
			for range trigger { // closed when ctx ends
				d.Wake(daemon.WakeWatch)
			}
		}()
	}
	if review != nil {
		d.Compare = review.compare
		if review.pr != nil {
			d.Pass = review.pr.wrap(cluster, r.Pass)
		}
	}
	if bf.kind == backendKubernetes {
		stop, err := f.kubernetes(d, bf, health)
		if err != nil {
			return err
		}
		defer stop()
	}
	ep := daemon.Endpoints{
		MetricsAddr: f.metricsAddr, HealthAddr: f.healthAddr, Gatherer: registry, Health: health, Status: status, Log: log,
	}
	if f.webhookAddr != "" {
		secret, err := f.webhookSecret()
		if err != nil {
			return err
		}
		ep.WebhookAddr = f.webhookAddr
		hook := &daemon.Webhook{Secret: secret, Refs: refs, Wake: d.Wake, Log: log.WithName("webhook").WithValues("cluster", cluster)}
		if f.webhookFile != "" {
			// Read at each request: a mounted Secret is rotated in place.
			hook.SecretFrom = f.webhookSecret
		}
		ep.Webhook = hook
	}
	servers, err := ep.Listen()
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Close(sctx)
		}
	}()
	kv := []any{"cluster", cluster, "version", buildVersion(), "interval", interval.String(), "pollInterval", f.pollInterval.String(), "leaderElection", f.leaderElect,
		"signingFormat", string(r.Repo.SignatureFormat())}
	if s := servers[f.metricsAddr]; s != nil {
		kv = append(kv, "metricsAddr", s.Addr())
	}
	if s := servers[f.healthAddr]; s != nil {
		kv = append(kv, "healthAddr", s.Addr())
	}
	if s := servers[f.webhookAddr]; s != nil {
		kv = append(kv, "webhookAddr", s.Addr())
	}
	log.Info("starting", kv...)
	return d.Run(ctx)
}

// kubernetes adds Events about the cluster's Lease and, with
// --leader-elect, leader election on it; stop flushes the Events.
func (f *daemonFlags) kubernetes(d *daemon.Daemon, bf *backendFlags, health *daemon.Health) (stop func(), err error) {
	cfg, err := bf.restConfig()
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	leases, err := coordinationv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	ns := f.leaseNamespace
	if ns == "" {
		ns = bf.liqoNamespace
	}
	rec, stop, err := daemon.NewEventRecorder(core, d.Log)
	if err != nil {
		return nil, err
	}
	name := daemon.LeaseName(d.Cluster)
	d.Events = &daemon.KubeEvents{Leases: leases, Namespace: ns, Name: name, Recorder: rec, Log: d.Log}
	if f.leaderElect {
		d.Leader = &daemon.LeaderElection{
			Leases: leases, Namespace: ns, Name: name,
			LeaseDuration: f.leaseDuration, RenewDeadline: f.renewAfter, RetryPeriod: f.retryPeriod,
			ReleaseOnCancel: f.releaseOnCancel, EventRecorder: rec,
		}
		if err := d.Leader.Prepare(); err != nil {
			stop()
			return nil, err
		}
		health.AddHealthzCheck("leader-election", d.Leader.Check)
	}
	return stop, nil
}

// webhookSecret reads the webhook's secret from --webhook-secret-file, else
// $GITPEER_WEBHOOK_SECRET, without its trailing newline; an empty one is
// an error.
func (f *daemonFlags) webhookSecret() ([]byte, error) {
	secret := []byte(os.Getenv(webhookSecretEnv))
	where := "$" + webhookSecretEnv
	if f.webhookFile != "" {
		b, err := os.ReadFile(f.webhookFile)
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file: %w", err)
		}
		secret, where = b, f.webhookFile
	}
	secret = bytes.TrimRight(secret, "\r\n")
	if len(secret) == 0 {
		return nil, fmt.Errorf("--webhook-addr needs a secret: %s is empty (--webhook-secret-file FILE or $%s; the same secret as the host's webhook)", where, webhookSecretEnv)
	}
	return secret, nil
}
