package main

import (
	"strings"
	"testing"
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
// main (applied branches fetched) after every pass: it exits 0 at every
// step. While beta still holds alpha's old grant, or alpha still applies
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
				o.pass(pass)
				when := "rotation of " + id + ", round " + string(rune('1'+i)) + ", after " + pass + "'s pass"
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
