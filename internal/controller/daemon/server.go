package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is one HTTP endpoint of the daemon, listening from Listen on.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Endpoints are the daemon's HTTP endpoints: /metrics on MetricsAddr,
// /healthz, /readyz and /status on HealthAddr (Flux controllers use :8080 and
// :9440), /hook on WebhookAddr. An empty address serves nothing; one
// address may serve several.
type Endpoints struct {
	MetricsAddr, HealthAddr string
	Gatherer                prometheus.Gatherer
	Health                  *Health
	// Status, when set, is served as GET /status on HealthAddr: the last
	// pass's outcome as JSON (PassStatus).
	Status *Status
	// WebhookAddr, when set, serves Webhook at WebhookPath (a Git host's
	// push events).
	WebhookAddr string
	Webhook     http.Handler
	Log         logr.Logger
}

// Listen listens on each address and serves its handlers, until Close.
// The servers are returned by address as given; Server.Addr is the bound
// one (a port 0 is chosen by the kernel).
func (e Endpoints) Listen() (map[string]*Server, error) {
	muxes := map[string]*http.ServeMux{}
	mux := func(addr string) *http.ServeMux {
		if muxes[addr] == nil {
			muxes[addr] = http.NewServeMux()
		}
		return muxes[addr]
	}
	if e.MetricsAddr != "" {
		mux(e.MetricsAddr).Handle("/metrics", promhttp.HandlerFor(e.Gatherer, promhttp.HandlerOpts{}))
	}
	if e.HealthAddr != "" {
		e.Health.Register(mux(e.HealthAddr))
		if e.Status != nil {
			mux(e.HealthAddr).Handle("/status", e.Status)
		}
	}
	if e.WebhookAddr != "" && e.Webhook != nil {
		mux(e.WebhookAddr).Handle(WebhookPath, e.Webhook)
	}
	servers := map[string]*Server{}
	for addr, m := range muxes {
		s, err := Listen(addr, m, e.Log)
		if err != nil {
			for _, s := range servers {
				_ = s.Close(context.Background())
			}
			return nil, err
		}
		servers[addr] = s
	}
	return servers, nil
}

// Listen listens on addr (host:port) and serves h in the background.
func Listen(addr string, h http.Handler, log logr.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "HTTP server stopped", "addr", s.Addr())
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting requests in flight finish until ctx ends.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
