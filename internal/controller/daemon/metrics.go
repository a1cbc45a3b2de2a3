package daemon

import (
	"runtime"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// Steps are the values of gitpeer_peering_step's step label, in handshake
// order: each peering has one series per step, 1 for its current step.
var Steps = []layout.Step{
	layout.StepPending, layout.StepNonceSent, layout.StepTenantSent,
	layout.StepIdentityIssued, layout.StepReady, layout.StepRevoking,
}

// Metrics are the daemon's Prometheus metrics, all named gitpeer_*:
//
//	gitpeer_pass_duration_seconds            histogram of pass durations
//	gitpeer_passes_total{result}             passes by Result* (committed, proposed, withdrawn, unchanged, failed, abandoned)
//	gitpeer_commits_total                    commits pushed
//	gitpeer_push_attempts_total              push attempts, the first ones included
//	gitpeer_push_retries_total               push attempts after a rejected one (the remote had moved)
//	gitpeer_push_rejected_passes_total       passes that gave up pushing: the remote moved on every
//	                                         attempt (also counted as failed passes)
//	gitpeer_wakeups_total{source}            passes asked for before the next interval, by Wake* source
//	                                         (poll, webhook, watch, rebased); wake-ups during a pass start one more
//	gitpeer_ref_polls_total{result}          reads of the remote's refs by Poll* result (unchanged,
//	                                         moved, failed, rate_limited)
//	gitpeer_last_success_timestamp_seconds   Unix time of the end of the last good pass
//	gitpeer_leader                           1 while this process may run passes (holds the Lease)
//	gitpeer_peering_ready{consumer,provider,role}        1 when this side's Ready condition is True
//	gitpeer_peering_step{consumer,provider,role,step}    1 for the peering's current step, 0 for the others
//	gitpeer_certificate_expiry_seconds{consumer,provider} seconds until the client certificate of a
//	                                         peering Ready on this side expires (negative once expired)
//	gitpeer_build_info{version,goversion}    1
//
// The peering series are those of the last pass that computed a status: a
// failed pass keeps them, a removed peering loses them. A nil *Metrics
// records nothing.
type Metrics struct {
	passDuration prometheus.Histogram
	passes       *prometheus.CounterVec
	commits      prometheus.Counter
	pushAttempts prometheus.Counter
	pushRetries  prometheus.Counter
	rejected     prometheus.Counter
	lastSuccess  prometheus.Gauge
	leader       prometheus.Gauge
	wakeups      *prometheus.CounterVec
	polls        *prometheus.CounterVec
	peerings     *peeringCollector
}

// NewMetrics creates the metrics and registers them, with Go's and the
// process's collectors, on a new registry, which it returns for serving.
func NewMetrics(version string) (*Metrics, *prometheus.Registry) {
	m := &Metrics{
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gitpeer_pass_duration_seconds", Help: "Duration of reconciler passes, from fetch to push.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 13), // 50ms .. 205s
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitpeer_passes_total", Help: "Passes by result: committed, proposed, withdrawn, unchanged, failed or abandoned.",
		}, []string{"result"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gitpeer_commits_total", Help: "Commits pushed.",
		}),
		pushAttempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gitpeer_push_attempts_total", Help: "Push attempts, the first of each pass included.",
		}),
		pushRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gitpeer_push_retries_total", Help: "Push attempts made after a push was rejected because the remote branch had moved.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gitpeer_push_rejected_passes_total", Help: "Passes that gave up pushing because the remote branch moved on every attempt (also counted as failed).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gitpeer_last_success_timestamp_seconds", Help: "Unix time at which the last good pass ended.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gitpeer_leader", Help: "1 while this process may run passes: it holds the Lease, or runs without leader election.",
		}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitpeer_wakeups_total", Help: "Passes asked for before the next interval, by source: poll, webhook, watch or rebased.",
		}, []string{"source"}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitpeer_ref_polls_total", Help: "Reads of the remote's refs by result: unchanged, moved, failed or rate_limited.",
		}, []string{"result"}),
		peerings: newPeeringCollector(time.Now),
	}
	for _, s := range []string{WakePoll, WakeWebhook, WakeWatch, WakeRebased} {
		m.wakeups.WithLabelValues(s)
	}
	for _, r := range []string{PollUnchanged, PollMoved, PollFailed, PollRateLimited} {
		m.polls.WithLabelValues(r)
	}
	for _, r := range []string{ResultCommitted, ResultProposed, ResultWithdrawn, ResultUnchanged, ResultFailed, ResultAbandoned} {
		m.passes.WithLabelValues(r)
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitpeer_build_info", Help: "The running gitpeer's version and Go version; always 1.",
	}, []string{"version", "goversion"})
	info.WithLabelValues(version, runtime.Version()).Set(1)

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.passDuration, m.passes, m.commits, m.pushAttempts, m.pushRetries, m.rejected,
		m.lastSuccess, m.leader, m.wakeups, m.polls, m.peerings, info,
	)
	return m, reg
}

