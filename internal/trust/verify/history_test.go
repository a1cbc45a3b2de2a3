package verify_test

import (
	"crypto"
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
	"github.com/gitpeer/gitpeer/test/verifytest"
)

const twoClusterSpec = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta"}]
`

// histRepo is a peering repo built commit by commit with go-git (merges with
// the git CLI), whose clusters sign their directories as reconcilers do.
type histRepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
	keys map[string]ed25519.PrivateKey
	seq  uint64
	when time.Time
}

// newHistRepo is a repo whose first commit publishes alpha and beta, each
// with its kustomization, every directory signed.
func newHistRepo(t *testing.T) *histRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	testgit.Git(t, dir, "init", "-q", "-b", "main")
	repo, err := gitobj.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &histRepo{t: t, dir: dir, repo: repo, keys: map[string]ed25519.PrivateKey{}, when: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.write("peering.cue", twoClusterSpec)
	for _, id := range []string{"alpha", "beta"} {
		key, err := handshake.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		r.keys[id] = key
		r.publish(id, key, "https://"+id+".example:6443", nil)
		k, err := layout.Kustomization(nil)
		if err != nil {
			t.Fatal(err)
		}
		r.write(layout.ClusterPath(id, layout.KustomizationFile), string(k))
		r.sign(id, layout.ClusterPath(id))
	}
	r.commit("publish alpha and beta")
	return r
}

// publish writes cluster id's cluster.yaml with key pub; previous, when
// set, signs a rotation statement.
func (r *histRepo) publish(id string, key crypto.Signer, apiServer string, previous crypto.Signer) {
	r.t.Helper()
	ca, _, err := handshake.NewCA(id, r.when, 24*time.Hour)
	if err != nil {
		r.t.Fatal(err)
	}
	ci, err := layout.NewClusterInfo(id, key.Public(), apiServer, ca.CertPEM)
	if err != nil {
		r.t.Fatal(err)
	}
	if previous != nil {
		if err := layout.SignRotation(ci, previous); err != nil {
			r.t.Fatal(err)
		}
	}
	data, err := ci.Encode()
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(layout.ClusterPath(id, layout.ClusterFile), string(data))
}

func (r *histRepo) write(rel, content string) {
	r.t.Helper()
	writeFile(r.t, filepath.Join(r.dir, filepath.FromSlash(rel)), content)
}

func (r *histRepo) remove(rel string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(rel))); err != nil {
		r.t.Fatal(err)
	}
}

// sign re-signs writer's directory dir with its key, at a new sequence.
func (r *histRepo) sign(writer, dir string) {
	r.t.Helper()
	r.signWith(writer, dir, r.keys[writer])
}

func (r *histRepo) signWith(writer, dir string, key crypto.Signer) {
	r.t.Helper()
	r.seq++
	if err := verifytest.SignDir(r.dir, writer, dir, key, r.seq); err != nil {
		r.t.Fatal(err)
	}
}

// commit commits every change of the work tree and returns the hash.
func (r *histRepo) commit(msg string) string {
	r.t.Helper()
	return r.commitWith(msg, nil)
}

func (r *histRepo) commitWith(msg string, signer git.Signer) string {
	r.t.Helper()
	wt, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatal(err)
	}
	r.when = r.when.Add(time.Minute)
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: r.when}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, Signer: signer, AllowEmptyCommits: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return h.String()
}

// git runs the git CLI in the repo and returns its trimmed output.
func (r *histRepo) git(args ...string) string {
	r.t.Helper()
	cmd := testgit.Command(r.dir, args...)
	r.when = r.when.Add(time.Minute)
	date := r.when.Format(time.RFC3339)
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "HOME="+r.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *histRepo) history(opts verify.Options) []verify.Finding {
	r.t.Helper()
	findings, err := verify.History(r.dir, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return findings
}

// only reports whether findings are exactly one of reason on file in
// commit.
func only(findings []verify.Finding, file, reason, commit string) bool {
	return len(findings) == 1 && findings[0].File == file && findings[0].Reason == reason && findings[0].Commit == commit
}

// legit is alpha's reconciler at work: a file in beta's inbox and one in
// its own tree, both signed.
func (r *histRepo) legit(n string) string {
	r.t.Helper()
	r.write("clusters/beta/inbox/alpha/request-"+n+".yaml", "n: "+n+"\n")
	r.sign("alpha", "clusters/beta/inbox/alpha")
	r.write("clusters/alpha/status.yaml", "n: "+n+"\n")
	r.sign("alpha", "clusters/alpha")
	return r.commit("alpha: pass " + n + "\n\nGitpeer-Cluster: alpha\n")
}

var strict = verify.Options{RequireManifests: true}

func TestASignedHistoryWithMergesHasNoFindings(t *testing.T) {
	r := newHistRepo(t)
	r.legit("1")
	r.write("docs/README.md", "peering repo\n")
	r.commit("docs: a human's commit, reviewed")
	r.git("checkout", "-q", "-b", "side")
	r.legit("2")
	r.git("checkout", "-q", "main")
	r.write("clusters/alpha/inbox/beta/nonce.yaml", "nonce: x\n")
	r.sign("beta", "clusters/alpha/inbox/beta")
	r.commit("beta: pass 1\n\nGitpeer-Cluster: beta\n")
	r.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
	// A withdrawal: alpha's whole folder in beta's inbox goes, manifest and all.
	r.remove("clusters/beta/inbox/alpha")
	r.commit("alpha: withdraw\n\nGitpeer-Cluster: alpha\n")
	if findings := r.history(strict); len(findings) != 0 {
		t.Fatalf("findings in a signed history:\n%s", list(findings))
	}
}

func TestHistoryAttacksAreNamedWithTheirCommit(t *testing.T) {
	t.Run("an unsigned change to alpha's tree under a forged Gitpeer-Cluster: alpha trailer", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		r.write("clusters/alpha/kustomization.yaml", "resources: [../beta/liqo]\n")
		bad := r.commit("alpha: update kustomization\n\nGitpeer-Cluster: alpha\n")
		r.legit("2")
		if f := r.history(strict); !only(f, "clusters/alpha/kustomization.yaml", reasons.UnsignedChange, bad) {
			t.Fatalf("want one UnsignedChange in %s:\n%s", bad, list(f))
		}
	})
	t.Run("an unsigned change to alpha's folder in beta's inbox with no trailer", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		r.write("clusters/beta/inbox/alpha/request-1.yaml", "n: forged\n")
		bad := r.commit("fix a typo")
		if f := r.history(strict); !only(f, "clusters/beta/inbox/alpha/request-1.yaml", reasons.UnsignedChange, bad) {
			t.Fatalf("want one UnsignedChange in %s:\n%s", bad, list(f))
		}
	})
	t.Run("an evil merge that edits alpha's tree while merging", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		r.git("checkout", "-q", "-b", "side")
		side := r.legit("2")
		r.git("checkout", "-q", "main")
		r.write("docs/README.md", "x\n")
		r.commit("docs")
		r.git("merge", "-q", "--no-ff", "--no-commit", "side")
		r.write("clusters/alpha/status.yaml", "n: evil\n")
		r.git("add", "-A")
		r.git("commit", "-q", "-m", "Merge branch 'side'")
		merge := r.git("rev-parse", "HEAD")
		f := r.history(strict)
		if !only(f, "clusters/alpha/status.yaml", reasons.UnsignedChange, merge) {
			t.Fatalf("want one UnsignedChange in the merge %s (side: %s):\n%s", merge, side, list(f))
		}
	})
	t.Run("a signed file deleted while its manifest still lists it", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		r.remove("clusters/beta/inbox/alpha/request-1.yaml")
		bad := r.commit("beta: clean up")
		if f := r.history(strict); !only(f, "clusters/beta/inbox/alpha/request-1.yaml", reasons.UnsignedChange, bad) {
			t.Fatalf("want one UnsignedChange in %s:\n%s", bad, list(f))
		}
	})
	t.Run("a manifest deleted while its directory keeps files", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		r.remove("clusters/beta/inbox/alpha/manifest.yaml")
		bad := r.commit("drop the manifest")
		if f := r.history(strict); !only(f, "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestInvalid, bad) {
			t.Fatalf("want one ManifestInvalid in %s:\n%s", bad, list(f))
		}
		// Even when manifests are not required: it unsigns a signed directory.
		if f := r.history(verify.Options{}); !only(f, "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestInvalid, bad) {
			t.Fatalf("without RequireManifests, want one ManifestInvalid in %s:\n%s", bad, list(f))
		}
	})
	t.Run("an old signed state of alpha's folder replayed", func(t *testing.T) {
		r := newHistRepo(t)
		first := r.legit("1")
		r.legit("2")
		r.git("checkout", first, "--", "clusters/beta/inbox/alpha")
		r.remove("clusters/beta/inbox/alpha/request-2.yaml")
		bad := r.commit("restore")
		if f := r.history(strict); !only(f, "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestRolledBack, bad) {
			t.Fatalf("want one ManifestRolledBack in %s:\n%s", bad, list(f))
		}
	})
	t.Run("beta's manifest re-signed by alpha", func(t *testing.T) {
		r := newHistRepo(t)
		r.write("clusters/beta/status.yaml", "owned: alpha\n")
		r.signWith("alpha", "clusters/beta", r.keys["alpha"])
		bad := r.commit("alpha: beta's status")
		f := r.history(strict)
		if len(f) != 2 || !hasCommitFinding(f, "clusters/beta/manifest.yaml", reasons.OwnershipViolation, bad) ||
			!hasCommitFinding(f, "clusters/beta/status.yaml", reasons.OwnershipViolation, bad) {
			t.Fatalf("want OwnershipViolation on beta's manifest and status in %s:\n%s", bad, list(f))
		}
	})
	t.Run("an unsigned change merged from a branch is named in its own commit, not in the merge", func(t *testing.T) {
		r := newHistRepo(t)
		r.git("checkout", "-q", "-b", "side")
		r.write("clusters/alpha/liqo/beta/extra.yaml", "n: unsigned\n")
		bad := r.commit("on a branch")
		r.git("checkout", "-q", "main")
		r.legit("1")
		r.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
		if f := r.history(strict); !only(f, "clusters/alpha/liqo/beta/extra.yaml", reasons.UnsignedChange, bad) {
			t.Fatalf("want one UnsignedChange in %s:\n%s", bad, list(f))
		}
	})
}

func hasCommitFinding(findings []verify.Finding, file, reason, commit string) bool {
	for _, f := range findings {
		if f.File == file && f.Reason == reason && f.Commit == commit {
			return true
		}
	}
	return false
}

func TestKeyContinuity(t *testing.T) {
	t.Run("a key swap without a rotation statement is KeyChanged, even re-signed with the new key", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		mallory, err := handshake.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		r.publish("alpha", mallory, "https://alpha.example:6443", nil)
		r.signWith("alpha", "clusters/alpha", mallory)
		bad := r.commit("alpha: new key\n\nGitpeer-Cluster: alpha\n")
		if f := r.history(strict); !only(f, "clusters/alpha/cluster.yaml", reasons.KeyChanged, bad) {
			t.Fatalf("want one KeyChanged in %s:\n%s", bad, list(f))
		}
	})
	t.Run("an API server moved without a rotation statement is KeyChanged", func(t *testing.T) {
		r := newHistRepo(t)
		r.publish("beta", r.keys["beta"], "https://evil.example:6443", nil)
		r.sign("beta", "clusters/beta")
		bad := r.commit("beta: move")
		f := r.history(strict)
		if !only(f, "clusters/beta/cluster.yaml", reasons.KeyChanged, bad) || !strings.Contains(f[0].Message, "apiServer") {
			t.Fatalf("want one KeyChanged naming apiServer in %s:\n%s", bad, list(f))
		}
	})
	t.Run("a key deleted and another published later is KeyChanged", func(t *testing.T) {
		r := newHistRepo(t)
		r.remove("clusters/alpha")
		r.commit("alpha: withdraw")
		mallory, err := handshake.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		r.publish("alpha", mallory, "https://alpha.example:6443", nil)
		r.signWith("alpha", "clusters/alpha", mallory)
		bad := r.commit("alpha: publish again")
		if f := r.history(strict); !only(f, "clusters/alpha/cluster.yaml", reasons.KeyChanged, bad) {
			t.Fatalf("want one KeyChanged in %s:\n%s", bad, list(f))
		}
	})
	t.Run("a rotation signed by the previous key is no finding", func(t *testing.T) {
		r := newHistRepo(t)
		r.legit("1")
		next, err := handshake.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		r.publish("alpha", next, "https://alpha2.example:6443", r.keys["alpha"])
		r.keys["alpha"] = next
		r.sign("alpha", "clusters/alpha")
		r.commit("alpha: rotate key")
		r.legit("2")
		if f := r.history(strict); len(f) != 0 {
			t.Fatalf("findings after a valid rotation:\n%s", list(f))
		}
	})
	t.Run("a rotation signed by another key is KeyChanged", func(t *testing.T) {
		r := newHistRepo(t)
		next, err := handshake.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		r.publish("alpha", next, "https://alpha.example:6443", next)
		r.signWith("alpha", "clusters/alpha", next)
		bad := r.commit("alpha: rotate key")
		if f := r.history(strict); !only(f, "clusters/alpha/cluster.yaml", reasons.KeyChanged, bad) {
			t.Fatalf("want one KeyChanged in %s:\n%s", bad, list(f))
		}
	})
}

func TestBaseLimitsTheCommitsJudged(t *testing.T) {
	r := newHistRepo(t)
	r.write("clusters/alpha/status.yaml", "unsigned\n")
	old := r.commit("an old unsigned change")
	base := r.legit("1")
	r.write("clusters/beta/status.yaml", "unsigned\n")
	bad := r.commit("a new unsigned change")
	if f := r.history(strict); len(f) != 2 || f[0].Commit != old || f[1].Commit != bad {
		t.Fatalf("without --base, want both commits, oldest first:\n%s", list(f))
	}
	opts := strict
	opts.Base = base
	if f := r.history(opts); !only(f, "clusters/beta/status.yaml", reasons.UnsignedChange, bad) {
		t.Fatalf("with --base %s, want only %s:\n%s", base, bad, list(f))
	}
	opts.Base = "main"
	if f := r.history(opts); len(f) != 0 {
		t.Fatalf("with --base main, nothing to judge:\n%s", list(f))
	}
	opts.Base = "no-such-branch"
	if _, err := verify.History(r.dir, opts); err == nil {
		t.Fatal("an unknown --base is not an error")
	}
}

func TestUnsignedDirectoriesAreJudgedOnlyWhenManifestsAreRequired(t *testing.T) {
	r := newHistRepo(t)
	r.write("clusters/alpha/inbox/beta/nonce.yaml", "nonce: x\n") // beta signs nothing here
	bad := r.commit("beta: nonce, unsigned")
	if f := r.history(verify.Options{}); len(f) != 0 {
		t.Fatalf("without RequireManifests:\n%s", list(f))
	}
	if f := r.history(strict); !only(f, "clusters/alpha/inbox/beta/nonce.yaml", reasons.UnsignedChange, bad) {
		t.Fatalf("with RequireManifests, want one UnsignedChange in %s:\n%s", bad, list(f))
	}
}

// garbledSSHSigner gives a commit an SSH signature's armour around bytes
// that are no signature.
type garbledSSHSigner struct{}

func (garbledSSHSigner) Sign(io.Reader) ([]byte, error) {
	return []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n-----END SSH SIGNATURE-----\n"), nil
}

// rewordHead replaces HEAD by a commit with the same tree, parents and
// signature but another message: a signed commit tampered with.
func (r *histRepo) rewordHead(msg string) string {
	r.t.Helper()
	head, err := r.repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := r.repo.CommitObject(head.Hash())
	if err != nil {
		r.t.Fatal(err)
	}
	c.Message = msg
	obj := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		r.t.Fatal(err)
	}
	return h.String()
}

func signer(t *testing.T, key crypto.Signer) git.Signer {
	t.Helper()
	s, err := commitsig.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCommitSignatures(t *testing.T) {
	r := newHistRepo(t)
	alpha := signer(t, r.keys["alpha"])
	maintainerKey, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}

	r.write("clusters/beta/inbox/alpha/request-1.yaml", "n: 1\n")
	r.sign("alpha", "clusters/beta/inbox/alpha")
	r.commitWith("alpha: pass 1", alpha)
	r.write("docs/README.md", "signed by a maintainer's own key\n")
	r.commitWith("docs", signer(t, maintainerKey))
	r.write("clusters/beta/status.yaml", "n: 1\n")
	r.sign("beta", "clusters/beta")
	foreign := r.commitWith("beta's status, in a commit alpha's key signed", alpha)
	r.write("docs/NOTES.md", "x\n")
	garbled := r.commitWith("docs", garbledSSHSigner{})
	r.write("clusters/beta/inbox/alpha/request-2.yaml", "n: 2\n")
	r.sign("alpha", "clusters/beta/inbox/alpha")
	r.commitWith("alpha: pass 2", alpha)
	tampered := r.rewordHead("alpha: pass 2, reworded after signing")
	r.legit("3") // unsigned: no finding by itself

	want := []verify.Finding{
		{File: "clusters/beta/manifest.yaml", Reason: reasons.OwnershipViolation, Commit: foreign},
		{File: "clusters/beta/status.yaml", Reason: reasons.OwnershipViolation, Commit: foreign},
		{Reason: reasons.BadCommitSignature, Commit: garbled},
		{Reason: reasons.BadCommitSignature, Commit: tampered},
	}
	f := r.history(strict)
	if len(f) != len(want) {
		t.Fatalf("want %d findings:\n%s", len(want), list(f))
	}
	for i, w := range want {
		if f[i].File != w.File || f[i].Reason != w.Reason || f[i].Commit != w.Commit {
			t.Errorf("finding %d: %s, want %s", i, f[i], w)
		}
	}
	if !strings.Contains(f[3].Message, "alpha's key") {
		t.Errorf("the tampered commit's finding does not name alpha's key: %s", f[3])
	}

	// Another verifier is asked about each readable SSH signature, with
	// the keys published before the commit.
	calls := 0
	opts := strict
	opts.SignatureVerifier = func(c *object.Commit, keys map[string]crypto.PublicKey) (string, error) {
		calls++
		if len(keys) != 2 || keys["alpha"] == nil || keys["beta"] == nil {
			t.Errorf("keys for %s: %v", c.Hash, keys)
		}
		return "", errors.New("refused")
	}
	f = r.history(opts)
	if calls != 4 {
		t.Errorf("the verifier ran for %d commits, want the 4 with a readable SSH signature", calls)
	}
	// Every refusal of a signature made with alpha's key (three commits) is
	// a finding, with the garbled one; the maintainer's commit is no
	// cluster's.
	if n := count(f, reasons.BadCommitSignature); n != 4 {
		t.Errorf("%d BadCommitSignature, want 4:\n%s", n, list(f))
	}
}

func count(findings []verify.Finding, reason string) int {
	n := 0
	for _, f := range findings {
		if f.Reason == reason {
			n++
		}
	}
	return n
}

func TestAPrivateKeyOnlyInHistoryIsFoundWithHistory(t *testing.T) {
	r := newHistRepo(t)
	r.write("docs/id_ed25519", privateKeyPEM(t))
	leak := r.commit("docs: add the deploy key")
	r.remove("docs/id_ed25519")
	r.commit("docs: remove the deploy key")
	spec, _, err := schema.Load(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := verify.Check(r.dir, spec, strict)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("without --history, the clean tree and its commits:\n%s", list(findings))
	}
	opts := strict
	opts.History = true
	if findings, err = verify.Check(r.dir, spec, opts); err != nil {
		t.Fatal(err)
	}
	if !only(findings, "docs/id_ed25519", reasons.PrivateMaterial, leak) {
		t.Fatalf("with --history, want the key in %s:\n%s", leak, list(findings))
	}
}

// fullClone is a clone of the demo repo with its history, as a reviewer
// checks out a pull request.
func fullClone(t *testing.T) string {
	t.Helper()
	cleanRepo(t)
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := testgit.Command("", "clone", "-q", filepath.Join(workDir, "demo", "remote.git"), dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	return dir
}

func TestARepoMadeByTheReconcilersPassesEveryCheckWithItsHistory(t *testing.T) {
	dir := fullClone(t)
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := verify.Options{RequireManifests: true, History: true}
	findings, err := verify.Check(dir, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("findings in the reconcilers' repo and history:\n%s", list(findings))
	}
	// The reconcilers sign their commits with their cluster keys: a
	// verifier that refuses them all is heard.
	refuse := opts
	refuse.SignatureVerifier = func(*object.Commit, map[string]crypto.PublicKey) (string, error) {
		return "", errors.New("refused")
	}
	if findings, err = verify.Check(dir, spec, refuse); err != nil {
		t.Fatal(err)
	}
	if n := count(findings, reasons.BadCommitSignature); n < 8 {
		t.Fatalf("%d commits signed with a cluster key; want every reconciler pass:\n%s", n, list(findings))
	}

	// One more commit, as alpha's reconciler by its trailer, unsigned.
	appendTo(t, filepath.Join(dir, "clusters/alpha/kustomization.yaml"), "- inbox/beta/identity.yaml\n")
	r := &histRepo{t: t, dir: dir, when: time.Now()}
	r.git("commit", "-qam", "alpha: apply the Identity\n\nGitpeer-Cluster: alpha\n")
	bad := r.git("rev-parse", "HEAD")
	if findings, err = verify.Check(dir, spec, opts); err != nil {
		t.Fatal(err)
	}
	if !hasCommitFinding(findings, "clusters/alpha/kustomization.yaml", reasons.UnsignedChange, bad) ||
		!hasFinding(findings, "clusters/alpha/kustomization.yaml", "", reasons.UnsignedChange) {
		t.Fatalf("want the unsigned kustomization in the tree and in %s:\n%s", bad, list(findings))
	}
}

// With --base, the commits before the base are not judged and verify only
// the manifests whose directory a judged commit changes: an old signed
// state replayed after the base is still ManifestRolledBack, against the
// sequence signed before it, also through a directory deleted and
// restored.
func TestAReplayAfterTheBaseIsFoundAgainstSequencesBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		replay func(r *histRepo, first string)
	}{
		{"replayed", func(r *histRepo, first string) {
			r.git("checkout", first, "--", "clusters/beta/inbox/alpha")
			r.remove("clusters/beta/inbox/alpha/request-2.yaml")
		}},
		{"deleted, then replayed", func(r *histRepo, first string) {
			r.remove("clusters/beta/inbox/alpha")
			r.commit("withdraw")
			r.git("checkout", first, "--", "clusters/beta/inbox/alpha")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHistRepo(t)
			first := r.legit("1")
			base := r.legit("2") // the highest sequence, signed before the base
			tc.replay(r, first)
			bad := r.commit("restore")
			opts := strict
			opts.Base = base
			if f := r.history(opts); !hasCommitFinding(f, "clusters/beta/inbox/alpha/manifest.yaml", reasons.ManifestRolledBack, bad) {
				t.Fatalf("with --base, want ManifestRolledBack in %s:\n%s", bad, list(f))
			}
		})
	}
}
