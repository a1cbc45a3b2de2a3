package attack

import (
	"crypto"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// Clusters that sign with OpenPGP (for Argo CD) publish their key as
// clusters/<id>/openpgp.asc, and whoever sets up Argo CD imports it. These
// attacks try to get a key of the attacker's trusted in its place, or a
// commit signed by one applied.

const betaOpenPGPKey = "clusters/beta/openpgp.asc"

// mallory is the attacker's GnuPG home, with an Ed25519 key of its own
// under the user ID a cluster's key carries, and the writer signing with it.
func mallory(t *testing.T, w *world, userID string) (*testgit.GnuPG, string, *writer) {
	t.Helper()
	g := testgit.NewGnuPG(t)
	fp := g.GenerateKey(userID)
	a := w.writer()
	a.env = append(a.env, "GNUPGHOME="+g.Home)
	return g, fp, a
}

// TestASubstitutedOpenPGPKeyIsRefused: a writer replaces beta's published
// OpenPGP key with one of its own, carrying beta's user ID (or with
// alpha's genuine key), so that an admin importing beta's key into Argo CD
// would trust the writer's commits as beta's. The key check that
// allowed-signers --format openpgp runs refuses it, verify names it, beta's
// next pass puts its own key back, and beta's applied branch never holds
// the substitute.
func TestASubstitutedOpenPGPKeyIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  func(t *testing.T, w *world) []byte
	}{
		{"a key of the writer's with beta's user ID", func(t *testing.T, w *world) []byte {
			g, _, _ := mallory(t, w, commitsig.OpenPGPUserID("beta"))
			return []byte(g.Run("--armor", "--export", commitsig.OpenPGPUserID("beta")))
		}},
		{"alpha's genuine key", func(t *testing.T, w *world) []byte {
			return w.mustShow(layout.ClusterPath("alpha", layout.OpenPGPKeyFile))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settledSigning(t, twoSpec, commitsig.FormatOpenPGP)
			own := w.mustShow(betaOpenPGPKey)
			key := tc.key(t, w)
			// A line of the substitute's armor that beta's key lacks.
			marker := ""
			for _, line := range strings.Split(string(key), "\n") {
				if len(line) > 40 && !strings.Contains(string(own), line) {
					marker = line
					break
				}
			}
			if marker == "" {
				t.Fatal("the substitute is beta's own key")
			}
			w.forbid("beta", betaOpenPGPKey, marker)
			h := w.attack("mallory <mallory@example.com>", "beta: rotate OpenPGP key", func(a *writer) {
				a.write(betaOpenPGPKey, key)
			})

			betaPub := w.clusters["beta"].key()
			if _, _, err := commitsig.CheckOpenPGPKey(w.mustShow(betaOpenPGPKey), betaPub, commitsig.OpenPGPUserID("beta")); !errors.Is(err, commitsig.ErrOpenPGPKeyMismatch) {
				t.Errorf("the key check accepts the substitute: %v", err)
			}
			findings := w.verify()
			mustFind(t, findings, betaOpenPGPKey, reasons.OpenPGPKeyMismatch, "")
			mustFind(t, findings, betaOpenPGPKey, reasons.UnsignedChange, h)

			w.pass("beta")
			if got := w.mustShow(betaOpenPGPKey); string(got) != string(own) {
				t.Fatalf("beta's pass left %s as\n%s", betaOpenPGPKey, got)
			}
			noTreeFindings(t, w.verify())
		})
	}
}

