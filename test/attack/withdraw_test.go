package attack

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/reconcile"
)

// The two outboxes of alpha → beta: beta's to alpha (nonce, Identity, slice
// answers) and alpha's to beta (Tenant, slice requests).
const (
	betaOutbox  = "clusters/alpha/inbox/beta"
	alphaOutbox = "clusters/beta/inbox/alpha"
)

// sequenceOf is the sequence of the manifest at file on main; it fails the
// test unless that manifest parses.
func (w *world) sequenceOf(file string) *dirmanifest.Manifest {
	w.t.Helper()
	m, err := dirmanifest.Parse(file, w.mustShow(file))
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

// revoked returns a copy of the settled alpha → beta world in which the
// spec revoked the peering and both sides withdrew everything, beta after
// its drain period, and every cluster ran a pass after that; and main as it
// was before the revocation.
func revoked(t *testing.T) (*world, string) {
	t.Helper()
	w := settled(t, twoSpec)
	old := w.ref("main")
	before := map[string]uint64{}
	for _, dir := range []string{betaOutbox, alphaOutbox} {
		before[dir] = w.sequenceOf(dir + "/" + dirmanifest.FileName).Sequence
	}
	peering := twoSpec[strings.Index(twoSpec, "peerings: ["):]
	w.editSpec(peering, "peerings: []\n", "revoke alpha → beta")
	w.converge()
	w.clock.Advance(reconcile.DefaultDrainPeriod)
	w.converge()
	for _, dir := range []string{betaOutbox, alphaOutbox} {
		if files := w.listTree("main", dir); len(files) != 1 || files[0] != dir+"/"+dirmanifest.FileName {
			t.Fatalf("%s after the revocation holds %v, want its tombstone alone", dir, files)
		}
		if m := w.sequenceOf(dir + "/" + dirmanifest.FileName); !m.Tombstone() || m.Sequence <= before[dir] {
			t.Fatalf("%s after the revocation: %d files at sequence %d, want a tombstone above %d", dir, len(m.Files), m.Sequence, before[dir])
		}
	}
	noTreeFindings(t, w.verify())
	return w, old
}

// TestARestoredWithdrawnDirectoryIsRolledBack: the spec revoked alpha →
// beta, and each side withdrew its outbox by a signed tombstone, which the
// other side saw. A writer restores both outboxes from before the
// revocation, validly signed by their writers (alpha's Tenant and slice
// requests, beta's nonce, Identity and granted slice), and the peering is
// approved again. Whichever side reads first, the restored directory is
// ManifestRolledBack: beta accepts no Tenant and signs nothing, alpha
// accepts no Identity and renders nothing for beta. verify names both
// restored manifests. The handshake then starts afresh, above the
// tombstones.
func TestARestoredWithdrawnDirectoryIsRolledBack(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"beta", "alpha"} {
		t.Run(first+" reads first", func(t *testing.T) {
			t.Parallel()
			w, old := revoked(t)
			tombstones := map[string]uint64{}
			for _, dir := range []string{betaOutbox, alphaOutbox} {
				tombstones[dir] = w.sequenceOf(dir + "/" + dirmanifest.FileName).Sequence
			}
			before := w.signedAll()

			attack := w.attack("mallory <mallory@example.com>", "restore", restore(old, betaOutbox, alphaOutbox))
			findings := w.verify()
			mustFind(t, findings, betaOutbox+"/"+dirmanifest.FileName, reasons.ManifestRolledBack, attack)
			mustFind(t, findings, alphaOutbox+"/"+dirmanifest.FileName, reasons.ManifestRolledBack, attack)
			peering := twoSpec[strings.Index(twoSpec, "peerings: ["):]
			w.editSpec("peerings: []\n", peering, "approve alpha → beta again")

			w.pass(first)
			w.nothingSigned(before)
			switch first {
			case "beta":
				ps := w.peering("beta", "alpha", "beta")
				assertContains(t, "beta's status", describe(ps), tenantFile, reasons.ManifestRolledBack)
				if ready(ps) {
					t.Fatalf("beta took the restored Tenant: %s", describe(ps))
				}
				if _, ok := w.show(acceptedTenant); ok {
					t.Fatal("beta rendered the restored Tenant")
				}
			case "alpha":
				ps := w.peering("alpha", "alpha", "beta")
				assertContains(t, "alpha's status", describe(ps), identityFile, reasons.ManifestRolledBack)
				if ready(ps) {
					t.Fatalf("alpha took the restored Identity: %s", describe(ps))
				}
				if files := w.listTree("main", layout.PeerDir("alpha", "beta")); len(files) != 0 {
					t.Fatalf("alpha rendered %v from the restored Identity", files)
				}
				// alpha, with nothing to send yet, does not vouch for its
				// restored outbox: it deletes it.
				if files := w.listTree("main", alphaOutbox); len(files) != 0 {
					t.Fatalf("alpha left its restored outbox: %v", files)
				}
			}

			// The honest handshake, from a fresh nonce, signed above the
			// tombstones.
			w.converge()
			w.mustBeReady("alpha", "beta")
			for dir, seq := range tombstones {
				if m := w.sequenceOf(dir + "/" + dirmanifest.FileName); m.Tombstone() || m.Sequence <= seq {
					t.Fatalf("%s after approval again: sequence %d with %d files, want files above the tombstone's %d", dir, m.Sequence, len(m.Files), seq)
				}
			}
		})
	}
}

