package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
)

// go-git rewrites some files of a clone in place (truncate, then write):
// HEAD, .git/config and loose refs. A process killed in the
// middle of such a write (SIGKILL, the OOM killer, a node going away) leaves
// the file empty or cut short, and every later Open or Sync of the clone
// would fail on it ("ref file is empty", "reset to …: EOF") until someone
// deleted the clone by hand. Each of those files can be rebuilt from the
// remote, since Dir belongs to the Repo: repairClone, run before the clone
// is opened, drops the ones that do not parse, and the Open and Sync that
// follow rebuild them (setOrigin writes origin, refresh fetches the refs
// and rewrites HEAD and the branch). The clone has no index (an older
// version's is removed by Open, whole or torn).
//
// A fetched pack's index is written in place too, before the pack is
// renamed next to it, and go-git keeps an index that exists when the same
// pack comes again: one cut short hides its pack's objects for good
// ("object not found" on every pass). Dropping the pack would not do: the
// objects the clone made itself stay, and go-git never fetches an object
// it has, so their lost ancestors would stay lost. repairClone removes such
// a clone whole, and Open clones afresh.

// refPattern is what a loose ref or HEAD holds: an object ID (SHA-1 or
// SHA-256) or a symbolic ref.
var refPattern = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64}|ref: refs/\S+)\n?$`)

// repairClone removes from the clone in dir the files go-git writes in
// place that a crash cut short, and points a damaged HEAD at branch; it
// discards dir whole when a pack index is cut short (see above), and .git
// when it has no HEAD (an init killed before it wrote one). A dir without
// .git is left alone.
func repairClone(dir, branch string) error {
	// What an earlier repair discarded, if it was killed removing it.
	if err := os.RemoveAll(discardedPath(dir)); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil
	}
	head := filepath.Join(gitDir, "HEAD")
	if _, err := os.Lstat(head); errors.Is(err, fs.ErrNotExist) {
		// HEAD is written in place, never removed: without it the clone's
		// init was killed before it wrote it. Init again.
		return discard(dir, gitDir, "its init did not finish")
	}
	if data, err := os.ReadFile(head); err == nil && !refPattern.Match(data) {
		if err := atomicfile.Write(head, []byte("ref: refs/heads/"+branch+"\n"), 0o644); err != nil {
			return fmt.Errorf("repair HEAD: %w", err)
		}
	}
	if err := dropIf(filepath.Join(gitDir, "config"), func(data []byte) bool {
		_, err := config.ReadConfig(bytes.NewReader(data))
		return err != nil
	}); err != nil {
		return err
	}
	torn, err := tornPackIndex(filepath.Join(gitDir, "objects", "pack"))
	if err != nil {
		return err
	}
	if torn != "" {
		return discard(dir, dir, torn+" is cut short")
	}
	return filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		return dropIf(p, func(data []byte) bool { return !refPattern.Match(data) })
	})
}

// discardedPath is where discard moves what it removes: beside the clone,
// like its lock file.
func discardedPath(dir string) string {
	return filepath.Clean(dir) + ".discarded"
}

// discard removes p, the clone dir or its .git, for why. It first renames p
// out of the way, so that a process killed while removing it leaves either
// p whole or p gone, never a clone with some of its files: the next
// repairClone removes what is left of the renamed copy.
func discard(dir, p, why string) error {
	trash := discardedPath(dir)
	if err := os.Rename(p, trash); err != nil {
		return fmt.Errorf("repair: discard %s (%s): %w", p, why, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("repair: discard %s (%s): %w", p, why, err)
	}
	return nil
}

// tornPackIndex returns the first pack index in the pack directory dir
// that does not decode (its checksum included), "" when there is none.
func tornPackIndex(dir string) (string, error) {
	idxs, err := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	if err != nil {
		return "", err
	}
	for _, p := range idxs {
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("repair %s: %w", p, err)
		}
		err = idxfile.NewDecoder(f).Decode(idxfile.NewMemoryIndex())
		f.Close()
		if err != nil {
			return p, nil
		}
	}
	return "", nil
}

// dropIf removes the file p when torn(its content) says so; a missing file
// is fine.
func dropIf(p string, torn func([]byte) bool) error {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("repair %s: %w", p, err)
	}
	if !torn(data) {
		return nil
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("repair %s: %w", p, err)
	}
	return nil
}
