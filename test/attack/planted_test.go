package attack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/test/testgit"
)

const betaKust = "clusters/beta/kustomization.yaml"

// TestAPlantedObjectNeverReachesTheProvider: a writer plants, in beta's
// tree, what Flux would apply to beta if it read main: an extra
// ClusterRoleBinding listed in beta's kustomization, a nested kustomization
// pulling alpha's inbox, a remote base, a second kustomization file, and a
// symbolic link in place of one of beta's directories. beta's next pass
// removes each of them (it leaves clusters/beta/ exactly as it computes it)
// and beta's applied branch never points at a tree holding them.
func TestAPlantedObjectNeverReachesTheProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		plant func(a *writer)
		// gone are paths that must not be on main after beta's pass, and
		// never on beta's applied branch.
		gone []string
		// unlisted is text beta's kustomization must never hold.
		unlisted string
		// found is what verify must name in the tree: file and reason.
		found [2]string
	}{
		{"an extra ClusterRoleBinding listed in beta's kustomization", func(a *writer) {
			a.write("clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml", []byte(evilBinding))
			a.edit(betaKust, "resources:\n", "resources:\n- liqo/alpha/clusterrolebinding-evil.yaml\n")
		}, []string{"clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml"}, "clusterrolebinding-evil",
			[2]string{"clusters/beta/liqo/alpha/clusterrolebinding-evil.yaml", reasons.UnexpectedObject}},
		{"a nested kustomization pulling alpha's inbox", func(a *writer) {
			a.write("clusters/beta/liqo/nested/kustomization.yaml", []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../../alpha/inbox/beta/identity.yaml\n- ../../../alpha/inbox/beta\n"))
			a.edit(betaKust, "resources:\n", "resources:\n- liqo/nested\n")
		}, []string{"clusters/beta/liqo/nested"}, "nested",
			[2]string{"clusters/beta/liqo/nested/kustomization.yaml", reasons.OutsideReference}},
		{"a remote base", func(a *writer) {
			a.edit(betaKust, "resources:\n", "resources:\n- github.com/evil/x?ref=main\n")
		}, nil, "github.com/evil", [2]string{betaKust, reasons.RemoteBase}},
		{"a second kustomization file", func(a *writer) {
			a.write("clusters/beta/kustomization.yml", []byte("resources:\n- ../alpha/inbox/beta\n"))
			a.write("clusters/beta/Kustomization", []byte("resources:\n- ../alpha/inbox/beta\n"))
		}, []string{"clusters/beta/kustomization.yml", "clusters/beta/Kustomization"}, "inbox",
			[2]string{"clusters/beta/kustomization.yml", reasons.OutsideReference}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			for _, p := range tc.gone {
				w.forbid("beta", p, "")
			}
			w.forbid("beta", betaKust, tc.unlisted)
			before := w.signedAll()
			appliedBefore := w.ref(layout.AppliedBranch("beta"))
			attack := w.attack("mallory <mallory@example.com>", "beta: tune RBAC", tc.plant)
			for _, p := range tc.gone {
				if _, ok := w.show(p); !ok && !strings.HasSuffix(p, "nested") {
					t.Fatalf("the attack did not plant %s", p)
				}
			}
			// A reviewer's verify names what Flux would do with it, and the
			// commit that changed beta's tree without beta's signature.
			findings := w.verify()
			mustFind(t, findings, tc.found[0], tc.found[1], "")
			mustFind(t, findings, tc.found[0], reasons.UnsignedChange, attack)

			res := w.pass("beta")
			if res.Commit == "" {
				t.Fatal("beta's pass left the planted content")
			}
			for _, p := range tc.gone {
				if files := w.listTree("main", p); len(files) > 0 {
					t.Fatalf("%v survived beta's pass", files)
				}
			}
			if k := w.mustShow(betaKust); strings.Contains(string(k), tc.unlisted) {
				t.Fatalf("beta's kustomization still holds %q:\n%s", tc.unlisted, k)
			}
			// What beta applies never held the planted content: the
			// applied tree holds only what beta signed.
			if got := w.ref(layout.AppliedBranch("beta")); got != appliedBefore {
				t.Fatalf("beta's applied branch moved from %s to %s, though what beta computes is unchanged", appliedBefore, got)
			}
			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
			noTreeFindings(t, w.verify())
		})
	}
}

