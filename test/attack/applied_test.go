package attack

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TestOnlyWhatAClusterSignedIsInWhatItApplies: what a GitOps engine applies
// is the whole tree of the applied commit, not only the kustomization it is
// pointed at. Flux's source-controller honours .sourceignore files (at the
// root and in any directory) when it builds the artifact, and
// kustomize-controller generates a kustomization from every manifest under
// ./clusters/<id> when none is left; an inbox is under that path. So a
// writer of main tries each way to get a ClusterRoleBinding applied to
// alpha from a commit alpha signs: .sourceignore files that drop alpha's
// kustomization, a binding planted in alpha's inbox, and (as beta, a
// hostile peer holding its own key) a binding signed into beta's own outbox
// to alpha. After every pass, alpha's applied branch holds clusters/alpha/
// alone, less its inbox (the harness checks that on every pass), so none of
// them is in what alpha's Flux builds; and the handshake still completes.
func TestOnlyWhatAClusterSignedIsInWhatItApplies(t *testing.T) {
	t.Parallel()
	const (
		binding     = "clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml"
		signedExtra = "clusters/alpha/inbox/beta/clusterrolebinding-signed.yaml"
	)
	for _, tc := range []struct {
		name   string
		author string
		plant  func(w *world, a *writer)
		// forbidden are paths alpha's applied tree must never hold.
		forbidden []string
	}{
		{".sourceignore files that drop alpha's kustomization", "mallory <mallory@example.com>", func(w *world, a *writer) {
			a.write(".sourceignore", []byte("clusters/alpha/kustomization.yaml\n"))
			a.write("clusters/.sourceignore", []byte("alpha/kustomization.yaml\n"))
			a.write("clusters/alpha/.sourceignore", []byte("kustomization.yaml\n"))
			a.write(binding, []byte(evilBinding))
		}, []string{".sourceignore", "clusters/.sourceignore", "clusters/alpha/.sourceignore", binding}},
		{".gitattributes and .gitmodules in alpha's tree", "mallory <mallory@example.com>", func(w *world, a *writer) {
			a.write("clusters/alpha/.gitattributes", []byte("*.yaml ident\n"))
			a.write("clusters/alpha/liqo/.gitmodules", []byte("[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n"))
		}, []string{"clusters/alpha/.gitattributes", "clusters/alpha/liqo/.gitmodules"}},
		{"a binding planted in alpha's inbox", "mallory <mallory@example.com>", func(w *world, a *writer) {
			a.write(binding, []byte(evilBinding))
		}, []string{binding}},
		{"a binding beta signs into its own outbox to alpha", "gitpeer (beta) <beta@gitpeer.invalid>", func(w *world, a *writer) {
			a.write(signedExtra, []byte(evilBinding))
			a.resign(w.clusters["beta"].b.Signer(), "beta", "clusters/alpha/inbox/beta")
		}, []string{signedExtra}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			for _, p := range tc.forbidden {
				w.forbid("alpha", p, "")
			}
			w.forbid("alpha", alphaKust, "clusterrolebinding")
			before := w.signedAll()
			w.attack(tc.author, "tidy up", func(a *writer) { tc.plant(w, a) })
			for _, p := range tc.forbidden {
				if _, ok := w.show(p); !ok {
					t.Fatalf("the attack did not land %s on main", p)
				}
			}
			// Every pass checks alpha's applied tree (checkApplied): the
			// planted files are in none, whatever the order.
			w.pass("beta")
			w.pass("alpha")
			w.converge()
			w.nothingSigned(before)
			w.mustBeReady("alpha", "beta")
			for _, f := range w.listTree(layout.AppliedBranch("alpha"), ".") {
				if !strings.HasPrefix(f, "clusters/alpha/") || strings.HasPrefix(f, "clusters/alpha/inbox/") || strings.Contains(f, "/.") {
					t.Errorf("alpha's applied tree holds %s", f)
				}
			}
			if k, _ := w.showAt(layout.AppliedBranch("alpha"), alphaKust); !strings.Contains(string(k), "resources:") {
				t.Errorf("alpha's applied tree lost its kustomization:\n%s", k)
			}
		})
	}
}
