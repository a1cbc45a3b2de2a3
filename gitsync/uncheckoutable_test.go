package gitsync

import (
	"fmt"
	"strings"
	"testing"
)

// TestPathsNoCheckoutCanHoldStallNoSync: main gets a path 2,100
// directories deep (past PATH_MAX), a 300-byte name (past NAME_MAX) and
// names Git for Windows refuses (a device name, a trailing dot), committed
// with git fast-import as no checkout could. A clone that had synced
// before and a new one both sync, commit on top and push, in well under a
// second each: nothing is checked out.
func TestPathsNoCheckoutCanHoldStallNoSync(t *testing.T) {
	bare := newBare(t)
	old := openRepo(t, bare, "old")
	mustSync(t, old, writes("init", map[string]string{"clusters/old/a.yaml": "a\n"}))

	var in strings.Builder
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter m <m@example.com> 1700000000 +0000\ndata 4\ndocs\nfrom %s\n", old.Head())
	paths := []string{
		"docs/" + strings.Repeat("a/", 2100) + "x.yaml",
		"docs/" + strings.Repeat("n", 300) + ".yaml",
		"docs/aux.yaml", "docs/notes./x.yaml",
	}
	for _, p := range paths {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata 2\nx\n\n", p)
	}
	runGitInput(t, bare, in.String(), "fast-import", "--quiet")

	for _, r := range []*Repo{old, openRepo(t, bare, "new")} {
		name := strings.TrimPrefix(r.Dir()[strings.LastIndex(r.Dir(), "/"):], "/")
		res := mustSync(t, r, writes(name, map[string]string{"clusters/" + name + "/a.yaml": "b\n"}))
		if res.Commit == "" {
			t.Fatalf("%s: no commit", name)
		}
		for _, p := range paths {
			if !atHead(r.Dir(), p) {
				t.Errorf("%s's commit lost %.40s…", name, p)
			}
		}
		assertClean(t, r.Dir())
	}
	fsck(t, bare)
}