// TestAnOpenPGPCommitOfAnotherKeyOnTheAppliedBranch: a writer pushes to
// alpha's applied branch a commit planting RBAC in clusters/alpha, signed
// with OpenPGP by a key of its own that carries alpha's user ID, or under a
// signature alpha made for another commit. GnuPG holding alpha's published
// key (Argo CD's check) refuses both, commitsig.Verify names the signer,
// gitpeer verify on the branch names the change (and the replayed
// signature), and alpha's next pass moves the branch back.
func TestAnOpenPGPCommitOfAnotherKeyOnTheAppliedBranch(t *testing.T) {
	t.Parallel()
	applied := layout.AppliedBranch("alpha")
	for _, tc := range []struct {
		name string
		// push makes the commit, pushes it to alpha's applied branch and
		// returns it, the file and reason of verify's finding about it, and
		// whom its signature names.
		push func(t *testing.T, w *world) (commit, file, reason, signer string)
	}{
		{"signed by the writer's key with alpha's user ID", func(t *testing.T, w *world) (string, string, string, string) {
			_, fp, a := mallory(t, w, commitsig.OpenPGPUserID("alpha"))
			plantRBAC(a)
			a.git("add", "-A")
			a.git("commit", "-q", "-S"+fp, "--author", alphaAuthor, "-m", forgedMessage)
			a.git("push", "-q", "--force", "origin", "HEAD:refs/heads/"+applied)
			return a.git("rev-parse", "HEAD"), plantedRBAC, reasons.UnsignedChange, fp
		}},
		{"under alpha's signature of another commit", func(t *testing.T, w *world) (string, string, string, string) {
			a := w.writer()
			plantRBAC(a)
			a.git("add", "-A")
			a.git("commit", "-q", "--author", alphaAuthor, "-m", forgedMessage)
			// Graft the gpgsig header of alpha's applied head onto it.
			a.git("fetch", "-q", "origin", applied)
			sig := gpgsigHeader(t, a.git("cat-file", "commit", "FETCH_HEAD"))
			raw := a.git("cat-file", "commit", "HEAD")
			head, body, _ := strings.Cut(raw, "\n\n")
			forged := head + "\n" + sig + "\n\n" + body + "\n"
			cmd := testgit.Command(a.dir, "hash-object", "-t", "commit", "-w", "--stdin")
			cmd.Stdin = strings.NewReader(forged)
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			h := strings.TrimSpace(string(out))
			a.git("push", "-q", "--force", "origin", h+":refs/heads/"+applied)
			fp, _, _ := commitsig.OpenPGPFingerprint(w.clusters["alpha"].key())
			return h, "", reasons.BadCommitSignature, fp
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settledSigning(t, twoSpec, commitsig.FormatOpenPGP)
			w.forbid("alpha", plantedRBAC, "")
			commit, file, reason, signer := tc.push(t, w)
			if w.ref(applied) != commit {
				t.Fatal("the push did not land")
			}

			// What Argo CD runs: git verify-commit with GnuPG holding the
			// key alpha publishes, alone.
			g := testgit.NewGnuPG(t)
			g.Import(w.mustShow(layout.ClusterPath("alpha", layout.OpenPGPKeyFile)))
			if out, err := g.Git(w.remote, "verify-commit", "-v", applied); err == nil || strings.Contains(out, "Good signature") {
				t.Errorf("GnuPG with alpha's key accepts the pushed head: %v\n%s", err, out)
			}
			repo, err := gitobj.Open(w.remote)
			if err != nil {
				t.Fatal(err)
			}
			c, err := repo.CommitObject(plumbing.NewHash(commit))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := commitsig.Verify(c, map[string]crypto.PublicKey{"alpha": w.clusters["alpha"].key()}); !errors.Is(err, commitsig.ErrUnknownSigner) || !strings.Contains(err.Error(), signer) {
				t.Errorf("commitsig.Verify = %v; want ErrUnknownSigner naming %s", err, signer)
			}
			mustFind(t, w.verifyAt(applied), file, reason, commit)

			if res := w.pass("alpha"); (!res.Sealed && res.AppliedRestored != commit) || w.ref(applied) == commit {
				t.Fatalf("alpha's pass did not move its applied branch back: %+v", res)
			}
			if out, err := g.Git(w.remote, "verify-commit", "-v", applied); err != nil || !strings.Contains(out, `Good signature from "gitpeer cluster alpha"`) {
				t.Errorf("after alpha's pass, GnuPG: %v\n%s", err, out)
			}
		})
	}
}

// gpgsigHeader returns the gpgsig header of a raw commit, continuation
// lines included.
func gpgsigHeader(t *testing.T, raw string) string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(raw, "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			lines = append(lines, line)
		case len(lines) > 0 && strings.HasPrefix(line, " "):
			lines = append(lines, line)
		case len(lines) > 0:
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no gpgsig header in\n%s", raw)
	return ""
}

// verifyAt runs verify.Check, with History, on a fresh clone of branch, as
// a reviewer checking an applied branch would.
func (w *world) verifyAt(branch string) []verify.Finding {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "review")
	if out, err := testgit.Command("", "clone", "-q", "-b", branch, w.remote, dir).CombinedOutput(); err != nil {
		w.t.Fatalf("clone %s: %v\n%s", branch, err, out)
	}
	spec, _, err := schema.Load(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	findings, err := verify.Check(dir, spec, verify.Options{Now: w.clock.Now(), History: true, RequireManifests: true})
	if err != nil {
		w.t.Fatal(err)
	}
	return findings
}
