package demo_test

import (
	"context"
	"crypto"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// flux is what source-controller does with alpha's applied branch, as far
// as trust goes: it verifies each new head with the keys the Secret it
// applied last holds in the head's signature format (mode HEAD: the
// head's signature alone; .sshpub keys for SSH signatures, .asc keys for
// OpenPGP ones), and applies the head's clusters/alpha/flux/ Secret if it
// verifies.
type flux struct {
	t       *testing.T
	remote  string
	id      string
	head    plumbing.Hash
	trusted []crypto.PublicKey // by .sshpub
	pgp     []crypto.PublicKey // whose OpenPGP form the Secret holds (.asc)
	refused int
}

// fetch takes the applied branch's head as Flux would, failing the test
// if Flux would refuse it.
func (f *flux) fetch(after string) {
	f.t.Helper()
	repo, err := gitobj.Open(f.remote)
	if err != nil {
		f.t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(layout.AppliedBranch(f.id)), true)
	if err != nil {
		f.t.Fatalf("after %s: %v", after, err)
	}
	if ref.Hash() == f.head {
		return
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		f.t.Fatal(err)
	}
	keys := map[string]crypto.PublicKey{}
	trusted := f.trusted
	if commitsig.FormatOf(c.PGPSignature) == commitsig.FormatOpenPGP {
		trusted = f.pgp
	}
	for i, k := range trusted {
		keys[string(rune('a'+i))] = k
	}
	if _, err := commitsig.Verify(c, keys); err != nil {
		f.refused++
		f.t.Errorf("after %s: Flux refuses the applied head %s: %v", after, c.Hash, err)
		return
	}
	tree, err := c.Tree()
	if err != nil {
		f.t.Fatal(err)
	}
	file, err := tree.File(layout.ClusterPath(f.id, fluxtrust.Dir, fluxtrust.SecretFile))
	if err != nil {
		f.t.Fatalf("after %s: the applied head carries no verify Secret: %v", after, err)
	}
	data, _ := file.Contents()
	k, err := fluxtrust.Parse(file.Name, f.id, []byte(data))
	if err != nil {
		f.t.Fatal(err)
	}
	f.trusted, f.pgp = nil, nil
	for _, v := range [][2][]byte{{k.SSH, k.OpenPGP}, {k.NextSSH, k.NextOpenPGP}} {
		if v[0] == nil {
			continue
		}
		pub, _, _, _, err := ssh.ParseAuthorizedKey(v[0])
		if err != nil {
			f.t.Fatal(err)
		}
		key := pub.(ssh.CryptoPublicKey).CryptoPublicKey()
		f.trusted = append(f.trusted, key)
		if _, _, err := commitsig.CheckOpenPGPKey(v[1], key, commitsig.OpenPGPUserID(f.id)); err == nil {
			f.pgp = append(f.pgp, key)
		}
	}
	f.head = ref.Hash()
}

func fp(k crypto.PublicKey) string {
	s, _ := handshake.Fingerprint(k)
	return s
}

// peered is alpha and beta peered by the demo, at a controlled clock,
// with alpha's Flux (flux) having applied the demo's last head.
type peered struct {
	rep      *demo.Report
	clk      *clock
	clusters map[string]*demo.Cluster
	fl       *flux
}

func newPeered(t *testing.T) *peered {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	clk := &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	rep, err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Now: clk.Now,
		Files: map[string][]byte{"peering.cue": []byte(lifecycleSpec(active))}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p := &peered{rep: rep, clk: clk, clusters: map[string]*demo.Cluster{}}
	for _, c := range rep.Clusters {
		p.clusters[c.ID] = c
	}
	p.fl = &flux{t: t, remote: rep.Remote, id: "alpha", trusted: []crypto.PublicKey{p.clusters["alpha"].Backend.Signer().Public()}}
	p.fl.fetch("the demo")
	return p
}

// TestAKeyRolloverNeverBreaksFluxNorThePeering rolls alpha's key while
// alpha and beta are peered, with alpha's Flux simulated to the letter of
// its trust (flux above): rotate-key's staging, the announcement, the
// --key-rollover-wait, the switch. Flux never refuses a head, both sides
// stay Ready at every pass, and at the end the old key is trusted nowhere:
// not by Flux's Secret, not by beta's pin, not by the published
// cluster.yaml, and verify finds nothing.
func TestAKeyRolloverNeverBreaksFluxNorThePeering(t *testing.T) {
	ctx := context.Background()
	p := newPeered(t)
	rep, clk, fl, alpha := p.rep, p.clk, p.fl, p.clusters["alpha"]
	human := filepath.Join(t.TempDir(), "human")
	git(t, "clone", "-q", rep.Remote, human)
	l := &lifecycle{t: t, rep: rep, clock: clk, human: human}
	oldFP := fp(alpha.Backend.Signer().Public())

	ready := func(after string) {
		t.Helper()
		for _, side := range []string{"alpha", "beta"} {
			p := l.peering(side)
			ok := false
			for _, c := range p.Conditions {
				ok = ok || c.Type == "Ready" && c.Status == "True"
			}
			if !ok {
				t.Errorf("after %s: %s's side of the peering is not Ready: %+v", after, side, p.Conditions)
			}
		}
	}
	ready("the demo")

	next, err := alpha.Backend.StageKey(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	newFP, _ := handshake.Fingerprint(next.Signer.Public())
	var notes []string
	step := func(id string) {
		t.Helper()
		res, err := p.clusters[id].Runner.Pass(ctx)
		if err != nil {
			t.Fatalf("%s's pass: %v", id, err)
		}
		if id == "alpha" && res.KeyRollover != "" {
			notes = append(notes, res.KeyRollover)
		}
		after := id + "'s pass at " + clk.now.Format(time.TimeOnly)
		fl.fetch(after)
		ready(after)
	}
	// Announced, then held for --key-rollover-wait: still the old key.
	for range 3 {
		step("alpha")
		step("beta")
	}
	if fp(alpha.Backend.Signer().Public()) != oldFP {
		t.Fatal("alpha switched before --key-rollover-wait passed")
	}
	if len(fl.trusted) != 2 {
		t.Fatalf("after the announcement, Flux trusts %d keys, want the old and the new", len(fl.trusted))
	}
	clk.now = clk.now.Add(runner.DefaultKeyRolloverWait)
	for range 6 {
		step("alpha")
		step("beta")
		clk.now = clk.now.Add(time.Minute)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "key rollover: "+newFP+" replaces "+oldFP) {
		t.Errorf("alpha's passes never said it switched:\n%s", strings.Join(notes, "\n"))
	}

	// The old key is trusted nowhere.
	if len(fl.trusted) != 1 || fp(fl.trusted[0]) != newFP {
		t.Errorf("Flux ends up trusting %d keys, want the new one alone", len(fl.trusted))
	}
	info, err := layout.ParseClusterInfo("cluster.yaml", "alpha", []byte(l.show("clusters/alpha/cluster.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if info.Fingerprint != newFP || info.VerifyRotation(oldFP) != nil {
		t.Errorf("cluster.yaml publishes %s (statement: %v), want %s signed over by %s", info.Fingerprint, info.VerifyRotation(oldFP), newFP, oldFP)
	}
	pins, err := p.clusters["beta"].Backend.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pin := pins.Lookup("alpha"); pin == nil || pin.Fingerprint != newFP {
		t.Errorf("beta pins %+v for alpha, want %s", pin, newFP)
	}
	git(t, "-C", human, "pull", "-q", "--ff-only")
	spec, _, err := schema.Load(human)
	if err != nil {
		t.Fatal(err)
	}
	if problems := verify.Tree(layout.NewTree(human), spec, clk.Now()); len(problems) > 0 {
		t.Errorf("verify after the rollover: %v", problems)
	}
}

// TestASecondRolloverWaitsForTheProvidersAnswer: alpha switches keys, and
// a second key is staged before beta has answered the first rotation. The
// second switch waits, saying for whom, until beta has issued the Identity
// for the first new key: beta holds alpha's grant on the word of the first
// rotation's statement, which a second statement would not carry. Both
// sides stay Ready, and Flux never refuses a head.
func TestASecondRolloverWaitsForTheProvidersAnswer(t *testing.T) {
	ctx := context.Background()
	p := newPeered(t)
	clk, fl, clusters, alpha := p.clk, p.fl, p.clusters, p.clusters["alpha"]
	l := &lifecycle{t: t, rep: p.rep, clock: clk}
	pass := func(id string) string {
		t.Helper()
		res, err := clusters[id].Runner.Pass(ctx)
		if err != nil {
			t.Fatalf("%s's pass: %v", id, err)
		}
		fl.fetch(id + "'s pass")
		for _, side := range []string{"alpha", "beta"} {
			if !readyIn(l.peering(side)) {
				t.Fatalf("after %s's pass: %s's side is not Ready: %+v", id, side, l.peering(side).Conditions)
			}
		}
		return res.KeyRollover
	}
	rollTo := func() string {
		next, err := alpha.Backend.StageKey(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		pass("alpha") // announced
		clk.now = clk.now.Add(runner.DefaultKeyRolloverWait)
		return fp(next.Signer.Public())
	}
	first := rollTo()
	if note := pass("alpha"); !strings.Contains(note, "key rollover: "+first) {
		t.Fatalf("the first switch: %q", note)
	}
	second := rollTo()
	for range 2 {
		if note := pass("alpha"); !strings.Contains(note, "until beta has answered this cluster's previous key rotation") {
			t.Fatalf("alpha switched again before beta answered: %q", note)
		}
	}
	if fp(alpha.Backend.Signer().Public()) != first {
		t.Fatal("alpha's key changed while beta had not answered")
	}
	for i := 0; i < 4 && fp(alpha.Backend.Signer().Public()) != second; i++ {
		pass("beta")
		pass("alpha")
	}
	if fp(alpha.Backend.Signer().Public()) != second {
		t.Fatal("alpha never switched to the second key once beta answered")
	}
	for range 3 {
		pass("beta")
		pass("alpha")
	}
}

func readyIn(p layout.PeeringStatus) bool {
	for _, c := range p.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			return true
		}
	}
	return false
}

// TestSwitchingTheSigningFormatNeverBreaksFlux: alpha's reconciler moves
// from SSH signatures to OpenPGP (for Argo CD) and back. Its Flux verifies
// every head: the verify Secret gitpeer keeps holds alpha's key in both
// forms, so the first head signed in the new format meets a key Flux
// already trusts.
func TestSwitchingTheSigningFormatNeverBreaksFlux(t *testing.T) {
	ctx := context.Background()
	p := newPeered(t)
	rep, clk, fl, alpha := p.rep, p.clk, p.fl, p.clusters["alpha"]
	for _, format := range []commitsig.Format{commitsig.FormatOpenPGP, commitsig.FormatSSH} {
		opts, err := runner.Signed(gitsync.Options{URL: rep.Remote, Dir: alpha.Runner.Repo.Dir(), Clock: gitsync.ClockFunc(clk.Now)}, alpha.Backend, format)
		if err != nil {
			t.Fatal(err)
		}
		repo, err := gitsync.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := &runner.Runner{Repo: repo, Backend: alpha.Backend, Now: clk.Now}
		clk.now = clk.now.Add(time.Minute)
		res, err := r.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Sealed {
			t.Fatalf("the pass signing with %s did not reseal the applied branch", format)
		}
		fl.fetch("alpha's first pass signing with " + string(format))
	}
	if fl.refused > 0 {
		t.Fatalf("Flux refused %d heads", fl.refused)
	}
}
