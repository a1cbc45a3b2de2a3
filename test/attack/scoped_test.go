package attack

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// scopeSpec is two peerings with no cluster in common: a pull request
// touching one leaves the other's clusters out of the scoped check.
const scopeSpec = `clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}, {id: "delta"}]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]},
	{consumer: "gamma", provider: "delta"},
]
`

// pullRequest makes change on a branch of a fresh clone of main, commits
// it unpushed, and runs verify --base origin/main on the clone twice:
// scoped, and with Full. It returns both findings and the scope reported.
func (w *world) pullRequest(change func(a *writer)) (scoped, full []verify.Finding, scope verify.Scope, commit string) {
	w.t.Helper()
	a := w.writer()
	a.git("checkout", "-q", "-b", "pr")
	change(a)
	commit = a.commit("mallory <mallory@example.com>", "a pull request")
	spec, _, err := schema.Load(a.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	opts := verify.Options{Now: w.clock.Now(), RequireManifests: true, Base: "origin/main"}
	reported := 0
	opts.OnScope = func(s verify.Scope) { scope = s; reported++ }
	if scoped, err = verify.Check(a.dir, spec, opts); err != nil {
		w.t.Fatal(err)
	}
	if reported != 1 {
		w.t.Fatalf("the scope was reported %d times", reported)
	}
	opts.Full, opts.OnScope = true, nil
	if full, err = verify.Check(a.dir, spec, opts); err != nil {
		w.t.Fatal(err)
	}
	return scoped, full, scope, commit
}

// touching keeps the findings about what the scope covers: the commit
// findings, the files outside clusters/, and under clusters/ those of a
// checked cluster's tree, of an inbox it writes, or of its peer directory
// in another cluster's liqo/ (a peering check of one of its peerings).
func touching(findings []verify.Finding, clusters []string) []verify.Finding {
	in := map[string]bool{}
	for _, c := range clusters {
		in[c] = true
	}
	var out []verify.Finding
	for _, f := range findings {
		rest, ok := strings.CutPrefix(f.File, layout.ClustersDir+"/")
		parts := strings.Split(rest, "/")
		switch {
		case f.Commit != "", !ok, in[parts[0]],
			len(parts) > 2 && (parts[1] == layout.InboxDir || parts[1] == layout.LiqoDir) && in[parts[2]]:
			out = append(out, f)
		}
	}
	return out
}

// TestAScopedVerifyMissesNothingTheChangeTouches: a pull request tampers
// with the repo five ways, each on its own. verify --base (scoped) names
// each, checks only the clusters the change touches and those depending on
// it, and reports exactly what the full check (--full) reports about
// those: nothing a reviewer would see with the full check is hidden by the
// scope.
func TestAScopedVerifyMissesNothingTheChangeTouches(t *testing.T) {
	t.Parallel()
	const (
		bindingFile = "clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml"
		tenantFile  = "clusters/beta/inbox/alpha/tenant.yaml"
		betaCluster = "clusters/beta/cluster.yaml"
		deltaFile   = "clusters/delta/cluster.yaml"
		rootKey     = "deploy-key.pem"
	)
	key, _ := handshake.GenerateKey()
	pemKey, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ file, reason string }
	for _, tc := range []struct {
		name     string
		change   func(a *writer)
		clusters []string
		// found are findings of the tree both checks must name; fromCommit
		// those of the pull request's commit.
		found, fromCommit []want
	}{
		{"a ClusterRoleBinding planted in beta's liqo/", func(a *writer) {
			a.write(bindingFile, []byte(evilBinding))
			a.edit(betaKust, "resources:\n", "resources:\n- liqo/alpha/clusterrolebinding-evil.yaml\n")
		}, []string{"beta"},
			[]want{{bindingFile, reasons.UnexpectedObject}, {bindingFile, reasons.UnsignedChange}},
			[]want{{bindingFile, reasons.UnsignedChange}}},
		{"an unsigned edit of alpha's Tenant in beta's inbox", func(a *writer) {
			a.edit(tenantFile, "kind: Tenant", "kind: Tenant\n# edited")
		}, []string{"alpha", "beta"},
			[]want{{tenantFile, reasons.UnsignedChange}},
			[]want{{tenantFile, reasons.UnsignedChange}}},
		{"beta's API server changed in its cluster.yaml", func(a *writer) {
			a.edit(betaCluster, "https://beta.gitpeer.test:6443", "https://evil.example:6443")
		}, []string{"alpha", "beta"},
			[]want{{betaCluster, reasons.UnsignedChange}},
			[]want{{betaCluster, reasons.KeyChanged}, {betaCluster, reasons.UnsignedChange}}},
		{"a peering added to the spec", func(a *writer) {
			a.edit("peering.cue", `{consumer: "gamma", provider: "delta"},`, `{consumer: "gamma", provider: "delta"},
	{consumer: "gamma", provider: "beta"},`)
		}, []string{"beta", "gamma"}, nil, nil},
		{"a fingerprint pinned in the spec that delta does not publish", func(a *writer) {
			a.edit("peering.cue", `{id: "delta"}`, `{id: "delta", fingerprint: "sha256:`+strings.Repeat("0", 64)+`"}`)
		}, []string{"delta", "gamma"},
			[]want{{deltaFile, reasons.FingerprintMismatch}}, nil},
		{"a private key added at the root", func(a *writer) {
			a.write(rootKey, pemKey)
		}, nil,
			[]want{{rootKey, reasons.PrivateMaterial}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, scopeSpec)
			if f := w.verify(); len(f) != 0 {
				t.Fatalf("findings before the pull request:\n%v", f)
			}
			scoped, full, scope, commit := w.pullRequest(tc.change)
			if scope.All || !reflect.DeepEqual(scope.Clusters, tc.clusters) && len(scope.Clusters)+len(tc.clusters) > 0 || scope.Of != 4 {
				t.Fatalf("scope %+v, want clusters %v of 4", scope, tc.clusters)
			}
			for _, f := range tc.found {
				mustFind(t, scoped, f.file, f.reason, "")
				mustFind(t, full, f.file, f.reason, "")
			}
			for _, f := range tc.fromCommit {
				mustFind(t, scoped, f.file, f.reason, commit)
			}
			if want := touching(full, scope.Clusters); !reflect.DeepEqual(scoped, want) {
				t.Fatalf("scoped findings differ from the full check's on what the change touches:\n%s\nwant:\n%s\n(full:\n%s)", lines(scoped), lines(want), lines(full))
			}
		})
	}
}

