package demo_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// clock is the controllable time every pass of a lifecycle test runs at.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// lifecycle drives a real peering repo: humans edit peering.cue through a
// clone with the git CLI; the clusters' runners converge on the remote.
type lifecycle struct {
	t     *testing.T
	rep   *demo.Report
	clock *clock
	human string
}

func (l *lifecycle) editSpec(spec, message string) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.human, "peering.cue"), []byte(spec), 0o644); err != nil {
		l.t.Fatal(err)
	}
	git(l.t, "-C", l.human, "pull", "-q", "--ff-only")
	git(l.t, "-C", l.human, "-c", "user.name=admin", "-c", "user.email=admin@example.com", "commit", "-qam", message)
	git(l.t, "-C", l.human, "push", "-q", "origin", "main")
}

func (l *lifecycle) converge() []string {
	l.t.Helper()
	before := len(l.rep.Commits)
	if err := l.rep.Converge(context.Background(), io.Discard); err != nil {
		l.t.Fatal(err)
	}
	var subjects []string
	for _, c := range l.rep.Commits[before:] {
		subjects = append(subjects, c.Subject)
	}
	return subjects
}

func (l *lifecycle) pass(id string) {
	l.t.Helper()
	for _, c := range l.rep.Clusters {
		if c.ID == id {
			if _, err := c.Runner.Pass(context.Background()); err != nil {
				l.t.Fatal(err)
			}
			return
		}
	}
	l.t.Fatalf("no cluster %s", id)
}

