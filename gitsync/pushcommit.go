package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// pushCommit pushes commit, whose only parent is old (zero: a root commit),
// to the shared branch, fast-forward only: the host updates the branch
// only if it still points at old. It sends just the objects commit adds to
// old: the commit, the trees on the paths it changed and their new blobs.
//
// go-git's own push first walks every object reachable from every ref the
// remote advertises, to learn what the remote has: the whole history, each
// push, and over file:// from the remote's loose objects. In a burst of
// writers that walk, repeated on every retry, was most of a retry's cost;
// here the remote's tip is known (the Sync fetched it), so nothing is
// walked beyond the change. And to a local remote, go-git's push opens the
// remote's object storage itself, racing the detached git gc --auto that
// git-receive-pack starts after a push ("packfile not found"); this push
// only talks to git-receive-pack.
func (r *Repo) pushCommit(ctx context.Context, old, commit plumbing.Hash) error {
	return r.pushNarrow(ctx, r.opts.Branch, old, commit, false)
}

// pushNarrow pushes commit to branch, sending the objects it adds to base
// (which the remote has: commit's parent). Without force, the host updates
// the branch only if it still points at base; with force, over whatever it
// points at (the applied branch, which only this cluster writes).
func (r *Repo) pushNarrow(ctx context.Context, branch string, base, commit plumbing.Hash, force bool) error {
	old := base
	objects, err := r.addedObjects(base, commit)
	if err != nil {
		return fmt.Errorf("objects of %s: %w", short(commit), err)
	}
	ep, err := transport.NewEndpoint(r.opts.URL)
	if err != nil {
		return err
	}
	ep.CaBundle = r.caBundle
	cl, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, r.auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return err
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if ar == nil {
		ar = packp.NewAdvRefs()
	}
	cur, ok := ar.References[ref.String()]
	switch {
	case force:
		old = cur // zero when absent: the branch is created
		if ok && cur == commit {
			return r.trackPushed(branch, commit)
		}
	case ok && cur != old || !ok && !old.IsZero():
		// The client-side check go-git makes too: a moved branch is
		// refused before any object is sent.
		return fmt.Errorf("non-fast-forward update: %s", ref)
	}

	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: commit}}
	var said remoteLines
	req.Progress = &said
	if ar.Capabilities.Supports(capability.Sideband64k) {
		_ = req.Capabilities.Set(capability.Sideband64k)
	} else if ar.Capabilities.Supports(capability.Sideband) {
		_ = req.Capabilities.Set(capability.Sideband)
	}
	cfg, err := r.repo.Storer.Config()
	if err != nil {
		return err
	}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		enc := packfile.NewEncoder(wr, r.repo.Storer, !ar.Capabilities.Supports(capability.OFSDelta))
		_, err := enc.Encode(objects, cfg.Pack.Window)
		done <- wr.CloseWithError(err)
	}()
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.Close()
		<-done
		return withRemoteLines(err, &said)
	}
	if err := <-done; err != nil {
		return err
	}
	if rs != nil {
		if err := rs.Error(); err != nil {
			return withRemoteLines(err, &said)
		}
	}
	return r.trackPushed(branch, commit)
}

// trackPushed points branch's remote-tracking ref at commit, as go-git's
// push does: it follows what was pushed.
func (r *Repo) trackPushed(branch string, commit plumbing.Hash) error {
	tracking := plumbing.NewRemoteReferenceName("origin", branch)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(tracking, commit)); err != nil {
		return fmt.Errorf("update %s: %w", tracking, err)
	}
	return nil
}

// withRemoteLines is err with what the host said, as runPush reports it.
func withRemoteLines(err error, said *remoteLines) error {
	if lines := said.lines(); len(lines) > 0 {
		return &remoteError{err: err, lines: lines}
	}
	return err
}

// addedObjects lists the objects commit adds to old (zero: none): commit,
// and the trees and blobs of its tree that old's tree lacks at the same
// path. Submodule entries are not objects of this repo and are skipped.
func (r *Repo) addedObjects(old, commit plumbing.Hash) ([]plumbing.Hash, error) {
	c, err := r.repo.CommitObject(commit)
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var base *object.Tree
	if !old.IsZero() {
		oc, err := r.repo.CommitObject(old)
		if err != nil {
			return nil, err
		}
		if base, err = oc.Tree(); err != nil {
			return nil, err
		}
	}
	seen := map[plumbing.Hash]bool{commit: true}
	out := []plumbing.Hash{commit}
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	var walk func(base, tree *object.Tree) error
	walk = func(base, tree *object.Tree) error {
		if base != nil && base.Hash == tree.Hash {
			return nil
		}
		add(tree.Hash)
		had := map[string]object.TreeEntry{}
		if base != nil {
			for _, e := range base.Entries {
				had[e.Name] = e
			}
		}
		for _, e := range tree.Entries {
			prev, ok := had[e.Name]
			switch {
			case ok && prev.Hash == e.Hash && prev.Mode == e.Mode, e.Mode == filemode.Submodule:
			case e.Mode == filemode.Dir:
				sub, err := object.GetTree(r.repo.Storer, e.Hash)
				if err != nil {
					return err
				}
				var subBase *object.Tree
				if ok && prev.Mode == filemode.Dir {
					if subBase, err = object.GetTree(r.repo.Storer, prev.Hash); err != nil {
						return err
					}
				}
				if err := walk(subBase, sub); err != nil {
					return err
				}
			default:
				add(e.Hash)
			}
		}
		return nil
	}
	if err := walk(base, tree); err != nil {
		return nil, err
	}
	return out, nil
}
