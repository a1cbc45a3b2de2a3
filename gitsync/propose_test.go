package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	pushBranch = "gitpeer/alpha"
	pushRef    = "refs/heads/" + pushBranch
)

// openProposing opens cluster alpha's clone with its applied branch and the
// review branch gitpeer/alpha.
func openProposing(t *testing.T, bare string) *Repo {
	t.Helper()
	opts := appliedOptions(t, bare)
	opts.Signing.Key = alphaKey.Public()
	opts.Review.Branch = pushBranch
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hostClone is a clone of bare that people (a reviewer, the Git host)
// commit in with the git CLI; its function runs git there as name.
func hostClone(t *testing.T, bare, name string) (string, func(args ...string) string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "host")
	runGit(t, t.TempDir(), "clone", "-q", bare, dir)
	return dir, func(args ...string) string {
		t.Helper()
		return runGit(t, dir, append([]string{"-c", "user.name=" + name, "-c", "user.email=" + strings.ToLower(name) + "@example.com"}, args...)...)
	}
}

// seedMain gives main a first commit that is not alpha's.
func seedMain(t *testing.T, bare string) string {
	t.Helper()
	beta := openRepo(t, bare, "beta")
	return mustSync(t, beta, writes("beta: publish", map[string]string{"clusters/beta/cluster.yaml": "clusterID: beta\n"})).Commit
}

// assertProposal fails unless the review branch is main plus exactly one
// commit signed by alpha, holding clusters/alpha/cluster.yaml = content.
func assertProposal(t *testing.T, bare, main, content string) string {
	t.Helper()
	head := runGit(t, bare, "rev-parse", pushRef)
	if got := runGit(t, bare, "rev-parse", "main"); got != main {
		t.Errorf("main = %s, want it unchanged at %s", got, main)
	}
	if parents := runGit(t, bare, "log", "-1", "--format=%P", head); parents != main {
		t.Errorf("%s's parents = %q, want main's tip %s", pushBranch, parents, main)
	}
	if n := runGit(t, bare, "rev-list", "--count", "main.."+pushBranch); n != "1" {
		t.Errorf("%s is %s commits ahead of main, want 1", pushBranch, n)
	}
	if got := runGit(t, bare, "show", pushBranch+":clusters/alpha/cluster.yaml"); got != strings.TrimSpace(content) {
		t.Errorf("proposed cluster.yaml = %q, want %q", got, content)
	}
	signedByAlpha(t, bare, pushBranch)
	return head
}

func TestProposeLeavesMainAndBuildsOneSignedCommit(t *testing.T) {
	bare := newBare(t)
	main := seedMain(t, bare)
	alpha := openProposing(t, bare)
	content := "clusterID: alpha\n"

	res := mustSync(t, alpha, alphaPass(&content))
	head := assertProposal(t, bare, main, content)
	if res.Commit != "" || res.Proposed != head || res.PushBranch != pushBranch || res.Withdrawn ||
		len(res.Files) != 1 || res.Files[0] != "clusters/alpha/cluster.yaml" {
		t.Errorf("Sync = %+v, want no commit, Proposed %s, files [clusters/alpha/cluster.yaml]", res, head)
	}
	// Not merged: main has no clusters/alpha yet, so nothing is vouched
	// for and there is no applied branch to point at.
	if res.Applied != "" || res.AppliedHeld == "" {
		t.Errorf("Sync = %+v, want the applied branch held", res)
	}
	if out, err := gitOutput(bare, "rev-parse", "--verify", "-q", appliedRef); err == nil {
		t.Errorf("%s exists at %s before anything of alpha's is merged", appliedBranch, out)
	}
	if alpha.Head() != main {
		t.Errorf("Head = %s, want main %s", alpha.Head(), main)
	}
	assertClean(t, alpha.Dir())

	// Re-run on the same main: the open proposal stays as it is.
	before := objects(t, bare)
	res = mustSync(t, alpha, alphaPass(&content))
	if res.Proposed != head || res.Attempts != 0 || objects(t, bare) != before {
		t.Errorf("re-run on the same main = %+v, want the proposal %s left alone", res, head)
	}

	// Main moves (beta publishes again): the proposal is rebuilt on it.
	beta := openRepo(t, bare, "beta2")
	moved := mustSync(t, beta, writes("beta: more", map[string]string{"clusters/beta/extra.yaml": "x: 1\n"})).Commit
	content = "clusterID: alpha\nlabels: {zone: a}\n"
	res = mustSync(t, alpha, alphaPass(&content))
	rebuilt := assertProposal(t, bare, moved, content)
	if res.Proposed != rebuilt || rebuilt == head {
		t.Errorf("Sync on the moved main = %+v, want a new proposal %s", res, rebuilt)
	}
	fsck(t, bare)
}

