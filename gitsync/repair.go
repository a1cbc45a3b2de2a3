package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
)

// go-git rewrites some files of a clone in place (truncate, then write):
// HEAD, .git/config, the index and loose refs. A process killed in the
// middle of such a write (SIGKILL, the OOM killer, a node going away) leaves
// the file empty or cut short, and every later Open or Sync of the clone
// would fail on it ("ref file is empty", "reset to …: EOF") until someone
// deleted the clone by hand. Each of those files can be rebuilt from the
// remote, since Dir belongs to the Repo: repairClone, run before the clone
// is opened, drops the ones that do not parse, and the Open and Sync that
// follow rebuild them (setOrigin writes origin, refresh fetches the refs,
// rewrites HEAD and the branch and resets the index to the tip).

// refPattern is what a loose ref or HEAD holds: an object ID (SHA-1 or
// SHA-256) or a symbolic ref.
var refPattern = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64}|ref: refs/\S+)\n?$`)

// repairClone removes from the clone in dir the files go-git writes in
// place that a crash cut short (see above), and points a damaged HEAD at
// branch. A dir without .git is left alone.
func repairClone(dir, branch string) error {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil
	}
	head := filepath.Join(gitDir, "HEAD")
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
	if err := dropIf(filepath.Join(gitDir, "index"), func(data []byte) bool {
		return index.NewDecoder(bufio.NewReader(bytes.NewReader(data))).Decode(&index.Index{}) != nil
	}); err != nil {
		return err
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
