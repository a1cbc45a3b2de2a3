package verify_test

import (
	"crypto"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
)

// seal points gitpeer/applied/<id> at a seal of main's commit rev, signed
// with key by signer (nil: unsigned), as gitsync makes one: a tree of
// clusters/<id>/ alone less its inbox, rev its only parent. extra, when
// set, changes the tree before it is written. It returns the seal's hash.
func (r *histRepo) seal(id, rev string, key crypto.Signer, extra func(cluster *object.Tree) *object.Tree) string {
	r.t.Helper()
	parent, err := r.repo.CommitObject(plumbing.NewHash(r.git("rev-parse", rev)))
	if err != nil {
		r.t.Fatal(err)
	}
	tree, err := parent.Tree()
	if err != nil {
		r.t.Fatal(err)
	}
	sub, err := tree.Tree(layout.ClusterPath(id))
	if err != nil {
		r.t.Fatal(err)
	}
	own := &object.Tree{}
	for _, e := range sub.Entries {
		if e.Name != layout.InboxDir {
			own.Entries = append(own.Entries, e)
		}
	}
	if extra != nil {
		own = extra(own)
	}
	w := gitobj.Writer{S: r.repo.Storer}
	h, err := w.StoreTree(own)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, name := range []string{id, layout.ClustersDir} {
		if h, err = w.StoreTree(&object.Tree{Entries: []object.TreeEntry{{Name: name, Mode: filemode.Dir, Hash: h}}}); err != nil {
			r.t.Fatal(err)
		}
	}
	r.when = r.when.Add(time.Minute)
	sig := object.Signature{Name: "gitpeer (" + id + ")", Email: id + "@gitpeer.invalid", When: r.when}
	c := &object.Commit{Author: sig, Committer: sig, Message: id + ": seal clusters/" + id + "\n", TreeHash: h, ParentHashes: []plumbing.Hash{parent.Hash}}
	var s git.Signer
	if key != nil {
		s = signer(r.t, key)
	}
	sh, err := w.Commit(c, s)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(layout.AppliedBranch(id)), sh)); err != nil {
		r.t.Fatal(err)
	}
	return sh.String()
}

// pass is id's reconciler committing a change to its own tree, signed.
func (r *histRepo) pass(id, n string) string {
	r.t.Helper()
	r.write(layout.ClusterPath(id, layout.StatusFile), "n: "+n+"\n")
	r.sign(id, layout.ClusterPath(id))
	return r.commitWith(id+": pass "+n, signer(r.t, r.keys[id]))
}

// sealFindings are the findings of the applied branches.
func sealFindings(f []verify.Finding) []verify.Finding {
	var out []verify.Finding
	for _, x := range f {
		if x.Reason == reasons.StaleSeal || x.Reason == reasons.InvalidSeal {
			out = append(out, x)
		}
	}
	return out
}

