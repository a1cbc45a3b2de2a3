package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// rotate stages a new key for cluster id (gitpeer rotate-key).
func (o *operatorRepo) rotate(id string) {
	o.t.Helper()
	if code, _, stderr := gitpeer(o.t, "rotate-key", "--cluster", id, "--state-dir", o.state(id), "--repo", o.remote); code != 0 {
		o.t.Fatalf("rotate-key --cluster %s: exit %d\n%s", id, code, stderr)
	}
}

// mustVerify fails unless verify on main exits 0, and returns its output.
func (o *operatorRepo) mustVerify(when string, args ...string) string {
	o.t.Helper()
	code, out, stderr := o.verify(args...)
	if code != 0 {
		o.t.Fatalf("%s: verify %s: exit %d\n%s%s", when, strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// TestVerifyStaysGreenThroughAKeyRotation rolls alpha's key (the consumer),
// then beta's (the provider), without review branches, with verify run on
// main (applied branches fetched) after every pass, and verify --base on
// what each pass pushed: it exits 0 at every step. While beta still holds alpha's old grant, or alpha still applies
// beta's Identity for its old key, verify lists those files as resolved
// (KeyRotationInProgress) and --strict fails on them; once both answered,
// nothing is left, --strict included.
func TestVerifyStaysGreenThroughAKeyRotation(t *testing.T) {
	o := newOperatorRepo(t, "--key-rollover-wait", "0")
	o.converge(3)
	o.mustVerify("settled", "--strict")
	for _, id := range []string{"alpha", "beta"} {
		o.rotate(id)
		inProgress := 0
		for i := range 3 {
			for _, pass := range []string{"beta", "alpha"} {
				o.fetch()
				before := strings.TrimSpace(git(t, o.check, "rev-parse", "origin/main"))
				o.pass(pass)
				when := "rotation of " + id + ", round " + string(rune('1'+i)) + ", after " + pass + "'s pass"
				// What the pass pushed passes the pull-request check too.
				o.mustVerify(when, "--base", before)
				if out := o.mustVerify(when); strings.Contains(out, "(KeyRotationInProgress, commit ") {
					inProgress++
					if code, _, _ := o.verify("--strict"); code != 1 {
						t.Fatalf("%s: verify --strict exits %d on a rotation in progress\n%s", when, code, out)
					}
				}
			}
		}
		if id == "alpha" && inProgress == 0 {
			t.Error("verify never said alpha's rotation was in progress: the test no longer sees the window it is about")
		}
		o.mustVerify("after the rotation of "+id, "--strict")
	}
}

// proposal is cluster id's open proposal as origin/gitpeer/review/<id> in
// the check clone, "" when it has none.
func (o *operatorRepo) proposal(id string) string {
	o.t.Helper()
	o.fetch()
	out, err := testgit.Command(o.check, "rev-parse", "--verify", "-q", "origin/gitpeer/review/"+id).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// merge merges cluster id's proposal into main as a maintainer would (a
// merge commit), after verify --base origin/main passed on it, as the
// required check of examples/ci does.
func (o *operatorRepo) merge(id string) bool {
	o.t.Helper()
	head := o.proposal(id)
	if head == "" {
		return false
	}
	git(o.t, o.check, "checkout", "-q", "--detach", head)
	if code, out, stderr := gitpeer(o.t, "verify", "--base", "origin/main", o.check); code != 0 {
		o.t.Fatalf("verify --base origin/main on %s's proposal: exit %d\n%s%s", id, code, out, stderr)
	}
	git(o.t, o.check, "checkout", "-q", "--detach", "origin/main")
	git(o.t, o.check, "-c", "user.name=maintainer", "-c", "user.email=maintainer@example.com", "merge", "-q", "--no-ff", "--no-edit", head)
	git(o.t, o.check, "push", "-q", "origin", "HEAD:main")
	return true
}

// greenOnMain fails unless verify on main exits 0, and counts in
// o.pending the merges it reports as not sealed yet: a StaleSeal resolved
// SealPending, since every commit of the cluster after the seal names it
// as the seal in force (docs/trust.md, "What verify checks of it").
func (o *operatorRepo) greenOnMain(when string) {
	o.t.Helper()
	code, out, stderr := o.verify("-o", "json")
	var list findingList
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		o.t.Fatalf("%s: verify -o json: exit %d (%v)\n%s%s", when, code, err, out, stderr)
	}
	for _, f := range list.Resolved {
		if f.Reason == "StaleSeal" && f.Resolved != nil && f.Resolved.Reason == "SealPending" {
			o.pending++
		}
	}
}

// TestVerifyStaysGreenThroughAKeyRotationUnderReview rolls alpha's key with
// review branches (--push-branch), a maintainer merging each proposal once
// verify --base origin/main passed on it. Every proposal passes; verify
// on main exits 0 at every step, a merge its cluster has not sealed yet
// included (listed as resolved, SealPending, which --strict fails on), and
// finds nothing once every merge is sealed. alpha's backend keeps
// its key while the switch is only proposed (its seals stay signed by the
// key main publishes) and takes up the new one in the first pass after
// the merge.
// With --review-scope applied, the handshake artifacts the switch signs
// with the new key wait for the merge with it.
func TestVerifyStaysGreenThroughAKeyRotationUnderReview(t *testing.T) {
	for _, scope := range []string{"all", "applied"} {
		t.Run("review-scope "+scope, func(t *testing.T) { rotateUnderReview(t, scope) })
	}
}

func rotateUnderReview(t *testing.T, scope string) {
	o := newOperatorRepo(t, "--key-rollover-wait", "0", "--push-branch", "gitpeer/review/{cluster}", "--review-scope", scope)
	round := func(when string) {
		t.Helper()
		for _, id := range []string{"beta", "alpha"} {
			o.pass(id)
			o.greenOnMain(when + ", after " + id + "'s pass")
			if o.merge(id) {
				o.greenOnMain(when + ", after the merge of " + id + "'s proposal")
			}
		}
	}
	for range 4 {
		round("setup")
	}
	key := string(readFile(t, filepath.Join(o.state("alpha"), "cluster.key")))
	o.rotate("alpha")
	proposed := false
	for i := range 5 {
		when := fmt.Sprintf("rotation, round %d", i+1)
		for _, id := range []string{"beta", "alpha"} {
			out := o.pass(id)
			o.greenOnMain(when + ", after " + id + "'s pass")
			if id == "alpha" && strings.Contains(out, "the switch is proposed for review") {
				proposed = true
				if got := string(readFile(t, filepath.Join(o.state("alpha"), "cluster.key"))); got != key {
					t.Fatalf("%s: alpha's backend switched keys on a proposal nobody merged", when)
				}
			}
			if o.merge(id) {
				o.greenOnMain(when + ", after the merge of " + id + "'s proposal")
			}
		}
	}
	if !proposed {
		t.Fatal("alpha never proposed the switch")
	}
	if got := string(readFile(t, filepath.Join(o.state("alpha"), "cluster.key"))); got == key {
		t.Fatal("alpha's backend never switched keys after the merge")
	}
	if o.pending == 0 {
		t.Error("verify never saw a merge before its cluster sealed it: the test no longer checks that moment")
	}
	o.converge(1) // seals the last merges
	o.mustVerify("after the rotation, every merge sealed", "--strict")
}
