package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/schema"
)

// MaxMeshClusters bounds Mesh's cluster count: every cluster is a state
// directory, a checkout and, with Options.Concurrent, a reconciler running
// at once on this machine.
const MaxMeshClusters = 500

// Mesh returns the seed of a synthetic peering repo: a peering.cue with
// clusters c001…cN (MeshClusterIDs) peered as MeshSpec peers them. The
// same arguments give the same bytes. It fails unless 2 ≤ clusters ≤
// MaxMeshClusters and 1 ≤ peerings ≤ clusters×(clusters−1), the number of
// ordered pairs.
func Mesh(clusters, peerings int) (map[string][]byte, error) {
	if clusters < 2 || clusters > MaxMeshClusters {
		return nil, fmt.Errorf("mesh: --clusters must be between 2 and %d, got %d", MaxMeshClusters, clusters)
	}
	if most := clusters * (clusters - 1); peerings < 1 || peerings > most {
		return nil, fmt.Errorf("mesh: --peerings must be between 1 and %d (every ordered pair of %d clusters), got %d", most, clusters, peerings)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// A synthetic mesh: %d clusters, %d peerings (gitpeer demo --clusters %d --peerings %d).\n", clusters, peerings, clusters, peerings)
	b.WriteString("// Cluster i consumes from cluster i+d (wrapping), for d = 1, 2, … until the count is reached.\n")
	b.WriteString(MeshSpec(MeshClusterIDs(clusters), peerings))
	return map[string][]byte{"peering.cue": []byte(b.String())}, nil
}

// MeshSpec is the CUE of a synthetic mesh of the clusters ids (n of them)
// and its first peerings of the sequence ids[i] consumes from
// ids[(i+d) mod n], for d = 1, 2, … and i = 0…n−1: each cluster consumes
// from and provides to about peerings/n others, exactly peerings/n when n
// divides peerings. It is the one mesh of the demo (Mesh) and of the
// benchmarks (test/meshbench), which name their clusters differently. It
// checks nothing: peerings beyond n×(n−1) repeat pairs.
func MeshSpec(ids []string, peerings int) string {
	var b strings.Builder
	b.WriteString("clusters: [\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "\t{id: %q},\n", id)
	}
	b.WriteString("]\n\npeerings: [\n")
	n := 0
	for d := 1; n < peerings && len(ids) > 0; d++ {
		for i := 0; i < len(ids) && n < peerings; i++ {
			fmt.Fprintf(&b, "\t{consumer: %q, provider: %q},\n", ids[i], ids[(i+d)%len(ids)])
			n++
		}
	}
	b.WriteString("]\n")
	return b.String()
}

// MeshClusterIDs are the IDs of Mesh's clusters, in spec order.
func MeshClusterIDs(clusters int) []string {
	width := max(2, len(fmt.Sprint(clusters)))
	ids := make([]string, clusters)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%0*d", width, i+1)
	}
	return ids
}

// Round is what one round of a mesh demo did: every cluster ran one pass.
type Round struct {
	Number  int
	Passes  int
	Commits int
	// Retries are the push attempts made after a rejected one (the remote
	// had moved), summed over the round's passes.
	Retries int
	// Failed are the errors of the passes that failed, in cluster order.
	Failed []error
	// Ready is how many of the spec's peerings are Ready on both sides
	// after the round, read at the remote's tip.
	Ready   int
	Elapsed time.Duration
}

