package gitsync

import "github.com/go-git/go-git/v5/plumbing"

// SignedBySelf lists the commits from since (excluded) to tip, along first
// parents, whose signature verifies with Options.Signing.Key (as
// Options.Applied.ClusterID): commits this cluster's key signed, newest first, as
// hex hashes. ok is false when the answer is not known: no Signing.Key,
// since or tip empty or unreadable, tip not reached from since within
// maxCounted commits (history rewritten, or too long a walk). Both are
// hex hashes of commits in the clone, e.g. Head() at two moments. It may
// be called from within a pass (it takes no lock and reads only Git
// objects).
func (r *Repo) SignedBySelf(since, tip string) (signed []string, ok bool) {
	if r.opts.Signing.Key == nil || since == "" || tip == "" {
		return nil, false
	}
	from, to := plumbing.NewHash(since), plumbing.NewHash(tip)
	for h, n := to, 0; h != from; n++ {
		if n >= maxCounted {
			return nil, false
		}
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return nil, false
		}
		if r.signedBySelf(c) {
			signed = append(signed, h.String())
		}
		if c.NumParents() == 0 {
			return nil, false // since is not an ancestor
		}
		h = c.ParentHashes[0]
	}
	return signed, true
}

// Branch returns Options.Branch, the shared branch passes read (and commit
// to, without Review.Branch).
func (r *Repo) Branch() string { return r.opts.Branch }