// observePass records a pass that ended at end; rejected: it failed because
// every push was rejected.
func (m *Metrics) observePass(result string, rejected bool, res *runner.Result, elapsed time.Duration, end time.Time) {
	if m == nil {
		return
	}
	m.passDuration.Observe(elapsed.Seconds())
	m.passes.WithLabelValues(result).Inc()
	if rejected {
		m.rejected.Inc()
	}
	if res != nil && res.Attempts > 0 {
		m.pushAttempts.Add(float64(res.Attempts))
		m.pushRetries.Add(float64(res.Attempts - 1))
	}
	switch result {
	case ResultCommitted:
		m.commits.Inc()
		m.lastSuccess.Set(float64(end.UnixNano()) / 1e9)
	case ResultProposed, ResultWithdrawn, ResultUnchanged:
		m.lastSuccess.Set(float64(end.UnixNano()) / 1e9)
	}
}

// observeWake counts a wake-up from source.
func (m *Metrics) observeWake(source string) {
	if m != nil {
		m.wakeups.WithLabelValues(source).Inc()
	}
}

// observePoll counts a poll of the remote's refs with result.
func (m *Metrics) observePoll(result string) {
	if m != nil {
		m.polls.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) setLeading(leading bool) {
	if m == nil {
		return
	}
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// setPeerings replaces the peering series with those of a pass.
func (m *Metrics) setPeerings(st *layout.ClusterStatus, certs []reconcile.Certificate) {
	if m == nil || st == nil {
		return
	}
	m.peerings.set(st.Peerings, certs)
}

// peeringCollector serves the per-peering series from the last status: a
// collector rather than gauge vectors, so that a removed peering's series
// go at once and certificate expiry is computed at scrape time.
type peeringCollector struct {
	now                 func() time.Time
	ready, step, expiry *prometheus.Desc
	mu                  sync.Mutex
	peerings            []layout.PeeringStatus
	certificates        []reconcile.Certificate
}

func newPeeringCollector(now func() time.Time) *peeringCollector {
	peering := []string{"consumer", "provider", "role"}
	return &peeringCollector{
		now: now,
		ready: prometheus.NewDesc("gitpeer_peering_ready",
			"1 when this cluster's side of the peering is Ready, else 0.", peering, nil),
		step: prometheus.NewDesc("gitpeer_peering_step",
			"1 for the handshake step the peering is at on this cluster's side, 0 for the other steps.", append(peering, "step"), nil),
		expiry: prometheus.NewDesc("gitpeer_certificate_expiry_seconds",
			"Seconds until the client certificate of a peering Ready on this cluster's side expires; negative once expired.",
			[]string{"consumer", "provider"}, nil),
	}
}

func (c *peeringCollector) set(peerings []layout.PeeringStatus, certs []reconcile.Certificate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peerings = append([]layout.PeeringStatus(nil), peerings...)
	c.certificates = append([]reconcile.Certificate(nil), certs...)
}

// Describe implements prometheus.Collector.
func (c *peeringCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ready
	ch <- c.step
	ch <- c.expiry
}

// Collect implements prometheus.Collector.
func (c *peeringCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.peerings {
		labels := []string{p.Consumer, p.Provider, string(p.Role)}
		ready := 0.0
		if apimeta.IsStatusConditionTrue(p.Conditions, meta.ReadyCondition) {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, ready, labels...)
		for _, s := range Steps {
			v := 0.0
			if p.Step == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.step, prometheus.GaugeValue, v, append(labels, string(s))...)
		}
	}
	now := c.now()
	for _, crt := range c.certificates {
		ch <- prometheus.MustNewConstMetric(c.expiry, prometheus.GaugeValue, crt.NotAfter.Sub(now).Seconds(), crt.Consumer, crt.Provider)
	}
}