// show reads a file at the remote's tip; "" when absent.
func (l *lifecycle) show(path string) string {
	out, err := testgit.Command(l.rep.Remote, "show", "main:"+path).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func (l *lifecycle) peering(cluster string) layout.PeeringStatus {
	l.t.Helper()
	var st layout.ClusterStatus
	if err := yaml.Unmarshal([]byte(l.show("clusters/"+cluster+"/status.yaml")), &st); err != nil {
		l.t.Fatal(err)
	}
	if p := st.Find("alpha", "beta"); p != nil {
		return *p
	}
	return layout.PeeringStatus{}
}

func (l *lifecycle) slice(name string) layout.SliceStatus {
	for _, s := range l.peering("alpha").Slices {
		if s.Name == name {
			return s
		}
	}
	return layout.SliceStatus{}
}

func lifecycleSpec(peering string) string {
	return `clusters: [{id: "alpha"}, {id: "beta", provider: {certificateLifetime: "300h", nonceLifetime: "1h"}}]
peerings: [` + peering + `]
`
}

const (
	active   = `{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "2"}}]}`
	cordoned = `{consumer: "alpha", provider: "beta", tenantCondition: "Cordoned", slices: [{name: "pool", resources: {cpu: "2"}}, {name: "late", resources: {cpu: "1"}}]}`
	drained  = `{consumer: "alpha", provider: "beta", tenantCondition: "Drained", slices: [{name: "pool", resources: {cpu: "2"}}]}`
)

func TestLifecycleThroughARealRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir, Now: clk.Now,
		Files: map[string][]byte{"peering.cue": []byte(lifecycleSpec(active))}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	human := filepath.Join(t.TempDir(), "human")
	git(t, "clone", "-q", rep.Remote, human)
	l := &lifecycle{t: t, rep: rep, clock: clk, human: human}
	kubeconfig := rep.Kubeconfigs["alpha/beta"]
	if s := l.slice("pool"); s.Resources != "Accepted" {
		t.Fatalf("pool after the handshake: %+v", s)
	}

	t.Run("cordoning keeps existing slices and refuses new ones", func(t *testing.T) {
		l.editSpec(lifecycleSpec(cordoned), "cordon alpha")
		l.converge()
		if !strings.Contains(l.show("clusters/beta/liqo/alpha/tenant-alpha.yaml"), "tenantCondition: Cordoned") {
			t.Error("rendered Tenant is not Cordoned")
		}
		if s := l.slice("pool"); s.Resources != "Accepted" {
			t.Errorf("pool: %+v", s)
		}
		if s := l.slice("late"); s.Resources != "Denied" || !strings.Contains(s.Message, "cordoned") {
			t.Errorf("late: %+v", s)
		}
	})

	t.Run("draining denies slices and unbinds RBAC", func(t *testing.T) {
		l.editSpec(lifecycleSpec(drained), "drain alpha")
		l.converge()
		if l.show("clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml") != "" {
			t.Error("RoleBinding survives the drain")
		}
		if s := l.slice("pool"); s.Resources != "Denied" {
			t.Errorf("pool: %+v", s)
		}
		if l.show("clusters/alpha/liqo/beta/identity-resourceslice-pool.yaml") != "" {
			t.Error("a drained slice keeps its Identity")
		}
	})

	t.Run("certificates are renewed with a third of their lifetime left", func(t *testing.T) {
		l.editSpec(lifecycleSpec(active), "reactivate alpha")
		l.converge()
		before, _ := os.ReadFile(kubeconfig)
		clk.now = clk.now.Add(150 * time.Hour)
		if got := l.converge(); len(got) != 0 {
			t.Fatalf("commits at half the lifetime: %v", got)
		}
		clk.now = clk.now.Add(90 * time.Hour) // 240h of 300h: past 2/3 plus any jitter
		got := strings.Join(l.converge(), "\n")
		if !strings.Contains(got, "beta: renew identity of alpha") {
			t.Fatalf("renewal commits:\n%s", got)
		}
		after, _ := os.ReadFile(kubeconfig)
		if string(after) == string(before) {
			t.Error("the consumer's kubeconfig kept the old certificate")
		}
	})

	oldTenant := l.show("clusters/beta/inbox/alpha/tenant.yaml")

	t.Run("removing the peering drains, then withdraws everything", func(t *testing.T) {
		l.editSpec(lifecycleSpec(""), "revoke alpha")
		got := strings.Join(l.converge(), "\n")
		if !strings.Contains(got, "beta: update tenant of alpha") || strings.Contains(got, "beta: withdraw") {
			t.Errorf("revocation commits within the drain period:\n%s", got)
		}
		// Until the drain period has passed, the GitOps engine still finds
		// the drained Tenant to apply: pruning it now would race Liqo.
		if !strings.Contains(l.show("clusters/beta/liqo/alpha/tenant-alpha.yaml"), "Drained") {
			t.Fatal("the drained Tenant was withdrawn within the drain period")
		}
		clk.now = clk.now.Add(reconcile.DefaultDrainPeriod)
		if got := strings.Join(l.converge(), "\n"); !strings.Contains(got, "beta: remove objects for alpha") {
			t.Errorf("revocation commits after the drain period:\n%s", got)
		}
		// Each outbox keeps its tombstone alone: the signed withdrawal.
		tree := git(t, "-C", rep.Remote, "ls-tree", "-r", "--name-only", "main")
		for _, f := range strings.Fields(tree) {
			if (strings.Contains(f, "/inbox/") && path.Base(f) != dirmanifest.FileName) || strings.Contains(f, "/liqo/") {
				t.Errorf("artifacts survive the revocation:\n%s", tree)
				break
			}
		}
		if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
			t.Errorf("alpha's kubeconfig for beta survives: %v", err)
		}
	})

	t.Run("a Tenant from before the revocation does not answer a new nonce", func(t *testing.T) {
		clk.now = clk.now.Add(time.Minute)
		l.editSpec(lifecycleSpec(active), "peer alpha with beta again")
		l.pass("beta")
		// Replay the old Tenant from history as if it were alpha's answer.
		replay := filepath.Join(human, "clusters/beta/inbox/alpha/tenant.yaml")
		git(t, "-C", human, "pull", "-q", "--ff-only")
		if err := os.MkdirAll(filepath.Dir(replay), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(replay, []byte(oldTenant), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, "-C", human, "add", "-A")
		git(t, "-C", human, "-c", "user.name=mallory", "-c", "user.email=m@example.com", "commit", "-qm", "replay")
		git(t, "-C", human, "push", "-q", "origin", "main")
		l.pass("beta")
		if p := l.peering("beta"); p.Step == layout.StepIdentityIssued || l.show("clusters/alpha/inbox/beta/identity.yaml") != "" {
			t.Fatalf("a replayed Tenant got an identity: %+v", p)
		}
	})

	t.Run("a re-handshake after revocation needs no cleanup", func(t *testing.T) {
		l.converge()
		if p := l.peering("alpha"); p.Step != layout.StepReady {
			t.Fatalf("after re-adding: %+v", p)
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			t.Errorf("kubeconfig: %v", err)
		}
	})

	t.Run("an expired nonce is replaced and its Tenant refused", func(t *testing.T) {
		l.editSpec(lifecycleSpec(""), "revoke alpha again")
		l.converge()
		clk.now = clk.now.Add(reconcile.DefaultDrainPeriod)
		l.converge()
		clk.now = clk.now.Add(time.Minute)
		l.editSpec(lifecycleSpec(active), "peer once more")
		l.pass("beta")
		firstNonce := l.show("clusters/alpha/inbox/beta/nonce.yaml")
		clk.now = clk.now.Add(2 * time.Hour)
		l.pass("alpha")
		l.pass("beta")
		p := l.peering("beta")
		stalled := false
		for _, c := range p.Conditions {
			stalled = stalled || (c.Type == "Stalled" && c.Reason == "NonceExpired")
		}
		if !stalled || l.show("clusters/alpha/inbox/beta/nonce.yaml") == firstNonce {
			t.Fatalf("after the nonce expired: %+v", p)
		}
		l.converge()
		if p := l.peering("alpha"); p.Step != layout.StepReady {
			t.Fatalf("after a fresh nonce: %+v", p)
		}
	})
}

