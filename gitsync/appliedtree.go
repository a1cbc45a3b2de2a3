package gitsync

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// The applied tree is all a cluster's engine ever sees: GitOps engines read
// more than the kustomization they are pointed at (Flux's source-controller
// honours .sourceignore files anywhere in the artifact, kustomize-controller
// generates a kustomization from every manifest under the path when none is
// left, Argo CD reads .argocd-source*.yaml overrides beside the app), so
// anything in a signed commit's tree is applied as if its signer vouched
// for it. The applied commit's tree therefore holds Applied.Scope alone,
// filtered to what the cluster vouches for, and nothing else: no root
// files, no other cluster, no dot-files, no links, no submodules.

// AppliedFilter chooses the files of Applied.Scope that the applied tree
// holds. It is given the shared branch tip's tree and returns keep, called
// with the repo path of each regular file under Applied.Scope that the
// structural rules leave (see Options.Applied.Filter). An error means that
// nothing at that tip can be vouched for (the cluster's own signed manifest
// does not verify, say): the Sync leaves the applied branch where it is and
// reports the error's text in Result.AppliedHeld.
type AppliedFilter func(tip fs.FS) (keep func(name string) bool, err error)

// appliedKey is what the applied tree of a tip depends on: the tip's tree
// entry at Applied.Scope (filters are functions of that tree alone).
type appliedKey struct {
	scope plumbing.Hash
	mode  filemode.FileMode
}

// appliedTree returns the tree the applied branch holds for tip: an
// otherwise empty tree with, at Applied.Scope, tip's tree there less
//
//   - the names of Options.Applied.Exclude directly under it (inbox/),
//   - every entry that is neither a directory nor a regular or executable
//     file (symbolic links, submodules), every entry whose name starts with
//     "." (.sourceignore, .gitattributes, .gitmodules, .argocd-source.yaml)
//     and every name Git's fsck refuses,
//   - every file Options.Applied.Filter does not keep,
//
// files all with mode 100644 and empty directories dropped. held is why
// there is no such tree (nothing left, or the filter's error); tree is
// then zero. The result is remembered for the scope tree it came from, so
// an idle Sync does not walk it again.
func (r *Repo) appliedTree(tip plumbing.Hash) (tree plumbing.Hash, held string, err error) {
	e, err := r.scopeEntry(tip)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	switch {
	case e.Hash.IsZero():
		return plumbing.ZeroHash, fmt.Sprintf("no %s at %s", r.opts.Applied.Scope, short(tip)), nil
	case e.Mode != filemode.Dir:
		return plumbing.ZeroHash, fmt.Sprintf("%s at %s is not a directory", r.opts.Applied.Scope, short(tip)), nil
	}
	key := appliedKey{e.Hash, e.Mode}
	if r.applied.key == key && !r.applied.tree.IsZero() {
		return r.applied.tree, "", nil
	}
	var keep func(string) bool
	if r.opts.Applied.Filter != nil {
		tipFS, err := gitobj.NewTreeFS(r.repo.Storer, tip, r.decoded)
		if err != nil {
			return plumbing.ZeroHash, "", err
		}
		if keep, err = r.opts.Applied.Filter(tipFS); err != nil {
			return plumbing.ZeroHash, err.Error(), nil
		}
	}
	ob := gitobj.Writer{S: r.repo.Storer}
	sub, empty, err := r.vouched(ob, r.opts.Applied.Scope, e.Hash, true, keep)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	if empty {
		return plumbing.ZeroHash, fmt.Sprintf("nothing under %s at %s is vouched for", r.opts.Applied.Scope, short(tip)), nil
	}
	// Wrap sub in the directories of Applied.Scope, innermost first.
	h := sub
	for dir := r.opts.Applied.Scope; dir != "."; dir = path.Dir(dir) {
		t := &object.Tree{Entries: []object.TreeEntry{{Name: path.Base(dir), Mode: filemode.Dir, Hash: h}}}
		if h, err = ob.StoreTree(t); err != nil {
			return plumbing.ZeroHash, "", fmt.Errorf("write applied tree of %s: %w", dir, err)
		}
	}
	r.applied.key, r.applied.tree = key, h
	return h, "", nil
}

// vouched writes the filtered copy of tree h at repo directory dir (see
// appliedTree) and returns its hash, and whether nothing is left.
func (r *Repo) vouched(ob gitobj.Writer, dir string, h plumbing.Hash, top bool, keep func(string) bool) (plumbing.Hash, bool, error) {
	t, err := object.GetTree(r.repo.Storer, h)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read tree of %s: %w", dir, err)
	}
	out := &object.Tree{}
	for _, e := range t.Entries {
		name := dir + "/" + e.Name
		if strings.HasPrefix(e.Name, ".") || gitobj.CheckEntryName(e.Name) != nil || (top && slices.Contains(r.opts.Applied.Exclude, e.Name)) {
			continue
		}
		switch e.Mode {
		case filemode.Dir:
			sub, empty, err := r.vouched(ob, name, e.Hash, false, keep)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if !empty {
				out.Entries = append(out.Entries, object.TreeEntry{Name: e.Name, Mode: filemode.Dir, Hash: sub})
			}
		case filemode.Regular, filemode.Executable:
			if keep == nil || keep(name) {
				out.Entries = append(out.Entries, object.TreeEntry{Name: e.Name, Mode: filemode.Regular, Hash: e.Hash})
			}
		}
	}
	if len(out.Entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	// Entries keep the source tree's order, which is Git's: dropping
	// entries and the executable bit does not change it.
	nh, err := ob.StoreTree(out)
	return nh, false, err
}

// sealTree writes the applied tree holding exactly files (Change.Seal),
// less what the structural rules of appliedTree drop: a path outside
// Applied.Scope, under a name of Applied.Exclude directly below it, or with
// an element that starts with "." or that Git's fsck refuses. held says why
// there is no tree (nothing left); tip names the commit in it.
func (r *Repo) sealTree(files map[string][]byte, tip plumbing.Hash) (plumbing.Hash, string, error) {
	var e gitobj.Edit
	n := 0
	for name, data := range files {
		rel, ok := strings.CutPrefix(name, r.opts.Applied.Scope+"/")
		if !ok || checkPath(name) != nil {
			continue
		}
		elems := strings.Split(rel, "/")
		if slices.Contains(r.opts.Applied.Exclude, elems[0]) || slices.ContainsFunc(elems, func(el string) bool {
			return strings.HasPrefix(el, ".") || gitobj.CheckEntryName(el) != nil
		}) {
			continue
		}
		e.Write(name, data)
		n++
	}
	if n == 0 {
		return plumbing.ZeroHash, fmt.Sprintf("nothing under %s at %s is vouched for", r.opts.Applied.Scope, short(tip)), nil
	}
	h, err := gitobj.Writer{S: r.repo.Storer}.Tree(plumbing.ZeroHash, &e)
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("write the seal's tree: %w", err)
	}
	return h, "", nil
}
