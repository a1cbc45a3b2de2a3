package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// operatorRepo is a peering repo an operator runs: the remote, the state
// dirs under root/state/<id>, and a checkout (check) where verify runs,
// as CI would, on main with the applied branches fetched.
type operatorRepo struct {
	t                   *testing.T
	root, remote, check string
	// flags are added to every reconcile (e.g. --push-branch).
	flags []string
	// pending counts the merges verify found not sealed yet (greenOnMain).
	pending int
}

func newOperatorRepo(t *testing.T, flags ...string) *operatorRepo {
	t.Helper()
	root, remote, _ := peeringRepo(t, spec)
	o := &operatorRepo{t: t, root: root, remote: remote, check: filepath.Join(root, "check"), flags: flags}
	git(t, root, "clone", "-q", remote, o.check)
	return o
}

// pass runs reconcile --once for cluster id and returns its stdout.
func (o *operatorRepo) pass(id string) string {
	o.t.Helper()
	args := append([]string{"reconcile", "--once", "--cluster", id, "--repo", o.remote, "--state-dir", o.state(id)}, o.flags...)
	code, out, stderr := gitpeer(o.t, args...)
	if code != 0 {
		o.t.Fatalf("reconcile --once --cluster %s: exit %d\n%s%s", id, code, out, stderr)
	}
	return out
}

func (o *operatorRepo) state(id string) string { return filepath.Join(o.root, "state", id) }

