package main

import (
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestCompareHint(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/o/r.git", "https://github.com/o/r/compare/main...gitpeer/alpha"},
		{"https://github.com/o/r", "https://github.com/o/r/compare/main...gitpeer/alpha"},
		{"ssh://git@github.com/o/r.git", "https://github.com/o/r/compare/main...gitpeer/alpha"},
		{"git@github.com:o/r.git", "https://github.com/o/r/compare/main...gitpeer/alpha"},
		{"https://github.example.com/o/r.git", "https://github.example.com/o/r/compare/main...gitpeer/alpha"},
		{"https://gitlab.com/group/sub/r.git", "https://gitlab.com/group/sub/r/-/compare/main...gitpeer/alpha"},
		{"ssh://git@gitlab.example.com:2222/g/r.git", "https://gitlab.example.com/g/r/-/compare/main...gitpeer/alpha"},
		{"git@gitlab.com:g/r.git", "https://gitlab.com/g/r/-/compare/main...gitpeer/alpha"},
		{"https://gitea.example.com:3000/o/r.git", "https://gitea.example.com:3000/o/r/compare/main...gitpeer/alpha"},
		{"ssh://git@codeberg.org/o/r.git", "https://codeberg.org/o/r/compare/main...gitpeer/alpha"},
		{"https://git.example.com/o/r.git", "git log main..gitpeer/alpha"},
		{"http://github.com/o/r.git", "git log main..gitpeer/alpha"},
		{"file:///srv/peering.git", "git log main..gitpeer/alpha"},
		{"/srv/peering.git", "git log main..gitpeer/alpha"},
		{"https://github.com/r.git", "git log main..gitpeer/alpha"},
	} {
		if got := compareHint(tc.url, "main", "gitpeer/alpha"); got != tc.want {
			t.Errorf("compareHint(%s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}

func TestExpandPushBranch(t *testing.T) {
	for _, tc := range []struct{ template, want, err string }{
		{"gitpeer/{cluster}", "gitpeer/alpha", ""},
		{"review/{cluster}/peering", "review/alpha/peering", ""},
		{"gitpeer-proposals", "gitpeer-proposals", ""},
		{"main", "", "is the branch reconciled"},
		{"gitpeer/applied/{cluster}", "", "where the applied branches live"},
		{"gitpeer/applied", "", "where the applied branches live"},
		{"gitpeer/{id}", "", "unknown placeholder {id}"},
		{"gitpeer/{cluster}..x", "", "not a valid branch name"},
		{"", "", "not a valid branch name"},
		{"refs/heads/x", "", "not a valid branch name"},
	} {
		got, err := expandPushBranch(tc.template, "alpha", "main")
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("expandPushBranch(%q) = %q, %v; want %q", tc.template, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("expandPushBranch(%q) = %q, %v; want an error saying %q", tc.template, got, err, tc.err)
		}
	}
}

// TestReconcileProposesOnAReviewBranch: with --push-branch, a pass leaves
// main alone and says where its proposal is; once a human merges it, the
// next pass has nothing to propose and deletes the branch.
func TestReconcileProposesOnAReviewBranch(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	main := strings.TrimSpace(git(t, remote, "rev-parse", "main"))
	reconcile := func() (int, string, string) {
		return gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote,
			"--state-dir", filepath.Join(root, "state", "beta"), "--push-branch", "gitpeer/{cluster}")
	}

	code, out, stderr := reconcile()
	if code != 0 {
		t.Fatalf("reconcile --push-branch: %d %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^beta: proposed [1-9][0-9]* changes on branch gitpeer/beta; compare: git log main\.\.gitpeer/beta$`).MatchString(out) {
		t.Errorf("reconcile --push-branch printed:\n%s", out)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != main {
		t.Errorf("main moved to %s", got)
	}
	if parent := strings.TrimSpace(git(t, remote, "rev-parse", "gitpeer/beta^")); parent != main {
		t.Errorf("gitpeer/beta^ = %s, want main %s", parent, main)
	}

	// A re-run a second later (so its manifests would carry a later
	// sequence) leaves the unchanged proposal, and its review, alone.
	proposed := strings.TrimSpace(git(t, remote, "rev-parse", "gitpeer/beta"))
	time.Sleep(1100 * time.Millisecond)
	if code, _, stderr := reconcile(); code != 0 {
		t.Fatalf("reconcile --push-branch again: %d %s", code, stderr)
	}
	if again := strings.TrimSpace(git(t, remote, "rev-parse", "gitpeer/beta")); again != proposed {
		t.Errorf("an unchanged proposal was rebuilt: gitpeer/beta %s, was %s\n%s", again, proposed, git(t, remote, "diff", proposed, again))
	}

	// A reviewer merges it; the next pass has nothing left to propose.
	git(t, work, "fetch", "-q", "origin", "gitpeer/beta")
	git(t, work, "merge", "-q", "--no-ff", "-m", "Merge gitpeer/beta", "FETCH_HEAD")
	git(t, work, "push", "-q", "origin", "main")
	code, out, stderr = reconcile()
	if code != 0 || !strings.Contains(out, "beta: up to date; deleted branch gitpeer/beta: nothing left to propose") {
		t.Fatalf("reconcile after the merge: %d\n%s%s", code, out, stderr)
	}
	if revParse(remote, "refs/heads/gitpeer/beta") != "" {
		t.Error("gitpeer/beta still exists")
	}

	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote,
		"--state-dir", filepath.Join(root, "state", "beta"), "--push-branch", "gitpeer/applied/{cluster}"); code == 0 ||
		!strings.Contains(stderr, "where the applied branches live") {
		t.Errorf("--push-branch under gitpeer/applied/: %d %s", code, stderr)
	}
}

const sliceSpec = `clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "web", resources: {cpu: "2", memory: "4Gi"}}]}]
`

// TestReviewBranchIsStable: a provider that proposes its answer to a Tenant
// and a slice request (an Identity and a ResourceSlice, each with a
// certificate it signed) proposes the very same commit on every pass while
// main stays where it is, so that the review branch is not force-pushed
// and a reviewer's approval stands; once main moves, the proposal is
// rebuilt on the new tip, with the certificates it holds (its conditions dated anew).
func TestReviewBranchIsStable(t *testing.T) {
	root, remote, work := peeringRepo(t, sliceSpec)
	pass := func(id string, args ...string) string {
		t.Helper()
		code, out, stderr := gitpeer(t, append([]string{"reconcile", "--once", "--cluster", id, "--repo", remote,
			"--state-dir", filepath.Join(root, "state", id)}, args...)...)
		if code != 0 {
			t.Fatalf("reconcile %s %v: %d %s", id, args, code, stderr)
		}
		return out
	}
	rev := func(ref string) string { return strings.TrimSpace(git(t, remote, "rev-parse", ref)) }
	// beta's nonce, then alpha's Tenant and slice request, reach main.
	pass("beta")
	pass("alpha")
	pass("beta", "--push-branch", "gitpeer/{cluster}")
	proposed := rev("gitpeer/beta")
	for _, f := range []string{"clusters/alpha/inbox/beta/identity.yaml", "clusters/alpha/inbox/beta/resourceslice-web.status.yaml"} {
		if out := git(t, remote, "show", proposed+":"+f); !strings.Contains(out, "signedCRT:") {
			t.Fatalf("the proposal's %s holds no certificate:\n%s", f, out)
		}
	}
	reflog := func() string {
		// No reflog in a bare remote: count the objects instead, which a
		// rebuilt proposal adds to.
		return git(t, remote, "count-objects", "-v")
	}
	before := reflog()
	for i := range 2 {
		pass("beta", "--push-branch", "gitpeer/{cluster}")
		if again := rev("gitpeer/beta"); again != proposed {
			t.Fatalf("pass %d on the same main rebuilt the proposal: gitpeer/beta %s, was %s\n%s", i+2, again, proposed,
				git(t, remote, "diff", proposed, again))
		}
	}
	if after := reflog(); after != before {
		t.Errorf("passes on the same main pushed objects:\n%s\nwas\n%s", after, before)
	}

	// main moves: the proposal is rebuilt on it, with the same answers.
	git(t, work, "pull", "-q", "--ff-only")
	write(t, filepath.Join(work, "README.md"), "peering\n")
	git(t, work, "add", "README.md")
	git(t, work, "commit", "-qm", "readme")
	git(t, work, "push", "-q", "origin", "main")
	pass("beta", "--push-branch", "gitpeer/{cluster}")
	rebuilt := rev("gitpeer/beta")
	if rebuilt == proposed || rev("gitpeer/beta^") != rev("main") {
		t.Fatalf("after main moved, gitpeer/beta = %s (was %s), its parent %s, want a new proposal on main %s", rebuilt, proposed, rev("gitpeer/beta^"), rev("main"))
	}
	for _, f := range []string{"clusters/alpha/inbox/beta/identity.yaml", "clusters/alpha/inbox/beta/resourceslice-web.status.yaml"} {
		crt := regexp.MustCompile(`signedCRT: \S+`)
		if a, b := crt.FindString(git(t, remote, "show", proposed+":"+f)), crt.FindString(git(t, remote, "show", rebuilt+":"+f)); a != b {
			t.Errorf("the rebuilt proposal re-issued the certificate of %s:\n%s\nwas\n%s", f, b, a)
		}
	}
}

// reviewRun is a peering repo whose two reconcilers propose on review
// branches gitpeer/<id> with a review scope, and a reviewer who merges
// (merge commits) what they propose.
type reviewRun struct {
	t                  *testing.T
	root, remote, work string
	scope              string
	merges             map[string]int // merges made, by cluster
	unreviewed         int            // commits that reached main without a merge
}

func (r *reviewRun) rev(ref string) string {
	return revParse(r.remote, ref)
}

// round runs beta's then alpha's pass once and reports whether it changed
// anything: main or a review branch moved.
func (r *reviewRun) round() bool {
	t := r.t
	t.Helper()
	changed := false
	for _, id := range []string{"beta", "alpha"} {
		main, branch := r.rev("main"), r.rev("gitpeer/"+id)
		code, out, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", r.remote,
			"--state-dir", filepath.Join(r.root, "state", id), "--push-branch", "gitpeer/{cluster}", "--review-scope", r.scope)
		if code != 0 {
			t.Fatalf("reconcile %s --review-scope %s: %d %s", id, r.scope, code, stderr)
		}
		if r.rev("main") != main {
			r.unreviewed++
			if r.scope != "applied" || !strings.Contains(out, id+": pushed ") {
				t.Fatalf("%s's pass moved main with --review-scope %s:\n%s", id, r.scope, out)
			}
		}
		changed = changed || r.rev("main") != main || r.rev("gitpeer/"+id) != branch
	}
	return changed
}

// settle runs rounds, merging the open proposals only when a round changes
// nothing (the peering waits for a review), until a round changes nothing
// and nothing is left to merge; it returns the merges made, by cluster.
func (r *reviewRun) settle() map[string]int {
	t := r.t
	t.Helper()
	merges := map[string]int{}
	for i := 0; ; i++ {
		if i == 30 {
			t.Fatalf("not settled after %d rounds (merges %v)", i, merges)
		}
		if r.round() {
			continue
		}
		open := false
		for _, id := range []string{"beta", "alpha"} {
			if r.rev("gitpeer/"+id) == "" {
				continue
			}
			open = true
			git(t, r.work, "fetch", "-q", "origin")
			git(t, r.work, "reset", "-q", "--hard", "origin/main")
			git(t, r.work, "merge", "-q", "--no-ff", "-m", "Merge gitpeer/"+id, "origin/gitpeer/"+id)
			git(t, r.work, "push", "-q", "origin", "main")
			merges[id]++
			t.Logf("merge %d of %s: %s", merges[id], id, strings.TrimSpace(git(t, r.work, "log", "-1", "--format=%s", "origin/gitpeer/"+id)))
		}
		if !open {
			return merges
		}
	}
}

// ready fails the test unless both clusters' status on main says the
// peering is Ready.
func (r *reviewRun) ready(what string) {
	t := r.t
	t.Helper()
	git(t, r.work, "fetch", "-q", "origin")
	git(t, r.work, "reset", "-q", "--hard", "origin/main")
	code, out, _ := gitpeer(t, "status", r.work)
	if code != 0 || !regexp.MustCompile(`(?m)^alpha +beta +Ready +true +web:Accepted `).MatchString(out) {
		t.Fatalf("%s with --review-scope %s: status on main:\n%s", what, r.scope, out)
	}
}

// TestReviewScopeMerges measures the merges a reviewer makes for a new
// peering with one slice, then for a change of that slice, in each review
// scope (docs/gitops.md, "Review branches", states these numbers): with
// all, every step of the handshake waits for a merge of the cluster that
// takes it; with applied, the handshake runs on main and each cluster's
// proposal is merged once, at the end.
func TestReviewScopeMerges(t *testing.T) {
	for _, tc := range []struct {
		scope         string
		peering, edit map[string]int
	}{
		{"all", map[string]int{"alpha": 3, "beta": 2}, map[string]int{"alpha": 2, "beta": 2}},
		{"applied", map[string]int{"alpha": 1, "beta": 1}, map[string]int{"alpha": 1, "beta": 1}},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			root, remote, work := peeringRepo(t, sliceSpec)
			r := &reviewRun{t: t, root: root, remote: remote, work: work, scope: tc.scope}
			if got := r.settle(); !maps.Equal(got, tc.peering) {
				t.Errorf("a new peering took merges %v, want %v", got, tc.peering)
			}
			r.ready("a new peering")
			if tc.scope == "applied" {
				if r.unreviewed == 0 {
					t.Error("no handshake artifact reached main without a merge")
				}
				for _, f := range []string{"clusters/beta/inbox/alpha/tenant.yaml", "clusters/alpha/inbox/beta/identity.yaml"} {
					// Each was pushed by its cluster itself, signed, not merged.
					log := strings.TrimSpace(git(t, remote, "log", "--first-parent", "--format=%P|%an", "-1", "main", "--", f))
					if parents, author, _ := strings.Cut(log, "|"); strings.Contains(parents, " ") || !strings.HasPrefix(author, "gitpeer (") {
						t.Errorf("the last commit of %s on main's first-parent line is %q, want a single-parent commit by gitpeer", f, log)
					}
				}
			}

			git(t, work, "rm", "-q", "peering.cue")
			write(t, filepath.Join(work, "peering.cue"), strings.Replace(sliceSpec, `cpu: "2"`, `cpu: "3"`, 1))
			git(t, work, "add", "peering.cue")
			git(t, work, "commit", "-qm", "web: 3 cpu")
			git(t, work, "push", "-q", "origin", "main")
			if got := r.settle(); !maps.Equal(got, tc.edit) {
				t.Errorf("a slice change took merges %v, want %v", got, tc.edit)
			}
			r.ready("after the slice change")
			if out := git(t, remote, "show", "main:clusters/alpha/inbox/beta/resourceslice-web.status.yaml"); !strings.Contains(out, `cpu: "3"`) {
				t.Errorf("the slice answer on main does not grant 3 cpu:\n%s", out)
			}
		})
	}
}

// TestReviewScopeFlag: a bad --review-scope, or one without --push-branch,
// is refused before anything is opened, naming the flag and its values.
func TestReviewScopeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--push-branch", "gitpeer/{cluster}", "--review-scope", "inbox"}, `--review-scope: unknown review scope "inbox": want all or applied`},
		{[]string{"--review-scope", "applied"}, "--review-scope needs --push-branch"},
	} {
		code, _, stderr := gitpeer(t, append([]string{"reconcile", "--once", "--cluster", "alpha", "--repo", t.TempDir(),
			"--state-dir", t.TempDir()}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("reconcile %v: %d %s; want it refused saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