// TestARestoredWithdrawalIsNotCarriedOverDuringKeyChanged: the spec drains
// alpha's tenant, so beta unbinds its roles (the RoleBinding and
// ClusterRoleBinding are withdrawn from clusters/beta/liqo/alpha/) and
// denies its slice. A writer then makes alpha KeyChanged for beta (a
// foreign key in alpha's cluster.yaml) and restores, from before the drain,
// beta's own signed directory (its manifest and clusters/beta/liqo/alpha/,
// bindings included) and beta's outbox to alpha (the slice granted). While
// alpha is KeyChanged beta carries alpha's state over: it carries what it
// last published, not the restored files, so the bindings never reach
// beta's applied branch, beta's status names ManifestRolledBack, and beta
// signs nothing. The restored outbox is held as the writer left it, signed
// anew by nobody. verify names the restored manifest.
func TestARestoredWithdrawalIsNotCarriedOverDuringKeyChanged(t *testing.T) {
	t.Parallel()
	const (
		roleBinding        = "clusters/beta/liqo/alpha/rolebinding-liqo-binding-liqo-remote-controlplane.yaml"
		clusterRoleBinding = "clusters/beta/liqo/alpha/clusterrolebinding-liqo-binding-liqo-virtual-kubelet-remote-clusterwide-alpha.yaml"
	)
	w := settled(t, twoSpec)
	old := w.ref("main")
	w.mustShow(roleBinding)
	w.mustShow(clusterRoleBinding)
	w.editSpec(`{consumer: "alpha", provider: "beta",`, `{consumer: "alpha", provider: "beta", tenantCondition: "Drained",`, "drain alpha")
	w.converge()
	for _, f := range []string{roleBinding, clusterRoleBinding} {
		if _, ok := w.show(f); ok {
			t.Fatalf("%s survives the drain", f)
		}
		w.forbid("beta", f, "")
	}
	published := w.sequenceOf("clusters/beta/" + dirmanifest.FileName).Sequence
	before := w.signedAll()

	evil := impostor(t, "alpha", "https://alpha.gitpeer.test:6443")
	attack := w.attack("mallory <mallory@example.com>", "restore beta", func(a *writer) {
		info, err := evil.ClusterInfo()
		if err != nil {
			t.Fatal(err)
		}
		data, err := info.Encode()
		if err != nil {
			t.Fatal(err)
		}
		a.write(alphaCluster, data)
		restore(old, layout.PeerDir("beta", "alpha"), betaOutbox)(a)
		a.git("checkout", old, "--", "clusters/beta/"+dirmanifest.FileName)
	})
	restored := w.mustShow(betaOutbox + "/" + dirmanifest.FileName)
	mustFind(t, w.verify(), "clusters/beta/"+dirmanifest.FileName, reasons.ManifestRolledBack, attack)

	w.pass("beta")
	w.nothingSigned(before)
	ps := w.peering("beta", "alpha", "beta")
	if reason := stalled(ps); reason != reasons.KeyChanged {
		t.Fatalf("beta's status: %s\nwant Stalled KeyChanged", describe(ps))
	}
	assertContains(t, "beta's status", describe(ps), "clusters/beta/"+dirmanifest.FileName, reasons.ManifestRolledBack)
	for _, f := range []string{roleBinding, clusterRoleBinding} {
		if _, ok := w.show(f); ok {
			t.Fatalf("beta carried over the restored %s", f)
		}
	}
	if m := w.sequenceOf("clusters/beta/" + dirmanifest.FileName); m.Sequence <= published {
		t.Fatalf("beta's manifest is at sequence %d, not above the %d it published before the attack", m.Sequence, published)
	}
	if got := w.mustShow(betaOutbox + "/" + dirmanifest.FileName); string(got) != string(restored) {
		t.Fatal("beta re-signed its restored outbox to alpha")
	}

	// Another pass changes nothing of that: the restored state stays
	// refused.
	w.pass("beta")
	w.nothingSigned(before)
	for _, f := range []string{roleBinding, clusterRoleBinding} {
		if _, ok := w.show(f); ok {
			t.Fatalf("a second pass of beta carried over the restored %s", f)
		}
	}
}

