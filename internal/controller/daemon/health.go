package daemon

import (
	"errors"
	"net/http"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// errNotFetched is /readyz's answer before the first good fetch.
var errNotFetched = errors.New("the peering repo has not been fetched yet")

// Health serves the probes, with controller-runtime's healthz handler as
// Flux controllers do (GET /healthz, /readyz; ?verbose lists the checks;
// /readyz/<check> runs one):
//
//   - /healthz (liveness): "ping", and "leader-election" with leader
//     election: failing when this process believes it leads but has not
//     renewed its Lease for longer than the lease duration (a stuck leader).
//   - /readyz: "fetched": failing until the repo has been fetched once in
//     this process (MarkFetched). A replica waiting for the Lease is ready
//     once it has fetched, so a rolling update can proceed.
type Health struct {
	fetched atomic.Bool
	healthz map[string]healthz.Checker
}

// NewHealth returns probes that are live and not yet ready.
func NewHealth() *Health {
	return &Health{healthz: map[string]healthz.Checker{"ping": healthz.Ping}}
}

// MarkFetched makes /readyz pass: the repo has been fetched. It is safe to
// call at any time and from any goroutine, e.g. as runner.Runner.Fetched.
func (h *Health) MarkFetched() { h.fetched.Store(true) }

// Ready reports whether /readyz passes.
func (h *Health) Ready() bool { return h.fetched.Load() }

// AddHealthzCheck adds a liveness check; call it before Handler.
func (h *Health) AddHealthzCheck(name string, check healthz.Checker) { h.healthz[name] = check }

// Handler serves /healthz and /readyz (and their per-check subpaths).
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	h.Register(mux)
	return mux
}

// Register adds /healthz and /readyz to mux.
func (h *Health) Register(mux *http.ServeMux) {
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"fetched": func(*http.Request) error {
		if !h.Ready() {
			return errNotFetched
		}
		return nil
	}}}
	live := &healthz.Handler{Checks: h.healthz}
	for path, handler := range map[string]http.Handler{"/healthz": live, "/readyz": ready} {
		mux.Handle(path, http.StripPrefix(path, handler))
		mux.Handle(path+"/", http.StripPrefix(path, handler))
	}
}
