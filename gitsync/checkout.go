package gitsync

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"

	"github.com/gitpeer/gitpeer/gitobj"
)

// A hard reset with go-git hashes every file of the worktree and compares
// the whole index with the whole tree, so a pass would cost in proportion
// to the repo, not to what changed. gitsync instead remembers what it left
// in the worktree (snapshot) and, when the worktree still holds exactly
// that, moves it to a new tip by applying the tree difference (trees with
// the same hash are skipped, so the work follows the change). Anything
// unexpected (a stray, modified or missing file, a symbolic link or a
// submodule in the difference) falls back to the full hard reset: the
// worktree a pass sees is the tip, always.

// fileStat is what the snapshot compares a worktree file by: a file
// rewritten in place changes its modification time or its size. A
// directory is recorded by its mode alone (an empty stray directory shows
// in listings a pass reads).
type fileStat struct {
	size  int64
	mtime int64 // nanoseconds
	mode  fs.FileMode
}

// snapshot is the worktree as this Repo last left it: exactly the tree of
// commit, file by file (slash-separated paths).
type snapshot struct {
	commit plumbing.Hash
	files  map[string]fileStat
	// unverified marks a snapshot read from the clone (snapfile.go): it
	// is trusted only after intact() checked the worktree against it.
	unverified bool
	// racy names the files of an unverified snapshot whose stat cannot
	// tell a same-size rewrite in the same clock tick: intact() hashes
	// them and compares with the index.
	racy map[string]bool
	// persisted is set when .git/gitpeer-snapshot holds this snapshot: an
	// idle pass then rewrites (and fsyncs) nothing.
	persisted bool
}

var dirStat = fileStat{mode: fs.ModeDir}

func statOf(fi fs.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
}

// scan lists every file and directory of the worktree (not .git) with its
// stat. It reads no content.
func (r *Repo) scan() (map[string]fileStat, error) {
	r.scans++
	files := map[string]fileStat{}
	err := r.walkWorktree(func(_, rel string, d fs.DirEntry) error {
		if d.IsDir() {
			files[rel] = dirStat
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files[rel] = statOf(fi)
		return nil
	})
	return files, err
}

// walkWorktree calls fn for every file and directory of the worktree but
// .git, with its path and its slash-separated path relative to the worktree.
func (r *Repo) walkWorktree(fn func(p, rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == r.dir {
			return nil
		}
		rel := filepath.ToSlash(p[len(r.dir)+1:])
		if d.IsDir() && rel == ".git" {
			return fs.SkipDir
		}
		return fn(p, rel, d)
	})
}

// intact reports whether the worktree holds exactly what the snapshot
// says (the same files with the same stats, nothing more) and the index
// is as this Repo left it.
func (r *Repo) intact() bool {
	if r.snap == nil {
		return false
	}
	now, err := r.scan()
	if err != nil || len(now) != len(r.snap.files) {
		return false
	}
	for name, st := range now {
		if old, ok := r.snap.files[name]; !ok || old != st {
			return false
		}
	}
	if !r.indexAsLeft() || len(r.snap.racy) > 0 && !r.racyClean() {
		return false
	}
	r.snap.unverified, r.snap.racy = false, nil
	return true
}

// racyClean reports whether every racy file of the snapshot holds the
// blob its index entry names, with the index at the snapshot's commit.
func (r *Repo) racyClean() bool {
	idx, err := r.readIndex()
	if err != nil {
		return false
	}
	for name := range r.snap.racy {
		e, err := idx.Entry(name)
		if err != nil {
			return false
		}
		data, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(name)))
		if err != nil || plumbing.ComputeHash(plumbing.BlobObject, data) != e.Hash {
			return false
		}
	}
	return true
}

// takeSnapshot records the worktree as it is as commit's tree, after a full
// reset.
func (r *Repo) takeSnapshot(commit plumbing.Hash) {
	files, err := r.scan()
	if err != nil {
		r.snap = nil
		return
	}
	r.snap = &snapshot{commit: commit, files: files}
}

// errFallback asks for a full reset instead of the incremental one.
var errFallback = errors.New("incremental checkout not possible")

// moveTo brings the worktree and index from the snapshot's commit to tip by
// applying the difference of their trees. It returns errFallback (with the
// worktree in an unknown state, the snapshot dropped) when the difference
// has anything but regular files or a path cannot be written safely.
func (r *Repo) moveTo(tip plumbing.Hash) error {
	if r.snap.commit == tip {
		return nil
	}
	from, files := r.snap.commit, r.snap.files
	r.snap = nil                                // unknown until done
	ft, err := gitobj.Tree(r.repo.Storer, from) // empty: the branch had no commits
	if err != nil {
		return err
	}
	tt, err := gitobj.Tree(r.repo.Storer, tip)
	if err != nil {
		return err
	}
	if err := r.moveTree(ft, tt, files); err != nil {
		return err
	}
	r.snap = &snapshot{commit: tip, files: files}
	r.moves++
	return nil
}

