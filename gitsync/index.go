package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// indexCache is the clone's index as this Repo last decoded or wrote it,
// with the file's bytes then. go-git decodes the whole index file on every
// Storer.Index() (50 ms at 14,600 entries), and a working pass of a new
// process moves the worktree twice (to the fetched tip, then to its
// commit), each move reading and rewriting the index. The decoded copy is
// served only while the file holds exactly those bytes, so an index
// written by anyone else (go-git's hard reset, git in the checkout) is
// decoded afresh.
type indexCache struct {
	data []byte
	idx  *index.Index
}

// readIndex returns the clone's index (empty when there is no index file)
// for reading only: the copy stays cached.
func (r *Repo) readIndex() (*index.Index, error) {
	data, err := os.ReadFile(r.indexPath())
	if errors.Is(err, fs.ErrNotExist) {
		r.index = indexCache{}
		return r.repo.Storer.Index()
	}
	if err != nil {
		return nil, err
	}
	if r.index.idx != nil && bytes.Equal(data, r.index.data) {
		return r.index.idx, nil
	}
	idx, err := r.decodeIndex(data)
	if err != nil {
		r.index = indexCache{}
		return nil, err
	}
	r.index = indexCache{data: data, idx: idx}
	return idx, nil
}

// indexAsLeft reports whether the index file still lists what this Repo
// last read or wrote: the same entries (path, blob, mode, stage), in
// order. git in the checkout changes the index without touching the
// worktree (git add, update-index), which the stat scan cannot see; git
// status only refreshes the entries' stat data, which is fine. True when
// there is no copy to compare with: a snapshot loaded from the clone was
// checked against the index's stat.
func (r *Repo) indexAsLeft() bool {
	left := r.index.idx
	if left == nil {
		return true
	}
	data, err := os.ReadFile(r.indexPath())
	if err == nil && bytes.Equal(data, r.index.data) {
		return true
	}
	if err != nil {
		return false
	}
	now, err := r.decodeIndex(data)
	if err != nil || len(now.Entries) != len(left.Entries) {
		return false
	}
	for i, e := range now.Entries {
		l := left.Entries[i]
		if e.Name != l.Name || e.Hash != l.Hash || e.Mode != l.Mode || e.Stage != l.Stage {
			return false // kept: asked again, the answer stays until a reset
		}
	}
	r.index = indexCache{data: data, idx: now}
	return true
}

// takeIndex is readIndex for a caller that edits the index: the copy
// leaves the cache, so an edit that is never written (a move that falls
// back to the full reset) is never served.
func (r *Repo) takeIndex() (*index.Index, error) {
	idx, err := r.readIndex()
	r.index = indexCache{}
	return idx, err
}

// writeIndex writes idx as the clone's index and caches it with the bytes
// written.
func (r *Repo) writeIndex(idx *index.Index) error {
	r.index = indexCache{}
	r.indexWrites++
	if err := r.repo.Storer.SetIndex(idx); err != nil {
		return err
	}
	if data, err := os.ReadFile(r.indexPath()); err == nil {
		r.index = indexCache{data: data, idx: idx}
	}
	return nil
}

func (r *Repo) decodeIndex(data []byte) (*index.Index, error) {
	r.indexDecodes++
	idx := &index.Index{}
	return idx, index.NewDecoder(bufio.NewReader(bytes.NewReader(data))).Decode(idx)
}
