package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/gitobj"
	"github.com/gitpeer/gitpeer/internal/atomicfile"
)

// The snapshot (checkout.go) lives in memory, so a process that runs one
// pass (reconcile --once) never had one and paid go-git's full hard reset
// on every Open. It is therefore also kept in the clone, in
// .git/gitpeer-snapshot, rewritten atomically after each reset or move and
// read by Open. The file is only a hint: intact() still checks the
// worktree against it by a stat scan, and a missing, unreadable, stale,
// mismatched or corrupted file means no snapshot (the full reset, as
// before), never an error.
//
// Format (text, one record a line, version 1):
//
//	gitpeer-snapshot 1
//	commit <40 hex>
//	index <size> <mtime ns>            the stat of .git/index as left
//	f <mode octal> <size> <mtime ns> <Go-quoted slash path>   one per file or directory
//	end <number of f lines>
const (
	snapMagic      = "gitpeer-snapshot 1"
	maxSnapFileLen = 64 << 20 // bytes; a larger file is not ours
)

// snapIndex is the stat of go-git's index file when the snapshot was
// written: moveTo edits that index, so another writer's index (git add, a
// crash between writing the index and the snapshot) must not be taken as
// the snapshot's.
type snapIndex struct {
	size  int64
	mtime int64 // nanoseconds
}

func (r *Repo) snapPath() string  { return r.CacheFile("snapshot") }
func (r *Repo) indexPath() string { return filepath.Join(r.dir, ".git", "index") }

func (r *Repo) indexStat() (snapIndex, bool) {
	fi, err := os.Stat(r.indexPath())
	if err != nil {
		return snapIndex{}, false
	}
	return snapIndex{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// saveSnapshot writes r.snap to the clone, or removes the file when there
// is none. A failure only costs the next process a full reset.
func (r *Repo) saveSnapshot() {
	p := r.snapPath()
	ix, ok := r.indexStat()
	if r.snap == nil || !ok {
		_ = os.Remove(p)
		return
	}
	r.snap.persisted = atomicfile.Write(p, encodeSnapshot(r.snap, ix), 0o644) == nil
}

// loadSnapshot sets r.snap from the clone's file when it is whole and its
// index stat matches the index now. Files whose modification time is not
// older than the snapshot file itself may have been rewritten within the
// same clock tick with the same size (racily clean, as Git calls it):
// intact() compares their content with the index instead of trusting the
// stat.
func (r *Repo) loadSnapshot() {
	r.snap = nil
	p := r.snapPath()
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSnapFileLen {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSnapFileLen+1))
	if err != nil || len(data) > maxSnapFileLen {
		return
	}
	s, ix, err := decodeSnapshot(data)
	if err != nil {
		return
	}
	rewrite := false // the index was rewritten since: record its stat anew
	if now, ok := r.indexStat(); !ok || now != ix {
		if !ok || !r.indexIsCommit(s.commit) {
			return
		}
		rewrite = true
	}
	// The snapshot is written with the branch at its commit; another tip
	// means the clone moved without it (a crash between commit and write).
	ref, err := r.repo.Storer.Reference(plumbing.NewBranchReferenceName(r.opts.Branch))
	if err != nil || ref.Hash() != s.commit {
		return
	}
	saved := fi.ModTime().UnixNano()
	for name, st := range s.files {
		if !st.mode.IsDir() && st.mtime >= saved {
			if s.racy == nil {
				s.racy = map[string]bool{}
			}
			s.racy[name] = true
		}
	}
	s.unverified, s.persisted = true, !rewrite
	r.snap = s
}

// indexIsCommit reports whether the clone's index lists exactly the files
// of commit's tree: the same paths, blobs and modes, none staged in
// conflict. git status in the checkout rewrites the index (to refresh its
// entries' stat data) without changing what it lists; that must not cost
// the next process a full reset. The decoded index stays cached for the
// move that follows.
func (r *Repo) indexIsCommit(commit plumbing.Hash) bool {
	idx, err := r.readIndex()
	if err != nil {
		return false
	}
	tree, err := gitobj.Tree(r.repo.Storer, commit)
	if err != nil {
		return false
	}
	listed := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		if e.Stage != 0 { // go-git's index.Merged is 1, but a merged entry is stage 0 on disk
			return false
		}
		listed[e.Name] = e
	}
	n := 0
	err = tree.Files().ForEach(func(f *object.File) error {
		n++
		if e := listed[f.Name]; e == nil || e.Hash != f.Hash || e.Mode != f.Mode {
			return errBadSnapshot
		}
		return nil
	})
	return err == nil && n == len(listed)
}

