package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitpeer/gitpeer/gitauth"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/schema"
)

// repoSource is where a read-only command (status, plan) reads a peering
// repo: a checkout as it stands, or a fresh clone of a repository.
type repoSource struct {
	// Dir is the tree to read: the checkout, or the clone.
	Dir string
	// Cloned is true when Dir is a clone that Close removes.
	Cloned bool
}

// Close removes a clone; a checkout is left alone.
func (s *repoSource) Close() error {
	if !s.Cloned {
		return nil
	}
	return os.RemoveAll(filepath.Dir(s.Dir))
}

// openSource resolves target, the [DIR|URL] of a read-only command:
//
//   - a directory holding a peering spec is a checkout, read as it stands
//     (uncommitted changes included); --git-credentials do not apply;
//   - anything else (an https://, ssh:// or file:// URL, scp-like
//     user@host:path, or a local bare repository) is cloned, branch at its
//     tip, into a temporary directory, authenticating with the files of
//     credentials as reconcile does (gitauth); nothing is ever pushed.
func openSource(ctx context.Context, target, branch, credentials string) (*repoSource, error) {
	if hasSpec(target) {
		if credentials != "" {
			return nil, fmt.Errorf("--git-credentials applies to a repository URL, and %s is a checkout", target)
		}
		return &repoSource{Dir: target}, nil
	}
	if !looksLikeRepo(target) {
		return nil, fmt.Errorf("%s: no peering spec (want one of %s) and not a Git repository or URL",
			target, strings.Join(schema.SpecFiles, ", "))
	}
	creds, err := gitauth.New(credentials, target)
	if err != nil {
		return nil, fmt.Errorf("--git-credentials: %w", err) // err names the URL, redacted
	}
	tmp, err := os.MkdirTemp("", "gitpeer-clone-")
	if err != nil {
		return nil, err
	}
	src := &repoSource{Dir: filepath.Join(tmp, "repo"), Cloned: true}
	// Author is required by gitsync and never used: this Repo makes no
	// commit.
	_, err = gitsync.Open(ctx, gitsync.Options{URL: target, Dir: src.Dir, Branch: branch, BranchMustExist: true, Credentials: creds,
		Author: gitsync.Signature{Name: "gitpeer (read-only)", Email: "read-only@gitpeer.invalid"}})
	if err != nil {
		src.Close()
		return nil, branchFlagError(err)
	}
	if !hasSpec(src.Dir) {
		src.Close()
		return nil, fmt.Errorf("%s: branch %s has no peering spec (want one of %s)", target, branch, strings.Join(schema.SpecFiles, ", "))
	}
	return src, nil
}

// hasSpec reports whether dir holds a spec file.
func hasSpec(dir string) bool {
	for _, name := range schema.SpecFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// looksLikeRepo reports whether target names a repository to clone: a
// URL, scp-like user@host:path, or a local Git repository (bare or not).
func looksLikeRepo(target string) bool {
	if strings.Contains(target, "://") {
		return true
	}
	if at, colon := strings.Index(target, "@"), strings.Index(target, ":"); at > 0 && colon > at && !strings.Contains(target[:colon], "/") {
		return true
	}
	for _, marker := range []string{"HEAD", filepath.Join(".git", "HEAD")} {
		if _, err := os.Stat(filepath.Join(target, marker)); err == nil {
			return true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return false
}