func TestAppliedBranches(t *testing.T) {
	branch := layout.AppliedBranch("alpha")
	for _, tc := range []struct {
		name string
		// build makes the repo and returns the finding wanted ("" for
		// none) and the head it names.
		build func(t *testing.T, r *histRepo) (reason, head string)
	}{
		{"a seal of main's tip", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			return "", r.seal("alpha", "HEAD", r.keys["alpha"], nil)
		}},
		{"a seal that holds main's tree, made before commits that leave alpha's tree alone", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			s := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			r.pass("beta", "1")
			r.write("clusters/alpha/inbox/beta/nonce.yaml", "n: 1\n")
			r.sign("beta", "clusters/alpha/inbox/beta")
			r.commitWith("beta: nonce", signer(t, r.keys["beta"]))
			r.write("docs/README.md", "x\n")
			r.commit("docs")
			return "", s
		}},
		{"an older seal, after alpha signed a change the branch still holds", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			old := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			r.pass("alpha", "2")
			r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			// A writer points the branch back at the old seal.
			r.git("update-ref", "refs/heads/"+branch, old)
			return reasons.StaleSeal, old
		}},
		{"alpha's pass pushed to main and its seal is not pushed yet", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			s := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			r.pass("alpha", "2")
			return reasons.StaleSeal, s
		}},
		{"a hand edit of alpha's tree that alpha's next pass repaired, its seal kept", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			s := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			status := layout.ClusterPath("alpha", layout.StatusFile)
			saved := r.git("show", "HEAD:"+status)
			r.write(status, "n: hand edit\n")
			r.commit("edit alpha's status")
			// alpha puts back what it signed: same manifest, same seal.
			r.write(status, saved+"\n")
			r.commitWith("alpha: repair", signer(t, r.keys["alpha"]))
			return "", s
		}},
		{"a writer's unsigned change to alpha's tree after the seal", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			s := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			r.write("clusters/alpha/liqo/beta/clusterrolebinding-evil.yaml", "kind: ClusterRoleBinding\n")
			r.commit("add a binding")
			return "", s
		}},
		{"an old commit of alpha's merged after its newer seal", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			r.git("checkout", "-q", "-b", "proposal")
			r.write("clusters/alpha/liqo/beta/rolebinding-x.yaml", "kind: RoleBinding\n")
			r.sign("alpha", "clusters/alpha")
			r.commitWith("alpha: proposal", signer(t, r.keys["alpha"]))
			r.git("checkout", "-q", "main")
			r.write("docs/README.md", "x\n")
			r.commit("docs")
			s := r.seal("alpha", "HEAD", r.keys["alpha"], nil)
			r.git("merge", "-q", "--no-ff", "-m", "merge an old proposal", "proposal")
			return "", s // dated before the seal: not evidence of a newer one
		}},
		{"a head no cluster signed", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			return reasons.InvalidSeal, r.seal("alpha", "HEAD", nil, nil)
		}},
		{"a head beta signed", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			return reasons.InvalidSeal, r.seal("alpha", "HEAD", r.keys["beta"], nil)
		}},
		{"main's tip itself, signed by alpha", func(t *testing.T, r *histRepo) (string, string) {
			h := r.pass("alpha", "1")
			r.git("update-ref", "refs/heads/"+branch, h)
			return reasons.InvalidSeal, h
		}},
		{"a seal holding a dot-file", func(t *testing.T, r *histRepo) (string, string) {
			r.pass("alpha", "1")
			blob := r.git("hash-object", "-w", "--stdin")
			return reasons.InvalidSeal, r.seal("alpha", "HEAD", r.keys["alpha"], func(own *object.Tree) *object.Tree {
				own.Entries = append([]object.TreeEntry{{Name: ".sourceignore", Mode: filemode.Regular, Hash: plumbing.NewHash(blob)}}, own.Entries...)
				return own
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHistRepo(t)
			reason, head := tc.build(t, r)
			var told []string
			f := sealFindings(r.history(verify.Options{RequireManifests: true, OnApplied: func(refs []string) { told = refs }}))
			if strings.Join(told, ",") != branch {
				t.Errorf("OnApplied was told %v, want %s", told, branch)
			}
			switch {
			case reason == "" && len(f) > 0:
				t.Fatalf("want no finding of the applied branch:\n%s", list(f))
			case reason != "" && (len(f) != 1 || f[0].Reason != reason || f[0].File != branch || f[0].Commit != head):
				t.Fatalf("want one %s on %s for %s:\n%s", reason, branch, head, list(f))
			}
			if reason == "" {
				return
			}
			// The pull request's check judges no applied branch.
			based := sealFindings(r.history(verify.Options{RequireManifests: true, Base: "HEAD~1"}))
			if len(based) > 0 {
				t.Fatalf("with Base:\n%s", list(based))
			}
		})
	}
}

// TestAStaleSealIsNotJudgedAgainstAnOlderCommit: verify --ref on a commit
// older than the seal's parent says nothing of the seal.
func TestAStaleSealIsNotJudgedAgainstAnOlderCommit(t *testing.T) {
	r := newHistRepo(t)
	old := r.pass("alpha", "1")
	r.pass("alpha", "2")
	r.seal("alpha", "HEAD", r.keys["alpha"], nil)
	if f := sealFindings(r.history(verify.Options{RequireManifests: true, Ref: old})); len(f) > 0 {
		t.Fatalf("at an older commit:\n%s", list(f))
	}
}
