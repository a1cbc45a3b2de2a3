package verify

import (
	"io/fs"

	"github.com/gitpeer/gitpeer/guard"
	"github.com/gitpeer/gitpeer/layout"
)

// privateMaterial inspects every file outside clusters/ (files covers
// clusters/): a key committed under docs/ or at the root is as public as one
// in an inbox.
func (v *verifier) privateMaterial() {
	_ = fs.WalkDir(v.tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != "." {
				v.add(p, "", ReasonUnreadable, "%v", err)
			}
			return nil
		}
		if d.IsDir() {
			if p == layout.ClustersDir || d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		data, err := fs.ReadFile(v.tree, p)
		if err != nil {
			v.add(p, "", ReasonUnreadable, "%v", err)
			return nil
		}
		if reason, found := guard.Inspect(data); found {
			v.add(p, "", ReasonPrivateMaterial, "private material: %s", reason)
		}
		return nil
	})
}
