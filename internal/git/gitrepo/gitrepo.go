// Package gitrepo opens Git repositories for reading their whole history
// with go-git.
package gitrepo

import (
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Open opens the Git repository at dir (a checkout, a linked worktree made
// by git worktree add, or a bare repository) for reading many objects: its
// pack files stay open and objects are cached, where go-git by default
// reopens a pack file for every object it reads (about 25 times slower over
// a long history). done releases the files. An error wraps
// git.ErrRepositoryNotExists when dir is not a repository.
func Open(dir string) (repo *git.Repository, done func(), err error) {
	repo, err = git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, nil, err
	}
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, func() {}, nil
	}
	fast := filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true, ExclusiveAccess: true})
	r, err := git.Open(fast, nil)
	if err != nil {
		return repo, func() {}, nil
	}
	return r, func() { _ = fast.Close() }, nil
}
