package dirmanifest

import (
	"crypto"
	"errors"
	"fmt"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
)

// ErrTooLarge means a file was not read because it is larger than its cap;
// layout.ErrTooLarge is this error, so that a View over a capped tree
// (layout.Capped) names such a file FileTooLarge.
var ErrTooLarge = errors.New("file too large")

// ErrTooManyEntries means a directory was not read because it holds more
// entries than its cap; layout.ErrTooManyEntries is this error, so that a
// View over a capped tree names such a directory TooManyEntries.
var ErrTooManyEntries = errors.New("too many entries")

// Scope returns who writes the repo path p and the directory whose manifest
// covers it: clusters/<to>/inbox/<from>/… is <from>'s, covered by
// clusters/<to>/inbox/<from>/manifest.yaml; any other clusters/<id>/… is
// <id>'s, covered by clusters/<id>/manifest.yaml. ok is false for paths
// outside any writer's directory (the spec, docs).
func Scope(p string) (writer, dir string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[0] != "clusters" || parts[1] == "" {
		return "", "", false
	}
	if len(parts) >= 4 && parts[2] == "inbox" && parts[3] != "" {
		return parts[3], strings.Join(parts[:4], "/"), true
	}
	if len(parts) == 3 && parts[2] == "inbox" {
		return "", "", false
	}
	return parts[1], strings.Join(parts[:2], "/"), true
}

// Trust tells a View which key each writer's manifests must verify with and
// the lowest sequence it accepts for a directory.
type Trust interface {
	// Key returns the writer's trusted public key; ok false means the writer
	// is not trusted (yet), and none of its files are read.
	Key(writer string) (key crypto.PublicKey, ok bool)
	// MinSequence is the highest sequence already seen for dir.
	MinSequence(writer, dir string) uint64
}

// Ignored is a file a View would not read, and why.
type Ignored struct {
	Path   string
	Writer string
	Reason string
	// Detail says more, e.g. which check of the manifest failed.
	Detail string
}

// View is a repo tree in which a writer's file exists only if the signed
// manifest of its directory lists it with exactly its content. Paths outside
// writers' directories (the spec) pass through. It implements fs.FS,
// fs.ReadFileFS, fs.ReadDirFS and fs.StatFS, so code reading the repo reads
// only signed content without knowing about manifests.
type View struct {
	base  fs.FS
	trust Trust
	cache *Cache // nil: every manifest is parsed and verified

	mu   sync.Mutex
	dirs map[string]*dirState
}

type dirState struct {
	writer string
	m      *Manifest // nil: nothing in the directory is readable
	reason string    // why m is nil
	detail string

	audited bool // ignored is Audit's answer, computed once per view
	ignored []Ignored
}

// NewView returns the signed view of base.
func NewView(base fs.FS, trust Trust) *View {
	return &View{base: base, trust: trust, dirs: map[string]*dirState{}}
}

// NewCachedView is NewView whose manifests are looked up in cache before
// they are parsed and verified (see Cache); a nil cache is NewView.
func NewCachedView(base fs.FS, trust Trust, cache *Cache) *View {
	v := NewView(base, trust)
	v.cache = cache
	return v
}

// state loads and checks the manifest of dir once.
func (v *View) state(writer, dir string) *dirState {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st, ok := v.dirs[dir]; ok {
		return st
	}
	st := &dirState{writer: writer}
	v.dirs[dir] = st
	file := path.Join(dir, FileName)
	data, err := fs.ReadFile(v.base, file)
	if errors.Is(err, fs.ErrNotExist) {
		st.reason, st.detail = reasons.ManifestInvalid, fmt.Sprintf("%s: missing", file)
		return st
	}
	if errors.Is(err, ErrTooManyEntries) {
		st.reason, st.detail = reasons.TooManyEntries, err.Error()
		return st
	}
	if err != nil {
		st.reason, st.detail = reasons.ManifestInvalid, err.Error()
		return st
	}
	key, trusted := v.trust.Key(writer)
	var (
		m         *Manifest
		k         cacheKey
		hit       bool
		cacheable bool
	)
	if trusted && v.cache != nil {
		m, k, hit, cacheable = v.cache.get(data, key, writer, dir)
	}
	if !hit {
		// The checks in their usual order, so that failures read the same
		// with or without a cache.
		m, err = Parse(file, data)
		if err != nil {
			st.reason, st.detail = reasons.ManifestInvalid, err.Error()
			return st
		}
		if !trusted {
			st.reason, st.detail = reasons.ManifestInvalid, fmt.Sprintf("%s: no trusted key for %s", file, writer)
			return st
		}
		if err := m.Verify(key, writer, dir); err != nil {
			st.reason, st.detail = reasons.ManifestInvalid, fmt.Sprintf("%s: %v", file, err)
			return st
		}
		if cacheable {
			v.cache.put(k, m)
		}
	}
	if min := v.trust.MinSequence(writer, dir); m.Sequence < min {
		st.reason, st.detail = reasons.ManifestRolledBack, fmt.Sprintf("%s: sequence %d is lower than %d, already seen", file, m.Sequence, min)
		return st
	}
	st.m = m
	return st
}

// check returns nil when name may be read with content data.
func (v *View) check(name string, data []byte) error {
	writer, dir, ok := Scope(name)
	if !ok {
		return nil
	}
	st := v.state(writer, dir)
	rel := strings.TrimPrefix(name, dir+"/")
	switch {
	case st.m == nil:
		return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%s: %w", st.detail, fs.ErrNotExist)}
	case rel == FileName || rel == name:
		return &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	case !st.m.Covers(rel, data):
		return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("not signed by %s: %w", writer, fs.ErrNotExist)}
	}
	return nil
}