func TestProposeMergedIsWithdrawnAndSealed(t *testing.T) {
	for _, method := range []string{"merge", "squash"} {
		t.Run("after a "+method+" merge", func(t *testing.T) {
			bare := newBare(t)
			seedMain(t, bare)
			alpha := openProposing(t, bare)
			content := "clusterID: alpha\n"
			mustSync(t, alpha, alphaPass(&content))

			_, host := hostClone(t, bare, "Reviewer")
			host("fetch", "-q", "origin", pushBranch)
			if method == "merge" {
				host("merge", "-q", "--no-ff", "-m", "Merge pull request #1", "FETCH_HEAD")
			} else {
				host("merge", "-q", "--squash", "FETCH_HEAD")
				host("commit", "-q", "-m", "alpha: publish (#1)")
			}
			host("push", "-q", "origin", "main")
			merged := runGit(t, bare, "rev-parse", "main")

			res := mustSync(t, alpha, alphaPass(&content))
			if res.Commit != "" || res.Proposed != "" || !res.Withdrawn {
				t.Errorf("Sync after the %s = %+v, want nothing proposed and the branch withdrawn", method, res)
			}
			if out, err := gitOutput(bare, "rev-parse", "--verify", "-q", pushRef); err == nil {
				t.Errorf("%s still exists at %s", pushBranch, out)
			}
			if got := runGit(t, bare, "rev-parse", "main"); got != merged {
				t.Errorf("main = %s, want the %s %s", got, method, merged)
			}
			if !res.Sealed || runGit(t, bare, "rev-parse", appliedBranch+"^") != merged {
				t.Errorf("Sync = %+v, want a seal of the %s %s on %s", res, method, merged, appliedBranch)
			}
			signedByAlpha(t, bare, appliedBranch)

			// Settled.
			before := objects(t, bare)
			res = mustSync(t, alpha, alphaPass(&content))
			if res.Proposed != "" || res.Withdrawn || res.Sealed || objects(t, bare) != before {
				t.Errorf("settled Sync = %+v, want nothing done", res)
			}
			fsck(t, bare)
		})
	}
}

