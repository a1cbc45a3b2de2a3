package gitsync

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// A pass's commit is built from the tip's tree and its plan, rewriting
// only the trees on the changed paths (gitobj.Writer), not from go-git's
// index, which costs as much as the whole repo per commit.

// editOf is p as the edit of a tree.
func editOf(p *plan) *gitobj.Edit {
	e := &gitobj.Edit{}
	for _, name := range p.deletes {
		e.Delete(name)
	}
	for name, data := range p.writes {
		e.Write(name, data)
	}
	return e
}

// writeTree stores tree root (zero: empty) with p applied and returns its
// hash (gitobj.Writer.Tree). It refuses, wrapping ErrInvalidChange, a write
// below a symbolic link (as apply does in the worktree), and fails on a
// write below a file or over a directory that p does not delete.
func (r *Repo) writeTree(p *plan, root plumbing.Hash) (plumbing.Hash, error) {
	return treeWithPlan(gitobj.Writer{S: r.repo.Storer}, p, root)
}

// treeWithPlan is writeTree on w's store.
func treeWithPlan(w gitobj.Writer, p *plan, root plumbing.Hash) (plumbing.Hash, error) {
	h, err := w.Tree(root, editOf(p))
	var link *gitobj.LinkParentError
	if errors.As(err, &link) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s", ErrInvalidChange, link)
	}
	return h, err
}

// writeCommit stores a commit of tree on tip (none when zero) with the
// Repo's signature and message, signed with Options.Signing.Signer when set.
func (r *Repo) writeCommit(tree, tip plumbing.Hash, message string) (plumbing.Hash, error) {
	sig := r.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !tip.IsZero() {
		c.ParentHashes = []plumbing.Hash{tip}
	}
	var signer gitobj.Signer
	if r.opts.Signing.Signer != nil {
		signer = r.opts.Signing.Signer
	}
	return gitobj.Writer{S: r.repo.Storer}.Commit(c, signer)
}
