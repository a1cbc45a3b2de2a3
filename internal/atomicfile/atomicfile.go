// Package atomicfile replaces files so that a crash (SIGKILL, power loss)
// leaves either the old content or the new, never a mix or a truncated file.
// Every file gitpeer keeps for itself outside Git (a state directory, the
// pin store, a working tree it writes for an admin) goes through Write.
//
// The recipe is the usual one (as in Git's lockfiles, or
// github.com/google/renameio): write a temporary file in the same
// directory, fsync it, rename it over the target (atomic within one file
// system), then fsync the directory so that the rename itself survives a
// power loss.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, with permissions perm (not subject to the
// umask), atomically. path's directory must exist. A failure leaves path as
// it was and removes the temporary file; a crash during Write may leave a
// temporary file named ".<base>.tmp-<random>" beside path, never a partly
// written path.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		done = true
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs directory dir, making the entries created, renamed or
// removed in it durable. Where directories cannot be synced (Windows), it
// does nothing.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !ignoreDirSyncError(err) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
