package attack

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// evilBinding makes ServiceAccount evil/evil cluster-admin: what a writer
// would like applied to a cluster.
const evilBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: evil
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: evil
  namespace: evil
`

const (
	plantedRBAC = "clusters/alpha/liqo/beta/clusterrolebinding-evil.yaml"
	alphaKust   = "clusters/alpha/kustomization.yaml"
	// forgedMessage is what alpha's reconciler would write, trailers and all.
	forgedMessage = "alpha: accept identity of beta\n\nGitpeer-Cluster: alpha\nGitpeer-Step: accept identity of beta\n"
	// alphaAuthor is the author alpha's reconciler commits as.
	alphaAuthor = "gitpeer (alpha) <alpha@gitpeer.invalid>"
)

// plantRBAC adds the binding to alpha's tree and lists it in alpha's
// kustomization, so that Flux would apply it if it read main.
func plantRBAC(a *writer) {
	a.write(plantedRBAC, []byte(evilBinding))
	a.edit(alphaKust, "resources:\n", "resources:\n- liqo/beta/clusterrolebinding-evil.yaml\n")
}

// TestAForeignChangeToAClustersTreeIsNeverApplied: a writer changes
// clusters/alpha/ (RBAC in alpha's liqo/, listed in its kustomization) in a
// commit that forges alpha's trailer and author, in one without any, and
// through a --no-ff merge commit. No reconciler acts on it, alpha's next
// pass removes it, and alpha's applied branch never points at a tree
// holding it.
func TestAForeignChangeToAClustersTreeIsNeverApplied(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// push makes the attack and returns the commit that brought the
		// change.
		push func(w *world) string
	}{
		{"with a forged Gitpeer-Cluster: alpha trailer and alpha's author", func(w *world) string {
			return w.attack(alphaAuthor, forgedMessage, plantRBAC)
		}},
		{"without a trailer", func(w *world) string {
			return w.attack("mallory <mallory@example.com>", "add monitoring RBAC", plantRBAC)
		}},
		{"through a --no-ff merge commit", func(w *world) string {
			a := w.writer()
			a.git("checkout", "-q", "-b", "feature")
			plantRBAC(a)
			feature := a.commit(alphaAuthor, forgedMessage)
			a.git("checkout", "-q", "main")
			a.git("merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #7 from mallory/feature\n\nGitpeer-Cluster: alpha\n")
			if parents := strings.Fields(a.git("rev-list", "--parents", "-n1", "HEAD")); len(parents) != 3 {
				t.Fatalf("not a merge commit: %v", parents)
			}
			a.push()
			return feature // the merge only brings it in: verify judges what a commit adds
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			w.forbid("alpha", plantedRBAC, "")
			w.forbid("alpha", alphaKust, "clusterrolebinding-evil")
			kubeconfig := w.kubeconfig("alpha", "beta")
			appliedBefore := w.ref(layout.AppliedBranch("alpha"))
			before := w.signedAll()

			attack := tc.push(w)
			if got, _ := w.show(plantedRBAC); got == nil {
				t.Fatal("the attack did not land on main")
			}
			// A reviewer's verify names the files and the commit, and sees
			// the binding as Flux would build it.
			findings := w.verify()
			mustFind(t, findings, plantedRBAC, reasons.UnsignedChange, attack)
			mustFind(t, findings, alphaKust, reasons.UnsignedChange, attack)
			mustFind(t, findings, plantedRBAC, reasons.UnexpectedObject, "")

			// beta reads nothing of alpha's tree but its cluster.yaml and
			// what alpha signed: it does not act.
			if res := w.pass("beta"); res.Commit != "" {
				t.Fatalf("beta acted on a foreign change to alpha's tree: %v %v", res.Steps, res.Files)
			}
			if got := w.ref(layout.AppliedBranch("alpha")); got != appliedBefore {
				t.Fatalf("alpha's applied branch moved without a pass of alpha: %s → %s", appliedBefore, got)
			}

			// alpha's next pass leaves clusters/alpha/ as it computes it.
			res := w.pass("alpha")
			if res.Commit == "" {
				t.Fatalf("alpha's pass on top of %s left the planted binding", attack)
			}
			if _, ok := w.show(plantedRBAC); ok {
				t.Fatal("the planted binding survived alpha's pass")
			}
			if k := w.mustShow(alphaKust); strings.Contains(string(k), "evil") {
				t.Fatalf("alpha's kustomization still lists the binding:\n%s", k)
			}
			// What alpha applies never held the planted binding: the
			// applied tree holds only what alpha signed, so alpha's
			// clean-up computes what it vouched for already.
			if got := w.ref(layout.AppliedBranch("alpha")); got != appliedBefore {
				t.Fatalf("alpha's applied branch moved from %s to %s, though what alpha computes is unchanged", appliedBefore, got)
			}
			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
			if string(w.kubeconfig("alpha", "beta")) != string(kubeconfig) {
				t.Fatal("alpha's kubeconfig changed")
			}
			// The tree is clean again; history keeps the attack.
			findings = w.verify()
			noTreeFindings(t, findings)
			mustFindResolved(t, findings, plantedRBAC, reasons.UnsignedChange, attack)
		})
	}
}

// TestAPushToTheAppliedBranchIsUndoneByTheNextPass: the applied branch is
// only as good as Flux's verification of its head, and a writer can push to
// it too: an unsigned commit holding the binding (which Flux refuses), or an
// older commit alpha did sign (which Flux would apply until alpha's next
// pass). With a human's commit on top of main, alpha's next pass has
// nothing to commit: it puts the applied branch on a seal commit it signs
// on top of main, with its current clusters/alpha/.
func TestAPushToTheAppliedBranchIsUndoneByTheNextPass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		push func(w *world, a *writer)
	}{
		{"an unsigned commit with planted RBAC", func(w *world, a *writer) {
			plantRBAC(a)
			a.commit(alphaAuthor, forgedMessage)
			a.git("push", "-q", "--force", "origin", "HEAD:refs/heads/"+layout.AppliedBranch("alpha"))
		}},
		{"an older commit alpha signed", func(w *world, a *writer) {
			old := a.git("log", "--format=%H", "-1", "--grep", "^alpha: send tenant to beta")
			if old == "" {
				w.t.Fatal("no older commit of alpha")
			}
			a.git("push", "-q", "--force", "origin", old+":refs/heads/"+layout.AppliedBranch("alpha"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			w.forbid("alpha", plantedRBAC, "")
			good := w.ref(layout.AppliedBranch("alpha"))
			w.attack("admin <admin@example.com>", "docs: README", func(a *writer) { a.write("docs/README.md", []byte("hi\n")) })
			tc.push(w, w.writer())
			if w.ref(layout.AppliedBranch("alpha")) == good {
				t.Fatal("the push did not land")
			}
			// Before its pass, alpha points the branch back at the newest
			// seal it recorded (pins.Store.Seal), a commit signed by
			// alpha holding clusters/alpha/ as on main; then checkApplied
			// holds.
			res := w.pass("alpha")
			if res.Commit != "" || res.Sealed || res.AppliedRestored == "" {
				t.Fatalf("alpha's pass: commit %q, sealed %t, restored from %q; want only the seal restored", res.Commit, res.Sealed, res.AppliedRestored)
			}
			seal := w.ref(layout.AppliedBranch("alpha"))
			if seal != good || res.Applied != good {
				t.Fatalf("alpha's applied branch is at %s (pass said %s), not back at its newest seal %s", seal, res.Applied, good)
			}
			if recorded := w.pinStore("alpha").Seal; recorded != good {
				t.Fatalf("alpha's pin store records seal %s, want %s", recorded, good)
			}
			assertContains(t, "the seal", w.git("log", "-1", "--format=%B", seal), "alpha: seal clusters/alpha", "Gitpeer-Cluster: alpha")
		})
	}
}
