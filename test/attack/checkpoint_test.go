package attack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// maxCheckpointTries bounds the commits fromCheckpoint checks, newest
// first, for one that is green.
const maxCheckpointTries = 3

// fromCheckpoint runs verify from a checkpoint on the clone at dir, as
// gitpeer verify --checkpoint does, and fails the test unless it fails on
// exactly what the full check (full, with opts) fails on: the checkpoint
// is the newest commit before HEAD on its first-parent line that a full
// check found green (none within maxCheckpointTries: nothing to compare).
// Every attack the harness verifies is so also judged from the last green
// state before it.
func (w *world) fromCheckpoint(dir string, spec *schema.Spec, opts verify.Options, full []verify.Finding) {
	w.t.Helper()
	out, err := testgit.Command(dir, "rev-list", "--first-parent", fmt.Sprintf("--max-count=%d", maxCheckpointTries+1), "HEAD").Output()
	if err != nil {
		w.t.Fatalf("rev-list: %v", err)
	}
	commits := strings.Fields(string(out))
	var cp *verify.Checkpoint
	for _, c := range commits[min(1, len(commits)):] {
		at, ok := specAt(dir, c)
		if !ok {
			continue
		}
		o := opts
		// Without the scan of every blob: it covers every ref whatever
		// the commit, so both runs at HEAD make it alike.
		o.Ref, o.History = c, false
		var next *verify.Checkpoint
		o.OnCheckpoint = func(n *verify.Checkpoint) { next = n }
		found, err := verify.Check(dir, at, o)
		if err != nil {
			w.t.Fatalf("verify at %s: %v", c, err)
		}
		if len(verify.Failing(found, false)) == 0 && next != nil {
			cp = next
			break
		}
	}
	if cp == nil {
		return
	}
	// Through the file, as the CLI keeps it (with its digest).
	cp.Options = "attack"
	data, err := cp.Marshal()
	if err != nil {
		w.t.Fatal(err)
	}
	if cp, err = verify.ParseCheckpoint("checkpoint.json", data); err != nil {
		w.t.Fatal(err)
	}
	o := opts
	o.Checkpoint = cp
	var notes []string
	o.OnNote = func(s string) { notes = append(notes, s) }
	got, err := verify.Check(dir, spec, o)
	if err != nil {
		w.t.Fatalf("verify from the checkpoint %s: %v", cp.Commit, err)
	}
	want, have := failingKeys(full), failingKeys(got)
	if !slices.Equal(want, have) {
		w.t.Errorf("verify from the checkpoint %.12s (notes: %q) fails on\n\t%s\nthe full check on\n\t%s",
			cp.Commit, notes, strings.Join(have, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// failingKeys are the failing findings, each as file, field, reason and
// commit, sorted: the message of a carried finding may say more.
func failingKeys(findings []verify.Finding) []string {
	var out []string
	for _, f := range verify.Failing(findings, false) {
		out = append(out, strings.Join([]string{f.File, f.Field, f.Reason, f.Commit}, " | "))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// specAt parses the spec of commit c of the repository at dir.
func specAt(dir, c string) (*schema.Spec, bool) {
	ct, err := gitobj.OpenCommitTree(dir, c)
	if err != nil {
		return nil, false
	}
	defer ct.Close()
	file, data, err := schema.FindSpec(ct.TreeFS, "")
	if err != nil {
		return nil, false
	}
	spec, err := schema.Parse(file, data)
	return spec, err == nil
}

// TestASpecChangeAfterACheckpointIsJudgedAsInFull: an admin removes slice
// pool from the spec on main, after a green checkpoint. Until beta's next
// pass withdraws it, the grant beta signed for pool is outside the spec:
// the full check names it (SliceNotInSpec), and so must the check from
// the checkpoint (the harness runs both and compares), though verify
// --base, a pull request's check, leaves out a grant its change withdraws.
func TestASpecChangeAfterACheckpointIsJudgedAsInFull(t *testing.T) {
	t.Parallel()
	w := settled(t, grantsSpec)
	if f := verify.Failing(w.verify(), false); len(f) > 0 {
		t.Fatalf("a settled world: %v", f)
	}
	w.attack("admin <admin@example.com>", "spec: drop slice pool\n", func(a *writer) {
		a.edit("peering.cue", `{name: "pool", resources: {cpu: "2"}}, `, "")
	})
	mustFind(t, w.verify(), poolAnswer, reasons.SliceNotInSpec, "")
}
