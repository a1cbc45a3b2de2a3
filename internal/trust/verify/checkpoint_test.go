package verify_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// checkpointAt runs the full check of dir's HEAD and returns the
// checkpoint it would record, failing the test unless it is green.
func checkpointAt(t *testing.T, dir string, spec *schema.Spec, opts verify.Options) *verify.Checkpoint {
	t.Helper()
	var cp *verify.Checkpoint
	opts.OnCheckpoint = func(c *verify.Checkpoint) { cp = c }
	findings, err := verify.Check(dir, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if f := verify.Failing(findings, false); len(f) > 0 || cp == nil {
		t.Fatalf("the full check: %d failing findings, checkpoint %v:\n%s", len(f), cp, list(f))
	}
	cp.Options = "test"
	return cp
}

// TestACheckpointEndsAtItsEarliestCertificate: the checkpoint of the
// demo's repo records when the first certificate it checked expires. A
// run from it before then checks only what changed (nothing: the scope
// is empty); a run after it checks everything, says so, and names
// the expired certificate, which a run from the checkpoint would not have
// looked at.
func TestACheckpointEndsAtItsEarliestCertificate(t *testing.T) {
	dir := fullClone(t)
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cp := checkpointAt(t, dir, spec, verify.Options{Now: now, RequireManifests: true})
	if cp.ValidUntil == nil || !cp.ValidUntil.After(now) {
		t.Fatalf("the checkpoint's validUntil is %v, want a time after %v", cp.ValidUntil, now)
	}
	run := func(at time.Time) ([]verify.Finding, []string, *verify.Scope) {
		var notes []string
		var scope *verify.Scope
		findings, err := verify.Check(dir, spec, verify.Options{Now: at, RequireManifests: true, Checkpoint: cp,
			OnNote: func(s string) { notes = append(notes, s) }, OnScope: func(s verify.Scope) { scope = &s }})
		if err != nil {
			t.Fatal(err)
		}
		return findings, notes, scope
	}
	findings, notes, scope := run(cp.ValidUntil.Add(-time.Second))
	if len(findings) != 0 || len(notes) != 0 || scope == nil || len(scope.Clusters) != 0 || scope.All {
		t.Fatalf("from the checkpoint before it ends: notes %q, scope %v, findings:\n%s", notes, scope, list(findings))
	}
	findings, notes, scope = run(cp.ValidUntil.Add(time.Second))
	if scope != nil || len(notes) != 1 || !strings.Contains(notes[0], "expired at "+cp.ValidUntil.Format(time.RFC3339)) {
		t.Fatalf("at its end: notes %q, scope %v", notes, scope)
	}
	expired := false
	for _, f := range findings {
		expired = expired || f.Reason == reasons.InvalidCertificate && strings.Contains(f.Message, "expired")
	}
	if !expired {
		t.Fatalf("at its end, no expired certificate named:\n%s", list(findings))
	}
}

// TestACarriedRepinIsJudgedAgain: a checkpoint carries a key change its
// peers re-pinned before it. A run from it judges the re-pin again on
// the tree checked: here no peer of alpha records it (its repins.yaml is
// not there), so the finding fails, with its commit, as the whole history
// would find it.
func TestACarriedRepinIsJudgedAgain(t *testing.T) {
	dir := fullClone(t)
	spec, _, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cp := checkpointAt(t, dir, spec, verify.Options{RequireManifests: true})
	keyChanged := verify.Finding{File: "clusters/alpha/cluster.yaml", Reason: reasons.KeyChanged, Message: "publicKey changed", Commit: cp.Repository[0],
		Resolved: &verify.Resolution{Reason: verify.ResolutionRepinned, Message: "beta re-pinned it"}}
	cp.Repinned = []verify.Repinned{{Finding: keyChanged, Cluster: "alpha", Fingerprint: "sha256:" + strings.Repeat("ab", 32), Records: map[string]string{"beta": strings.Repeat("0", 40)}}}
	findings, err := verify.Check(dir, spec, verify.Options{RequireManifests: true, Checkpoint: cp})
	if err != nil {
		t.Fatal(err)
	}
	failing := verify.Failing(findings, false)
	if len(failing) != 1 || failing[0].File != keyChanged.File || failing[0].Reason != reasons.KeyChanged || failing[0].Commit != keyChanged.Commit {
		t.Fatalf("want the carried KeyChanged failing, got:\n%s", list(findings))
	}
}

// FuzzParseCheckpoint: a checkpoint file comes from a CI cache. Whatever
// it holds, ParseCheckpoint returns a checkpoint or an error naming the
// file, never panics; what it accepts, Marshal writes back to a file it
// reads as the same checkpoint.
func FuzzParseCheckpoint(f *testing.F) {
	h := strings.Repeat("0123456789", 4)
	good := &verify.Checkpoint{APIVersion: "gitpeer.io/v1alpha1", Kind: verify.CheckpointKind, Repository: []string{h}, Options: "sha256:x", Commit: h,
		Repinned: []verify.Repinned{{Finding: verify.Finding{Reason: reasons.KeyChanged}, Cluster: "a", Fingerprint: "sha256:ab", Records: map[string]string{"b": h}}}}
	data, err := good.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"apiVersion":"gitpeer.io/v1alpha1","kind":"VerifyCheckpoint","repository":["` + h + `"],"options":"o","commit":"` + h + `","validUntil":"2030-01-01T00:00:00Z"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"repository":["` + h + `","` + h + `"]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "cache/checkpoint.json"
		cp, err := verify.ParseCheckpoint(file, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), file+": ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		out, err := cp.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := verify.ParseCheckpoint(file, out)
		if err != nil {
			t.Fatalf("what Marshal wrote does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalTimes(cp), normalTimes(again)) {
			t.Fatalf("round trip:\n%+v\n%+v", cp, again)
		}
		if out2, _ := again.Marshal(); !bytes.Equal(out, out2) {
			t.Fatalf("Marshal is not stable:\n%s\n%s", out, out2)
		}
	})
}

// normalTimes drops the monotonic and location parts JSON does not keep.
func normalTimes(cp *verify.Checkpoint) *verify.Checkpoint {
	c := *cp
	if c.ValidUntil != nil {
		t := c.ValidUntil.UTC().Round(0)
		c.ValidUntil = &t
	}
	return &c
}
