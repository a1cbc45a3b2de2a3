package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/verify"
)

// readCheckpointFile parses the checkpoint file at path.
func readCheckpointFile(t *testing.T, path string) *verify.Checkpoint {
	t.Helper()
	cp, err := verify.ParseCheckpoint(path, readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestVerifyFromACheckpoint: CI keeps a checkpoint file between runs. The
// first run checks everything, finds it green and records main's commit;
// the next judges only what came since (stderr names the scope) and still
// names a hand edit made since in an inbox, without advancing the file;
// once beta's reconciler repaired it, the run is green and the file
// advances. A hand edit of beta's own tree, which its seal (older than the
// checkpoint) no longer holds, makes the run a full one, said on stderr,
// that names it too. A file
// of other options, of another repository, or that does not parse is not
// used (a note, a full run); a history rewritten under the checkpoint is a
// CheckpointNotAncestor finding that names the file.
func TestVerifyFromACheckpoint(t *testing.T) {
	o := newOperatorRepo(t)
	o.converge(3)
	file := filepath.Join(o.root, "cache", "checkpoint.json")
	head := func() string { return strings.TrimSpace(git(t, o.check, "rev-parse", "HEAD")) }

	code, out, stderr := o.verify("--checkpoint", file)
	if code != 0 || !strings.Contains(stderr, "no checkpoint at "+file+" yet") || !strings.Contains(stderr, "checkpoint "+file+": ") {
		t.Fatalf("the first run: exit %d\n%s%s", code, out, stderr)
	}
	first := head()
	if cp := readCheckpointFile(t, file); cp.Commit != first || !strings.HasPrefix(cp.Options, "sha256:") || len(cp.Repository) != 1 {
		t.Fatalf("the checkpoint recorded: %+v, want commit %s", cp, first)
	}

	// A hand edit of what beta sends alpha (in alpha's inbox, which no
	// seal holds).
	const nonce = "clusters/alpha/inbox/beta/nonce.yaml"
	edit := o.push("beta: note", func(dir string) {
		p := filepath.Join(dir, nonce)
		write(t, p, string(readFile(t, p))+"# checked by hand\n")
	})
	code, out, stderr = o.verify("--checkpoint", file)
	if code != 1 || !strings.Contains(out, nonce+": not listed with this content") || !strings.Contains(out, "(UnsignedChange, commit "+edit[:12]+")") ||
		!strings.Contains(stderr, "checked 2 of 2 clusters: those the commits since the checkpoint "+first[:12]+" touched") {
		t.Fatalf("a hand edit after the checkpoint: exit %d\n%s%s", code, out, stderr)
	}
	if cp := readCheckpointFile(t, file); cp.Commit != first {
		t.Fatalf("a failing run moved the checkpoint to %s", cp.Commit)
	}

	o.pass("beta")
	code, out, stderr = o.verify("--checkpoint", file)
	if code != 0 || !strings.Contains(stderr, "recorded, the next run starts from it") {
		t.Fatalf("after beta repaired it: exit %d\n%s%s", code, out, stderr)
	}
	second := head()
	if cp := readCheckpointFile(t, file); cp.Commit != second || second == first {
		t.Fatalf("the checkpoint is %s, want %s", cp.Commit, second)
	}

	// A hand edit of beta's own tree: beta's seal, older than the
	// checkpoint, no longer holds the branch's tree, and whether it is
	// stale is the whole history's: everything is checked, and said.
	const status = "clusters/beta/status.yaml"
	edit = o.push("beta: note", func(dir string) {
		p := filepath.Join(dir, status)
		write(t, p, string(readFile(t, p))+"# checked by hand\n")
	})
	code, out, stderr = o.verify("--checkpoint", file)
	if code != 1 || !strings.Contains(out, "(UnsignedChange, commit "+edit[:12]+")") || strings.Contains(stderr, "clusters: those the commits since") ||
		!strings.Contains(stderr, "an applied branch's seal is older than the checkpoint and does not hold the tree checked") {
		t.Fatalf("a hand edit of beta's tree after the checkpoint: exit %d\n%s%s", code, out, stderr)
	}
	o.pass("beta")
	if code, out, stderr = o.verify("--checkpoint", file); code != 0 {
		t.Fatalf("after beta repaired it: exit %d\n%s%s", code, out, stderr)
	}
	second = head()

	// Another option, another verdict: not used.
	code, _, stderr = o.verify("--checkpoint", file, "--strict")
	if code != 1 || !strings.Contains(stderr, "recorded by another gitpeer version or with other options") {
		t.Fatalf("--strict with a checkpoint of the default options: exit %d\n%s", code, stderr)
	}
	// Another repository's.
	cp := readCheckpointFile(t, file)
	cp.Repository = []string{strings.Repeat("a", 40)}
	data, _ := cp.Marshal()
	write(t, file, string(data))
	code, _, stderr = o.verify("--checkpoint", file)
	if code != 0 || !strings.Contains(stderr, "the checkpoint is of another repository") || strings.Contains(stderr, "checked 0 of") {
		t.Fatalf("a checkpoint of another repository: exit %d\n%s", code, stderr)
	}
	// A file that is not a checkpoint: a full run, and a good one written.
	write(t, file, `{"apiVersion": "gitpeer.io/v1alpha1", "kind": "VerifyCheckpoint", "options": "x", "commit": "HEAD"}`)
	code, _, stderr = o.verify("--checkpoint", file)
	if code != 0 || !strings.Contains(stderr, "commit: \"HEAD\" is not a full commit hash: not used") {
		t.Fatalf("a file that is not a checkpoint: exit %d\n%s", code, stderr)
	}
	if cp := readCheckpointFile(t, file); cp.Commit != second {
		t.Fatalf("the checkpoint is %s, want %s", cp.Commit, second)
	}

	// main rewritten under the checkpoint: a finding naming the file.
	git(t, o.check, "push", "-q", "-f", "origin", first+":refs/heads/main")
	code, out, _ = o.verify("--checkpoint", file, "-o", "json")
	var list findingList
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 1 {
		t.Fatalf("a rewritten main: exit %d (%v)\n%s", code, err, out)
	}
	found := false
	for _, f := range list.Items {
		found = found || f.Reason == "CheckpointNotAncestor" && f.File == file && f.Commit == second
	}
	if !found {
		t.Fatalf("no CheckpointNotAncestor naming %s and %s:\n%s", file, second, out)
	}
	if cp := readCheckpointFile(t, file); cp.Commit != second {
		t.Fatalf("a rewrite moved the checkpoint to %s", cp.Commit)
	}
	// Once the rewrite is reviewed, deleting the file accepts it.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := o.verify("--checkpoint", file); code != 0 {
		t.Fatalf("after deleting the checkpoint: exit %d\n%s%s", code, out, stderr)
	}
}

// TestVerifyCheckpointGoesWithoutBase: --checkpoint and --base are
// refused together (exit 2), and so is --checkpoint on a directory that
// is not a Git repository (nothing to record), or naming a directory.
func TestVerifyCheckpointGoesWithoutBase(t *testing.T) {
	code, _, stderr := gitpeer(t, "verify", "--checkpoint", filepath.Join(t.TempDir(), "c"), "--base", "main", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "--checkpoint goes without --base") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	dir := writeSpec(t, spec)
	code, _, stderr = gitpeer(t, "verify", "--checkpoint", filepath.Join(t.TempDir(), "c"), dir)
	if code != 2 || !strings.Contains(stderr, "is not a Git repository with a commit") {
		t.Fatalf("a directory: exit %d\n%s", code, stderr)
	}
	// A directory given as the checkpoint file, where a cache path
	// was meant: refused before anything is checked, with a file to give.
	cache := t.TempDir()
	code, _, stderr = gitpeer(t, "verify", "--checkpoint", cache, dir)
	if code != 2 || !strings.Contains(stderr, "--checkpoint "+cache+" is a directory") || !strings.Contains(stderr, filepath.Join(cache, "gitpeer-verify.checkpoint")) {
		t.Fatalf("a directory as the checkpoint: exit %d\n%s", code, stderr)
	}
}
