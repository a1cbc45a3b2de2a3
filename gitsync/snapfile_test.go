package gitsync

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// reopen opens a second Repo on r's clone, as the next `reconcile --once`
// process would.
func reopen(t *testing.T, bare string, r *Repo, name string) *Repo {
	t.Helper()
	return reopenWith(t, bare, r, name, nil)
}

// reopenWith is reopen with the options edit changes.
func reopenWith(t *testing.T, bare string, r *Repo, name string, edit func(*Options)) *Repo {
	t.Helper()
	opts := testOptions(t, bare, name)
	opts.Dir = r.Dir()
	if edit != nil {
		edit(&opts)
	}
	o, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return o
}

// assertTip fails unless b's worktree is exactly the bare repo's main.
func assertTip(t *testing.T, bare string, b *Repo) {
	t.Helper()
	want := strings.TrimSpace(runGit(t, bare, "ls-tree", "-r", "main"))
	for _, line := range strings.Split(want, "\n") {
		name := line[strings.IndexByte(line, '\t')+1:]
		blob := strings.Fields(line)[2]
		data, err := os.ReadFile(filepath.Join(b.Dir(), filepath.FromSlash(name)))
		if err != nil || runGit(t, bare, "cat-file", "-p", blob) != strings.TrimSuffix(string(data), "\n") {
			t.Errorf("worktree has %s as %q, %v", name, data, err)
		}
	}
	assertClean(t, b.Dir())
}

// TestASecondProcessMovesTheCheckoutIncrementally: a Repo opened on a
// clone another Repo left (the next pass process) reads the snapshot and
// moves the worktree to the new tip without go-git's hard reset.
func TestASecondProcessMovesTheCheckoutIncrementally(t *testing.T) {
	bare := newBare(t)
	a := openRepo(t, bare, "cl-a")
	b := openRepo(t, bare, "cl-b")
	mustSync(t, a, writes("one", map[string]string{"x/a.yaml": "a\n", "x/b.yaml": "b\n"}))
	mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
	mustSync(t, a, writes("two", map[string]string{"x/a.yaml": "a2\n", "z/c.yaml": "c\n"}))
	c := reopen(t, bare, b, "cl-b")
	if c.fullResets != 0 || c.moves != 1 {
		t.Errorf("Open of a left clone: %d full resets, %d moves; want 0, 1", c.fullResets, c.moves)
	}
	assertTip(t, bare, c)
	mustSync(t, c, writes("c", map[string]string{"y/c.yaml": "c\n"}))
	d := reopen(t, bare, c, "cl-b")
	if d.fullResets != 0 {
		t.Errorf("Open after a committing pass: %d full resets, want 0", d.fullResets)
	}
	assertTip(t, bare, d)
}

// TestABadSnapshotFileMeansAFullReset: a snapshot file that is corrupt, cut
// short, of another commit, or whose index was since rewritten to list
// something else is no snapshot: Open resets fully, with no error, and the pass sees the tip.
func TestABadSnapshotFileMeansAFullReset(t *testing.T) {
	cases := map[string]func(t *testing.T, b *Repo, file []byte){
		"corrupt": func(t *testing.T, b *Repo, file []byte) {
			writeFile(t, b.snapPath(), []byte("gitpeer-snapshot 1\ncommit zz\x00\xff"))
		},
		"truncated": func(t *testing.T, b *Repo, file []byte) {
			writeFile(t, b.snapPath(), file[:len(file)*2/3])
		},
		"another commit": func(t *testing.T, b *Repo, file []byte) {
			head := runGit(t, b.Dir(), "rev-parse", "HEAD")
			other := runGit(t, b.Dir(), "rev-parse", "HEAD~1")
			writeFile(t, b.snapPath(), []byte(strings.Replace(string(file), strings.TrimSpace(head), strings.TrimSpace(other), 1)))
		},
		"index rewritten with other entries": func(t *testing.T, b *Repo, file []byte) {
			// git rewrites the index to list something else (the same
			// entries under a new stat keep the snapshot: see
			// TestGitInTheCheckoutKeepsTheSnapshotUnlessItChangesTheIndex).
			runGit(t, b.Dir(), "update-index", "--chmod=+x", "y/b.yaml")
		},
		"a directory": func(t *testing.T, b *Repo, file []byte) {
			os.Remove(b.snapPath())
			if err := os.Mkdir(b.snapPath(), 0o755); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			bare := newBare(t)
			a := openRepo(t, bare, "cl-a")
			b := openRepo(t, bare, "cl-b")
			mustSync(t, a, writes("one", map[string]string{"x/a.yaml": "a\n"}))
			mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n"}))
			mustSync(t, a, writes("two", map[string]string{"x/a.yaml": "a2\n", "z/c.yaml": "c\n"}))
			file, err := os.ReadFile(b.snapPath())
			if err != nil {
				t.Fatal(err)
			}
			spoil(t, b, file)
			c := reopen(t, bare, b, "cl-b")
			if c.fullResets != 1 {
				t.Errorf("%d full resets, want 1", c.fullResets)
			}
			assertTip(t, bare, c)
		})
	}
}

