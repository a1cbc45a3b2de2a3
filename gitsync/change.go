package gitsync

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// plan is a validated Change reduced to what differs from the tip's tree.
type plan struct {
	writes  map[string][]byte // only the writes that change something
	deletes []string          // files (tree entries, not directories) to remove
	files   []string          // all changed paths, sorted
	message string
}

// planChange validates ch (validateChange) and diffs it against tree
// (planOn; at names the tree in errors).
func planChange(ch *Change, tree *TreeFS, at string) (*plan, error) {
	if ch == nil {
		return &plan{writes: map[string][]byte{}}, nil
	}
	if err := validateChange(ch); err != nil {
		return nil, err
	}
	return planOn(tree, ch, at)
}

// validateChange refuses a change whose paths are not clean, that writes a
// path both as a file and as a directory or both writes and deletes one, or
// whose content the guard refuses. It depends on the change alone, so a
// retry on a new tip need not run it again.
func validateChange(ch *Change) error {
	written := writtenPaths(ch)
	for _, name := range written {
		if err := checkPath(name); err != nil {
			return err
		}
	}
	for i := 1; i < len(written); i++ {
		if strings.HasPrefix(written[i], written[i-1]+"/") {
			return fmt.Errorf("%w: %s is written both as a file and as a directory", ErrInvalidChange, written[i-1])
		}
	}
	for _, name := range ch.Deletes {
		if err := checkPath(name); err != nil {
			return err
		}
		if _, ok := ch.Writes[name]; ok {
			return fmt.Errorf("%w: %s is both written and deleted", ErrInvalidChange, name)
		}
	}
	// The guard runs on every write, identical or not, before any object
	// is written: a refusal must leave nothing behind.
	for _, name := range written {
		if err := ch.Guard.Check(name, ch.Writes[name]); err != nil {
			return fmt.Errorf("refuse change: %w", err)
		}
	}
	return nil
}

// writtenPaths are the paths ch writes, sorted.
func writtenPaths(ch *Change) []string {
	written := make([]string, 0, len(ch.Writes))
	for name := range ch.Writes {
		written = append(written, name)
	}
	sort.Strings(written)
	return written
}

// diffTree is the plan of a validated ch against tip's tree: the
// directories it deletes expanded to their files, identical writes
// dropped. It reads only the trees on the change's paths.
func (r *Repo) diffTree(ch *Change, tip plumbing.Hash) (*plan, error) {
	tree, err := gitobj.NewTreeFS(r.repo.Storer, tip, r.decoded)
	if err != nil {
		return nil, err
	}
	return planOn(tree, ch, short(tip))
}

// planOn is diffTree on tree, named at in errors.
func planOn(tree *TreeFS, ch *Change, at string) (*plan, error) {
	p := &plan{writes: map[string][]byte{}, message: ch.Message}
	// entry is name's entry, nil when the tree has no such path (it is
	// missing, or under a file or a link).
	entry := func(name string) (*object.TreeEntry, error) {
		e, err := tree.Entry(name)
		switch {
		case err == nil:
			return e, nil
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, layout.ErrSymlink):
			return nil, nil
		default:
			return nil, fmt.Errorf("read %s at %s: %w", name, at, err)
		}
	}
	deleted := map[string]bool{}
	for _, name := range ch.Deletes {
		e, err := entry(name)
		switch {
		case err != nil:
			return nil, err
		case e == nil:
		case e.Mode == filemode.Dir:
			if err := tree.Files(name, func(f string) { deleted[f] = true }); err != nil {
				return nil, fmt.Errorf("read %s at %s: %w", name, at, err)
			}
		default:
			deleted[name] = true
		}
	}
	for _, name := range writtenPaths(ch) {
		// A file written under a deleted directory survives the deletion.
		delete(deleted, name)
		data := ch.Writes[name]
		e, err := entry(name)
		if err != nil {
			return nil, err
		}
		if e != nil && e.Hash == plumbing.ComputeHash(plumbing.BlobObject, data) &&
			(e.Mode == filemode.Regular || e.Mode == filemode.Executable) {
			continue // identical: not a change
		}
		p.writes[name] = data
		p.files = append(p.files, name)
	}
	for name := range deleted {
		p.deletes = append(p.deletes, name)
		p.files = append(p.files, name)
	}
	sort.Strings(p.deletes)
	sort.Strings(p.files)
	if len(p.files) > 0 && strings.TrimSpace(p.message) == "" {
		return nil, fmt.Errorf("%w: empty commit message", ErrInvalidChange)
	}
	return p, nil
}

// checkPath accepts only clean, relative, slash-separated paths without
// control characters that stay in the repo and out of any .git directory:
// what Git's fsck accepts in a tree.
func checkPath(name string) error {
	switch {
	case name == "" || name == ".":
		return fmt.Errorf("%w: empty path", ErrInvalidChange)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return fmt.Errorf("%w: path %q has a control character or a backslash", ErrInvalidChange, name)
	case path.IsAbs(name) || path.Clean(name) != name:
		return fmt.Errorf("%w: path %q is not clean and relative", ErrInvalidChange, name)
	}
	for _, part := range strings.Split(name, "/") {
		// git~1 is .git's 8.3 short name on NTFS; go-git refuses both.
		if part == ".." || strings.EqualFold(part, ".git") || strings.EqualFold(part, "git~1") {
			return fmt.Errorf("%w: path %q leaves the worktree or enters .git", ErrInvalidChange, name)
		}
	}
	return nil
}

// maxRemoteLines bounds how much of what a host says during a push is kept
// for an error message.
const maxRemoteLines = 20