// TestVerifyHoldsAtEveryStepOfARevocation runs gitpeer verify's checks after
// every single pass while a peering is revoked: intermediate states a
// reviewer may see must verify too.
func TestVerifyHoldsAtEveryStepOfARevocation(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	rep, err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Now: clk.Now,
		Files: map[string][]byte{"peering.cue": []byte(lifecycleSpec(active))}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	human := filepath.Join(t.TempDir(), "human")
	git(t, "clone", "-q", rep.Remote, human)
	l := &lifecycle{t: t, rep: rep, clock: clk, human: human}
	l.editSpec(lifecycleSpec(""), "revoke alpha")

	// Leftovers of a removed peering are tolerated only in gitpeer's exact
	// forms: a RoleBinding bent to cluster-admin is still reported.
	rb := filepath.Join(human, "clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml")
	orig, err := os.ReadFile(rb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rb, []byte(strings.Replace(string(orig), "name: liqo-remote-controlplane", "name: cluster-admin", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _, err := schema.Load(human)
	if err != nil {
		t.Fatal(err)
	}
	if problems := verify.Tree(layout.NewTree(human), spec, clk.Now()); len(problems) != 1 || !strings.Contains(problems[0].File, "rolebinding") {
		t.Fatalf("a tampered leftover RoleBinding: %v", problems)
	}
	if err := os.WriteFile(rb, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	for i, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if i == 2 {
			clk.now = clk.now.Add(reconcile.DefaultDrainPeriod) // beta withdraws next
		}
		l.pass(id)
		git(t, "-C", human, "pull", "-q", "--ff-only")
		spec, _, err := schema.Load(human)
		if err != nil {
			t.Fatal(err)
		}
		if problems := verify.Tree(layout.NewTree(human), spec, clk.Now()); len(problems) > 0 {
			t.Fatalf("after pass %d (%s): %v", i+1, id, problems)
		}
	}
}

// TestAShortLifetimeSettlesBetweenRenewals runs both reconcilers through a
// real repo every 20 seconds of a certificate's life, with the shortest
// lifetime the spec accepts. A settled repo makes no commit: the remote's
// history grows by the renewal (the provider re-signs, the consumer takes the
// new certificate up) and by nothing else, and the renewal comes no earlier
// than a third of the lifetime before notAfter, less the jitter. (Issue 12: a
// 90s lifetime counted with the five backdated minutes was due the moment it
// was signed, and every pass renewed it.)
func TestAShortLifetimeSettlesBetweenRenewals(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	life := schema.MinCertificateLifetime
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	spec := `clusters: [{id: "alpha"}, {id: "beta", provider: {certificateLifetime: "` + life.String() + `"}}]
peerings: [{consumer: "alpha", provider: "beta"}]
`
	rep, err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Now: clk.Now,
		Files: map[string][]byte{"peering.cue": []byte(spec)}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	l := &lifecycle{t: t, rep: rep, clock: clk}
	if p := l.peering("alpha"); p.Step != layout.StepReady {
		t.Fatalf("after the handshake: %+v", p)
	}
	history := func() int {
		n, err := strconv.Atoi(strings.TrimSpace(git(t, "-C", rep.Remote, "rev-list", "--count", "main")))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	issued, before := clk.now, history()
	var renewal []string
	for clk.now.Before(issued.Add(life)) {
		clk.now = clk.now.Add(20 * time.Second)
		got := l.converge()
		if len(got) == 0 {
			continue
		}
		if at := clk.now.Sub(issued); at < life*2/3-life/10 || renewal != nil {
			t.Fatalf("commits %s after signing: %q (earlier: %q)", at, got, renewal)
		}
		renewal = got
	}
	if want := []string{"beta: renew identity of alpha", "alpha: accept identity of beta"}; strings.Join(renewal, "\n") != strings.Join(want, "\n") {
		t.Errorf("renewal commits %q, want %q", renewal, want)
	}
	if after := history(); after != before+len(renewal) {
		t.Errorf("the remote went from %d to %d commits over the certificate's life, want only the %d of the renewal", before, after, len(renewal))
	}
}
