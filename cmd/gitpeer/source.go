package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// committedTreeHelp is the paragraph of every reader's help that says what
// it reads.
const committedTreeHelp = `DIR (default ".") is read as the reconcilers read the repo: when it is a
Git repository (a checkout's root, a linked worktree or a bare
repository), the tree of the commit --ref names (default HEAD) is read
from Git objects, never the worktree, so .gitattributes (ident, eol, text,
filters), a smudge filter or an uncommitted edit change nothing of what is
read (gitpeer validate FILE checks an edit as on disk); a note on stderr
says when the worktree's spec is not the one read. Any other directory (an
exported tree, a folder inside a checkout) is read as it stands: no
attribute applies there, --ref does not either, and it is not what a
reconciler reads.`

// refFlagUsage is the help of --ref, the same for every reader.
const refFlagUsage = "revision of the Git repository to read: a branch, tag or commit (default HEAD); its committed tree is read, never the worktree"

// repoSource is what a read-only command (validate, verify, plan, status,
// codeowners) reads: a commit's tree read from Git objects, as the
// reconcilers read the tip, or a plain directory that is not a Git
// repository, read as it stands.
type repoSource struct {
	// Dir is the checkout, the clone or the plain directory: the spec's
	// path, and every file named in messages, are under it.
	Dir string
	// Tree is what the command reads: the commit's tree (a
	// gitobj.TreeFS), or the plain directory (a layout.Tree, which
	// follows no symbolic link).
	Tree fs.FS
	// Commit is the full hash of the commit read, and Rev the revision it
	// was asked as; both "" for a plain directory.
	Commit, Rev string
	// Cloned is true when Dir is a clone that Close removes.
	Cloned bool

	tree *gitobj.CommitTree
}

// Close releases the repository and removes a clone; a checkout is left
// alone.
func (s *repoSource) Close() error {
	if s.tree != nil {
		s.tree.Close()
	}
	if !s.Cloned {
		return nil
	}
	return os.RemoveAll(filepath.Dir(s.Dir))
}

// Where names what is read in messages: "DIR at REV (commit)" for a
// commit, "DIR" for a plain directory.
func (s *repoSource) Where() string {
	if s.Commit == "" {
		return s.Dir
	}
	return fmt.Sprintf("%s at %s (%s)", s.Dir, s.Rev, shortCommit(s.Commit))
}

func shortCommit(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// openLocal opens dir, the [DIR] of a reader, at rev ("" for HEAD), which
// errors name as given by flag (--ref, --base):
//
//   - a Git repository (a checkout's root, a linked worktree, a bare
//     repository) is read at rev from its Git objects: what was committed,
//     as every reconciler reads it, whatever .gitattributes, filters or
//     uncommitted edits made of the worktree;
//   - any other directory (not under Git, or inside a checkout without
//     being its root: no reconciler reads such a spec) is read as it
//     stands, and rev must be "".
func openLocal(dir, rev, flag string) (*repoSource, error) {
	repo, err := gitobj.IsRepository(dir)
	if err != nil {
		return nil, err
	}
	if !repo {
		if rev != "" {
			return nil, fmt.Errorf("%s %s: %s is not a Git repository (a checkout's root or a bare repository)", flag, rev, dir)
		}
		return &repoSource{Dir: dir, Tree: layout.NewTree(dir)}, nil
	}
	tree, err := gitobj.OpenCommitTree(dir, rev)
	switch {
	case errors.Is(err, gitobj.ErrNoCommit):
		return nil, fmt.Errorf("%s: HEAD names no commit yet: gitpeer reads the committed tree, as the reconcilers do; commit the spec first", dir)
	case err != nil && rev != "":
		return nil, fmt.Errorf("%s %s: %w", flag, rev, err)
	case err != nil:
		return nil, err
	}
	return &repoSource{Dir: dir, Tree: tree.TreeFS, Commit: tree.Commit, Rev: tree.Rev, tree: tree}, nil
}

// sourceFlags are the flags of a reader of [DIR | URL] (status, wait, plan):
// the branch a URL is cloned at and the credentials it is cloned with, and
// the revision a checkout is read at.
type sourceFlags struct {
	branch, gitCredentials, ref string
}

func (f *sourceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.branch, "branch", "main", "branch to read, when the repo is cloned from a URL")
	fs.StringVar(&f.ref, "ref", "", refFlagUsage+"; for a checkout (a URL is read at --branch)")
	fs.StringVar(&f.gitCredentials, "git-credentials", "", "directory of Git credentials named as Flux's Git Secret keys, for a URL (see reconcile)")
}