// rounds runs rounds until every peering of spec is Ready at the remote's
// tip or MaxRounds rounds have run. In a round every cluster runs one pass:
// in turn, or with concurrent all at once, each pass racing the others for
// the branch. A failed pass does not stop the rounds (it is counted in
// Round.Failed; the next round runs it again). It narrates one line per
// round to w, records every landed commit in r.Commits, and returns the
// rounds; the error says when peerings are still not Ready.
func (r *Report) rounds(ctx context.Context, spec *schema.Spec, concurrent bool, w io.Writer) ([]Round, error) {
	var rounds []Round
	var mu sync.Mutex // guards r.Commits and r.Kubeconfigs in concurrent rounds
	for n := 1; n <= r.maxRounds; n++ {
		round := Round{Number: n, Passes: len(r.Clusters)}
		errs := make([]error, len(r.Clusters))
		start := time.Now()
		run := func(i int) {
			c := r.Clusters[i]
			res, err := c.Runner.Pass(ctx)
			mu.Lock()
			defer mu.Unlock()
			if res != nil && res.Attempts > 1 {
				round.Retries += res.Attempts - 1
			}
			if err != nil {
				errs[i] = err
				return
			}
			if res.Commit != "" {
				round.Commits++
				r.record(c.ID, res.Result)
			}
			for provider, where := range res.Kubeconfigs {
				r.Kubeconfigs[c.ID+"/"+provider] = where
			}
		}
		if concurrent {
			var wg sync.WaitGroup
			for i := range r.Clusters {
				wg.Go(func() { run(i) })
			}
			wg.Wait()
		} else {
			for i := range r.Clusters {
				run(i)
			}
		}
		round.Elapsed = time.Since(start)
		for _, err := range errs {
			if err != nil {
				round.Failed = append(round.Failed, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return rounds, err
		}
		peerings, err := r.observe(ctx, spec)
		if err != nil {
			return rounds, err
		}
		for _, p := range peerings {
			if p.Ready {
				round.Ready++
			}
		}
		rounds = append(rounds, round)
		fmt.Fprintf(w, "round %d: %d passes, %d commits, %d push retries, %d failed, %d/%d peerings Ready (%s)\n",
			n, round.Passes, round.Commits, round.Retries, len(round.Failed), round.Ready, len(peerings), round.Elapsed.Round(time.Millisecond))
		for _, err := range round.Failed {
			fmt.Fprintf(w, "  failed: %v\n", err)
		}
		if round.Ready == len(peerings) {
			return rounds, nil
		}
	}
	return rounds, fmt.Errorf("peerings not all Ready after %d rounds", r.maxRounds)
}

// record adds a landed commit to r.Commits.
func (r *Report) record(cluster string, res gitsync.Result) {
	subject := strings.SplitN(res.Message, "\n", 2)[0]
	r.Commits = append(r.Commits, Commit{Cluster: cluster, Hash: res.Commit, Subject: subject, Files: res.Files})
}

// observe brings the observer's clone (a plain clone no cluster writes
// from) to the remote's tip and collects the peerings' status there.
func (r *Report) observe(ctx context.Context, spec *schema.Spec) ([]peerstatus.Peering, error) {
	if r.observer == nil {
		return nil, errors.New("demo: no observer clone")
	}
	var peerings []peerstatus.Peering
	var collectErr error
	_, err := r.observer.SyncTree(ctx, func(_ context.Context, tip *gitsync.TreeFS) (*gitsync.Change, error) {
		peerings, collectErr = peerstatus.Collect(tip, spec)
		return nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the remote: %w", err)
	}
	return peerings, collectErr
}

// runMesh opens the observer clone, runs the rounds of a mesh demo and
// prints their totals.
func (r *Report) runMesh(ctx context.Context, opts Options, spec *schema.Spec, w io.Writer) error {
	observer, err := gitsync.Open(ctx, gitsync.Options{URL: r.Remote, Dir: filepath.Join(opts.Dir, "observer"),
		Author: gitsync.Signature{Name: "gitpeer demo", Email: "demo@gitpeer.invalid"}})
	if err != nil {
		return err
	}
	r.observer = observer
	mode := "in turn"
	if opts.Concurrent {
		mode = "all at once"
	}
	fmt.Fprintf(w, "rounds: each of %d clusters runs one pass per round, %s\n", len(r.Clusters), mode)
	start := time.Now()
	r.Rounds, err = r.rounds(ctx, spec, opts.Concurrent, w)
	t := r.Totals()
	fmt.Fprintf(w, "\nmesh: %d clusters, %d peerings, %s: %d rounds, %d commits, %d push retries, %d failed passes, %s\n",
		len(r.Clusters), len(spec.Peerings), mode, t.Rounds, t.Commits, t.Retries, t.Failed, time.Since(start).Round(time.Millisecond))
	return err
}

// Totals sums a mesh demo's rounds.
type Totals struct {
	Rounds, Passes, Commits, Retries, Failed int
	Elapsed                                  time.Duration
}

// Totals sums r.Rounds.
func (r *Report) Totals() Totals {
	t := Totals{Rounds: len(r.Rounds)}
	for _, rd := range r.Rounds {
		t.Passes += rd.Passes
		t.Commits += rd.Commits
		t.Retries += rd.Retries
		t.Failed += len(rd.Failed)
		t.Elapsed += rd.Elapsed
	}
	return t
}

// printMeshStatus prints how many peerings are Ready, and those that are
// not.
func (r *Report) printMeshStatus(w io.Writer) {
	ready := 0
	for _, p := range r.Peerings {
		if p.Ready {
			ready++
		}
	}
	fmt.Fprintf(w, "\nstatus: %d of %d peerings Ready\n", ready, len(r.Peerings))
	for _, p := range r.Peerings {
		if !p.Ready {
			fmt.Fprintf(w, "  %s → %s  %-15s ready=%t  %s\n", p.Consumer, p.Provider, p.Step, p.Ready, p.Summary())
		}
	}
}
