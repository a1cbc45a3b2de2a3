package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/reasons"
)

// PassStatus is what the daemon's last pass did, for the engineer on call:
// GET /status on the health address serves it as JSON, and Status.File
// keeps it on disk, where `gitpeer status` on the checkout finds it. A pass
// that lost every push to other writers (gitsync.ErrPushConflict) fails
// only in the daemon's eyes: nothing of it reached the repo, so this is
// where it shows, besides the log, the Event and the metrics.
type PassStatus struct {
	Cluster string `json:"cluster"`
	// Result is the pass's outcome, a Result* (committed, unchanged,
	// failed, ...).
	Result string `json:"result"`
	// Reason is ReasonPushRejected, ReasonDuplicateReconciler or
	// ReasonPassFailed for a failed pass,
	// "" for a good one.
	Reason string `json:"reason,omitempty"`
	// Message is a failed pass's error.
	Message string `json:"message,omitempty"`
	// Attempts counts the pass's push attempts, the first included.
	Attempts int       `json:"attempts,omitempty"`
	Commit   string    `json:"commit,omitempty"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	// FailingSince is when the first of the failed passes in a row (this
	// one included) started; zero after a good pass.
	FailingSince time.Time `json:"failingSince,omitzero"`
	// RejectedInARow counts the passes in a row, this one included, that
	// gave up pushing (PushRejected).
	RejectedInARow int `json:"rejectedInARow,omitempty"`
	// RetryAt is when the next pass runs after a PushRejected one, sooner
	// than the next tick; zero otherwise.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// LastSuccess is when the last good pass of this process ended.
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	// Stuck is what the pass found a revocation left being deleted for
	// too long (reason ReasonRevocationStuck; runner.Result.Stuck).
	Stuck []backend.Stuck `json:"stuck,omitempty"`
	// KeyRollover says where a rollover of the cluster key stands
	// (runner.Result.KeyRollover); "" when none is in progress.
	KeyRollover string `json:"keyRollover,omitempty"`
}

// Status keeps the last pass's PassStatus, serves it (GET /status, JSON)
// and, with File, writes it there after every pass. The zero value keeps it
// in memory only; a nil *Status keeps nothing.
type Status struct {
	// File, when set, is rewritten atomically (internal/atomicfile) with
	// the PassStatus after every pass: StatusFile of the checkout.
	File string

	mu   sync.Mutex
	last PassStatus
}

// StatusFile is where a reconciler keeps its last pass's status: beside its
// checkout (as the checkout's lock), not in it, since a pass owns the
// checkout and a lost push cannot be recorded in the repo.
func StatusFile(checkout string) string { return checkout + ".status.json" }

// Last returns the last pass's status; zero (Result "") before the first.
func (s *Status) Last() PassStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// set records ps, after writing it to File when there is one (so that
// what Last returns is on disk too); a failed write still records it.
func (s *Status) set(ps PassStatus) error {
	if s == nil {
		return nil
	}
	var err error
	if s.File != "" {
		var b []byte
		if b, err = json.MarshalIndent(ps, "", "  "); err == nil {
			err = atomicfile.Write(s.File, append(b, '\n'), 0o644)
		}
	}
	s.mu.Lock()
	s.last = ps
	s.mu.Unlock()
	return err
}

// ServeHTTP serves the last PassStatus as JSON: {"result":""} before the
// first pass.
func (s *Status) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	b, err := json.MarshalIndent(s.Last(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// ReadStatusFile reads a PassStatus that Status wrote to path. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist); one that is
// not JSON, or lacks the cluster, the result or the end time, an error
// naming the file and what is wrong.
func ReadStatusFile(path string) (PassStatus, error) {
	var ps PassStatus
	b, err := os.ReadFile(path)
	if err != nil {
		return ps, err
	}
	if err := json.Unmarshal(b, &ps); err != nil {
		return ps, fmt.Errorf("%s: %w", path, err)
	}
	// Written whole (atomically) by a daemon, it has all three; anything
	// else is not one of its files.
	switch {
	case ps.Cluster == "":
		return ps, fmt.Errorf("%s: no cluster: not a status gitpeer wrote", path)
	case ps.Result == "":
		return ps, fmt.Errorf("%s: no result: not a status gitpeer wrote", path)
	case ps.Ended.IsZero():
		return ps, fmt.Errorf("%s: no end time: not a status gitpeer wrote", path)
	}
	return ps, nil
}

// Summary is ps in one line, as `gitpeer status` prints it, e.g. "failed
// (PushRejected) at 10:02:03 after 23 push attempts, failing since
// 10:00:01 (3 passes in a row lost every push); next pass at 10:02:07:
// push main to …".
func (ps PassStatus) Summary() string {
	const clock = "2006-01-02 15:04:05Z07:00"
	s := ps.Result
	if ps.Reason != "" {
		s += " (" + ps.Reason + ")"
	}
	s += " at " + ps.Ended.Format(clock)
	if ps.Attempts > 1 {
		s += fmt.Sprintf(" after %d push attempts", ps.Attempts)
	}
	if ps.Commit != "" {
		s += ", commit " + ps.Commit[:min(12, len(ps.Commit))]
	}
	if !ps.FailingSince.IsZero() {
		s += ", failing since " + ps.FailingSince.Format(clock)
	}
	if ps.RejectedInARow > 1 {
		s += fmt.Sprintf(" (%d passes in a row lost every push)", ps.RejectedInARow)
	}
	if !ps.RetryAt.IsZero() {
		s += "; next pass at " + ps.RetryAt.Format(clock)
	}
	if ps.Message != "" {
		s += ": " + ps.Message
	}
	for _, st := range ps.Stuck {
		s += "\n  " + reasons.RevocationStuck + ": " + st.Object + ": " + st.Message
	}
	return s
}
