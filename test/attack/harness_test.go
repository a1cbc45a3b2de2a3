package attack

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// templateRoot holds the settled worlds tests start from (see settled).
var templateRoot string

func TestMain(m *testing.M) {
	// First thing: this test binary is also LoadBounded's spec evaluator.
	schema.RunEvaluatorIfChild()
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "attack: the git CLI is required")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "gitpeer-attack-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	templateRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// twoSpec: alpha consumes from beta, with a slice beta grants (pool) and one
// it denies (big: more cpu than Liqo's default class allows). Nonces expire
// after an hour, so an epoch can move on within a test.
const twoSpec = `clusters: [{id: "alpha"}, {id: "beta", provider: {nonceLifetime: "1h"}}]
peerings: [{consumer: "alpha", provider: "beta", slices: [
	{name: "pool", resources: {cpu: "2"}},
	{name: "big", resources: {cpu: "64"}},
]}]
`

// start is the clock of every world: far from any real date, so that
// nothing depends on when the suite runs.
var start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

var ctx = context.Background()

// clock is the controllable time of a world: passes, certificates, nonce
// epochs, manifest sequences and commit dates all follow it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// counting is a file backend that counts the certificates it signs: an
// attack that gets one signed shows up here.
type counting struct {
	*file.Backend
	signed atomic.Int64
}

func (c *counting) SignCSR(ctx context.Context, csrPEM []byte, lifetime time.Duration) ([]byte, error) {
	c.signed.Add(1)
	return c.Backend.SignCSR(ctx, csrPEM, lifetime)
}

// cluster is one cluster of a world: its state directory and reconciler.
type cluster struct {
	id    string
	state string
	b     *counting
	r     *runner.Runner
	// keys are every key the cluster held, the current one last.
	keys []crypto.PublicKey
}

func (c *cluster) key() crypto.PublicKey { return c.keys[len(c.keys)-1] }

// forbidden is something that must never be in a cluster's applied tree:
// the path, or with contains set, that text in the file at path, or with
// link set, a symbolic link at path.
type forbidden struct {
	path, contains string
	link           bool
}

// world is a peering repo on disk with its clusters.
type world struct {
	t        *testing.T
	dir      string
	remote   string
	clock    *clock
	ids      []string // turn order: providers first
	clusters map[string]*cluster
	// loadSpec, when set, is every runner's LoadSpec.
	loadSpec func(ctx context.Context, file string, data []byte) (*schema.Spec, error)
	// format is what every reconciler signs its commits in; "" is SSH.
	format commitsig.Format

	mu        sync.Mutex
	forbidden map[string][]forbidden
	writers   int
	// reviewed are the clusters whose reconciler proposes its changes on
	// a review branch (reviewing): their applied tree is not main's.
	reviewed map[string]bool
}

