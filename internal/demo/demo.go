// Package demo runs a whole peering on one machine: a bare repo made from an
// example, a file backend per cluster, and their reconcilers taking turns
// until every peering is Ready. It is `gitpeer demo` and the end-to-end test.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/examples"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// Options configure a demo run.
type Options struct {
	// Dir holds remote.git, state/<id> and checkouts/<id>; it must be empty or
	// absent.
	Dir string
	// Example is the embedded example to start from (default "two-clusters").
	Example string
	// MaxRounds bounds the turns (each cluster runs one pass per round).
	MaxRounds int
	// Now is the clock of every pass; time.Now by default.
	Now func() time.Time
	// Files, when set, seed the repo instead of the example (tests use it
	// for specs of their own).
	Files map[string][]byte
	// SigningFormat is the format every cluster signs its commits in
	// (runner.Signed); "" is SSH.
	SigningFormat commitsig.Format

	// Clusters, when set, seeds the repo with a synthetic mesh (see Mesh)
	// of Clusters clusters and Peerings peerings instead of the example,
	// and runs rounds until every peering is Ready (Report.Rounds) instead
	// of narrating each commit: one line per round, then the totals.
	Clusters, Peerings int
	// Concurrent runs each round's passes all at once, racing for the
	// branch as a daemon per cluster does after a spec change; only with
	// Clusters.
	Concurrent bool
}

// Cluster is one demo cluster.
type Cluster struct {
	ID      string
	Backend *file.Backend
	Runner  *runner.Runner
}

// Report is what a demo did.
type Report struct {
	maxRounds int
	now       func() time.Time

	Remote      string
	Clusters    []*Cluster
	Commits     []Commit
	Peerings    []peerstatus.Peering
	Kubeconfigs map[string]string // "<consumer>/<provider>" → path
	// Rounds are the rounds of a mesh demo (Options.Clusters).
	Rounds []Round

	// observer is a plain clone of the remote that reads its tip.
	observer *gitsync.Repo
}

// Commit is one commit a cluster landed.
type Commit struct {
	Cluster string
	Hash    string
	Subject string
	Files   []string
}

// Run runs the demo, writing its narration to w, in phases: choose the
// seed, create the peering repo, publish each cluster's identity, converge
// (in turns, or in rounds for a mesh), then report: status, verify,
// kubeconfigs and commit signatures. Every peering must end Peered.
func Run(ctx context.Context, opts Options, w io.Writer) (*Report, error) {
	opts, err := opts.defaults()
	if err != nil {
		return nil, err
	}
	sd, err := chooseSeed(opts)
	if err != nil {
		return nil, err
	}
	rep, err := createRepo(ctx, opts, sd, w)
	if err != nil {
		return nil, err
	}
	if err := rep.publishClusters(ctx, opts, sd.spec, w); err != nil {
		return nil, err
	}
	checkout, err := rep.converge(ctx, opts, sd.spec, w)
	switch {
	case err != nil && opts.mesh():
		return rep, err // its Rounds say how far the mesh came
	case err != nil:
		return nil, err
	}
	if err := rep.readStatus(checkout, sd.spec); err != nil {
		return nil, err
	}
	rep.now = opts.Now
	rep.printStatus(opts, w)
	if err := verifyRepo(checkout, sd.spec, opts, w); err != nil {
		return rep, err
	}
	rep.printKubeconfigs(opts, w)
	if err := rep.printSignatures(opts, w); err != nil {
		return rep, err
	}
	return rep, rep.peered()
}

// mesh reports whether the demo peers a synthetic mesh.
func (o Options) mesh() bool { return o.Clusters > 0 }

// defaults is o with its defaults set, or an error when its fields
// contradict each other.
func (o Options) defaults() (Options, error) {
	if o.Example == "" {
		o.Example = "two-clusters"
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.Concurrent && !o.mesh():
		return o, errors.New("demo: concurrent rounds need a synthetic mesh (--clusters)")
	case o.mesh() && o.Files != nil:
		return o, errors.New("demo: a synthetic mesh (--clusters) and seed files are exclusive")
	}
	return o, nil
}

// seed is what the peering repo starts from.
type seed struct {
	files map[string][]byte
	// source names it for the narration, message is its commit's.
	source, message string
	spec            *schema.Spec
}

// chooseSeed is the demo's seed: a synthetic mesh, the files given, or
// the example; the demo dir must be empty.
func chooseSeed(opts Options) (*seed, error) {
	sd := &seed{files: opts.Files, source: "examples/" + opts.Example}
	sd.message = "seed: peering spec from " + sd.source + "\n"
	switch {
	case opts.mesh():
		var err error
		if sd.files, err = Mesh(opts.Clusters, opts.Peerings); err != nil {
			return nil, err
		}
		sd.source = fmt.Sprintf("a synthetic mesh of %d clusters and %d peerings", opts.Clusters, opts.Peerings)
		sd.message = "seed: " + sd.source + "\n"
	case sd.files == nil:
		var err error
		if sd.files, err = examples.Get(opts.Example); err != nil {
			return nil, err
		}
	}
	if entries, err := os.ReadDir(opts.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("demo dir %s is not empty", opts.Dir)
	}
	specFile, specData, err := findSpec(sd.files)
	if err != nil {
		return nil, err
	}
	if sd.spec, err = schema.Parse(specFile, specData); err != nil {
		return nil, fmt.Errorf("example %s: %w", opts.Example, err)
	}
	return sd, nil
}