// moveTree brings the worktree and index from tree ft to tree tt by
// applying their difference, and records in files (the worktree's stats as
// of ft) what it wrote and deleted. It returns errFallback (the worktree in
// an unknown state) as moveTo does.
func (r *Repo) moveTree(ft, tt *object.Tree, files map[string]fileStat) error {
	deletes, writes, err := planMove(ft, tt)
	if err != nil {
		return err
	}
	idx, err := r.takeIndex()
	if err != nil {
		return err
	}
	entries := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		entries[e.Name] = e
	}
	sort.Strings(deletes)
	for _, name := range deletes {
		if err := r.noSymlinkParents(name); err != nil {
			return errFallback
		}
		if err := os.Remove(filepath.Join(r.dir, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errFallback
		}
		delete(entries, name)
		delete(files, name)
		r.removeEmptyParents(name)
	}
	sort.Slice(writes, func(i, j int) bool { return writes[i].name < writes[j].name })
	for _, w := range writes {
		if err := r.noSymlinkParents(w.name); err != nil {
			return errFallback
		}
		full := filepath.Join(r.dir, filepath.FromSlash(w.name))
		if fi, err := os.Lstat(full); err == nil && !fi.Mode().IsRegular() {
			return errFallback // a directory or a link in the way
		}
		f, err := tt.TreeEntryFile(&w.entry)
		if err != nil {
			return err
		}
		content, err := f.Contents()
		if err != nil {
			return err
		}
		perm := fs.FileMode(0o644)
		if f.Mode == filemode.Executable {
			perm = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return errFallback
		}
		if err := os.WriteFile(full, []byte(content), perm); err != nil {
			return errFallback
		}
		if err := os.Chmod(full, perm); err != nil {
			return errFallback
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return errFallback
		}
		e := entries[w.name]
		if e == nil {
			e = &index.Entry{Name: w.name}
			entries[w.name] = e
		}
		e.Hash, e.Mode, e.Size = f.Hash, f.Mode, uint32(fi.Size())
		e.ModifiedAt, e.CreatedAt = fi.ModTime(), fi.ModTime()
		files[w.name] = statOf(fi)
	}
	for _, name := range deletes {
		r.trackParents(files, name)
	}
	for _, w := range writes {
		r.trackParents(files, w.name)
	}
	idx.Entries = idx.Entries[:0]
	for _, e := range entries {
		idx.Entries = append(idx.Entries, e)
	}
	sort.Slice(idx.Entries, func(i, j int) bool { return idx.Entries[i].Name < idx.Entries[j].Name })
	idx.Cache = nil // a tree cache extension would be stale
	return r.writeIndex(idx)
}

// fileWrite is a file a move writes: its path and its entry in the target
// tree. The blob is read only when written: movable plans a move without
// reading any.
type fileWrite struct {
	name  string
	entry object.TreeEntry
}

// planMove lists what moving the worktree from tree ft to tree tt deletes
// and writes, or returns errFallback when the difference holds anything
// but regular files with names Git's fsck accepts: links and submodules
// are go-git's to check out, and a name such as ".." is not written at all.
func planMove(ft, tt *object.Tree) (deletes []string, writes []fileWrite, err error) {
	changes, err := object.DiffTree(ft, tt)
	if err != nil {
		return nil, nil, err
	}
	for _, ch := range changes {
		action, err := ch.Action()
		if err != nil {
			return nil, nil, err
		}
		for _, e := range []object.ChangeEntry{ch.From, ch.To} {
			if e.Name != "" && e.TreeEntry.Mode != filemode.Regular && e.TreeEntry.Mode != filemode.Executable {
				return nil, nil, errFallback
			}
			if e.Name != "" && checkPath(e.Name) != nil {
				return nil, nil, errFallback
			}
		}
		switch action {
		case merkletrie.Delete:
			deletes = append(deletes, ch.From.Name)
		case merkletrie.Insert, merkletrie.Modify:
			writes = append(writes, fileWrite{name: ch.To.Name, entry: ch.To.TreeEntry})
		}
	}
	return deletes, writes, nil
}

// movable reports whether the worktree can move from commit from to
// commit to by tree difference: a deferred reset checks it before the
// pass, so that a tip the worktree cannot take fails the Sync before any
// pass runs on it, as an immediate move does.
func (r *Repo) movable(from, to plumbing.Hash) bool {
	ft, err := gitobj.Tree(r.repo.Storer, from)
	if err != nil {
		return false
	}
	tt, err := gitobj.Tree(r.repo.Storer, to)
	if err != nil {
		return false
	}
	_, _, err = planMove(ft, tt)
	return err == nil
}

// trackParents records in files whether each directory above name exists
// now, after a write or a deletion (which removes parents left empty).
func (r *Repo) trackParents(files map[string]fileStat, name string) {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		fi, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(d)))
		switch {
		case err != nil:
			delete(files, d)
		case fi.IsDir():
			files[d] = dirStat
		} // a file there now is recorded as written
	}
}
