package gitsync

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/test/testgit"
)

const (
	appliedBranch = "gitpeer/applied/alpha"
	appliedRef    = "refs/heads/" + appliedBranch
)

var alphaKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))

// appliedOptions are the Options of cluster alpha, which signs its commits
// and keeps its applied branch for clusters/alpha.
func appliedOptions(t *testing.T, bare string) Options {
	t.Helper()
	signer, err := commitsig.NewSigner(alphaKey)
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, bare, "alpha")
	opts.Signing.Signer = signer
	opts.Applied.Branch = appliedBranch
	opts.Applied.Scope = "clusters/alpha"
	opts.Applied.Exclude = []string{"inbox"}
	opts.Applied.ClusterID = "alpha"
	return opts
}

func openApplied(t *testing.T, bare string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), appliedOptions(t, bare))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// alphaPass writes clusters/alpha/cluster.yaml with *content.
func alphaPass(content *string) TreePassFunc {
	return func(context.Context, *TreeFS) (*Change, error) {
		return &Change{
			Writes:  map[string][]byte{"clusters/alpha/cluster.yaml": []byte(*content)},
			Message: "alpha: publish\n\nGitpeer-Cluster: alpha\n",
		}, nil
	}
}

// signedByAlpha fails the test unless git, trusting alpha's key alone, finds
// rev's signature good.
func signedByAlpha(t *testing.T, bare, rev string) {
	t.Helper()
	allowed, err := commitsig.AllowedSigners(commitsig.Entry{Principal: "alpha", Key: alphaKey.Public()})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(f, []byte(allowed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := gitOutput(bare, "-c", "gpg.ssh.allowedSignersFile="+f, "verify-commit", rev)
	if err != nil {
		t.Errorf("git verify-commit %s: %v\n%s", rev, err, out)
	} else if !strings.Contains(out, `Good "git" signature for alpha`) {
		t.Errorf("git verify-commit %s does not name alpha:\n%s", rev, out)
	}
}

// objects lists every object reachable from any ref of bare: unchanged
// means nothing was pushed.
func objects(t *testing.T, bare string) string {
	return runGit(t, bare, "rev-list", "--all", "--objects")
}

// appliedFiles lists the files of the applied branch's head, with their
// modes, as git ls-tree prints them (mode and path).
func appliedFiles(t *testing.T, bare string) string {
	t.Helper()
	return runGit(t, bare, "ls-tree", "-r", "--format=%(objectmode) %(path)", appliedRef)
}

// isSealOf fails the test unless the applied branch is res.Applied, a seal
// by alpha whose only parent is tip and whose tree lists want (mode and
// path, as appliedFiles), by default clusters/alpha as tip has it less its
// inbox, and nothing else.
func isSealOf(t *testing.T, bare string, res Result, tip string, want ...string) {
	t.Helper()
	if !res.Sealed || res.Applied == "" || runGit(t, bare, "rev-parse", appliedRef) != res.Applied {
		t.Fatalf("Sync = %+v, want a seal on %s", res, appliedRef)
	}
	if parents := runGit(t, bare, "log", "-1", "--format=%P", res.Applied); parents != tip {
		t.Errorf("seal parents = %q, want %s", parents, tip)
	}
	signedByAlpha(t, bare, appliedBranch)
	if want == nil {
		for _, f := range strings.Split(runGit(t, bare, "ls-tree", "-r", "--format=%(objectmode) %(path)", tip, "clusters/alpha"), "\n") {
			if f != "" && !strings.Contains(f, " clusters/alpha/inbox/") {
				want = append(want, f)
			}
		}
	}
	if got := appliedFiles(t, bare); got != strings.Join(want, "\n") {
		t.Errorf("applied tree:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestAppliedFollowsOwnCommitAndIgnoresOthers(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	content := "clusterID: alpha\n"

	res := mustSync(t, alpha, alphaPass(&content))
	own := runGit(t, bare, "rev-parse", "main")
	if res.Commit != own {
		t.Fatalf("Sync = %+v, want Commit %s", res, own)
	}
	isSealOf(t, bare, res, own)
	seal := res.Applied

	// Beta writes outside clusters/alpha on top: alpha's applied branch
	// already vouches for clusters/alpha as it stands, so it stays.
	beta := openRepo(t, bare, "beta")
	mustSync(t, beta, writes("beta: publish", map[string]string{"clusters/beta/cluster.yaml": "clusterID: beta\n"}))
	before := objects(t, bare)
	res = mustSync(t, alpha, alphaPass(&content))
	if res.Commit != "" || res.Applied != seal || res.Sealed {
		t.Errorf("Sync after beta = %+v, want no commit, Applied %s, no seal", res, seal)
	}
	if got := runGit(t, bare, "rev-parse", appliedRef); got != seal {
		t.Errorf("%s moved to %s", appliedRef, got)
	}
	if objects(t, bare) != before {
		t.Error("a settled Sync pushed objects")
	}
	if main := runGit(t, bare, "rev-parse", "main"); main != beta.Head() {
		t.Errorf("main = %s, want beta's commit %s", main, beta.Head())
	}
	fsck(t, bare)
}

func TestAppliedFollowsAReappliedCommit(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	beta := openRepo(t, bare, "beta")

	// Beta lands first while alpha computes: its own directory, and its
	// nonce in alpha's inbox (inside clusters/alpha, but beta's to write).
	var betas string
	res, err := alpha.SyncTree(context.Background(), func(context.Context, *TreeFS) (*Change, error) {
		betas = mustSync(t, beta, writes("beta: send nonce to alpha", map[string]string{
			"clusters/beta/cluster.yaml":           "clusterID: beta\n",
			"clusters/alpha/inbox/beta/nonce.yaml": "nonce: n\n",
		})).Commit
		return &Change{
			Writes:  map[string][]byte{"clusters/alpha/cluster.yaml": []byte("clusterID: alpha\n")},
			Message: "alpha: publish\n\nGitpeer-Cluster: alpha\n",
			Owns: func(p string) bool {
				return strings.HasPrefix(p, "clusters/alpha/") && !strings.HasPrefix(p, "clusters/alpha/inbox/")
			},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	main := runGit(t, bare, "rev-parse", "main")
	if res.Attempts != 2 || res.Commit != main {
		t.Fatalf("Sync = %+v, want a re-applied push %s", res, main)
	}
	if parent := runGit(t, bare, "rev-parse", "main^"); parent != betas {
		t.Errorf("alpha's commit sits on %s, want beta's %s", parent, betas)
	}
	// Sealed on the re-applied commit; beta's nonce, in alpha's inbox, is
	// beta's to write and never applied as it stands.
	isSealOf(t, bare, res, main)
	if tree := appliedFiles(t, bare); tree != "100644 clusters/alpha/cluster.yaml" {
		t.Errorf("applied tree:\n%s", tree)
	}
	fsck(t, bare)
}

func TestAppliedSealsAHostMerge(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	content := "clusterID: alpha\n"
	first := mustSync(t, alpha, alphaPass(&content)).Commit
	tips := []string{first}

	// The Git host merges a pull request that edits clusters/alpha, with an
	// unsigned merge commit; alpha's next pass computes the same content.
	host := filepath.Join(t.TempDir(), "host")
	runGit(t, t.TempDir(), "clone", "-q", bare, host)
	hostGit := func(args ...string) string {
		return runGit(t, host, append([]string{"-c", "user.name=Git host", "-c", "user.email=host@example.com"}, args...)...)
	}
	hostGit("checkout", "-q", "-b", "pr")
	content = "clusterID: alpha\nlabels: {zone: a}\n"
	if err := os.WriteFile(filepath.Join(host, "clusters/alpha/cluster.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	hostGit("commit", "-q", "-am", "label alpha's zone")
	hostGit("checkout", "-q", "main")
	if err := os.WriteFile(filepath.Join(host, "README"), []byte("peering repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostGit("add", "README")
	hostGit("commit", "-q", "-m", "readme")
	hostGit("merge", "-q", "--no-ff", "-m", "Merge pull request #1", "pr")
	hostGit("push", "-q", "origin", "main")
	merge := runGit(t, bare, "rev-parse", "main")
	tips = append(tips, merge)

	res := mustSync(t, alpha, alphaPass(&content))
	if res.Commit != "" || !res.Sealed || res.Applied == "" {
		t.Fatalf("Sync after the merge = %+v, want no commit and a seal", res)
	}
	seal := res.Applied
	if got := runGit(t, bare, "rev-parse", appliedRef); got != seal {
		t.Errorf("%s = %s, want the seal %s", appliedRef, got, seal)
	}
	if main := runGit(t, bare, "rev-parse", "main"); main != merge {
		t.Errorf("main = %s, want the merge %s: the seal must not go to main", main, merge)
	}
	if parents := runGit(t, bare, "log", "-1", "--format=%P", seal); parents != merge {
		t.Errorf("seal parents = %q, want the merge %s", parents, merge)
	}
	if a, b := runGit(t, bare, "rev-parse", seal+":clusters/alpha"), runGit(t, bare, "rev-parse", merge+":clusters/alpha"); a != b {
		t.Errorf("seal's clusters/alpha = %s, merge's = %s", a, b)
	}
	// The merge also added a README at the root: not alpha's to vouch for.
	if files := runGit(t, bare, "ls-tree", "-r", "--name-only", seal); files != "clusters/alpha/cluster.yaml" {
		t.Errorf("seal's files:\n%s\nwant clusters/alpha/cluster.yaml alone", files)
	}
	wantMsg := "alpha: seal clusters/alpha\n\nGitpeer-Cluster: alpha\nGitpeer-Step: seal\n"
	if raw := runGit(t, bare, "cat-file", "commit", seal); !strings.HasSuffix(raw+"\n", "\n\n"+wantMsg) {
		t.Errorf("seal message:\n%s\nwant\n%s", raw, wantMsg)
	}
	if who := runGit(t, bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ct", seal); who != "gitpeer alpha <alpha@gitpeer.example>|gitpeer alpha <alpha@gitpeer.example>|"+strconv.FormatInt(clock.Unix(), 10) {
		t.Errorf("seal author|committer|time = %q", who)
	}
	signedByAlpha(t, bare, appliedBranch)
	if out, err := gitOutput(bare, "verify-commit", merge); err == nil {
		t.Errorf("the host's merge verifies, so the test proves nothing:\n%s", out)
	}

	// Settled: nothing is made or pushed.
	before := objects(t, bare)
	res = mustSync(t, alpha, alphaPass(&content))
	if res.Commit != "" || res.Sealed || res.Applied != seal {
		t.Errorf("second Sync = %+v, want Applied %s and nothing else", res, seal)
	}
	if objects(t, bare) != before {
		t.Error("a settled Sync pushed objects")
	}

	// Someone points alpha's applied branch back at alpha's first commit, a
	// signed but stale clusters/alpha: the next Sync puts the seal back.
	runGit(t, bare, "update-ref", appliedRef, first)
	res = mustSync(t, alpha, alphaPass(&content))
	if !res.Sealed || runGit(t, bare, "rev-parse", appliedRef) != res.Applied {
		t.Errorf("Sync after a rollback of %s = %+v, want a seal on it", appliedRef, res)
	}
	if a, b := runGit(t, bare, "rev-parse", appliedBranch+":clusters/alpha"), runGit(t, bare, "rev-parse", "main:clusters/alpha"); a != b {
		t.Errorf("applied clusters/alpha = %s, main's = %s", a, b)
	}

	// Someone points it at a tree, bypassing git's checks: overwritten too.
	tree := runGit(t, bare, "rev-parse", "main^{tree}")
	if err := os.WriteFile(filepath.Join(bare, appliedRef), []byte(tree+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res = mustSync(t, alpha, alphaPass(&content)); !res.Sealed || runGit(t, bare, "rev-parse", appliedRef) != res.Applied {
		t.Errorf("Sync after %s was pointed at a tree = %+v, want a seal on it", appliedRef, res)
	}

	// alpha's next own commit goes on main (on top of the merge) and is
	// sealed on the applied branch.
	content = "clusterID: alpha\nlabels: {zone: b}\n"
	res = mustSync(t, alpha, alphaPass(&content))
	if res.Commit == "" {
		t.Fatalf("own commit after a seal = %+v, want a commit", res)
	}
	isSealOf(t, bare, res, res.Commit)
	tips = append(tips, res.Commit)

	// main only ever moved forward.
	for _, tip := range tips {
		if _, err := gitOutput(bare, "merge-base", "--is-ancestor", tip, "main"); err != nil {
			t.Errorf("main's earlier tip %s is not an ancestor of main: rewritten", tip)
		}
	}
	fsck(t, bare)
}

func TestAppliedSealsAForeignTipOnFirstSync(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	if res := mustSync(t, alpha, noChange()); res.Applied != "" || res.Sealed {
		t.Errorf("Sync of an empty remote = %+v, want no applied branch", res)
	}
	if _, err := gitOutput(bare, "rev-parse", "--verify", appliedRef); err == nil {
		t.Errorf("%s exists on an empty remote", appliedRef)
	}

	// The repo was seeded by someone else; alpha has nothing to change.
	beta := openRepo(t, bare, "beta")
	mustSync(t, beta, writes("seed", map[string]string{"clusters/alpha/cluster.yaml": "clusterID: alpha\n"}))
	res := mustSync(t, alpha, noChange())
	if !res.Sealed || res.Commit != "" {
		t.Fatalf("first Sync on a foreign tip = %+v, want a seal", res)
	}
	if p := runGit(t, bare, "log", "-1", "--format=%P", appliedRef); p != beta.Head() {
		t.Errorf("seal's parent = %s, want beta's tip %s", p, beta.Head())
	}
	signedByAlpha(t, bare, appliedBranch)
	if res := mustSync(t, alpha, noChange()); res.Sealed || res.Applied != runGit(t, bare, "rev-parse", appliedRef) {
		t.Errorf("second Sync = %+v, want the applied branch left as it is", res)
	}
}

// refuseApplied installs an update hook in bare that refuses every push
// to a gitpeer/ branch, as a host protecting the applied branches would.
func refuseApplied(t *testing.T, bare string) {
	t.Helper()
	hook := filepath.Join(bare, "hooks", "update")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in refs/heads/gitpeer/*) echo \"no pushes to $1\" >&2; exit 1;; esac\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A host that refuses the seal refuses the commit it seals with it (one
// atomic push): nothing lands, and the error names the applied branch and
// the host's reason.
func TestAppliedUpdateFailureFailsSync(t *testing.T) {
	bare := newBare(t)
	refuseApplied(t, bare)
	alpha := openApplied(t, bare)
	content := "clusterID: alpha\n"
	res, err := alpha.SyncTree(context.Background(), alphaPass(&content))
	if err == nil || !strings.Contains(err.Error(), appliedRef) || !strings.Contains(err.Error(), "no pushes to") {
		t.Fatalf("Sync = %v, want an error naming %s and the hook's message", err, appliedRef)
	}
	if _, err := gitOutput(bare, "rev-parse", "--verify", "main"); err == nil || res.Commit != "" || res.Applied != "" {
		t.Errorf("Result = %+v, main on the host: %v; want nothing pushed", res, err)
	}
}

// A host without atomic pushes (receive.advertiseAtomic false) gets the
// commit first, then its seal: a refused seal leaves the commit pushed and
// the error names the applied branch.
func TestAppliedUpdateFailureWithoutAtomicPushes(t *testing.T) {
	bare := newBare(t)
	runGit(t, bare, "config", "receive.advertiseAtomic", "false")
	refuseApplied(t, bare)
	alpha := openApplied(t, bare)
	content := "clusterID: alpha\n"
	res, err := alpha.SyncTree(context.Background(), alphaPass(&content))
	if err == nil || !strings.Contains(err.Error(), appliedRef) {
		t.Fatalf("Sync = %v, want an error naming %s", err, appliedRef)
	}
	if main := runGit(t, bare, "rev-parse", "main"); res.Commit != main || res.Applied != "" {
		t.Errorf("Result = %+v, want the pushed main commit %s and no applied", res, main)
	}
}

// The host sees a pass's commit and its seal in one push (the post-receive
// hook lists every ref a push updated): no reader of the host ever finds
// the shared branch ahead of the seal of this cluster's newest commit.
// Without atomic pushes they come as two.
func TestACommitAndItsSealLandTogether(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			bare := newBare(t)
			if !atomic {
				runGit(t, bare, "config", "receive.advertiseAtomic", "false")
			}
			log := filepath.Join(t.TempDir(), "pushes")
			hook := filepath.Join(bare, "hooks", "post-receive")
			if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
				t.Fatal(err)
			}
			script := "#!/bin/sh\n{ echo push; cat; } >> '" + log + "'\n"
			if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			alpha := openApplied(t, bare)
			for _, c := range []string{"clusterID: alpha\n", "clusterID: alpha\napiServer: https://alpha:6443\n"} {
				content := c
				res := mustSync(t, alpha, alphaPass(&content))
				if res.Commit == "" || !res.Sealed {
					t.Fatalf("Sync = %+v, want a commit and its seal", res)
				}
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			var pushes [][]string
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if line == "push" {
					pushes = append(pushes, nil)
					continue
				}
				f := strings.Fields(line)
				pushes[len(pushes)-1] = append(pushes[len(pushes)-1], f[len(f)-1])
			}
			want := [][]string{{"refs/heads/main", appliedRef}, {"refs/heads/main", appliedRef}}
			if !atomic {
				want = [][]string{{"refs/heads/main"}, {appliedRef}, {"refs/heads/main"}, {appliedRef}}
			}
			if fmt.Sprint(pushes) != fmt.Sprint(want) {
				t.Errorf("the host saw the pushes %v, want %v", pushes, want)
			}
			if p := runGit(t, bare, "log", "-1", "--format=%P", appliedRef); p != runGit(t, bare, "rev-parse", "main") {
				t.Errorf("the seal's parent is %s, want main", p)
			}
			signedByAlpha(t, bare, appliedBranch)
		})
	}
}

func TestOpenRefusesIncompleteAppliedOptions(t *testing.T) {
	bare := newBare(t)
	for _, tc := range []struct {
		name, want string
		edit       func(*Options)
	}{
		{"no scope", "needs Applied.Scope", func(o *Options) { o.Applied.Scope = "" }},
		{"a scope leaving the repo", "applied scope", func(o *Options) { o.Applied.Scope = "../alpha" }},
		{"no cluster ID", "Applied.ClusterID", func(o *Options) { o.Applied.ClusterID = "" }},
		{"a cluster ID with a newline", "ClusterID", func(o *Options) { o.Applied.ClusterID = "alpha\nGitpeer-Cluster: beta" }},
		{"no signer", "needs a Signing.Signer", func(o *Options) { o.Signing.Signer = nil }},
		{"an unknown signature format", "Signing.Format", func(o *Options) { o.Signing.Format = "x509" }},
		{"the shared branch", "is the shared branch", func(o *Options) { o.Applied.Branch = "main" }},
		{"an invalid branch name", "applied branch", func(o *Options) { o.Applied.Branch = "gitpeer/applied/alpha..x" }},
		{"a scope without the branch", "without Applied.Branch", func(o *Options) { o.Applied.Branch = "" }},
	} {
		opts := appliedOptions(t, bare)
		tc.edit(&opts)
		if _, err := Open(context.Background(), opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open with %s = %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// settledKnowingKey opens alpha knowing its key (Signing.Key) and makes its
// first Sync, publishing clusters/alpha/cluster.yaml as content.
func settledKnowingKey(t *testing.T, bare string) (*Repo, string) {
	t.Helper()
	opts := appliedOptions(t, bare)
	opts.Signing.Key = alphaKey.Public()
	alpha, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	content := "clusterID: alpha\n"
	mustSync(t, alpha, alphaPass(&content))
	return alpha, content
}

func TestAppliedPointedAtAnUnsignedCommitIsResealed(t *testing.T) {
	bare := newBare(t)
	alpha, content := settledKnowingKey(t, bare)
	// A writer commits outside clusters/alpha, unsigned, and points alpha's
	// applied branch at it: same scope, but not vouched for by alpha.
	beta := openRepo(t, bare, "beta")
	mustSync(t, beta, writes("beta: publish", map[string]string{"clusters/beta/cluster.yaml": "clusterID: beta\n"}))
	runGit(t, bare, "update-ref", appliedRef, beta.Head())
	res := mustSync(t, alpha, alphaPass(&content))
	if !res.Sealed {
		t.Fatalf("Sync = %+v, want a seal over the unsigned applied commit", res)
	}
	signedByAlpha(t, bare, appliedBranch)
}

// openPGPOptions are alpha's Options signing with OpenPGP (Argo CD's
// format), knowing its key.
func openPGPOptions(t *testing.T, bare string) Options {
	t.Helper()
	signer, err := commitsig.NewOpenPGPSigner(alphaKey)
	if err != nil {
		t.Fatal(err)
	}
	opts := appliedOptions(t, bare)
	opts.Signing.Signer, opts.Signing.Format, opts.Signing.Key = signer, commitsig.FormatOpenPGP, alphaKey.Public()
	return opts
}

// goodOpenPGP fails the test unless GnuPG, holding alpha's published key
// alone, finds rev's signature good and by alpha's key.
func goodOpenPGP(t *testing.T, bare, rev string) {
	t.Helper()
	key, err := commitsig.OpenPGPPublicKey(alphaKey, commitsig.OpenPGPUserID("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	fp, _, err := commitsig.OpenPGPFingerprint(alphaKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	g := testgit.NewGnuPG(t)
	g.Import(key)
	out, err := g.Git(bare, "verify-commit", "-v", rev)
	if err != nil || !strings.Contains(out, `Good signature from "gitpeer cluster alpha"`) || !strings.Contains(out, fp) {
		t.Errorf("git verify-commit %s: %v\n%s", rev, err, out)
	}
}

func TestAppliedWithOpenPGPSignatures(t *testing.T) {
	bare := newBare(t)
	alpha, err := Open(context.Background(), openPGPOptions(t, bare))
	if err != nil {
		t.Fatal(err)
	}
	if alpha.SignatureFormat() != commitsig.FormatOpenPGP {
		t.Fatalf("SignatureFormat = %q", alpha.SignatureFormat())
	}
	content := "clusterID: alpha\n"
	own := mustSync(t, alpha, alphaPass(&content))
	if own.Commit == "" || !own.Sealed || runGit(t, bare, "log", "-1", "--format=%P", appliedRef) != own.Commit {
		t.Fatalf("Sync = %+v, want its own commit sealed", own)
	}
	goodOpenPGP(t, bare, appliedBranch)

	// A writer points alpha's applied branch at a commit of its own with
	// the same clusters/alpha: alpha seals it with an OpenPGP signature.
	beta := openRepo(t, bare, "beta")
	mustSync(t, beta, writes("beta: publish", map[string]string{"clusters/beta/cluster.yaml": "clusterID: beta\n"}))
	runGit(t, bare, "update-ref", appliedRef, beta.Head())
	res := mustSync(t, alpha, alphaPass(&content))
	if !res.Sealed {
		t.Fatalf("Sync = %+v, want a seal over the foreign applied commit", res)
	}
	goodOpenPGP(t, bare, appliedBranch)
	if f := commitsig.FormatOf(gpgsig(t, bare, appliedRef)); f != commitsig.FormatOpenPGP {
		t.Errorf("the seal is signed in %q, want openpgp", f)
	}
	fsck(t, bare)
}

// TestAppliedIsResealedWhenTheFormatChanges: a cluster switched from SSH to
// OpenPGP (Flux to Argo CD) gets its applied head signed in OpenPGP at the
// next Sync, though its content did not change: Argo CD checks nothing
// else.
func TestAppliedIsResealedWhenTheFormatChanges(t *testing.T) {
	bare := newBare(t)
	opts := appliedOptions(t, bare)
	opts.Signing.Key, opts.Signing.Format = alphaKey.Public(), commitsig.FormatSSH
	alpha, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	content := "clusterID: alpha\n"
	mustSync(t, alpha, alphaPass(&content))
	signedByAlpha(t, bare, appliedBranch)
	if res := mustSync(t, alpha, alphaPass(&content)); res.Sealed {
		t.Fatalf("a settled SSH Sync sealed: %+v", res)
	}

	alpha, err = Open(context.Background(), openPGPOptions(t, bare))
	if err != nil {
		t.Fatal(err)
	}
	res := mustSync(t, alpha, alphaPass(&content))
	if !res.Sealed || res.Commit != "" {
		t.Fatalf("first OpenPGP Sync = %+v, want a seal and no commit", res)
	}
	goodOpenPGP(t, bare, appliedBranch)
	if res := mustSync(t, alpha, alphaPass(&content)); res.Sealed {
		t.Errorf("second OpenPGP Sync sealed again: %+v", res)
	}
}

// gpgsig returns the gpgsig header of commit rev in bare, as go-git reads it.
func gpgsig(t *testing.T, bare, rev string) string {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(*h)
	if err != nil {
		t.Fatal(err)
	}
	return c.PGPSignature
}

// TestAppliedTreeHoldsOnlyWhatTheClusterVouchesFor: a writer of main plants,
// beside what alpha computed, everything a GitOps engine would read from a
// commit alpha signs: a .sourceignore at the root and in clusters/alpha (Flux
// would drop the kustomization and generate one from every manifest), a
// .gitattributes, an Argo CD override, a symbolic link, a submodule, a file
// in alpha's inbox, another cluster's tree and a root file. The seal alpha
// makes holds clusters/alpha's regular files alone, at mode 100644, and git
// fsck --strict accepts it.
func TestAppliedTreeHoldsOnlyWhatTheClusterVouchesFor(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	content := "clusterID: alpha\n"
	mustSync(t, alpha, alphaPass(&content))

	dir, host := hostClone(t, bare, "Mallory")
	for name, data := range map[string]string{
		".sourceignore":                        "clusters/alpha/kustomization.yaml\n",
		"README":                               "peering repo\n",
		"clusters/beta/cluster.yaml":           "clusterID: beta\n",
		"clusters/alpha/.sourceignore":         "kustomization.yaml\n",
		"clusters/alpha/.gitattributes":        "*.yaml ident\n",
		"clusters/alpha/.argocd-source.yaml":   "kustomize: {images: [evil]}\n",
		"clusters/alpha/liqo/.gitmodules":      "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n",
		"clusters/alpha/inbox/beta/crb.yaml":   "kind: ClusterRoleBinding\n",
		"clusters/alpha/liqo/beta/tenant.yaml": "kind: Tenant\n",
		"clusters/alpha/liqo/beta/run.sh":      "#!/bin/sh\n",
		"clusters/alpha/kustomization.yaml":    "resources: [liqo/beta/tenant.yaml]\n",
	} {
		f := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "clusters/alpha/liqo/beta/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../beta", filepath.Join(dir, "clusters/alpha/liqo/link")); err != nil {
		t.Fatal(err)
	}
	host("add", "-A")
	sub := runGit(t, dir, "rev-parse", "HEAD")
	host("update-index", "--add", "--cacheinfo", "160000,"+sub+",clusters/alpha/liqo/x")
	host("commit", "-q", "-m", "plant")
	host("push", "-q", "origin", "main")
	tip := runGit(t, bare, "rev-parse", "main")

	res := mustSync(t, alpha, noChange())
	isSealOf(t, bare, res, tip,
		"100644 clusters/alpha/cluster.yaml",
		"100644 clusters/alpha/kustomization.yaml",
		"100644 clusters/alpha/liqo/beta/run.sh",
		"100644 clusters/alpha/liqo/beta/tenant.yaml")
	if out, err := gitOutput(bare, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}

// TestAppliedFilterDecidesWhatIsVouchedFor: with an AppliedFilter (the
// runner's keeps what the cluster's own manifest signs), a file it does not
// keep is not in the applied tree; a filter that refuses the tip leaves the
// applied branch where it was and says why, and the next tip it accepts is
// sealed.
func TestAppliedFilterDecidesWhatIsVouchedFor(t *testing.T) {
	bare := newBare(t)
	opts := appliedOptions(t, bare)
	refuse := ""
	opts.Applied.Filter = func(tip fs.FS) (func(string) bool, error) {
		if refuse != "" {
			return nil, errors.New(refuse)
		}
		return func(name string) bool { return name != "clusters/alpha/planted.yaml" }, nil
	}
	alpha, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	res := mustSync(t, alpha, writes("alpha: publish", map[string]string{
		"clusters/alpha/cluster.yaml": "clusterID: alpha\n",
		"clusters/alpha/planted.yaml": "kind: ClusterRoleBinding\n",
	}))
	isSealOf2 := func(want string) {
		t.Helper()
		if got := appliedFiles(t, bare); got != want {
			t.Errorf("applied tree:\n%s\nwant:\n%s", got, want)
		}
	}
	isSealOf2("100644 clusters/alpha/cluster.yaml")
	seal := res.Applied

	refuse = "clusters/alpha/manifest.yaml: signature does not verify"
	res = mustSync(t, alpha, writes("alpha: publish", map[string]string{"clusters/alpha/cluster.yaml": "clusterID: alpha\nv: 2\n"}))
	if res.Commit == "" || res.Sealed || res.Applied != "" || res.AppliedHeld != refuse {
		t.Errorf("Sync with the filter refusing = %+v, want the commit, no seal, held for %q", res, refuse)
	}
	if got := runGit(t, bare, "rev-parse", appliedRef); got != seal {
		t.Errorf("%s moved to %s while nothing was vouched for", appliedRef, got)
	}

	refuse = ""
	res = mustSync(t, alpha, noChange())
	isSealOf2("100644 clusters/alpha/cluster.yaml")
	if !res.Sealed || runGit(t, bare, "show", appliedRef+":clusters/alpha/cluster.yaml") != "clusterID: alpha\nv: 2" {
		t.Errorf("Sync once the filter accepts = %+v, want a seal of the new cluster.yaml", res)
	}
}

// TestAPassBeatenByItsOwnClustersCommitRecomputes: a reconciler killed after
// it pushed (its git-receive-pack, or the server, lands the push late) or a
// second reconciler of the same cluster lands a commit alpha signed, changing
// alpha's paths, after this pass fetched. That is alpha's own word, not a
// foreign write: the pass runs again on the new tip and lands on top of it.
// The same change signed by another key (beta's) is still ErrForeignWrite.
func TestAPassBeatenByItsOwnClustersCommitRecomputes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       ed25519.PrivateKey
		recompute bool
	}{
		{"signed by alpha's key", alphaKey, true},
		{"signed by another key", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := newBare(t)
			alpha, _ := settledKnowingKey(t, bare)

			// The predecessor: the same cluster ID and author, in its own
			// clone, signing with tc.key.
			signer, err := commitsig.NewSigner(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			popts := appliedOptions(t, bare)
			popts.Dir = filepath.Join(t.TempDir(), "predecessor")
			popts.Signing.Signer, popts.Applied.Branch, popts.Applied.Scope, popts.Applied.Exclude = signer, "", "", nil
			predecessor, err := Open(context.Background(), popts)
			if err != nil {
				t.Fatal(err)
			}
			var late string
			var seen []string
			res, err := alpha.SyncTree(context.Background(), func(_ context.Context, tip *TreeFS) (*Change, error) {
				data, _ := fs.ReadFile(tip, "clusters/alpha/status.yaml")
				seen = append(seen, string(data))
				if late == "" {
					late = mustSync(t, predecessor, writes("alpha: status\n\nGitpeer-Cluster: alpha\n",
						map[string]string{"clusters/alpha/status.yaml": "step: 1\n"})).Commit
				}
				return &Change{
					Writes:  map[string][]byte{"clusters/alpha/status.yaml": []byte("step: 2\n")},
					Message: "alpha: status\n\nGitpeer-Cluster: alpha\n",
					Owns:    func(p string) bool { return strings.HasPrefix(p, "clusters/alpha/") },
				}, nil
			})
			if !tc.recompute {
				if !errors.Is(err, ErrForeignWrite) {
					t.Fatalf("Sync = %+v, %v; want ErrForeignWrite", res, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if len(seen) != 2 || seen[1] != "step: 1\n" {
				t.Errorf("the pass saw status.yaml %q, want a second run on the late commit's step: 1", seen)
			}
			if parent := runGit(t, bare, "rev-parse", "main^"); res.Commit == "" || parent != late {
				t.Errorf("Sync = %+v on %s, want a commit on the late one %s", res, parent, late)
			}
			if got := runGit(t, bare, "show", "main:clusters/alpha/status.yaml"); got != "step: 2" {
				t.Errorf("status.yaml = %q, want the recomputed step: 2", got)
			}
			isSealOf(t, bare, res, res.Commit)
		})
	}
}

// TestSyncsOutliveTheRemotesAutoGC: git-receive-pack starts a detached git
// gc --auto after a push once the remote has more than gc.autoPackLimit
// packs, repacking (and deleting packs) while the next Sync pushes. A push
// that opened the remote's object storage itself (go-git's push to a local
// path) read packs the gc had just deleted: "packfile not found". Both of a
// Sync's pushes (main and the applied branch) only talk to
// git-receive-pack, so every Sync lands while the remote repacks under
// them.
func TestSyncsOutliveTheRemotesAutoGC(t *testing.T) {
	bare := newBare(t)
	for _, kv := range [][2]string{{"gc.auto", "1"}, {"gc.autoPackLimit", "1"}, {"gc.autoDetach", "true"}, {"receive.autoGc", "true"}, {"transfer.unpackLimit", "1"}} {
		runGit(t, bare, "config", kv[0], kv[1])
	}
	alpha := openApplied(t, bare)
	beta := openRepo(t, bare, "beta")
	for i := range 24 {
		content := "clusterID: alpha\nround: " + strconv.Itoa(i) + "\n"
		if res := mustSync(t, alpha, alphaPass(&content)); !res.Sealed {
			t.Fatalf("round %d: Sync = %+v, want a commit and a seal", i, res)
		}
		mustSync(t, beta, writes("beta: publish", map[string]string{"clusters/beta/cluster.yaml": "round: " + strconv.Itoa(i) + "\n"}))
	}
	// The last detached gc may still run: it holds gc.pid until it ends.
	// Wait for it, bounded, before fsck and the temp dir's removal.
	deadline := time.Now().Add(2 * time.Minute)
	for _, err := os.Stat(filepath.Join(bare, "gc.pid")); err == nil; _, err = os.Stat(filepath.Join(bare, "gc.pid")) {
		if time.Now().After(deadline) {
			t.Fatal("the remote's detached git gc still runs after 2 minutes")
		}
		runGit(t, bare, "count-objects") // a short wait that asks git, not a sleep
	}
	fsck(t, bare)
}

// A push that loses the race for main on the host itself (after the
// advertisement, while git-receive-pack holds it) is refused whole, commit
// and seal, and retried on the new tip like any rejected push: the host
// says only "atomic transaction failed" for each ref.
func TestAnAtomicPushThatLosesTheRaceIsRetried(t *testing.T) {
	bare := newBare(t)
	beta := openRepo(t, bare, "beta")
	mustSync(t, beta, writes("seed", map[string]string{"clusters/beta/cluster.yaml": "clusterID: beta\n"}))
	alpha := openApplied(t, bare)

	// The first push to reach the hook waits there until released; the
	// others go through.
	dir := t.TempDir()
	held, release := filepath.Join(dir, "held"), filepath.Join(dir, "release")
	hook := filepath.Join(bare, "hooks", "pre-receive")
	script := "#!/bin/sh\ncat >/dev/null\nif mkdir '" + held + "' 2>/dev/null; then\n  while [ ! -e '" + release + "' ]; do sleep 0.02; done\nfi\n"
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "clusterID: alpha\n"
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := alpha.SyncTree(context.Background(), alphaPass(&content))
		done <- outcome{res, err}
	}()
	for {
		if _, err := os.Stat(held); err == nil {
			break
		}
		select {
		case o := <-done:
			t.Fatalf("alpha's Sync ended before the host held its push: %+v, %v", o.res, o.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	mustSync(t, beta, writes("beta moves main", map[string]string{"clusters/beta/status.yaml": "ready\n"}))
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Attempts != 2 || !o.res.Sealed {
		t.Fatalf("alpha's Sync = %+v, %v; want it to land on the second attempt, sealed", o.res, o.err)
	}
	if p := runGit(t, bare, "log", "-1", "--format=%P", "main"); p != beta.Head() {
		t.Errorf("alpha's commit is on %s, want beta's %s", p, beta.Head())
	}
	if p := runGit(t, bare, "log", "-1", "--format=%P", appliedRef); p != runGit(t, bare, "rev-parse", "main") {
		t.Errorf("the seal's parent is %s, want main", p)
	}
}
