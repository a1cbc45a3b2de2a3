package verify

import (
	"bytes"
	"fmt"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/schema"
)

// notInSpec judges the rendered objects of peerings the spec does not hold
// (unheld, from the tree's checks). A peering removed from the spec leaves
// what its reconcilers rendered for it until their next passes, and a pull
// request removing one leaves them all: such an object is accepted when the
// commit that wrote it (rendered: the last judged commit to write that file
// with that content, against its first parent) had the peering in its
// spec. Written by a commit whose spec did not hold it, it is a state of
// the peering nobody approved (an unmerged proposal, an old state copied
// onto the branch): PeeringNotInSpec, with that commit. An object the
// history does not say was written by a judged commit (before Base, or
// beyond a shallow clone's edge) is left alone: the tree at Base was
// checked when it merged. tree is the tree checked, spec its spec.
func notInSpec(dir string, tree fs.FS, spec *schema.Spec, opts Options, unheld []unheldObject, rendered map[pathBlob]plumbing.Hash) ([]Finding, error) {
	var judged []unheldObject
	for _, u := range unheld {
		if _, ok := rendered[pathBlob{u.file, u.blob}]; ok {
			judged = append(judged, u)
		}
	}
	if len(judged) == 0 {
		return nil, nil
	}
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer done()
	parse := opts.ParseSpec
	if parse == nil {
		parse = schema.Parse
	}
	headFile, headData, _ := schema.FindSpec(tree, "")
	type loaded struct {
		spec *schema.Spec
		err  error
	}
	byCommit := map[plumbing.Hash]loaded{}
	byContent := map[string]loaded{} // file name, NUL, content
	specAt := func(c plumbing.Hash) (*schema.Spec, error) {
		if l, ok := byCommit[c]; ok {
			return l.spec, l.err
		}
		l := func() loaded {
			t, err := gitobj.NewTreeFS(repo.Storer, c, nil)
			if err != nil {
				return loaded{err: err}
			}
			file, data, err := schema.FindSpec(t, "")
			if err != nil {
				return loaded{err: err}
			}
			if headData != nil && file == headFile && bytes.Equal(data, headData) {
				return loaded{spec: spec}
			}
			key := file + "\x00" + string(data)
			if l, ok := byContent[key]; ok {
				return l
			}
			s, err := parse(file, data)
			byContent[key] = loaded{s, err}
			return loaded{s, err}
		}()
		byCommit[c] = l
		return l.spec, l.err
	}
	var out []Finding
	for _, u := range judged {
		c := rendered[pathBlob{u.file, u.blob}]
		s, err := specAt(c)
		if err == nil && holds(s, u.pair) {
			continue
		}
		why := "did not hold it"
		if err != nil {
			why = fmt.Sprintf("does not load (%v)", err)
		}
		out = append(out, Finding{File: u.file, Reason: reasons.PeeringNotInSpec, Commit: c.String(), Message: fmt.Sprintf(
			"an object of the peering %s → %s, written by this commit while its spec %s: once a peering leaves the spec, only what its revocation renders is written for it (the Tenant drained, no binding, an admission policy admitting nothing), so this is a state nobody approved (an unmerged proposal or an old state, copied onto the branch); revert it",
			u.pair.Consumer, u.pair.Provider, why)})
	}
	return out, nil
}

// holds reports whether spec declares the peering pair.
func holds(spec *schema.Spec, pair schema.Pair) bool {
	if spec == nil {
		return false
	}
	for _, p := range spec.Peerings {
		if p.Pair() == pair {
			return true
		}
	}
	return false
}