// ReadFile implements fs.ReadFileFS: a file the manifest does not vouch for
// does not exist (the error wraps fs.ErrNotExist).
func (v *View) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(v.base, name)
	if err != nil {
		return nil, unreadable("read", name, err)
	}
	if err := v.check(name, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Open implements fs.FS.
func (v *View) Open(name string) (fs.File, error) {
	fi, err := fs.Stat(v.base, name)
	if err != nil {
		return nil, unreadable("open", name, err)
	}
	if !fi.IsDir() {
		if _, err := v.ReadFile(name); err != nil {
			return nil, err
		}
	}
	f, err := v.base.Open(name)
	if err != nil || !fi.IsDir() {
		return f, unreadable("open", name, err)
	}
	return &dir{File: f, v: v, name: name}, nil
}

// dir is an open directory of a View: its ReadDir lists what View.ReadDir
// lists, so no way of listing the view shows an unsigned file.
type dir struct {
	fs.File
	v       *View
	name    string
	read    bool
	entries []fs.DirEntry
}

// ReadDir implements fs.ReadDirFile.
func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.v.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.read, d.entries = true, entries
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}

// Stat implements fs.StatFS.
func (v *View) Stat(name string) (fs.FileInfo, error) {
	fi, err := fs.Stat(v.base, name)
	if err != nil || fi.IsDir() {
		return fi, unreadable("stat", name, err)
	}
	if _, err := v.ReadFile(name); err != nil {
		return nil, err
	}
	return fi, nil
}

// ReadDir implements fs.ReadDirFS: directories are listed, files only when
// signed.
func (v *View) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(v.base, name)
	if err != nil {
		return nil, unreadable("readdir", name, err)
	}
	out := entries[:0:0]
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e)
			continue
		}
		if _, err := v.ReadFile(path.Join(name, e.Name())); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// unreadable is err, from reading name in the base tree, as the view
// reports it: for a path in a writer's directory, whatever cannot be read
// there (a symbolic link a writer committed, say, which the base tree
// refuses to follow) is not a signed file, so it does not exist (the error
// wraps fs.ErrNotExist as well as err). A reader then behaves as for a
// missing file instead of failing its whole pass.
func unreadable(op, name string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, _, ok := Scope(name); !ok {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("unreadable (%w): %w", err, fs.ErrNotExist)}
}

// Verified returns the manifest of dir if it verified, for callers that
// record its sequence. The manifest may be shared with other views through
// a Cache: callers must not modify it.
func (v *View) Verified(writer, dir string) (*Manifest, bool) {
	st := v.state(writer, dir)
	return st.m, st.m != nil
}

// Audit lists every file under dir (a writer's directory) that the view
// does not vouch for, sorted by path; a directory refused whole for its
// number of entries is listed once, as itself (ReasonTooManyEntries). A
// missing dir has nothing to report.
// The walk runs once per view and directory (the base does not change):
// callers must not modify the list.
func (v *View) Audit(writer, dir string) []Ignored {
	st := v.state(writer, dir)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !st.audited {
		st.ignored, st.audited = v.audit(writer, dir, st), true
	}
	return st.ignored
}

// IgnoredReason is the reason Audit(writer, dir) gives for file, and
// whether it names file at all.
func (v *View) IgnoredReason(writer, dir, file string) (string, bool) {
	for _, ig := range v.Audit(writer, dir) {
		if ig.Path == file {
			return ig.Reason, true
		}
	}
	return "", false
}

// audit is Audit's walk of dir, whose state is st.
func (v *View) audit(writer, dir string, st *dirState) []Ignored {
	var out []Ignored
	_ = fs.WalkDir(v.base, dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, ErrTooManyEntries) {
			// Named once, as a whole: none of its entries is listed.
			out = append(out, Ignored{Path: p, Writer: writer, Reason: reasons.TooManyEntries, Detail: err.Error()})
			return nil
		}
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && path.Base(p) == "inbox" && path.Dir(p) == dir {
				return fs.SkipDir // others write there
			}
			return nil
		}
		if p == path.Join(dir, FileName) {
			return nil
		}
		if st.m == nil {
			out = append(out, Ignored{Path: p, Writer: writer, Reason: st.reason, Detail: st.detail})
			return nil
		}
		data, err := fs.ReadFile(v.base, p)
		if errors.Is(err, ErrTooLarge) {
			out = append(out, Ignored{Path: p, Writer: writer, Reason: reasons.FileTooLarge, Detail: err.Error()})
			return nil
		}
		if err != nil || !st.m.Covers(strings.TrimPrefix(p, dir+"/"), data) {
			out = append(out, Ignored{Path: p, Writer: writer, Reason: reasons.UnsignedChange, Detail: fmt.Sprintf("not signed by %s", writer)})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Keys is a Trust of known keys by writer, accepting any sequence: what an
// offline reader of a checkout (verify, status) has, with no record of
// sequences already seen.
type Keys map[string]crypto.PublicKey

// Key implements Trust.
func (k Keys) Key(writer string) (crypto.PublicKey, bool) {
	key, ok := k[writer]
	return key, ok
}

// MinSequence implements Trust: any.
func (Keys) MinSequence(string, string) uint64 { return 0 }