// createRepo creates the bare peering repo in the demo dir and seeds it.
func createRepo(ctx context.Context, opts Options, sd *seed, w io.Writer) (*Report, error) {
	rep := &Report{Remote: filepath.Join(opts.Dir, "remote.git"), Kubeconfigs: map[string]string{}, maxRounds: opts.MaxRounds}
	fmt.Fprintf(w, "demo dir: %s\n", opts.Dir)
	if err := gitsync.InitBare(rep.Remote, "main"); err != nil {
		return nil, err
	}
	seedOpts := gitsync.Options{URL: rep.Remote, Clock: gitsync.ClockFunc(opts.Now),
		Author: gitsync.Signature{Name: "gitpeer demo", Email: "demo@gitpeer.invalid"}}
	if _, err := gitsync.Seed(ctx, seedOpts, sd.files, sd.message); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "peering repo: %s (seeded from %s)\n\n", rep.Remote, sd.source)
	return rep, nil
}

// publishClusters sets up every cluster of spec, providers first, and
// commits each one's cluster.yaml, signed, as gitpeer init and publish do.
func (r *Report) publishClusters(ctx context.Context, opts Options, spec *schema.Spec, w io.Writer) error {
	for _, id := range TurnOrder(spec) {
		c, err := setUp(ctx, opts, r.Remote, id)
		if err != nil {
			return err
		}
		r.Clusters = append(r.Clusters, c)
		info, err := c.Backend.ClusterInfo()
		if err != nil {
			return err
		}
		res, err := c.Runner.Repo.SyncTree(ctx, func(_ context.Context, tree *gitsync.TreeFS) (*gitsync.Change, error) {
			files, err := layout.PublishFiles(tree, info)
			if err != nil {
				return nil, err
			}
			m, err := dirmanifest.Reseal(tree, c.Backend.Signer(), id, layout.ClusterPath(id), files, opts.Now())
			if m != nil {
				files[layout.ClusterPath(id, dirmanifest.FileName)] = m
			}
			return &gitsync.Change{Writes: files, Message: trailer.Message(id, "publish cluster identity", "publish")}, err
		})
		if err != nil {
			return fmt.Errorf("publish %s: %w", id, err)
		}
		if opts.mesh() {
			r.record(id, res)
		} else {
			r.note(w, id, res, info.Fingerprint)
		}
	}
	if opts.mesh() {
		fmt.Fprintf(w, "published %d clusters' identities, one commit each\n", len(r.Clusters))
	}
	fmt.Fprintln(w)
	return nil
}

// converge runs the reconcilers until every handshake is done: in turns,
// narrating each commit, or for a mesh in rounds. It returns the clone
// whose tip the report reads.
func (r *Report) converge(ctx context.Context, opts Options, spec *schema.Spec, w io.Writer) (string, error) {
	if !opts.mesh() {
		return r.Clusters[0].Runner.Repo.Dir(), r.Converge(ctx, w)
	}
	if err := r.runMesh(ctx, opts, spec, w); err != nil {
		return "", err
	}
	return r.observer.Dir(), nil
}

// readStatus reads every peering's status at the tip of the clone
// checkout, which has no worktree: the tip it fetched or pushed last.
func (r *Report) readStatus(checkout string, spec *schema.Spec) error {
	tree, err := gitobj.OpenCommitTree(checkout, "")
	if err != nil {
		return err
	}
	defer tree.Close()
	r.Peerings, err = peerstatus.Collect(tree, spec)
	return err
}

// printStatus narrates each peering's status (for a mesh, a summary).
func (r *Report) printStatus(opts Options, w io.Writer) {
	if opts.mesh() {
		r.printMeshStatus(w)
		return
	}
	fmt.Fprintln(w, "\nstatus:")
	for _, p := range r.Peerings {
		fmt.Fprintf(w, "  %s → %s  %-15s ready=%t  %s\n", p.Consumer, p.Provider, p.Step, p.Ready, p.Summary())
		for _, s := range p.Slices {
			fmt.Fprintf(w, "      slice %-10s authentication=%s resources=%s", s.Name, s.Authentication, s.Resources)
			if s.Resources == "Denied" || s.Authentication == "Denied" {
				fmt.Fprintf(w, "  %s: %s", s.Reason, s.Message)
			}
			fmt.Fprintln(w)
		}
	}
}

// verifyRepo runs verify on the clone checkout, history included, and
// names every problem it finds.
func verifyRepo(checkout string, spec *schema.Spec, opts Options, w io.Writer) error {
	problems, err := verify.Check(checkout, spec, verify.Options{Now: opts.Now(), RequireManifests: true, History: true})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "\nverify: every check holds (signed manifests, kustomize builds, history, commit signatures, no private material in any commit)")
		return nil
	}
	for _, p := range problems {
		fmt.Fprintf(w, "verify: %s\n", p)
	}
	return fmt.Errorf("verify found %d problems", len(problems))
}

