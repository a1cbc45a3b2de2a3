package verify

import (
	"io/fs"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// privateMaterial inspects every file outside clusters/ (files covers
// clusters/): a key committed under docs/ or at the root is as public as one
// in an inbox.
func (v *verifier) privateMaterial() {
	type item struct {
		path string
		err  error // the walk's error at path, reported as it is
	}
	var items []item
	_ = fs.WalkDir(v.tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != "." && v.scope.walks(p, d != nil && d.IsDir()) {
				items = append(items, item{p, err})
			}
			return nil
		}
		if d.IsDir() {
			if p == layout.ClustersDir || d.Name() == ".git" || !v.scope.walks(p, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !v.scope.walks(p, false) {
			return nil // scoped: unchanged since Base
		}
		items = append(items, item{path: p})
		return nil
	})
	v.parallel(len(items), func(sub *verifier, i int) {
		p := items[i].path
		if items[i].err != nil {
			sub.add(p, "", reasons.Unreadable, "%v", items[i].err)
			return
		}
		data, err := fs.ReadFile(sub.tree, p)
		if err != nil {
			sub.add(p, "", reasons.Unreadable, "%v", err)
			return
		}
		if reason, found := sub.guard.Inspect(data); found {
			sub.add(p, "", reasons.PrivateMaterial, "private material: %s", reason)
		}
	})
}