// encodeSnapshot writes the format above. It appends rather than formats:
// a working pass saves the snapshot of 19,000 files and directories twice.
func encodeSnapshot(s *snapshot, ix snapIndex) []byte {
	b := make([]byte, 0, 128+len(s.files)*96)
	b = fmt.Appendf(b, "%s\ncommit %s\nindex %d %d\n", snapMagic, s.commit, ix.size, ix.mtime)
	for name, st := range s.files {
		b = append(b, "f "...)
		b = strconv.AppendUint(b, uint64(uint32(st.mode)), 8)
		b = append(b, ' ')
		b = strconv.AppendInt(b, st.size, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, st.mtime, 10)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, name)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "end %d\n", len(s.files))
}

var errBadSnapshot = errors.New("not a gitpeer snapshot")

// snapHeader parses the first three lines of a snapshot file, read by line.
func snapHeader(line func() (string, bool)) (plumbing.Hash, snapIndex, bool) {
	var ix snapIndex
	if l, ok := line(); !ok || l != snapMagic {
		return plumbing.ZeroHash, ix, false
	}
	l, ok := line()
	hexHash, found := strings.CutPrefix(l, "commit ")
	if !ok || !found || len(hexHash) != 40 || !plumbing.IsHash(hexHash) {
		return plumbing.ZeroHash, ix, false
	}
	if l, ok = line(); !ok {
		return plumbing.ZeroHash, ix, false
	}
	if n, err := fmt.Sscanf(l, "index %d %d", &ix.size, &ix.mtime); err != nil || n != 2 || l != fmt.Sprintf("index %d %d", ix.size, ix.mtime) {
		return plumbing.ZeroHash, ix, false
	}
	return plumbing.NewHash(hexHash), ix, true
}

// snapshotIndex is the index stat the snapshot file at path recorded,
// read from its header alone (repairClone runs before the clone is open).
func snapshotIndex(path string) (snapIndex, bool) {
	f, err := os.Open(path)
	if err != nil {
		return snapIndex{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 4096))
	_, ix, ok := snapHeader(func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	})
	return ix, ok
}

// decodeSnapshot parses encodeSnapshot's format. Any deviation is
// errBadSnapshot.
func decodeSnapshot(data []byte) (*snapshot, snapIndex, error) {
	var ix snapIndex
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	commit, ix, ok := snapHeader(line)
	if !ok {
		return nil, ix, errBadSnapshot
	}
	s := &snapshot{commit: commit, files: map[string]fileStat{}}
	for {
		l, ok := line()
		if !ok {
			return nil, ix, errBadSnapshot // no end line: cut short
		}
		if rest, isEnd := strings.CutPrefix(l, "end "); isEnd {
			n, err := strconv.Atoi(rest)
			if err != nil || n != len(s.files) || sc.Scan() {
				return nil, ix, errBadSnapshot
			}
			return s, ix, nil
		}
		fields := strings.SplitN(l, " ", 5)
		if len(fields) != 5 || fields[0] != "f" {
			return nil, ix, errBadSnapshot
		}
		mode, err1 := strconv.ParseUint(fields[1], 8, 32)
		size, err2 := strconv.ParseInt(fields[2], 10, 64)
		mtime, err3 := strconv.ParseInt(fields[3], 10, 64)
		name, err4 := strconv.Unquote(fields[4])
		if err := errors.Join(err1, err2, err3, err4); err != nil || name == "" {
			return nil, ix, errBadSnapshot
		}
		if _, dup := s.files[name]; dup {
			return nil, ix, errBadSnapshot
		}
		s.files[name] = fileStat{size: size, mtime: mtime, mode: fs.FileMode(mode)}
	}
}
