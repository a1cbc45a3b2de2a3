package daemon

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// get fetches a URL and returns its status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// sample returns the value of the series of a Prometheus text exposition
// whose name and labels are exactly series (labels in the exposition's
// order, which is sorted by name), or false.
func sample(exposition, series string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(exposition)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// TestMetricsAndProbesOverHTTP scrapes a running daemon as Prometheus and
// the kubelet do.
func TestMetricsAndProbesOverHTTP(t *testing.T) {
	m, reg := NewMetrics("v0.0.0-test")
	health := NewHealth()
	servers, err := Endpoints{MetricsAddr: "127.0.0.1:0", HealthAddr: "127.0.0.1:0", Gatherer: reg, Health: health}.Listen()
	if err == nil && len(servers) != 1 {
		// "127.0.0.1:0" twice is one address: one server serves both.
		t.Fatalf("%d servers for one address", len(servers))
	}
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + servers["127.0.0.1:0"].Addr()
	defer servers["127.0.0.1:0"].Close(context.Background())

	// Before the first fetch: live, not ready.
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d before the first fetch, want 200", code)
	}
	if code, body := get(t, base+"/readyz?verbose"); code != http.StatusInternalServerError || !strings.Contains(body, "[-]fetched failed") {
		t.Errorf("/readyz %d %q before the first fetch, want 500 naming the fetched check", code, body)
	}

	notAfter := time.Now().Add(720 * time.Hour)
	res := withPeerings("c0ffee",
		peeringStatus("alpha", "beta", layout.RoleConsumer, layout.StepReady, metav1.ConditionTrue, "IdentityAccepted", "ok", false),
		peeringStatus("gamma", "alpha", layout.RoleProvider, layout.StepNonceSent, metav1.ConditionFalse, "WaitingForTenant", "waiting", false),
	)
	res.Attempts = 3
	res.Output.Certificates = []reconcile.Certificate{{Consumer: "alpha", Provider: "beta", Role: layout.RoleConsumer, NotAfter: notAfter}}
	p := &passes{script: []outcomeFunc{func(context.Context) (*runner.Result, error) {
		health.MarkFetched() // as runner.Runner.Fetched does once the tip is fetched
		return res, nil
	}, idle}}
	// The push was re-applied on a new tip: a second pass at once
	// (WakeRebased), idle here.
	runUntil(t, &Daemon{Cluster: "alpha", Interval: time.Hour, Metrics: m}, p, func() bool { return p.count() == 2 })

	if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/readyz %d %q after the first fetch, want 200 ok", code, body)
	}
	if code, _ := get(t, base+"/readyz/fetched"); code != http.StatusOK {
		t.Errorf("/readyz/fetched %d", code)
	}
	code, expo := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics %d", code)
	}
	for series, want := range map[string]float64{
		`gitpeer_passes_total{result="committed"}`:                                                 1,
		`gitpeer_passes_total{result="failed"}`:                                                    0,
		`gitpeer_commits_total`:                                                                    1,
		`gitpeer_push_attempts_total`:                                                              3,
		`gitpeer_push_retries_total`:                                                               2,
		`gitpeer_pass_duration_seconds_count`:                                                      2, // and the idle one
		`gitpeer_wakeups_total{source="rebased"}`:                                                  1,
		`gitpeer_peering_ready{consumer="alpha",provider="beta",role="consumer"}`:                  1,
		`gitpeer_peering_ready{consumer="gamma",provider="alpha",role="provider"}`:                 0,
		`gitpeer_peering_step{consumer="alpha",provider="beta",role="consumer",step="Ready"}`:      1,
		`gitpeer_peering_step{consumer="alpha",provider="beta",role="consumer",step="TenantSent"}`: 0,
		`gitpeer_peering_step{consumer="gamma",provider="alpha",role="provider",step="NonceSent"}`: 1,
		`gitpeer_peering_step{consumer="gamma",provider="alpha",role="provider",step="Pending"}`:   0,
		`gitpeer_leader`: 0, // Run has returned
	} {
		if got, ok := sample(expo, series); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if got, ok := sample(expo, `gitpeer_certificate_expiry_seconds{consumer="alpha",provider="beta"}`); !ok || got < 719*3600 || got > 720*3600 {
		t.Errorf("certificate expiry %v s (present %v), want about 720h", got, ok)
	}
	if got, ok := sample(expo, `gitpeer_last_success_timestamp_seconds`); !ok || time.Since(time.Unix(int64(got), 0)) > time.Minute {
		t.Errorf("last success %v (present %v)", got, ok)
	}
	if !regexp.MustCompile(`(?m)^gitpeer_build_info\{goversion="go[^"]+",version="v0\.0\.0-test"\} 1$`).MatchString(expo) {
		t.Error("no gitpeer_build_info")
	}
	if !strings.Contains(expo, "go_goroutines") || !strings.Contains(expo, "process_start_time_seconds") {
		t.Error("no Go or process metrics")
	}
}

func TestMetricsAndProbesOnSeparateAddresses(t *testing.T) {
	_, reg := NewMetrics("test")
	health := NewHealth()
	health.MarkFetched()
	servers, err := Endpoints{MetricsAddr: "127.0.0.1:0", HealthAddr: "localhost:0", Gatherer: reg, Health: health}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		defer s.Close(context.Background())
	}
	metrics, probes := "http://"+servers["127.0.0.1:0"].Addr(), "http://"+servers["localhost:0"].Addr()
	if code, _ := get(t, metrics+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics %d", code)
	}
	if code, _ := get(t, metrics+"/readyz"); code != http.StatusNotFound {
		t.Errorf("/readyz on the metrics address: %d, want 404", code)
	}
	if code, _ := get(t, probes+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d", code)
	}
	if code, _ := get(t, probes+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the probes address: %d, want 404", code)
	}
}

func TestAnAddressInUseIsAnError(t *testing.T) {
	_, reg := NewMetrics("test")
	s, err := Listen("127.0.0.1:0", http.NotFoundHandler(), discard())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := (Endpoints{MetricsAddr: s.Addr(), Gatherer: reg, Health: NewHealth()}).Listen(); err == nil {
		t.Fatal("listening on an address in use succeeded")
	}
}