// TestAScopedVerifySkipsWhatTheChangeDoesNotTouch: a finding already on
// main (a binding planted in gamma's liqo/, merged unreviewed) is not the
// scoped check's when a pull request touches only alpha and beta: that is
// the contract, the tree at the base was checked when it merged. --full
// (or verify without --base) names it.
func TestAScopedVerifySkipsWhatTheChangeDoesNotTouch(t *testing.T) {
	t.Parallel()
	w := settled(t, scopeSpec)
	planted := "clusters/gamma/liqo/delta/clusterrolebinding-evil.yaml"
	w.attack("mallory <mallory@example.com>", "gamma: tune RBAC", func(a *writer) {
		a.write(planted, []byte(evilBinding))
	})
	mustFind(t, w.verify(), planted, reasons.UnexpectedObject, "")

	scoped, full, scope, _ := w.pullRequest(func(a *writer) {
		a.edit("clusters/beta/inbox/alpha/tenant.yaml", "kind: Tenant", "kind: Tenant\n# edited")
	})
	if !reflect.DeepEqual(scope.Clusters, []string{"alpha", "beta"}) {
		t.Fatalf("scope %+v, want alpha and beta", scope)
	}
	for _, f := range scoped {
		if strings.HasPrefix(f.File, "clusters/gamma/") || strings.HasPrefix(f.File, "clusters/delta/") {
			t.Errorf("the scoped check reports on an untouched cluster: %s", f)
		}
	}
	mustFind(t, full, planted, reasons.UnexpectedObject, "")
	if !strings.Contains(scope.String(), "checked 2 of 4 clusters") || !strings.Contains(scope.String(), "--full checks all") {
		t.Errorf("the scope line says %q", scope)
	}
}

func lines(findings []verify.Finding) string {
	var b strings.Builder
	for _, f := range findings {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}
