package runner

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gitpeer/gitpeer/reconcile"
)

// ErrDuplicateReconciler is wrapped by the error of every pass of a Runner
// that has seen, on the shared branch, two commits signed with its
// cluster's key that it did not push, after it had pushed one itself (one
// alone may be its own push that failed on its side but landed): a second
// reconciler of the same cluster is writing (a copied state dir, a second
// Deployment, a leftover `gitpeer reconcile --watch` elsewhere). Two
// writers of one cluster overwrite each other's nonces and artifacts on
// every pass, and no handshake completes; so the Runner stops writing and
// each pass fails with this, until the process is restarted. The daemon
// reports it with reason DuplicateReconciler.
var ErrDuplicateReconciler = errors.New("a second reconciler of this cluster is writing")

// selfWrites is what a Runner knows of its own commits on the shared
// branch, to tell another writer with its key (ErrDuplicateReconciler).
// A commit by the cluster's key that lands before this Runner's first push
// is a predecessor's (a restarted process, a killed one whose push landed
// late): only after a push of its own can a commit it did not make be a
// second live writer, since the branch then moved on from what it pushed.
//
// One such commit is not enough: a push of this Runner's own that failed
// on its side (a timeout) may still have landed, and is then a commit it
// does not know. A second reconciler writes again at its next pass, so a
// second unknown commit, in the same pass or a later one, is the evidence.
//
// Only commits signed with the key count, and of those only the ones this
// Runner did not create: not its pushes, nor its proposals, nor its seals.
// A seal's parent is the shared branch's tip it vouches for, and a
// proposal's the tip it was made on, so any writer of the repo, holding no
// key, can fast-forward the shared branch onto them: that is this
// Runner's own work reappearing, never a second writer. A restarted
// process remembers none of its predecessor's, and needs not: it counts
// nothing before its own first push, and a seal or proposal made before
// that push has a parent older than it, so it can reach the shared branch
// only by a merge (off the first-parent line SignedBySelf walks) or by
// rewriting history (which shows nothing).
type selfWrites struct {
	mu      sync.Mutex
	ours    map[string]bool // commits this Runner pushed
	props   map[string]bool // commits this Runner proposed on a review branch, or sealed
	seen    string          // the tip last checked, once ours is not empty
	unknown []string        // commits by the key it did not push, short hashes
	dup     error           // sticky: set once a second writer is seen
}

// check looks at the commits from the tip last checked to tip (hex hashes)
// that signed reports (Repo.SignedBySelf) and returns the error wrapping
// ErrDuplicateReconciler once two commits by the cluster's key that this
// Runner did not push have been seen since its first push. branch and cluster are for the message.
func (s *selfWrites) check(tip, branch, cluster string, signed func(since, tip string) ([]string, bool)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dup != nil {
		return s.dup
	}
	if len(s.ours) == 0 || tip == "" {
		return nil
	}
	since := s.seen
	s.seen = tip
	commits, ok := signed(since, tip)
	if !ok {
		return nil // history rewritten, or too far: nothing is shown
	}
	for _, c := range commits {
		if !s.ours[c] && !s.props[c] {
			s.unknown = append(s.unknown, c[:min(12, len(c))])
		}
	}
	if len(s.unknown) < 2 {
		return nil
	}
	foreign := s.unknown
	s.dup = fmt.Errorf("%w: commit(s) %s on %s are signed with cluster %s's key but were not made by this reconciler, "+
		"which had pushed since: two reconcilers run for %s (a copied state dir, a second Deployment or Helm release, "+
		"a `gitpeer reconcile --watch` left running elsewhere) and each undoes the other's handshake; "+
		"stop every reconciler of %s but one, then restart that one (this one makes no further commits until restarted)",
		ErrDuplicateReconciler, strings.Join(foreign, ", "), branch, cluster, cluster, cluster)
	return s.dup
}

// foreignWriter returns the error wrapping ErrDuplicateReconciler when
// out is the second pass in a row, of this process or an earlier one
// (pins.Store.ForeignPasses), to find in the repo a manifest of cluster's
// key that its pin store did not sign: the evidence that survives a
// process, for reconcilers run once per pass (reconcile --once in CI or
// a CronJob), which keep no memory of their commits. One such pass is a
// predecessor's work (a state dir restored from an older copy); the pass
// then signs over it, and the next finds nothing new unless another
// process signs again.
func foreignWriter(cluster string, out *reconcile.Output) error {
	if out.Pins == nil || out.Pins.ForeignPasses < 2 {
		return nil
	}
	return fmt.Errorf("%w: %s: signed with cluster %s's key, but not by this reconciler, whose state (pin store) records every manifest it signs, in %d passes in a row: "+
		"two reconcilers run for %s with copies of one state (a copied state dir, a second Deployment or CronJob), and each undoes the other's handshake; "+
		"stop every reconciler of %s but one (this pass pushed nothing)",
		ErrDuplicateReconciler, strings.Join(out.ForeignWrites, ", "), cluster, out.Pins.ForeignPasses, cluster, cluster)
}

// proposed records a commit this Runner proposed on a review branch: once
// merged as it is (a fast-forward), the shared branch holds it, and it is
// this Runner's, not a second writer's. The branch does not point at it
// yet, so the tip last checked stays, and a proposal is not a push: what
// lands before this Runner's first push is still a predecessor's.
func (s *selfWrites) proposed(commit string) {
	if commit == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.props == nil {
		s.props = map[string]bool{}
	}
	s.props[commit] = true
}

// sealed records a seal commit this Runner pushed to its applied branch:
// its parent is the shared branch's tip, so a writer can fast-forward the
// shared branch onto it, and it is then this Runner's commit, not a second
// writer's. Like a proposal, it moves neither the tip last checked nor
// the first push.
func (s *selfWrites) sealed(commit string) { s.proposed(commit) }

// pushed records a commit this Runner pushed, which the branch then
// points at.
func (s *selfWrites) pushed(commit string) {
	if commit == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ours == nil {
		s.ours = map[string]bool{}
	}
	s.ours[commit] = true
	s.seen = commit
}