// TestARestoredGrantDoesNotOutliveACordon: beta granted alpha's slice pool.
// The spec removed pool (both sides withdrew it), then listed it again with
// alpha cordoned: a new slice under a cordon is denied. A writer restores
// beta's outbox from when pool was granted, validly signed by beta, once
// with alpha's request readable and once with alpha's manifest broken (so
// beta keeps its decisions). beta does not take the restored acceptance as
// its own earlier decision: pool stays denied, beta signs nothing, and
// alpha never renders pool's Identity or ResourceSlice.
func TestARestoredGrantDoesNotOutliveACordon(t *testing.T) {
	t.Parallel()
	const pool = "\t{name: \"pool\", resources: {cpu: \"2\"}},\n"
	for _, hide := range []bool{false, true} {
		name := "request readable"
		if hide {
			name = "request unreadable"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			granted := w.ref("main")
			if s := sliceOf(w.peering("beta", "alpha", "beta"), "pool"); s.Resources != "Accepted" {
				t.Fatalf("pool before: %+v", s)
			}
			w.editSpec(pool, "", "drop slice pool")
			w.converge()
			w.editSpec(`{consumer: "alpha", provider: "beta", slices: [`+"\n",
				`{consumer: "alpha", provider: "beta", tenantCondition: "Cordoned", slices: [`+"\n"+pool, "cordon alpha, list pool again")
			w.converge()
			if s := sliceOf(w.peering("beta", "alpha", "beta"), "pool"); s.Resources != "Denied" {
				t.Fatalf("pool under the cordon: %+v", s)
			}
			w.forbid("alpha", poolIdentity, "")
			w.forbid("alpha", poolRendered, "")
			before := w.signedAll()

			attack := w.attack("mallory <mallory@example.com>", "restore", func(a *writer) {
				restore(granted, betaOutbox)(a)
				if hide {
					a.write(alphaOutbox+"/"+dirmanifest.FileName, []byte("kind: Manifest\n"))
				}
			})
			mustFind(t, w.verify(), betaOutbox+"/"+dirmanifest.FileName, reasons.ManifestRolledBack, attack)
			w.pass("beta")
			w.nothingSigned(before)
			if s := sliceOf(w.peering("beta", "alpha", "beta"), "pool"); s.Resources == "Accepted" {
				t.Fatalf("beta granted pool from its restored outbox: %+v", s)
			}
			if data, ok := w.show(poolAnswer); ok && strings.Contains(string(data), "ResourceSliceResourcesAccepted") {
				t.Fatalf("beta signed the restored acceptance of pool again:\n%s", data)
			}
			w.converge()
			w.nothingSigned(before)
		})
	}
}