// TestACheckoutEditedBetweenProcessesIsRestored: a stray file, a deleted
// file and a same-size edit made between two processes are all undone by
// the next Open, as within one process.
func TestACheckoutEditedBetweenProcessesIsRestored(t *testing.T) {
	edits := map[string]func(t *testing.T, dir string){
		"stray file": func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "x", "stray"), []byte("s\n")) },
		"deleted":    func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "y", "b.yaml")) },
		// Written right after the snapshot, in the same clock tick as
		// likely as not: same size, maybe the same mtime.
		"same size": func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "y", "b.yaml"), []byte("X\n")) },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			bare := newBare(t)
			b := openRepo(t, bare, "cl-b")
			mustSync(t, b, writes("b", map[string]string{"y/b.yaml": "b\n", "x/a.yaml": "a\n"}))
			edit(t, b.Dir())
			c := reopen(t, bare, b, "cl-b")
			assertTip(t, bare, c)
		})
	}
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeSnapshot: any bytes parse to a snapshot or an error, never a
// panic, and what parses encodes back to the same snapshot.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte("gitpeer-snapshot 1\ncommit 0123456789012345678901234567890123456789\nindex 10 20\nf 644 2 3 \"a/b\"\nf 20000000000 0 0 \"a\"\nend 2\n"))
	f.Add([]byte("gitpeer-snapshot 1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ix, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		s2, ix2, err := decodeSnapshot(encodeSnapshot(s, ix))
		if err != nil || ix2 != ix || s2.commit != s.commit || len(s2.files) != len(s.files) {
			t.Fatalf("round trip: %v", err)
		}
		for k, v := range s.files {
			if s2.files[k] != v {
				t.Fatalf("round trip: %s %v != %v", k, s2.files[k], v)
			}
		}
	})
}

// TestSnapshotLinesAreTheFormatsLines: each file's line is "f <mode octal>
// <size> <mtime ns> <Go-quoted path>", as the format says and as files
// written by earlier gitpeers hold, whatever the path holds.
func TestSnapshotLinesAreTheFormatsLines(t *testing.T) {
	files := map[string]fileStat{
		"clusters/a/b.yaml": {size: 12, mtime: 1700000000123456789, mode: 0o644},
		"dir":               dirStat,
		"sp ace/\"q\"\n":    {size: 0, mtime: -1, mode: 0o755},
		"ünï/コード":           {size: 1 << 40, mtime: 0, mode: fs.ModeSymlink | 0o777},
	}
	got := string(encodeSnapshot(&snapshot{commit: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"), files: files}, snapIndex{size: 7, mtime: 9}))
	for name, st := range files {
		line := fmt.Sprintf("f %o %d %d %s\n", uint32(st.mode), st.size, st.mtime, strconv.Quote(name))
		if !strings.Contains(got, line) {
			t.Errorf("no line %q in\n%s", line, got)
		}
	}
	if want := "gitpeer-snapshot 1\ncommit 0123456789abcdef0123456789abcdef01234567\nindex 7 9\n"; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "end 4\n") {
		t.Errorf("header or end line wrong:\n%s", got)
	}
}

// TestGitInTheCheckoutKeepsTheSnapshotUnlessItChangesTheIndex: git
// commands that rewrite the index without changing what it lists (git
// status refreshing stat data, a format change, a touch) leave the next
// process its incremental move; one that changes what the index lists is
// a full reset, after which the checkout is the tip again.
func TestGitInTheCheckoutKeepsTheSnapshotUnlessItChangesTheIndex(t *testing.T) {
	for name, tc := range map[string]struct {
		git   []string
		reset bool
	}{
		"git status":              {git: []string{"status", "--porcelain"}},
		"index format 4":          {git: []string{"update-index", "--index-version", "4"}},
		"index refreshed":         {git: []string{"update-index", "--really-refresh"}},
		"a file's mode staged":    {git: []string{"update-index", "--chmod=+x", "x/a.yaml"}, reset: true},
		"a file removed from it":  {git: []string{"rm", "-q", "--cached", "x/a.yaml"}, reset: true},
		"an intent-to-add staged": {git: []string{"add", "-N", "stray"}, reset: true},
	} {
		t.Run(name, func(t *testing.T) {
			bare := newBare(t)
			a := openRepo(t, bare, "cl-a")
			b := openRepo(t, bare, "cl-b")
			mustSync(t, b, writes("b", map[string]string{"x/a.yaml": "a\n", "y/b.yaml": "b\n"}))
			mustSync(t, a, writes("a", map[string]string{"z/c.yaml": "c\n"}))
			if name == "an intent-to-add staged" {
				writeFile(t, filepath.Join(b.Dir(), "stray"), []byte("s\n"))
			}
			runGit(t, b.Dir(), tc.git...)
			c := reopen(t, bare, b, "cl-b")
			if want := map[bool]int{false: 0, true: 1}[tc.reset]; c.fullResets != want {
				t.Errorf("%d full resets after %s, want %d", c.fullResets, name, want)
			}
			assertTip(t, bare, c)
		})
	}
}