// open opens target as openSource does, with the flags; warnings go to
// cmd's stderr as it is at the call.
func (f *sourceFlags) open(cmd *cobra.Command, target string) (*repoSource, error) {
	return openSource(cmd.Context(), target, f.branch, f.gitCredentials, f.ref, cmd.ErrOrStderr())
}

// openSource resolves target, the [DIR|URL] of status and plan, at rev:
//
//   - a checkout (a directory holding .git), or a directory that is not a
//     repository, is opened as openLocal opens it (a checkout at rev,
//     HEAD by default, from its Git objects); --git-credentials do not
//     apply;
//   - anything else (an https://, ssh:// or file:// URL, scp-like
//     user@host:path, or a local bare repository) is cloned, branch at its
//     tip, into a temporary directory, authenticating with the files of
//     credentials as reconcile does (gitauth), and the tip's commit is read
//     from Git objects; nothing is ever pushed. rev must be "": --branch
//     picks what is read.
//
// Warnings (files of the credentials directory it does not read) go to
// stderr.
func openSource(ctx context.Context, target, branch, credentials, rev string, stderr io.Writer) (*repoSource, error) {
	if isCheckout(target) || hasSpec(target) {
		if credentials != "" {
			return nil, fmt.Errorf("--git-credentials applies to a repository URL, and %s is a checkout", target)
		}
		return openLocal(target, rev, "--ref")
	}
	if !looksLikeRepo(target) {
		return nil, fmt.Errorf("%s: no peering spec (want one of %s) and not a Git repository or URL: pass a clone of the peering repo (git clone URL DIR), the repo's URL, or the path of a bare repository",
			target, strings.Join(schema.SpecFiles, ", "))
	}
	if rev != "" {
		return nil, fmt.Errorf("--ref %s: reads a revision of a local checkout; %s is cloned at --branch's tip", rev, target)
	}
	creds, err := gitauth.New(credentials, target)
	if err != nil {
		return nil, fmt.Errorf("--git-credentials: %w", err) // err names the URL, redacted
	}
	warnUnknownCredentials(stderr, creds)
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
	tree, err := gitobj.OpenCommitTree(src.Dir, "HEAD")
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: branch %s: %w", target, branch, err)
	}
	src.Tree, src.Commit, src.Rev, src.tree = tree.TreeFS, tree.Commit, branch, tree
	if _, _, err := schema.FindSpec(src.Tree, src.Dir); errors.Is(err, fs.ErrNotExist) {
		src.Close()
		return nil, fmt.Errorf("%s: branch %s has no peering spec (want one of %s)", target, branch, strings.Join(schema.SpecFiles, ", "))
	}
	return src, nil
}

// loadSpec loads the spec of src within the limits of cmd's flags (see
// addSpecLimitFlags), printing its problems one per line and returning
// errProblems (exit 1) when it is invalid. It returns the spec, its path
// (under src.Dir, as problems name it) and its bytes.
func loadSpec(cmd *cobra.Command, src *repoSource) (*schema.Spec, string, []byte, error) {
	lim, err := specLimits(cmd)
	if err != nil {
		return nil, "", nil, err
	}
	file, data, err := schema.FindSpec(src.Tree, src.Dir)
	if err != nil {
		if src.Commit != "" {
			err = fmt.Errorf("%s: %w", src.Where(), err)
		}
		return nil, file, nil, err
	}
	noteWorktree(cmd, src, file, data)
	spec, err := schema.ParseBounded(cmd.Context(), file, data, lim)
	var se *schema.Error
	if errors.As(err, &se) {
		for _, p := range se.Problems {
			fmt.Fprintln(cmd.OutOrStdout(), p.String())
		}
		return nil, file, data, errProblems
	}
	return spec, file, data, err
}

// noteWorktree says on stderr when the spec file in a checkout's worktree
// is not the committed one that was read: an uncommitted edit, which the
// reader does not see until it is committed, or a .gitattributes rule (a
// filter, ident, eol) rewriting it in checkouts, which verify names.
func noteWorktree(cmd *cobra.Command, src *repoSource, file string, committed []byte) {
	if src.Commit == "" || src.Cloned {
		return
	}
	if fi, err := os.Lstat(file); err != nil || !fi.Mode().IsRegular() {
		return
	}
	onDisk, err := os.ReadFile(file)
	if err != nil || bytes.Equal(onDisk, committed) {
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "note: %s in the worktree is not the one committed at %s (%s), which is what was read: an uncommitted edit (gitpeer validate %s checks it as on disk), or a .gitattributes rule rewriting it (gitpeer verify names it)\n",
		file, src.Rev, shortCommit(src.Commit), file)
}

// isCheckout reports whether dir is a checkout's root: it holds .git (a
// directory, or the file of a linked worktree).
func isCheckout(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
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
