package reconcile_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fluxcd/pkg/apis/meta"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/reconcile"
)

const (
	betaOutbox  = "clusters/alpha/inbox/beta"               // beta writes it, alpha reads it
	alphaOutbox = "clusters/beta/inbox/alpha"               // alpha writes it, beta reads it
	noPeering   = `clusters: [{id: "alpha"}, {id: "beta"}]` // both declared, nothing peers
)

// manifestOf parses the manifest of dir in w's tree.
func (w *world) manifestOf(dir string) *dirmanifest.Manifest {
	w.t.Helper()
	f, ok := w.tree[dir+"/"+dirmanifest.FileName]
	if !ok {
		w.t.Fatalf("%s has no manifest", dir)
	}
	m, err := dirmanifest.Parse(dir, f.Data)
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

// snapshot copies every file of w's tree under dir.
func (w *world) snapshot(dir string) map[string][]byte {
	out := map[string][]byte{}
	for p, f := range w.tree {
		if strings.HasPrefix(p, dir+"/") {
			out[p] = f.Data
		}
	}
	return out
}

// putBack replaces dir in w's tree by snap, as a repo writer restoring it
// from history would.
func (w *world) putBack(dir string, snap map[string][]byte) {
	for p := range w.tree {
		if strings.HasPrefix(p, dir+"/") {
			delete(w.tree, p)
		}
	}
	for p, data := range snap {
		w.tree[p] = &fstest.MapFile{Data: data}
	}
}

// revokedWorld is a settled alpha → beta world whose spec then revoked the
// peering, converged past beta's drain period; and the sequences of both
// outboxes before the revocation.
func revokedWorld(t *testing.T) (*world, map[string]uint64) {
	t.Helper()
	w := settled(t)
	before := map[string]uint64{betaOutbox: w.manifestOf(betaOutbox).Sequence, alphaOutbox: w.manifestOf(alphaOutbox).Sequence}
	w.setSpec(noPeering)
	w.converge("beta", "alpha")
	w.now = w.now.Add(reconcile.DefaultDrainPeriod)
	w.converge("beta", "alpha")
	return w, before
}

// TestAWithdrawalIsSignedAndSeenByTheFormerPeer: revoking a peering leaves
// in each outbox a tombstone, a manifest listing no files above every
// sequence its writer signed there, which its writer records as its own and
// published, and the former peer records as seen though it no longer peers.
// A settled revocation makes no commit: each tombstone is kept byte for
// byte.
func TestAWithdrawalIsSignedAndSeenByTheFormerPeer(t *testing.T) {
	w, before := revokedWorld(t)
	for _, c := range []struct{ writer, reader, dir string }{{"beta", "alpha", betaOutbox}, {"alpha", "beta", alphaOutbox}} {
		for p := range w.tree {
			if strings.HasPrefix(p, c.dir+"/") && p != c.dir+"/"+dirmanifest.FileName {
				t.Errorf("%s survives the withdrawal", p)
			}
		}
		m := w.manifestOf(c.dir)
		if !m.Tombstone() || m.Sequence <= before[c.dir] {
			t.Fatalf("%s: %d files at sequence %d, want a tombstone above %d", c.dir, len(m.Files), m.Sequence, before[c.dir])
		}
		if err := m.Verify(w.files[c.writer].Signer().Public(), c.writer, c.dir); err != nil {
			t.Fatalf("%s's tombstone: %v", c.writer, err)
		}
		if own, published := w.pins[c.writer].Own[c.dir], w.pins[c.writer].Published[c.dir]; own != m.Sequence || published != m.Sequence {
			t.Errorf("%s's record of %s: own %d, published %d; want %d", c.writer, c.dir, own, published, m.Sequence)
		}
		if seen := w.pins[c.reader].Lookup(c.writer).Seen(c.dir); seen != m.Sequence {
			t.Errorf("%s saw %s's %s at sequence %d, want the tombstone's %d", c.reader, c.writer, c.dir, seen, m.Sequence)
		}
	}
	if n := w.converge("beta", "alpha"); n != 0 {
		t.Errorf("%d commits once the withdrawal settled", n)
	}
}

// TestARestoredWithdrawnOutboxIsRolledBackAndWithdrawnAgain: a writer puts
// back alpha's outbox from before the revocation, validly signed by alpha,
// and the peering is approved again. beta, reading first, refuses it as
// ManifestRolledBack and signs nothing; alpha signs its own answer above
// the tombstone, and the handshake completes anew.
func TestARestoredWithdrawnOutboxIsRolledBackAndWithdrawnAgain(t *testing.T) {
	w := settled(t)
	old := w.snapshot(alphaOutbox)
	w.setSpec(noPeering)
	w.converge("beta", "alpha")
	w.now = w.now.Add(reconcile.DefaultDrainPeriod)
	w.converge("beta", "alpha")
	tombstone := w.manifestOf(alphaOutbox).Sequence

	w.putBack(alphaOutbox, old)
	w.setSpec(twoClusters)
	signed := w.backends["beta"].signed
	out, _ := w.pass("beta")
	if w.backends["beta"].signed != signed {
		t.Fatal("beta signed a certificate for the restored Tenant")
	}
	ps := peering(t, out, "alpha", "beta")
	if r := condition(ps, meta.ReadyCondition); r == nil || r.Status == "True" || !strings.Contains(r.Message, alphaOutbox+"/tenant.yaml ("+reasons.ManifestRolledBack+")") {
		t.Fatalf("beta's Ready condition %+v, want False naming the restored Tenant as %s", r, reasons.ManifestRolledBack)
	}
	if w.has("clusters/beta/liqo/alpha/tenant-alpha.yaml") {
		t.Fatal("beta rendered the restored Tenant")
	}

	// The sequence goes on above the tombstone, without the clock moving.
	w.converge("alpha", "beta")
	if m := w.manifestOf(alphaOutbox); m.Tombstone() || m.Sequence <= tombstone {
		t.Fatalf("alpha's outbox after approval again: %d files at sequence %d, want files above %d", len(m.Files), m.Sequence, tombstone)
	}
	if ps := w.status("alpha", "alpha", "beta"); ps == nil || ps.Step != layout.StepReady {
		t.Fatalf("not Ready after approval again: %+v", ps)
	}
}

// TestATombstoneSaysWithdrawnInTheStatus: approved again, a reader that
// finds its peer's tombstone still there reads the directory as empty and
// says it was withdrawn.
func TestATombstoneSaysWithdrawnInTheStatus(t *testing.T) {
	w, _ := revokedWorld(t)
	w.setSpec(twoClusters)
	out, _ := w.pass("beta")
	r := condition(peering(t, out, "alpha", "beta"), meta.ReadyCondition)
	if r == nil || !strings.Contains(r.Message, alphaOutbox+" withdrawn by alpha (tombstone at sequence") {
		t.Fatalf("beta's Ready condition %+v, want it to say alpha withdrew %s", r, alphaOutbox)
	}
}

// TestATombstoneEndsWithItsReader: once the spec no longer declares the
// cluster whose inbox holds a tombstone, its writer deletes it.
func TestATombstoneEndsWithItsReader(t *testing.T) {
	w, _ := revokedWorld(t)
	w.setSpec(`clusters: [{id: "beta"}]`)
	w.pass("beta")
	if w.has(betaOutbox + "/" + dirmanifest.FileName) {
		t.Fatal("beta kept its tombstone in the inbox of alpha, which the spec no longer declares")
	}
}

// TestAnOwnOutboxRestoredDuringKeyChangedIsHeld: while alpha is KeyChanged
// for beta, beta carries over its outbox to alpha. A writer restores an
// older state of it, validly signed by beta, and plants a file beside it:
// beta keeps the restored state exactly, drops the planted file, signs
// nothing there (alpha refuses the older sequence), names
// ManifestRolledBack, and does not lower what it recorded as published.
// Once alpha is trusted again, beta signs its outbox anew above what it
// published.
func TestAnOwnOutboxRestoredDuringKeyChangedIsHeld(t *testing.T) {
	w := settled(t)
	old := w.snapshot(betaOutbox)
	// The nonce moves on: beta's outbox changes, signed at a higher sequence.
	w.now = w.now.Add(2 * reconcile.DefaultCertificateLifetime)
	w.converge("beta", "alpha")
	published := w.manifestOf(betaOutbox).Sequence
	if published <= manifestSequence(t, old[betaOutbox+"/"+dirmanifest.FileName]) {
		t.Fatal("beta's outbox did not change")
	}
	current := w.tree["clusters/alpha/cluster.yaml"].Data

	evil, _, err := file.Init(t.TempDir()+"/evil", file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := evil.ClusterInfo()
	data, _ := info.Encode()
	w.tree["clusters/alpha/cluster.yaml"] = &fstest.MapFile{Data: data}
	w.putBack(betaOutbox, old)
	planted := betaOutbox + "/resourceslice-evil.yaml"
	w.tree[planted] = &fstest.MapFile{Data: []byte("kind: ResourceSlice\n")}
	signed := w.backends["beta"].signed
	out, _ := w.pass("beta")
	if w.has(planted) {
		t.Fatal("beta held a file its restored manifest does not list")
	}
	if w.backends["beta"].signed != signed {
		t.Fatal("beta signed a certificate")
	}
	for p, data := range old {
		if f, ok := w.tree[p]; !ok || string(f.Data) != string(data) {
			t.Fatalf("beta changed %s of its restored outbox", p)
		}
	}
	if n := len(w.snapshot(betaOutbox)); n != len(old) {
		t.Fatalf("beta's outbox holds %d files, the restored state %d", n, len(old))
	}
	st := condition(peering(t, out, "alpha", "beta"), meta.StalledCondition)
	if st == nil || st.Reason != reasons.KeyChanged || !strings.Contains(st.Message, reasons.ManifestRolledBack) {
		t.Fatalf("Stalled %+v, want KeyChanged naming the restored outbox %s", st, reasons.ManifestRolledBack)
	}
	if got := w.pins["beta"].Published[betaOutbox]; got != published {
		t.Fatalf("beta's record of its outbox went from %d to %d", published, got)
	}

	w.tree["clusters/alpha/cluster.yaml"] = &fstest.MapFile{Data: current}
	w.converge("beta", "alpha")
	if m := w.manifestOf(betaOutbox); m.Sequence <= published {
		t.Fatalf("beta's outbox at sequence %d once alpha is trusted again, not above %d", m.Sequence, published)
	}
	if ps := w.status("alpha", "alpha", "beta"); ps == nil || ps.Step != layout.StepReady {
		t.Fatalf("not Ready once alpha is trusted again: %+v", ps)
	}
}

func manifestSequence(t *testing.T, data []byte) uint64 {
	t.Helper()
	m, err := dirmanifest.Parse(dirmanifest.FileName, data)
	if err != nil {
		t.Fatal(err)
	}
	return m.Sequence
}

// TestAnOwnWithdrawnOutboxRestoredIsWithdrawnAgain: a writer puts back
// alpha's outbox from before the revocation; alpha's next pass withdraws it
// again, signing a tombstone above the one it had signed. A writer deletes
// that tombstone: alpha signs another, and says so.
func TestAnOwnWithdrawnOutboxRestoredIsWithdrawnAgain(t *testing.T) {
	w := settled(t)
	old := w.snapshot(alphaOutbox)
	w.setSpec(noPeering)
	w.converge("beta", "alpha")
	tombstone := w.manifestOf(alphaOutbox).Sequence

	w.putBack(alphaOutbox, old)
	_, plan := w.pass("alpha")
	if !strings.Contains(plan.Message, "alpha: withdraw tenant from beta") {
		t.Errorf("commit message %q does not say alpha withdraws its Tenant again", plan.Message)
	}
	if got := w.snapshot(alphaOutbox); len(got) != 1 {
		t.Fatalf("alpha's outbox after the pass holds %d files, want its tombstone alone", len(got))
	}
	if m := w.manifestOf(alphaOutbox); !m.Tombstone() || m.Sequence <= tombstone {
		t.Fatalf("alpha's outbox: %d files at sequence %d, want a tombstone above %d", len(m.Files), m.Sequence, tombstone)
	}

	tombstone = w.manifestOf(alphaOutbox).Sequence
	delete(w.tree, alphaOutbox+"/"+dirmanifest.FileName)
	if _, plan = w.pass("alpha"); !strings.Contains(plan.Message, "alpha: sign withdrawal for beta") {
		t.Errorf("commit message %q does not say alpha signs its withdrawal again", plan.Message)
	}
	if m := w.manifestOf(alphaOutbox); !m.Tombstone() || m.Sequence <= tombstone {
		t.Fatalf("alpha's outbox: %d files at sequence %d, want a tombstone above %d", len(m.Files), m.Sequence, tombstone)
	}
}

// TestOnlyTheSpecWithdrawsAnOutbox: alpha sent its Tenant and waits for an
// Identity; a writer deletes beta's nonce, so alpha's pass writes nothing
// to beta. alpha signs no tombstone: beta would read a signed withdrawal
// of alpha's requests where there is only a repo writer's deletion.
func TestOnlyTheSpecWithdrawsAnOutbox(t *testing.T) {
	w := newWorld(t, twoClusters)
	w.pass("beta")
	w.pass("alpha")
	if !w.has(alphaOutbox + "/tenant.yaml") {
		t.Fatal("alpha sent no Tenant")
	}
	delete(w.tree, betaOutbox+"/nonce.yaml")
	w.pass("alpha")
	if f, ok := w.tree[alphaOutbox+"/"+dirmanifest.FileName]; ok {
		if m, err := dirmanifest.Parse(alphaOutbox, f.Data); err == nil && m.Tombstone() {
			t.Fatal("alpha signed a tombstone for a peering the spec still approves")
		}
	}
}

// TestAPlantedManifestIsNoReasonToSignATombstone: a writer puts a manifest
// in alpha's folder of an inbox alpha never wrote to (gamma's, a declared
// cluster alpha does not peer with): alpha's pass deletes it and signs
// nothing there.
func TestAPlantedManifestIsNoReasonToSignATombstone(t *testing.T) {
	w := settled(t)
	w.setSpec(`clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta"}]`)
	planted := "clusters/gamma/inbox/alpha/" + dirmanifest.FileName
	w.tree[planted] = w.tree[alphaOutbox+"/"+dirmanifest.FileName]
	w.pass("alpha")
	if w.has(planted) {
		t.Fatalf("alpha kept or signed %s", planted)
	}
}

// TestARestoredAcceptanceIsNoPreviousDecision: beta granted alpha's slice
// pool; the spec removed it (both sides withdrew it), then cordoned alpha
// and listed pool again: a new slice under a cordon, denied. A writer
// restores beta's outbox from when pool was granted. beta decides afresh
// (the restored acceptance is not what it last published): pool stays
// denied. With alpha's request unreadable too, beta does not keep the
// restored acceptance either.
func TestARestoredAcceptanceIsNoPreviousDecision(t *testing.T) {
	w := newWorld(t, slicesSpec)
	w.converge("beta", "alpha")
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Resources != "Accepted" {
		t.Fatalf("pool before: %+v", s)
	}
	granted := w.snapshot(betaOutbox)
	withoutPool := strings.Replace(slicesSpec, `{name: "pool", resources: {cpu: "2", memory: "4Gi"}},`, "", 1)
	w.setSpec(withoutPool)
	w.converge("beta", "alpha")
	if w.has(betaOutbox + "/resourceslice-pool.status.yaml") {
		t.Fatal("beta kept pool's answer once the spec removed it")
	}
	w.setSpec(strings.Replace(slicesSpec, `provider: "beta",`, `provider: "beta", tenantCondition: "Cordoned",`, 1))
	w.converge("beta", "alpha")
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Resources != "Denied" {
		t.Fatalf("pool asked again under a cordon: %+v", s)
	}

	w.putBack(betaOutbox, granted)
	signed := w.backends["beta"].signed
	w.pass("beta")
	if s := w.slice("beta", "alpha", "beta", "pool"); s.Resources != "Denied" {
		t.Fatalf("pool after beta's outbox was restored: %+v", s)
	}
	if w.backends["beta"].signed != signed {
		t.Fatal("beta signed a certificate")
	}

	// The same, with alpha's manifest broken too, so that the request is
	// unreadable and beta keeps its decisions: not the restored one.
	w.putBack(betaOutbox, granted)
	w.tree[alphaOutbox+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: []byte("kind: Manifest\n")}
	w.pass("beta")
	if f, ok := w.tree[betaOutbox+"/resourceslice-pool.status.yaml"]; ok {
		if rs, err := artifact.DecodeSlice("pool", f.Data); err != nil || artifact.SliceCondition(rs, authv1beta1.ResourceSliceConditionTypeResources).Status == authv1beta1.ResourceSliceConditionAccepted {
			t.Fatalf("beta kept the restored acceptance of pool (%v):\n%s", err, f.Data)
		}
	}
	if w.backends["beta"].signed != signed {
		t.Fatal("beta signed a certificate")
	}
}