func TestProposeRefusesAHumanCommit(t *testing.T) {
	bare := newBare(t)
	seedMain(t, bare)
	alpha := openProposing(t, bare)
	content := "clusterID: alpha\n"
	mustSync(t, alpha, alphaPass(&content))

	dir, human := hostClone(t, bare, "Human")
	human("checkout", "-q", "-b", "fix", "origin/"+pushBranch)
	if err := os.WriteFile(filepath.Join(dir, "NOTES"), []byte("looks good\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	human("add", "NOTES")
	human("commit", "-q", "-m", "review notes")
	human("push", "-q", "origin", "fix:"+pushBranch)
	theirs := runGit(t, bare, "rev-parse", pushRef)

	for _, change := range []string{"clusterID: alpha\nlabels: {zone: b}\n", content} {
		change := change
		before := objects(t, bare)
		_, err := alpha.SyncTree(context.Background(), alphaPass(&change))
		want := "branch gitpeer/alpha has commit " + theirs[:12] + " by Human <human@example.com> that gitpeer did not make; merge or delete it, then re-run"
		if !errors.Is(err, ErrForeignCommit) || err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Sync over a human commit: %v, want ErrForeignCommit saying %q", err, want)
		}
		if got := runGit(t, bare, "rev-parse", pushRef); got != theirs {
			t.Errorf("%s = %s, want the human commit %s untouched", pushBranch, got, theirs)
		}
		if objects(t, bare) != before {
			t.Error("a refused Sync pushed objects")
		}
	}

	// Deleting the branch settles it: the next run proposes again.
	runGit(t, bare, "update-ref", "-d", pushRef)
	res := mustSync(t, alpha, alphaPass(&content))
	if res.Proposed == "" {
		t.Errorf("Sync after the branch was deleted = %+v, want a proposal", res)
	}
}

func TestProposeOptions(t *testing.T) {
	bare := newBare(t)
	for name, edit := range map[string]func(*Options){
		"the shared branch":  func(o *Options) { o.Review.Branch = "main" },
		"the applied branch": func(o *Options) { o.Review.Branch = appliedBranch },
		"an invalid name":    func(o *Options) { o.Review.Branch = "gitpeer/a..b" },
		"no key":             func(o *Options) { o.Signing.Key = nil },
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			opts := appliedOptions(t, bare)
			opts.Signing.Key = alphaKey.Public()
			opts.Review.Branch = pushBranch
			edit(&opts)
			if _, err := Open(context.Background(), opts); err == nil {
				t.Error("Open accepted it")
			}
		})
	}
}

// TestProposePassSeesItsPendingProposal: a pass with a review branch reads
// the shared branch, and may read back its own pending proposal through
// Pending (a certificate it signed there); a pass that makes the same
// change again, with other condition dates and manifest sequences only,
// leaves the proposal's commit as it is.
func TestProposePassSeesItsPendingProposal(t *testing.T) {
	bare := newBare(t)
	seedMain(t, bare)
	alpha := openProposing(t, bare)
	var seen []string
	answer := func(date string, seq int) TreePassFunc {
		return func(context.Context, *TreeFS) (*Change, error) {
			got := "none"
			if p := alpha.Pending(); p != nil {
				data, err := fs.ReadFile(p, "clusters/beta/inbox/alpha/answer.yaml")
				if err != nil {
					return nil, err
				}
				got = string(data)
			}
			seen = append(seen, got)
			return &Change{Writes: map[string][]byte{
				"clusters/beta/inbox/alpha/answer.yaml":   []byte("crt: abc\nconditions:\n- type: Ready\n  lastTransitionTime: \"" + date + "\"\n"),
				"clusters/beta/inbox/alpha/manifest.yaml": []byte(fmt.Sprintf("sequence: %d\n", seq)),
			}, Message: "alpha: answer\n"}, nil
		}
	}
	first := mustSync(t, alpha, answer("2026-01-01T00:00:00Z", 1)).Proposed
	before := objects(t, bare)
	res := mustSync(t, alpha, answer("2026-01-01T00:00:09Z", 2))
	if res.Proposed != first || res.Attempts != 0 || objects(t, bare) != before {
		t.Errorf("a re-run with other dates and sequence = %+v, want the proposal %s left alone", res, first)
	}
	if len(seen) != 2 || seen[0] != "none" || !strings.Contains(seen[1], "crt: abc") {
		t.Errorf("the passes saw as pending %q, want none, then the first proposal's answer", seen)
	}
	if alpha.Pending() != nil {
		t.Error("Pending outside a pass is not nil")
	}
	// A file more, or a file less, beside changes of dates and sequence
	// alone, is another proposal.
	more := func(context.Context, *TreeFS) (*Change, error) {
		c, err := answer("2026-01-01T00:00:10Z", 3)(context.Background(), nil)
		if err == nil {
			c.Writes["clusters/beta/inbox/alpha/extra.yaml"] = []byte("a: 1\n")
		}
		return c, err
	}
	second := mustSync(t, alpha, more).Proposed
	if second == first || second == "" {
		t.Errorf("a file more = %s, want a new proposal", second)
	}
	if res := mustSync(t, alpha, answer("2026-01-01T00:00:11Z", 4)); res.Proposed == second || res.Proposed == "" {
		t.Errorf("a file less = %+v, want a new proposal", res)
	}
	// Another change is another proposal.
	if res := mustSync(t, alpha, writes("alpha: other", map[string]string{"clusters/beta/inbox/alpha/answer.yaml": "crt: def\n"})); res.Proposed == first || res.Proposed == "" {
		t.Errorf("a different change = %+v, want a new proposal", res)
	}
}

