package gitobj

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"
)

// Push is one narrow push (PushNarrow): Updates to the branches of the
// remote at URL, sending the objects each commit adds to its base.
type Push struct {
	// URL is the remote's (any transport go-git has a client for);
	// CABundle the PEM certificates an HTTPS host is checked against
	// besides the system's; Auth its credentials (nil: none).
	URL      string
	CABundle []byte
	Auth     transport.AuthMethod
	// Store holds each commit and its objects, and the pack window its
	// config sets.
	Store storage.Storer
	// Updates are the branches to move, in the order the host reports
	// on them; at least one.
	Updates []Update
	// Atomic asks the host to apply every update or none (Git's atomic
	// push): with more than one update, a host that does not offer it
	// gets nothing and PushNarrow returns ErrAtomicUnsupported.
	Atomic bool
	// Progress, when set, receives what the host says on the sideband.
	Progress io.Writer
}

// Update is one branch a Push moves.
type Update struct {
	// Branch is the short name of the remote branch.
	Branch string
	// Base is a commit the remote has in full, or that another update of
	// the same push sends, whose tree is compared with Commit's to find
	// what to send: Commit's parent, or with Force the branch's current
	// head (zero: the remote has nothing of it); Commit is the commit
	// pushed.
	Base, Commit plumbing.Hash
	// Force updates Branch over whatever it points at (or creates it);
	// without it the host updates Branch only if it still points at Base.
	Force bool
}

// ErrAtomicUnsupported is returned by PushNarrow when an atomic push of
// several branches goes to a host that does not offer Git's atomic
// capability; nothing was sent.
var ErrAtomicUnsupported = errors.New("the host does not offer atomic pushes")

// PushNarrow pushes each update's Commit to its Branch, sending just the
// objects they add to their Base: each commit, the trees on the paths it
// changed and their new blobs (AddedObjects). With Force, a branch already
// at Commit is left as it is (nothing sent when no update is left).
// Without Force, a branch the remote advertises elsewhere than Base is
// refused before any object is sent, with go-git's client-side message
// "non-fast-forward update: <ref>"; a host's refusal comes as its
// receive-pack status, the first refused update's. Errors are also
// ErrAtomicUnsupported and the transport's.
//
// go-git's own push first walks every object reachable from every ref the
// remote advertises, to learn what the remote has: the whole history, each
// push, and over file:// from the remote's loose objects. In a burst of
// writers that walk, repeated on every retry, was most of a retry's cost;
// here the remote's tip is known (the caller fetched it), so nothing is
// walked beyond the change. And to a local remote, go-git's push opens the
// remote's object storage itself, racing the detached git gc --auto that
// git-receive-pack starts after a push ("packfile not found"); this push
// only talks to git-receive-pack.
func PushNarrow(ctx context.Context, p Push) error {
	if len(p.Updates) == 0 {
		return errors.New("push: no update")
	}
	var objects []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for _, u := range p.Updates {
		added, err := AddedObjects(p.Store, u.Base, u.Commit)
		if err != nil {
			return fmt.Errorf("objects of %s: %w", u.Commit.String()[:12], err)
		}
		for _, h := range added {
			if !seen[h] {
				seen[h] = true
				objects = append(objects, h)
			}
		}
	}
	ep, err := transport.NewEndpoint(p.URL)
	if err != nil {
		return err
	}
	ep.CaBundle = p.CABundle
	cl, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, p.Auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return err
	}
	if ar == nil {
		ar = packp.NewAdvRefs()
	}
	var commands []*packp.Command
	for _, u := range p.Updates {
		ref := plumbing.NewBranchReferenceName(u.Branch)
		old := u.Base
		cur, ok := ar.References[ref.String()]
		switch {
		case u.Force:
			old = cur // zero when absent: the branch is created
			if ok && cur == u.Commit {
				continue
			}
		case ok && cur != old || !ok && !old.IsZero():
			// The client-side check go-git makes too: a moved branch is
			// refused before any object is sent.
			return fmt.Errorf("non-fast-forward update: %s", ref)
		}
		commands = append(commands, &packp.Command{Name: ref, Old: old, New: u.Commit})
	}
	if len(commands) == 0 {
		return nil
	}

	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = commands
	if p.Atomic && len(p.Updates) > 1 {
		if !ar.Capabilities.Supports(capability.Atomic) {
			return ErrAtomicUnsupported
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	if p.Progress != nil {
		req.Progress = p.Progress
	}
	if ar.Capabilities.Supports(capability.Sideband64k) {
		_ = req.Capabilities.Set(capability.Sideband64k)
	} else if ar.Capabilities.Supports(capability.Sideband) {
		_ = req.Capabilities.Set(capability.Sideband)
	}
	cfg, err := p.Store.Config()
	if err != nil {
		return err
	}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		enc := packfile.NewEncoder(wr, p.Store, !ar.Capabilities.Supports(capability.OFSDelta))
		_, err := enc.Encode(objects, cfg.Pack.Window)
		done <- wr.CloseWithError(err)
	}()
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.Close()
		<-done
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	return statusError(rs)
}

// statusError is the host's report on a push as one error: its unpack
// error, else every refused update as go-git words it ("command error on
// <ref>: <status>"), joined by "; "; nil when all were applied. Every
// refusal is named: in an atomic push the first ones say only "atomic
// push failure", and the cause comes after.
func statusError(rs *packp.ReportStatus) error {
	if rs == nil {
		return nil
	}
	if err := rs.Error(); err == nil || rs.UnpackStatus != "ok" {
		return err
	}
	var errs []string
	for _, c := range rs.CommandStatuses {
		if err := c.Error(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	return errors.New(strings.Join(errs, "; "))
}

// AddedObjects lists the objects commit adds to old (zero: none) in s:
// commit, and the trees and blobs of its tree that old's tree lacks at the
// same path (Diff). Submodule entries are not objects of this repository
// and are skipped.
func AddedObjects(s storage.Storer, old, commit plumbing.Hash) ([]plumbing.Hash, error) {
	tree, err := TreeHash(s, commit)
	if err != nil {
		return nil, err
	}
	base, err := TreeHash(s, old)
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{commit: true}
	out := []plumbing.Hash{commit}
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	if base != tree {
		add(tree)
	}
	err = Diff(StoreTrees(s), base, tree, func(_ string, _, to *object.TreeEntry) error {
		if to != nil && to.Mode != filemode.Submodule {
			add(to.Hash)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