// TestAPlantedSymbolicLinkStopsNoReconciler: a writer replaces a directory
// by a symbolic link, where the reconcilers refuse to follow one: beta's
// own liqo/alpha (pointing at alpha's inbox), and alpha's inbox at beta
// (pointing at alpha's own tree). Each reconciler treats what is behind the
// link as missing, keeps what it accepted before, goes on with its pass,
// and the link's owner replaces it with the directory it signs. beta's
// applied branch never holds a link in beta's own liqo/ (a link in an inbox
// may stand there until its writer's next pass: beta's kustomization never
// lists an inbox). (Before, a reconciler failed every pass on
// such a link, for every peering, and never removed it.)
func TestAPlantedSymbolicLinkStopsNoReconciler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, link, target, owner, other string
	}{
		{"in place of beta's liqo/alpha", "clusters/beta/liqo/alpha", "../../alpha/inbox/beta", "beta", "alpha"},
		{"in place of alpha's inbox at beta", "clusters/beta/inbox/alpha", "../../alpha", "alpha", "beta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			if tc.owner == "beta" {
				w.forbidLink("beta", tc.link)
			}
			identity := w.mustShow(identityFile)
			before := w.signedAll()
			attack := w.attack("mallory <mallory@example.com>", "simplify", func(a *writer) { a.link(tc.link, tc.target) })
			if out := w.lsTree("main", tc.link); !strings.HasPrefix(out, "120000") {
				t.Fatalf("the attack did not commit a link: %q", out)
			}
			// verify names the link, in the tree and in the commit that
			// brought it, even where it stands in place of a writer's
			// directory with a manifest.
			findings, err := w.tryVerify()
			if err != nil {
				t.Fatal(err)
			}
			mustFind(t, findings, tc.link, reasons.UnsignedChange, attack)
			mustFind(t, findings, tc.link, reasons.Unreadable, "")

			w.pass(tc.other) // goes on, and does not touch what is not its own
			if out := w.lsTree("main", tc.link); !strings.HasPrefix(out, "120000") {
				t.Fatalf("%s replaced %s's link: %q", tc.other, tc.owner, out)
			}
			w.pass(tc.owner)
			if out := w.lsTree("main", tc.link); !strings.HasPrefix(out, "040000") {
				t.Fatalf("%s did not put its directory back: %q", tc.owner, out)
			}
			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
			if got := w.mustShow(identityFile); string(got) != string(identity) {
				t.Fatal("alpha's Identity changed")
			}
			noTreeFindings(t, w.verify())
		})
	}
}

// TestALinkedSpecIsNotFollowed: a writer replaces peering.cue by a symbolic
// link to alpha's private key (an absolute path on alpha's host). Every
// reconciler reads the spec from the commit's objects and refuses the link
// by name: no pass reads the key, none of it reaches an error, nothing is
// committed or signed. Once the spec is a file again, the mesh settles.
// (Before, the spec was found with os.Stat in the checkout, which follows
// links, so what a pass saw hung on how the checkout had written the link:
// go-git leaves out one pointing outside the worktree, and the pass said
// there was no spec at all.)
func TestALinkedSpecIsNotFollowed(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	keyFile := filepath.Join(w.clusters["alpha"].state, file.KeyFile)
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	spec := w.mustShow("peering.cue")
	tip := w.attack("mallory <mallory@example.com>", "spec", func(a *writer) { a.link("peering.cue", keyFile) })
	before := w.signedAll()
	leaks := testgit.NewLeaks(key)
	for _, id := range w.ids {
		_, err := w.tryPass(id)
		if err == nil {
			t.Fatalf("%s's pass on a linked spec succeeded", id)
		}
		assertContains(t, id+"'s error", err.Error(), "peering.cue", "symbolic link")
		if leak := leaks.Find([]byte(err.Error())); leak != "" {
			t.Fatalf("%s's error quotes the key (%s): %v", id, leak, err)
		}
	}
	if got := w.ref("main"); got != tip {
		t.Fatalf("a pass committed on the linked spec: main is %s", got)
	}
	w.nothingSigned(before)
	w.attack("alpha-admin <admin@alpha.example>", "spec back", func(a *writer) {
		a.remove("peering.cue")
		a.write("peering.cue", spec)
	})
	w.converge()
	w.mustBeReady("alpha", "beta")
}