// fetch brings the check clone to the remote's main, with every branch
// (review and applied) as origin/<branch>.
func (o *operatorRepo) fetch() {
	o.t.Helper()
	git(o.t, o.check, "fetch", "-q", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*")
	git(o.t, o.check, "checkout", "-q", "--detach", "origin/main")
}

// verify runs gitpeer verify with args on the check clone at main.
func (o *operatorRepo) verify(args ...string) (int, string, string) {
	o.t.Helper()
	o.fetch()
	return gitpeer(o.t, append(append([]string{"verify"}, args...), o.check)...)
}

// push commits what change did to the check clone at main, as a person
// with push access, and pushes it.
func (o *operatorRepo) push(message string, change func(dir string)) string {
	o.t.Helper()
	o.fetch()
	change(o.check)
	git(o.t, o.check, "-c", "user.name=admin", "-c", "user.email=admin@example.com", "commit", "-qam", message)
	git(o.t, o.check, "push", "-q", "origin", "HEAD:main")
	return strings.TrimSpace(git(o.t, o.check, "rev-parse", "HEAD"))
}

// converge runs rounds of passes, providers first.
func (o *operatorRepo) converge(rounds int) {
	o.t.Helper()
	for range rounds {
		o.pass("beta")
		o.pass("alpha")
	}
}

// TestVerifyResolvesARepairedHandEdit: someone edits beta's status.yaml by
// hand on main. verify names the UnsignedChange and fails; once beta's
// reconciler has repaired it, verify lists it as resolved, by the commit
// that signed the repair, and exits 0 (text, json); --strict still fails
// on it.
func TestVerifyResolvesARepairedHandEdit(t *testing.T) {
	o := newOperatorRepo(t)
	o.converge(3)
	const status = "clusters/beta/status.yaml"
	edit := o.push("beta: note", func(dir string) {
		p := filepath.Join(dir, status)
		write(t, p, string(readFile(t, p))+"# checked by hand\n")
	})
	code, out, _ := o.verify()
	if code != 1 || !strings.Contains(out, status+": not listed with this content") || !strings.Contains(out, "(UnsignedChange, commit "+edit[:12]+")") {
		t.Fatalf("verify after a hand edit: exit %d\n%s", code, out)
	}
	o.pass("beta")
	code, out, _ = o.verify()
	if code != 0 || !strings.Contains(out, "resolved (not failing the check; --strict fails on them):\n  "+status+": ") ||
		!strings.Contains(out, "(UnsignedChange, commit "+edit[:12]+"); resolved: at ") || !strings.Contains(out, "(Repaired, commit ") ||
		!strings.Contains(out, "every check holds (1 peerings); 1 findings resolved") {
		t.Fatalf("verify after beta repaired the hand edit: exit %d\n%s", code, out)
	}
	code, out, _ = o.verify("-o", "json")
	var list findingList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 0 || len(list.Resolved) != 1 ||
		list.Resolved[0].Commit != edit || list.Resolved[0].Resolved == nil || list.Resolved[0].Resolved.Reason != "Repaired" || list.Resolved[0].Resolved.Commit == "" {
		t.Fatalf("verify -o json: exit %d (%v)\n%s", code, err, out)
	}
	if code, out, _ := o.verify("--strict"); code != 1 || !strings.Contains(out, "resolved (failing the check: --strict):") {
		t.Fatalf("verify --strict: exit %d\n%s", code, out)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestVerifyResolvesADocumentedKeyRecovery: alpha lost its state dir; its
// admin runs gitpeer init on a new one and pushes the new cluster.yaml, as
// docs/trust.md says. verify names the KeyChanged and fails, as it would
// for a key swap; beta's admin checks the fingerprint and re-pins it
// (gitpeer trust), beta's reconciler records that in repins.yaml, signed,
// and from then on verify lists the KeyChanged as resolved and exits 0;
// --strict still fails. A re-pin of another fingerprint resolves nothing,
// nor does the re-pin of a key published again after a later rotation.
func TestVerifyResolvesADocumentedKeyRecovery(t *testing.T) {
	o := newOperatorRepo(t, "--key-rollover-wait", "0")
	o.converge(3)
	lost := filepath.Join(o.root, "state", "alpha-lost")
	if err := os.Rename(o.state("alpha"), lost); err != nil {
		t.Fatal(err)
	}
	var fp string
	recovery := o.push("alpha: new key after losing the state dir", func(dir string) {
		code, _, stderr := gitpeer(t, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443", "--state-dir", o.state("alpha"), "--repo", dir)
		if code != 0 {
			t.Fatalf("init: %d %s", code, stderr)
		}
		_, rest, _ := strings.Cut(stderr, "public key fingerprint: ")
		fp, _, _ = strings.Cut(rest, "\n")
		git(t, dir, "add", "-A")
	})
	code, out, _ := o.verify()
	if code != 1 || !strings.Contains(out, "clusters/alpha/cluster.yaml: ") || !strings.Contains(out, "(KeyChanged, commit "+recovery[:12]+")") {
		t.Fatalf("verify after the new key: exit %d\n%s", code, out)
	}
	trust := func(fingerprint string) {
		t.Helper()
		if code, _, stderr := gitpeer(t, "trust", "--cluster", "beta", "--peer", "alpha", "--fingerprint", fingerprint, "--state-dir", o.state("beta")); code != 0 {
			t.Fatalf("trust: %d %s", code, stderr)
		}
	}
	// The wrong fingerprint: beta refuses the key, and records nothing.
	trust("sha256:" + strings.Repeat("ab", 32))
	o.converge(1)
	if code, out, _ := o.verify(); code != 1 || !strings.Contains(out, "(KeyChanged, commit "+recovery[:12]+")") || strings.Contains(out, "Repinned") {
		t.Fatalf("verify after a re-pin of another key: exit %d\n%s", code, out)
	}
	trust(fp)
	o.converge(3)
	code, out, _ = o.verify()
	if code != 0 || !strings.Contains(out, "(KeyChanged, commit "+recovery[:12]+"); resolved: beta re-pinned alpha's key "+fp) ||
		!strings.Contains(out, "as clusters/beta/repins.yaml signed (Repinned, commit ") {
		t.Fatalf("verify after beta re-pinned alpha's new key: exit %d\n%s", code, out)
	}
	if code, _, _ := o.verify("--strict"); code != 1 {
		t.Fatalf("verify --strict after the re-pin: exit %d", code)
	}

	// alpha then rotates to a third key, with a statement. A writer who
	// kept the recovered key republishes it (its cluster.yaml from the
	// recovery commit): beta's record re-pinned that very key, but before
	// this change, so it resolves nothing: a signature proves who, never
	// when.
	o.rotate("alpha")
	o.converge(4)
	if code, out, stderr := o.verify(); code != 0 {
		t.Fatalf("verify after alpha's rotation: exit %d\n%s%s", code, out, stderr)
	}
	replay := o.push("alpha: back to the recovered key", func(dir string) {
		git(t, dir, "checkout", recovery, "--", "clusters/alpha/cluster.yaml")
	})
	code, out, _ = o.verify()
	if code != 1 || !strings.Contains(out, "(KeyChanged, commit "+replay[:12]+")\n") {
		t.Fatalf("verify after the recovered key was published again: exit %d; want its KeyChanged, not resolved\n%s", code, out)
	}
}