// TestProposeReviewedPartOnly: with Reviewed, the part of a change that
// needs no review is pushed to main as a commit of its own, signed, and
// the rest is proposed on top of it; a re-run leaves both as they are, and
// a change with nothing to review pushes to main and proposes nothing.
func TestProposeReviewedPartOnly(t *testing.T) {
	bare := newBare(t)
	main := seedMain(t, bare)
	opts := appliedOptions(t, bare)
	opts.Signing.Key = alphaKey.Public()
	opts.Review.Branch = pushBranch
	opts.Review.Paths = func(p string) bool {
		return strings.HasPrefix(p, "clusters/alpha/") && !strings.HasPrefix(p, "clusters/alpha/inbox/")
	}
	alpha, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	both := writes("alpha: send tenant to beta\n", map[string]string{
		"clusters/alpha/cluster.yaml":           "clusterID: alpha\n",
		"clusters/beta/inbox/alpha/tenant.yaml": "tenant: 1\n",
	})
	res := mustSync(t, alpha, both)
	direct := runGit(t, bare, "rev-parse", "main")
	if direct == main || res.Commit != direct || len(res.CommitFiles) != 1 || res.CommitFiles[0] != "clusters/beta/inbox/alpha/tenant.yaml" {
		t.Fatalf("Sync = %+v, want the inbox file pushed to main (was %s, is %s)", res, main, direct)
	}
	if parents := runGit(t, bare, "log", "-1", "--format=%P", direct); parents != main {
		t.Errorf("main's new commit has parents %q, want %s", parents, main)
	}
	signedByAlpha(t, bare, "main")
	if got := runGit(t, bare, "show", "main:clusters/beta/inbox/alpha/tenant.yaml"); got != "tenant: 1" {
		t.Errorf("main's tenant.yaml = %q", got)
	}
	if out, err := gitOutput(bare, "cat-file", "-e", "main:clusters/alpha/cluster.yaml"); err == nil {
		t.Errorf("main holds the reviewed cluster.yaml unmerged %s", out)
	}
	head := assertProposal(t, bare, direct, "clusterID: alpha\n")
	if res.Proposed != head || len(res.Files) != 1 || res.Files[0] != "clusters/alpha/cluster.yaml" {
		t.Errorf("Sync = %+v, want the proposal %s of clusters/alpha/cluster.yaml alone", res, head)
	}

	// The same pass again: main has the inbox part, the proposal stands.
	before := objects(t, bare)
	res = mustSync(t, alpha, both)
	if res.Commit != "" || res.Proposed != head || res.Attempts != 0 || objects(t, bare) != before {
		t.Errorf("a re-run = %+v, want nothing pushed and the proposal %s left alone", res, head)
	}

	// Nothing left to review (the proposal's change is dropped): the inbox
	// change goes to main, the branch is withdrawn.
	res = mustSync(t, alpha, writes("alpha: update tenant\n", map[string]string{"clusters/beta/inbox/alpha/tenant.yaml": "tenant: 2\n"}))
	if res.Commit == "" || res.Proposed != "" || !res.Withdrawn {
		t.Errorf("an inbox-only change = %+v, want a commit on main and the branch withdrawn", res)
	}
	if got := runGit(t, bare, "show", "main:clusters/beta/inbox/alpha/tenant.yaml"); got != "tenant: 2" {
		t.Errorf("main's tenant.yaml = %q", got)
	}
	fsck(t, bare)
}