// newWorld seeds a bare repo in dir with spec, creates a file backend per
// cluster of the spec and publishes each cluster.yaml with its signed
// manifest, as gitpeer init and demo do. Nothing is reconciled yet.
func newWorld(t *testing.T, dir, spec string, format commitsig.Format) (*world, error) {
	parsed, err := schema.Parse("peering.cue", []byte(spec))
	if err != nil {
		return nil, err
	}
	w := &world{t: t, dir: dir, remote: filepath.Join(dir, "remote.git"), clock: &clock{now: start},
		ids: demo.TurnOrder(parsed), clusters: map[string]*cluster{}, forbidden: map[string][]forbidden{}, format: format}
	if err := gitsync.InitBare(w.remote, "main"); err != nil {
		return nil, err
	}
	seed := gitsync.Options{URL: w.remote, Clock: gitsync.ClockFunc(w.clock.Now), Author: gitsync.Signature{Name: "admin", Email: "admin@example.com"}}
	if _, err := gitsync.Seed(ctx, seed, map[string][]byte{"peering.cue": []byte(spec)}, "seed: peering spec\n"); err != nil {
		return nil, err
	}
	for _, id := range w.ids {
		b, _, err := file.Init(filepath.Join(dir, "state", id), file.InitOptions{
			ClusterID: id, APIServer: "https://" + id + ".gitpeer.test:6443", Now: w.clock.Now(),
		})
		if err != nil {
			return nil, err
		}
		c := &cluster{id: id, state: b.Dir(), b: &counting{Backend: b}, keys: []crypto.PublicKey{b.Signer().Public()}}
		b.Now = w.clock.Now
		w.clusters[id] = c
		if err := w.openRunner(c); err != nil {
			return nil, err
		}
		if err := w.publish(c); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// publish writes c's cluster.yaml and signs its directory, committing as
// its reconciler (a signed commit).
func (w *world) publish(c *cluster) error {
	info, err := c.b.ClusterInfo()
	if err != nil {
		return err
	}
	_, err = c.r.Repo.SyncTree(ctx, func(_ context.Context, tree *gitsync.TreeFS) (*gitsync.Change, error) {
		files, err := layout.PublishFiles(tree, info)
		if err != nil {
			return nil, err
		}
		m, err := dirmanifest.Reseal(tree, c.b.Signer(), c.id, layout.ClusterPath(c.id), files, w.clock.Now())
		if m != nil {
			files[layout.ClusterPath(c.id, dirmanifest.FileName)] = m
		}
		return &gitsync.Change{Writes: files, Message: fmt.Sprintf("%s: publish cluster identity\n\nGitpeer-Cluster: %s\nGitpeer-Step: publish\n", c.id, c.id)}, err
	})
	return err
}

// openRunner (re)creates c's reconciler on a checkout of its own, signing
// with c's current key: after a key rotation it is called again.
func (w *world) openRunner(c *cluster) error {
	opts, err := runner.Signed(gitsync.Options{
		URL: w.remote, Dir: filepath.Join(w.dir, "checkouts", c.id), Clock: gitsync.ClockFunc(w.clock.Now),
		Push: gitsync.PushRetry{Backoff: func(gitsync.Contention) time.Duration { return time.Millisecond }},
	}, c.b, w.format)
	if err != nil {
		return err
	}
	if w.reviewed[c.id] {
		// As reconcile --push-branch gitpeer/review/<id> --review-scope
		// applied: what the cluster applies waits for a merge.
		opts.Review.Branch = reviewBranch(c.id)
		if opts.Review.Paths, err = runner.Reviewed(runner.ReviewApplied, c.id); err != nil {
			return err
		}
	}
	repo, err := gitsync.Open(ctx, opts)
	if err != nil {
		return err
	}
	c.r = &runner.Runner{Repo: repo, Backend: c.b, Now: w.clock.Now, LoadSpec: w.loadSpec}
	return nil
}

// converge runs rounds of passes, providers first, until a round commits
// nothing.
func (w *world) converge() {
	w.t.Helper()
	if err := w.tryConverge(); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) tryConverge() error {
	for round := 0; round < 8; round++ {
		changed := false
		for _, id := range w.ids {
			res, err := w.tryPass(id)
			if err != nil {
				return err
			}
			changed = changed || res.Commit != ""
		}
		if !changed {
			return nil
		}
	}
	return errors.New("no convergence after 8 rounds")
}

// pass runs one pass of cluster id, which must succeed.
func (w *world) pass(id string) *runner.Result {
	w.t.Helper()
	res, err := w.tryPass(id)
	if err != nil {
		w.t.Fatalf("pass of %s: %v", id, err)
	}
	return res
}

// tryPass runs one pass of cluster id and then checks every applied branch
// (checkApplied), whatever the pass's outcome.
func (w *world) tryPass(id string) (*runner.Result, error) {
	res, err := w.clusters[id].r.Pass(ctx)
	if cerr := w.checkApplied(id, err == nil); cerr != nil {
		if w.t != nil {
			w.t.Helper()
			w.t.Fatal(cerr)
		}
		return nil, cerr
	}
	return res, err
}

// forbid registers something that must never reach cluster id's applied
// branch from now on.
func (w *world) forbid(id, path, contains string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forbidden[id] = append(w.forbidden[id], forbidden{path: path, contains: contains})
}

// forbidLink registers that path must never be a symbolic link on cluster
// id's applied branch from now on.
func (w *world) forbidLink(id, path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forbidden[id] = append(w.forbidden[id], forbidden{path: path, link: true})
}

// checkApplied checks every cluster's applied branch on the remote: its head
// is a commit signed by that cluster (by its current key when it just ran a
// pass), its tree holds nothing forbidden, and after a successful pass of
// cluster self, the applied clusters/<self>/ is the one on main.
func (w *world) checkApplied(self string, passed bool) error {
	repo, err := gitobj.Open(w.remote)
	if err != nil {
		return err
	}
	for _, id := range w.ids {
		c := w.clusters[id]
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(layout.AppliedBranch(id)), true)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		commit, err := repo.CommitObject(ref.Hash())
		if err != nil {
			return fmt.Errorf("%s: %w", layout.AppliedBranch(id), err)
		}
		keys := map[string]crypto.PublicKey{}
		if id == self {
			keys[id] = c.key()
		} else {
			for i, k := range c.keys {
				keys[fmt.Sprintf("%s-%d", id, i)] = k
			}
		}
		if _, err := commitsig.Verify(commit, keys); err != nil {
			return fmt.Errorf("after a pass of %s: %s points at %s, not signed by %s: %w", self, layout.AppliedBranch(id), commit.Hash, id, err)
		}
		if f := commitsig.FormatOf(commit.PGPSignature); w.format != "" && f != w.format {
			return fmt.Errorf("after a pass of %s: %s points at %s, signed in %s, not %s", self, layout.AppliedBranch(id), commit.Hash, f, w.format)
		}
		tree, err := commit.Tree()
		if err != nil {
			return err
		}
		w.mu.Lock()
		bad := append([]forbidden(nil), w.forbidden[id]...)
		w.mu.Unlock()
		for _, f := range bad {
			if f.link {
				if e, err := tree.FindEntry(f.path); err == nil && e.Mode == filemode.Symlink {
					return fmt.Errorf("after a pass of %s: %s (%s) has a symbolic link at %s", self, layout.AppliedBranch(id), commit.Hash, f.path)
				}
				continue
			}
			if f.contains == "" {
				if _, err := tree.FindEntry(f.path); err == nil {
					return fmt.Errorf("after a pass of %s: %s (%s) holds %s", self, layout.AppliedBranch(id), commit.Hash, f.path)
				}
				continue
			}
			if file, err := tree.File(f.path); err == nil {
				if s, _ := file.Contents(); strings.Contains(s, f.contains) {
					return fmt.Errorf("after a pass of %s: %s (%s) has %q in %s", self, layout.AppliedBranch(id), commit.Hash, f.contains, f.path)
				}
			}
		}
		if id == self && passed && !w.reviewed[id] {
			mainRef, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
			if err != nil {
				return err
			}
			mc, err := repo.CommitObject(mainRef.Hash())
			if err != nil {
				return err
			}
			// A pass leaves clusters/<self>/ as it computed it, so the
			// applied tree is main's, less the inbox (other clusters').
			a, m := appliedFiles(commit, id, false), appliedFiles(mc, id, true)
			if a != m {
				return fmt.Errorf("after a pass of %s: %s holds\n%s\nmain's clusters/%s less its inbox:\n%s", self, layout.AppliedBranch(id), a, id, m)
			}
		}
		// Whatever happened, the applied tree is clusters/<id>/ alone, with
		// no inbox: nothing else of a signed commit is ever applied.
		if err := tree.Files().ForEach(func(f *object.File) error {
			if !strings.HasPrefix(f.Name, layout.ClusterPath(id)+"/") || strings.HasPrefix(f.Name, layout.ClusterPath(id, layout.InboxDir)+"/") || f.Mode != filemode.Regular {
				return fmt.Errorf("after a pass of %s: %s (%s) holds %s (mode %s)", self, layout.AppliedBranch(id), commit.Hash, f.Name, f.Mode)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// appliedFiles lists the entries (mode, hash, path) of every file under
// clusters/<id>/ in commit c, less the inbox when noInbox. It reads that
// directory alone: a test may plant a folder of many thousand entries
// elsewhere.
func appliedFiles(c *object.Commit, id string, noInbox bool) string {
	root, err := c.Tree()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	dir := layout.ClusterPath(id)
	tree, err := root.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return ""
	}
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var b strings.Builder
	var walk func(t *object.Tree, prefix string) error
	walk = func(t *object.Tree, prefix string) error {
		for _, e := range t.Entries {
			name := prefix + "/" + e.Name
			if e.Mode != filemode.Dir {
				fmt.Fprintf(&b, "%s %s %s\n", e.Mode, e.Hash, name)
				continue
			}
			if noInbox && name == layout.ClusterPath(id, layout.InboxDir) {
				continue
			}
			sub, err := t.Tree(e.Name)
			if err != nil {
				return err
			}
			if err := walk(sub, name); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(tree, dir); err != nil {
		return "unreadable: " + err.Error()
	}
	return b.String()
}

// pinStore is cluster id's pin store as its backend holds it.
func (w *world) pinStore(id string) *pins.Store {
	w.t.Helper()
	s, err := w.clusters[id].b.LoadPins(ctx)
	if err != nil {
		w.t.Fatalf("%s's pin store: %v", id, err)
	}
	return s
}

// ref returns the hash the remote ref (e.g. "main", "gitpeer/applied/alpha")
// points at, "" when it does not exist.
func (w *world) ref(branch string) string {
	w.t.Helper()
	repo, err := gitobj.Open(w.remote)
	if err != nil {
		w.t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return ""
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return ref.Hash().String()
}

// show returns the file at path on the remote's main; ok is false when it
// does not exist.
func (w *world) show(path string) ([]byte, bool) {
	w.t.Helper()
	return w.showAt("main", path)
}

// showAt returns the file at path in revision rev (a remote branch name or a
// commit hash).
func (w *world) showAt(rev, path string) ([]byte, bool) {
	w.t.Helper()
	repo, err := gitobj.Open(w.remote)
	if err != nil {
		w.t.Fatal(err)
	}
	h := plumbing.NewHash(rev)
	if len(rev) != 40 {
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(rev), true)
		if err != nil {
			w.t.Fatalf("%s: %v", rev, err)
		}
		h = ref.Hash()
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		w.t.Fatal(err)
	}
	f, err := c.File(path)
	if err != nil {
		return nil, false
	}
	s, err := f.Contents()
	if err != nil {
		w.t.Fatal(err)
	}
	return []byte(s), true
}

// mustShow is show for a file that must exist.
func (w *world) mustShow(path string) []byte {
	w.t.Helper()
	data, ok := w.show(path)
	if !ok {
		w.t.Fatalf("%s is not on main", path)
	}
	return data
}

// peering is cluster's status of the (consumer, provider) peering, from its
// status.yaml on main.
func (w *world) peering(cluster, consumer, provider string) *layout.PeeringStatus {
	w.t.Helper()
	file := layout.ClusterPath(cluster, layout.StatusFile)
	data := w.mustShow(file)
	st, err := layout.ReadStatus(fstest.MapFS{file: {Data: data}}, cluster)
	if err != nil {
		w.t.Fatal(err)
	}
	ps := st.Find(consumer, provider)
	if ps == nil {
		w.t.Fatalf("%s has no status for %s → %s:\n%s", file, consumer, provider, data)
	}
	return ps
}

func condition(ps *layout.PeeringStatus, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(ps.Conditions, typ)
}

// describe renders a peering status for failure messages.
func describe(ps *layout.PeeringStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s", ps.Step)
	for _, c := range ps.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, s := range ps.Slices {
		fmt.Fprintf(&b, "\n  slice %s auth=%s resources=%s %s: %s", s.Name, s.Authentication, s.Resources, s.Reason, s.Message)
	}
	return b.String()
}

// ready reports whether the peering's Ready condition is True.
func ready(ps *layout.PeeringStatus) bool {
	c := condition(ps, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue
}

// stalled returns the reason of the Stalled condition, "" when not stalled.
func stalled(ps *layout.PeeringStatus) string {
	if c := condition(ps, meta.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

// mustBeReady fails unless both sides of consumer → provider are Ready.
func (w *world) mustBeReady(consumer, provider string) {
	w.t.Helper()
	for _, id := range []string{consumer, provider} {
		if ps := w.peering(id, consumer, provider); !ready(ps) {
			w.t.Fatalf("%s's view of %s → %s is not Ready: %s", id, consumer, provider, describe(ps))
		}
	}
}

func (w *world) signed(id string) int64 { return w.clusters[id].b.signed.Load() }

// signedAll is the number of certificates every cluster signed so far.
func (w *world) signedAll() map[string]int64 {
	out := map[string]int64{}
	for id, c := range w.clusters {
		out[id] = c.b.signed.Load()
	}
	return out
}

// nothingSigned fails if any cluster signed a certificate since before.
func (w *world) nothingSigned(before map[string]int64) {
	w.t.Helper()
	for id, n := range w.signedAll() {
		if n != before[id] {
			w.t.Fatalf("%s signed %d certificate(s) during the attack", id, n-before[id])
		}
	}
}

// kubeconfig returns the kubeconfig consumer holds for provider, on disk.
func (w *world) kubeconfig(consumer, provider string) []byte {
	w.t.Helper()
	data, err := os.ReadFile(w.clusters[consumer].b.KubeconfigPath(provider))
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// A template is a world converged once and copied for each test that
// starts from it: settling a peering takes seconds, copying it
// milliseconds.
type template struct {
	once sync.Once
	dir  string
	now  time.Time
	ids  []string
	err  error
}

var templates sync.Map // format + "\x00" + spec → *template

// settled returns a fresh copy of a world whose peerings of spec have all
// converged, in t.TempDir(). setup, if given, runs on the template world
// before it converges, the first time spec is asked for.
func settled(t *testing.T, spec string, setup ...func(w *world) error) *world {
	t.Helper()
	return settledSigning(t, spec, "", setup...)
}

// settledSigning is settled for reconcilers that sign their commits in
// format.
func settledSigning(t *testing.T, spec string, format commitsig.Format, setup ...func(w *world) error) *world {
	t.Helper()
	v, _ := templates.LoadOrStore(string(format)+"\x00"+spec, &template{})
	tpl := v.(*template)
	tpl.once.Do(func() {
		dir, err := os.MkdirTemp(templateRoot, "template-")
		if err != nil {
			tpl.err = err
			return
		}
		w, err := newWorld(nil, dir, spec, format)
		if err != nil {
			tpl.err = err
			return
		}
		for _, f := range setup {
			if err := f(w); err != nil {
				tpl.err = err
				return
			}
		}
		if err := w.tryConverge(); err != nil {
			tpl.err = err
			return
		}
		// One pack instead of hundreds of loose objects: each test copies
		// and clones this repo several times.
		if out, err := testgit.Command(w.remote, "repack", "-a", "-d", "-q").CombinedOutput(); err != nil {
			tpl.err = fmt.Errorf("repack: %v: %s", err, out)
			return
		}
		tpl.dir, tpl.now, tpl.ids = dir, w.clock.Now(), w.ids
	})
	if tpl.err != nil {
		t.Fatalf("settle %q: %v", spec, tpl.err)
	}
	dir := t.TempDir()
	for _, sub := range []string{"remote.git", "state"} {
		if out, err := exec.Command("cp", "-a", filepath.Join(tpl.dir, sub), filepath.Join(dir, sub)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", sub, err, out)
		}
	}
	w := &world{t: t, dir: dir, remote: filepath.Join(dir, "remote.git"), clock: &clock{now: tpl.now},
		ids: tpl.ids, clusters: map[string]*cluster{}, forbidden: map[string][]forbidden{}, format: format}
	for _, id := range w.ids {
		b, err := file.Open(filepath.Join(dir, "state", id))
		if err != nil {
			t.Fatal(err)
		}
		b.Now = w.clock.Now
		c := &cluster{id: id, state: b.Dir(), b: &counting{Backend: b}, keys: []crypto.PublicKey{b.Signer().Public()}}
		w.clusters[id] = c
		if err := w.openRunner(c); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// fresh returns a new world of spec, published but not reconciled.
func fresh(t *testing.T, spec string) *world {
	t.Helper()
	w, err := newWorld(t, t.TempDir(), spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// withLoadSpec makes every runner of w load the spec with load.
func (w *world) withLoadSpec(load func(ctx context.Context, file string, data []byte) (*schema.Spec, error)) {
	w.loadSpec = load
	for _, c := range w.clusters {
		c.r.LoadSpec = load
	}
}

// writer is someone with push access to the repo and nothing else: a clone
// worked on with the git CLI.
type writer struct {
	w   *world
	dir string
	// env is added to testgit.Command's environment: mallory's home and
	// identity, and what a test adds (a GnuPG home).
	env []string
}

// writer clones the remote for a new repo writer.
func (w *world) writer() *writer {
	w.t.Helper()
	w.mu.Lock()
	w.writers++
	n := w.writers
	w.mu.Unlock()
	home := filepath.Join(w.dir, fmt.Sprintf("writer-home-%d", n))
	if err := os.MkdirAll(home, 0o755); err != nil {
		w.t.Fatal(err)
	}
	a := &writer{w: w, dir: filepath.Join(w.dir, fmt.Sprintf("writer-%d", n)),
		env: []string{"HOME=" + home, "GIT_AUTHOR_NAME=mallory", "GIT_AUTHOR_EMAIL=mallory@example.com",
			"GIT_COMMITTER_NAME=mallory", "GIT_COMMITTER_EMAIL=mallory@example.com"}}
	a.run("", "clone", "-q", w.remote, a.dir)
	a.git("config", "commit.gpgsign", "false")
	return a
}

func (a *writer) run(dir string, args ...string) string {
	a.w.t.Helper()
	cmd := testgit.Command(dir, args...)
	// Commits are dated by the world's clock, like the reconcilers'.
	date := fmt.Sprintf("@%d +0000", a.w.clock.Now().Unix())
	cmd.Env = append(append(cmd.Env, a.env...), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		a.w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// git runs git in the writer's clone.
func (a *writer) git(args ...string) string {
	a.w.t.Helper()
	return a.run(a.dir, args...)
}

// pull makes the clone exactly the remote's main.
func (a *writer) pull() {
	a.w.t.Helper()
	a.git("fetch", "-q", "origin")
	a.git("checkout", "-q", "-B", "main", "origin/main")
	a.git("reset", "-q", "--hard", "origin/main")
	a.git("clean", "-qfdx")
}

func (a *writer) path(p string) string { return filepath.Join(a.dir, filepath.FromSlash(p)) }

func (a *writer) write(p string, data []byte) {
	a.w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(a.path(p)), 0o755); err != nil {
		a.w.t.Fatal(err)
	}
	if err := os.WriteFile(a.path(p), data, 0o644); err != nil {
		a.w.t.Fatal(err)
	}
}

func (a *writer) read(p string) []byte {
	a.w.t.Helper()
	data, err := os.ReadFile(a.path(p))
	if err != nil {
		a.w.t.Fatal(err)
	}
	return data
}

// edit replaces old by new in file p, which must contain old.
func (a *writer) edit(p, old, new string) {
	a.w.t.Helper()
	data := string(a.read(p))
	if !strings.Contains(data, old) {
		a.w.t.Fatalf("%s does not contain %q:\n%s", p, old, data)
	}
	a.write(p, []byte(strings.Replace(data, old, new, 1)))
}

func (a *writer) remove(p string) {
	a.w.t.Helper()
	if err := os.RemoveAll(a.path(p)); err != nil {
		a.w.t.Fatal(err)
	}
}

// link replaces whatever is at p with a symbolic link to target.
func (a *writer) link(p, target string) {
	a.w.t.Helper()
	a.remove(p)
	if err := os.MkdirAll(filepath.Dir(a.path(p)), 0o755); err != nil {
		a.w.t.Fatal(err)
	}
	if err := os.Symlink(target, a.path(p)); err != nil {
		a.w.t.Fatal(err)
	}
}

// commit commits everything with author ("Name <email>") and message, and
// returns the commit's hash.
func (a *writer) commit(author, message string) string {
	a.w.t.Helper()
	a.git("add", "-A")
	a.git("commit", "-q", "--author", author, "-m", message)
	// A second later: what follows is newer (guard.ScanHistory attributes
	// a blob to the oldest commit holding it).
	a.w.clock.Advance(time.Second)
	return a.git("rev-parse", "HEAD")
}

// push pushes the clone's main to the remote's, without force.
func (a *writer) push() {
	a.w.t.Helper()
	a.git("push", "-q", "origin", "HEAD:main")
}

// resign re-signs the writer's directory dir of the clone with key, as
// whoever holds key would: the manifest then lists what dir holds.
func (a *writer) resign(key crypto.Signer, writerID, dir string) {
	a.w.t.Helper()
	m, err := dirmanifest.Reseal(layout.NewTree(a.dir), key, writerID, dir, nil, a.w.clock.Now())
	if err != nil {
		a.w.t.Fatal(err)
	}
	if m != nil {
		a.write(dir+"/"+dirmanifest.FileName, m)
	}
}

// attack is the usual shape of an attack: a fresh clone of main, changes,
// one commit by author with message, pushed. It returns the commit.
func (w *world) attack(author, message string, change func(a *writer)) string {
	w.t.Helper()
	a := w.writer()
	change(a)
	h := a.commit(author, message)
	a.push()
	return h
}

// assertContains fails unless s contains every one of want.
func assertContains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, x := range want {
		if !strings.Contains(s, x) {
			t.Fatalf("%s does not say %q:\n%s", what, x, s)
		}
	}
}

// lsTree is `git ls-tree rev path` on the remote: "<mode> <type> <hash>\t<path>".
func (w *world) lsTree(rev, p string) string {
	w.t.Helper()
	out, err := testgit.Command(w.remote, "ls-tree", rev, "--", p).Output()
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// listTree lists the files of revision rev under dir, sorted.
func (w *world) listTree(rev, dir string) []string {
	w.t.Helper()
	out, err := testgit.Command(w.remote, "ls-tree", "-r", "--name-only", rev, "--", dir).Output()
	if err != nil {
		w.t.Fatal(err)
	}
	files := strings.Fields(string(out))
	sort.Strings(files)
	return files
}

// mustPEM is pub as a PEM PUBLIC KEY.
func mustPEM(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	data, err := handshake.MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reconcilerCommitsClean checks every commit reachable from any ref of the
// remote that a cluster signed (with any key it held): every file it adds
// or changes passes guard.Check. It returns how many commits it checked.
func (w *world) reconcilerCommitsClean() int {
	w.t.Helper()
	repo, done, err := gitobj.OpenHistory(w.remote)
	if err != nil {
		w.t.Fatal(err)
	}
	defer done()
	keys := map[string]crypto.PublicKey{}
	for id, c := range w.clusters {
		for i, k := range c.keys {
			keys[fmt.Sprintf("%s-%d", id, i)] = k
		}
	}
	refs, err := repo.References()
	if err != nil {
		w.t.Fatal(err)
	}
	seen := map[plumbing.Hash]bool{}
	checked := 0
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		iter, err := repo.Log(&git.LogOptions{From: ref.Hash()})
		if err != nil {
			return err
		}
		return iter.ForEach(func(c *object.Commit) error {
			if seen[c.Hash] {
				return nil
			}
			seen[c.Hash] = true
			if _, err := commitsig.Verify(c, keys); err != nil {
				return nil // not a reconciler's
			}
			checked++
			tree, err := c.Tree()
			if err != nil {
				return err
			}
			var parent plumbing.Hash // zero: the empty tree
			if c.NumParents() > 0 {
				p, err := c.Parent(0)
				if err != nil {
					return err
				}
				parent = p.TreeHash
			}
			return gitobj.Diff(gitobj.StoreTrees(repo.Storer), parent, c.TreeHash, func(name string, _, to *object.TreeEntry) error {
				if to == nil || to.Mode == filemode.Dir {
					return nil // a deletion, or a directory: its files come next
				}
				f, err := tree.File(name)
				if err != nil {
					return nil // not a regular file (a link)
				}
				content, err := f.Contents()
				if err != nil {
					return err
				}
				if err := guard.Check(name, []byte(content)); err != nil {
					w.t.Errorf("commit %s, signed by a reconciler: %v", c.Hash, err)
				}
				return nil
			})
		})
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return checked
}

// git runs the git CLI on the remote and returns its output.
func (w *world) git(args ...string) string {
	w.t.Helper()
	out, err := testgit.Command(w.remote, args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// verify runs gitpeer verify's checks (verify.Check: the tree as Flux sees
// it, every commit of main's history, and with History every blob of every
// ref for private material) on a fresh clone of main, as a reviewer would.
func (w *world) verify() []verify.Finding {
	w.t.Helper()
	findings, err := w.tryVerify()
	if err != nil {
		w.t.Fatal(err)
	}
	return findings
}

// tryVerify is verify, returning the error of checks that could not run.
func (w *world) tryVerify() ([]verify.Finding, error) {
	w.t.Helper()
	a := w.writer()
	spec, _, err := schema.Load(a.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	opts := verify.Options{Now: w.clock.Now(), History: true, RequireManifests: true}
	findings, err := verify.Check(a.dir, spec, opts)
	if err == nil {
		w.fromCheckpoint(a.dir, spec, opts, findings)
	}
	return findings, err
}

// mustFind fails unless findings hold one for file with reason, from
// commit ("" for a finding of the tree, "*" for any), that fails verify's
// default check: nothing resolved it (an attack is never legitimate
// history).
func mustFind(t *testing.T, findings []verify.Finding, file, reason, commit string) {
	t.Helper()
	mustFindAs(t, findings, file, reason, commit, false)
}

// mustFindResolved is mustFind for a finding a later signed state
// resolved (verify --strict still fails on it): an attack the
// reconcilers repaired, kept in history.
func mustFindResolved(t *testing.T, findings []verify.Finding, file, reason, commit string) {
	t.Helper()
	mustFindAs(t, findings, file, reason, commit, true)
}

func mustFindAs(t *testing.T, findings []verify.Finding, file, reason, commit string, resolved bool) {
	t.Helper()
	for _, f := range findings {
		if f.File == file && f.Reason == reason && (commit == "*" || f.Commit == commit) && (f.Resolved != nil) == resolved {
			return
		}
	}
	var all []string
	for _, f := range findings {
		all = append(all, f.String())
	}
	t.Fatalf("verify does not name %s %s (commit %s, resolved %v); it found:\n%s", file, reason, commit, resolved, strings.Join(all, "\n"))
}

// noTreeFindings fails if verify finds anything in the tree as it stands
// (findings of history, which has a commit, are kept forever).
func noTreeFindings(t *testing.T, findings []verify.Finding) {
	t.Helper()
	for _, f := range findings {
		if f.Commit == "" {
			t.Errorf("verify finds in the tree: %s", f)
		}
	}
}