// printKubeconfigs names where each consumer's kubeconfigs went.
func (r *Report) printKubeconfigs(opts Options, w io.Writer) {
	keys := make([]string, 0, len(r.Kubeconfigs))
	for k := range r.Kubeconfigs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if opts.mesh() {
		fmt.Fprintf(w, "kubeconfigs: %d, under %s/state/<consumer>/kubeconfigs/\n", len(keys), opts.Dir)
		return
	}
	for _, k := range keys {
		cp := strings.SplitN(k, "/", 2)
		fmt.Fprintf(w, "kubeconfig of %s for %s: %s\n", cp[0], cp[1], r.Kubeconfigs[k])
	}
}

// printSignatures checks that every reconciler commit is signed by its
// cluster's key and says how to look at them.
func (r *Report) printSignatures(opts Options, w io.Writer) error {
	show, n, err := r.checkSignatures(opts.Dir, opts.SigningFormat)
	if err != nil {
		return fmt.Errorf("commit signatures: %w", err)
	}
	fmt.Fprintf(w, "signatures: all %d commits of the reconcilers are signed by their cluster's key\n", n)
	fmt.Fprintf(w, "\nthe handshake as commits: git -C %s log --stat\n", r.Remote)
	fmt.Fprintf(w, "their signatures:         %s\n", show)
	return nil
}

// peered is nil once every handshake is done. An example may show a slice
// its provider denies (three-clusters' bigbatch), which keeps that
// peering from Ready but is what the demo means to show.
func (r *Report) peered() error {
	for _, p := range r.Peerings {
		if !p.Peered {
			return fmt.Errorf("peering %s → %s is not Peered: %s", p.Consumer, p.Provider, p.Message)
		}
	}
	return nil
}

// Converge runs rounds (each cluster one pass, providers first) until a whole
// round commits nothing, narrating each commit to w. It fails after the
// demo's MaxRounds rounds without convergence.
func (r *Report) Converge(ctx context.Context, w io.Writer) error {
	for round := 1; round <= r.maxRounds; round++ {
		changed := false
		for _, c := range r.Clusters {
			res, err := c.Runner.Pass(ctx)
			if err != nil {
				return err
			}
			if res.Commit != "" {
				changed = true
				r.note(w, c.ID, res.Result, "")
			}
			for provider, where := range res.Kubeconfigs {
				r.Kubeconfigs[c.ID+"/"+provider] = where
			}
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("no convergence after %d rounds", r.maxRounds)
}

func (r *Report) note(w io.Writer, cluster string, res gitsync.Result, extra string) {
	if res.Commit == "" {
		return
	}
	subject := strings.SplitN(res.Message, "\n", 2)[0]
	r.Commits = append(r.Commits, Commit{Cluster: cluster, Hash: res.Commit, Subject: subject, Files: res.Files})
	fmt.Fprintf(w, "[%s] %s  %s\n", cluster, res.Commit[:8], subject)
	if extra != "" {
		fmt.Fprintf(w, "      key %s\n", extra)
	}
	for _, f := range res.Files {
		fmt.Fprintf(w, "      %s\n", f)
	}
}

// TurnOrder is the spec's cluster IDs, providers first: their nonce is what
// starts a handshake, so a consumer's first turn has something to answer.
func TurnOrder(spec *schema.Spec) []string {
	providers := map[string]bool{}
	for _, p := range spec.Peerings {
		providers[p.Provider] = true
	}
	var first, then []string
	for _, c := range spec.Clusters {
		if providers[c.ID] {
			first = append(first, c.ID)
		} else {
			then = append(then, c.ID)
		}
	}
	return append(first, then...)
}

func setUp(ctx context.Context, opts Options, remote, id string) (*Cluster, error) {
	b, _, err := file.Init(filepath.Join(opts.Dir, "state", id), file.InitOptions{
		ClusterID: id,
		APIServer: fmt.Sprintf("https://%s.gitpeer.test:6443", id),
		Now:       opts.Now(),
	})
	if err != nil {
		return nil, err
	}
	b.Now = opts.Now
	gopts, err := runner.Signed(gitsync.Options{URL: remote, Dir: filepath.Join(opts.Dir, "checkouts", id), Clock: gitsync.ClockFunc(opts.Now)}, b, opts.SigningFormat)
	if err != nil {
		return nil, err
	}
	repo, err := gitsync.Open(ctx, gopts)
	if err != nil {
		return nil, err
	}
	return &Cluster{ID: id, Backend: b, Runner: &runner.Runner{Repo: repo, Backend: b, Now: opts.Now}}, nil
}

func findSpec(files map[string][]byte) (string, []byte, error) {
	for _, name := range schema.SpecFiles {
		if data, ok := files[name]; ok {
			return name, data, nil
		}
	}
	return "", nil, fmt.Errorf("example has no %s", strings.Join(schema.SpecFiles, " or "))
}
