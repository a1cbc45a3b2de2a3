package reconcile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/gitpeer/gitpeer/internal/git/trailer"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// Plan is the difference between a pass's desired files and the repo: what
// one commit must write and delete, and its message.
type Plan struct {
	Writes  map[string][]byte
	Deletes []string
	// Steps are the handshake steps the change carries, in the order the
	// commit names them (Step.String: "send nonce to alpha").
	Steps   []Step
	Message string
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Writes) == 0 && len(p.Deletes) == 0 }

// Diff compares a pass's desired files (out.Files) with the managed paths
// of self in tree, and names the change's steps from what the files are
// (out.Rendered for the Liqo objects). Only paths self may write are
// touched (layout.Writable).
func Diff(tree fs.FS, self string, out *Output) (*Plan, error) {
	desired := out.Files
	plan := &Plan{Writes: map[string][]byte{}}
	// parents are the directories desired files go in: anything else
	// standing there (a symbolic link a writer committed) is in the way.
	parents := map[string]bool{}
	for f, data := range desired {
		if !layout.Writable(self, f) {
			return nil, fmt.Errorf("internal: pass wants to write %s, which %s does not own", f, self)
		}
		// Into another cluster's inbox a reconciler writes artifacts only
		// (the pass checks the part it plays; any part will do here).
		if to, from, rest, _ := layout.Split(f); from == self && !artifact.InboxArtifact(rest, artifact.Sender{Provider: true, Consumer: true}) {
			return nil, fmt.Errorf("internal: pass wants to write %s into the inbox of %s, which is not an artifact", f, to)
		}
		for d := path.Dir(f); d != "." && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
		// What cannot be read (a link, or a path through one) is replaced.
		if old, err := fs.ReadFile(tree, f); err == nil && bytes.Equal(old, data) {
			continue
		}
		plan.Writes[f] = data
	}
	var refused []string
	visit := func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, layout.ErrTooManyEntries) && p != layout.ClusterPath(self) && !strings.HasPrefix(p, layout.ClusterPath(self)+"/") {
			// A folder of ours in another cluster's inbox that is too
			// large to list: its peering wrote nothing (confine), and
			// what is in it is left as it stands. One in this cluster's
			// own tree fails the pass: what it applies is not left to
			// a folder it cannot read.
			refused = append(refused, p)
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if !mayHold(self, p, parents) {
				return fs.SkipDir
			}
			return nil
		}
		if _, want := desired[p]; !want && (layout.Writable(self, p) || parents[p]) {
			plan.Deletes = append(plan.Deletes, p)
		}
		return nil
	}
	clusters, err := fs.ReadDir(tree, layout.ClustersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, d := range clusters {
		// A listed name is one clean element: no path.Join (a thousand
		// clusters, every pass).
		p := layout.ClustersDir + "/" + d.Name()
		if !d.IsDir() { // a file or a link where a cluster's tree goes
			if err := visit(p, d, nil); err != nil {
				return nil, err
			}
			continue
		}
		if d.Name() == self || parents[p] {
			if err := fs.WalkDir(tree, p, visit); err != nil {
				return nil, err
			}
			continue
		}
		// Another cluster's tree where this pass writes nothing: all it
		// may hold of ours is our folder in its inbox, looked up directly
		// rather than by listing its tree and its inbox (two listings per
		// cluster of the mesh, every pass), and not at all in a tree the
		// pass's Cache found without it (the same tree hash).
		if out.cache.inboxAbsent(self, d) {
			continue
		}
		folder := path.Join(p, layout.InboxDir, self)
		fi, err := fs.Stat(tree, folder)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out.cache.noteInboxAbsent(self, d)
		case err == nil && fi.IsDir():
			if err := fs.WalkDir(tree, folder, visit); err != nil {
				return nil, err
			}
		case errors.Is(err, layout.ErrTooManyEntries):
			// Another cluster's inbox too large to read: the peering is
			// Stalled (confine) and nothing of ours in it is touched.
		case err == nil, errors.Is(err, syscall.ENOTDIR), errors.Is(err, layout.ErrSymlink):
			// Nothing of ours: a file or a link at the folder's path is
			// not a path we write (layout.Writable), only what is under it.
		default:
			return nil, err
		}
	}
	for f := range plan.Writes {
		for _, dir := range refused {
			if strings.HasPrefix(f, dir+"/") {
				return nil, fmt.Errorf("internal: pass wants to write %s into %s, which is too large to read", f, dir)
			}
		}
	}
	sort.Strings(plan.Deletes)
	plan.Steps = steps(tree, self, parents, plan, out.Rendered, out.Republished != "")
	plan.Message = message(self, StepTexts(plan.Steps))
	return plan, nil
}

// mayHold reports whether directory dir of the repo can hold a file Diff
// deletes: one self may write, or one standing where a desired directory
// (parents) goes. Other clusters' trees and the inboxes of other writers
// are skipped, so that Diff reads what self owns, not the whole repo.
func mayHold(self, dir string, parents map[string]bool) bool {
	if parents[dir] {
		return true
	}
	parts := strings.Split(dir, "/")
	switch {
	case len(parts) <= 2: // clusters, clusters/<id>: their inboxes may be ours
		return true
	case parts[1] == self:
		return parts[2] != layout.InboxDir // others write self's inbox
	case parts[2] != layout.InboxDir:
		return false // another cluster's own tree
	case len(parts) == 3: // clusters/<id>/inbox: self's folder is in it
		return true
	}
	return parts[3] == self // clusters/<id>/inbox/<from>/…
}

// steps names what a change does in the handshake's words, deterministically.
// parents are the directories of the desired files, as Diff collects them;
// rendered, the Liqo objects among the desired files.
func steps(tree fs.FS, self string, parents map[string]bool, plan *Plan, rendered map[string]render.Object, republished bool) []Step {
	// Two steps are one when their texts are: the text is what a commit
	// carries.
	seen := map[string]bool{}
	var out []Step
	add := func(s Step) {
		if t := s.String(); !seen[t] {
			seen[t] = true
			out = append(out, s)
		}
	}
	has := func(kinds []StepKind, peer string) bool {
		return slices.ContainsFunc(out, func(s Step) bool { return s.Peer == peer && slices.Contains(kinds, s.Kind) })
	}
	existed := func(f string) bool { _, err := fs.Stat(tree, f); return err == nil }
	var tombstones, admitted []string
	for _, f := range handshakeFirst(plan.Writes) {
		w := written{self: self, file: f, data: plan.Writes[f], existed: existed(f), republished: republished}
		w.to, w.from, w.rest, _ = layout.Split(f)
		switch o, ok := rendered[f]; {
		case w.from == self && w.rest == dirmanifest.FileName && isTombstone(f, w.data):
			tombstones = append(tombstones, w.to)
		case ok && o.Kind == render.KindValidatingAdmissionPolicy:
			admitted = append(admitted, o.Peer)
		case ok:
			if s, ok := objectStep(o, w.existed); ok {
				add(s)
			}
		default:
			if s, ok := w.step(); ok {
				add(s)
			}
		}
	}
	// The admission policy changes with the slices answered or the tenant
	// accepted, which name it already; alone (a provider upgraded to a
	// gitpeer that renders it) it is a step of its own.
	for _, peer := range admitted {
		if !has([]StepKind{AnswerSlice, AcceptTenant}, peer) {
			add(Step{Kind: AdmitSlices, Peer: peer})
		}
	}
	for _, f := range plan.Deletes {
		add(deleted(self, f, parents))
	}
	// A tombstone goes with the withdrawals it signs, which name the step;
	// alone (signed again after a writer restored the directory), it is
	// the step.
	for _, to := range tombstones {
		if !has([]StepKind{Withdraw}, to) {
			add(Step{Kind: SignWithdrawal, Peer: to})
		}
	}
	if len(out) == 0 && !plan.Empty() {
		add(Step{Kind: UpdateStatus})
	}
	return out
}

// handshakeFirst is the paths of writes, the handshake's own artifacts
// first, so the subject leads with the step (a Tenant, an Identity) that
// the slice requests or answers of the same pass go with; then by path.
func handshakeFirst(writes map[string][]byte) []string {
	paths := make([]string, 0, len(writes))
	for f := range writes {
		paths = append(paths, f)
	}
	sort.Slice(paths, func(i, j int) bool {
		if a, b := isHandshake(paths[i]), isHandshake(paths[j]); a != b {
			return a
		}
		return paths[i] < paths[j]
	})
	return paths
}

// written is a file a change writes that is no rendered Liqo object, as
// layout.Split cuts its path (to, from, rest).
type written struct {
	self, file, to, from, rest string
	data                       []byte
	// existed tells the file replaces one; republished, that the pass
	// writes cluster.yaml again over an edit its cluster did not sign.
	existed, republished bool
}

// step is the step writing w makes: a file of the cluster's own tree
// that says something to its peers, or an artifact into a peer's inbox.
// None (false) for the rest (status, kustomization, manifests).
func (w written) step() (Step, bool) {
	if w.from == "" && w.to == w.self {
		switch {
		case w.rest == layout.OpenPGPKeyFile:
			return Step{Kind: PublishOpenPGPKey}, true
		case w.rest == layout.ClusterFile && w.existed && w.republished:
			return Step{Kind: RepublishClusterFile, Peer: w.self}, true
		case w.rest == layout.ClusterFile && w.existed:
			return Step{Kind: PublishRolledKey}, true
		case w.rest == path.Join(fluxtrust.Dir, fluxtrust.SecretFile) && w.existed:
			return Step{Kind: UpdateFluxKeys, Peer: w.self}, true
		}
		return Step{}, false
	}
	if w.from != w.self {
		return Step{}, false
	}
	switch {
	case w.rest == layout.NonceFile:
		return Step{Kind: SendNonce, Peer: w.to}, true
	case w.rest == layout.TenantFile:
		return Step{Kind: SendTenant, Peer: w.to}, true
	case w.rest == layout.IdentityFile && w.existed:
		return Step{Kind: RenewIdentity, Peer: w.to}, true
	case w.rest == layout.IdentityFile:
		return Step{Kind: IssueIdentity, Peer: w.to}, true
	}
	if name, ok := artifact.SliceAnswerName(w.rest); ok {
		return Step{Kind: AnswerSlice, Peer: w.to, Name: name}, true
	}
	if name, ok := artifact.SliceName(w.rest); ok {
		return Step{Kind: RequestSlice, Peer: w.to, Name: name}, true
	}
	return Step{}, false
}

// deleted is the step deleting f makes; parents are the directories of
// the desired files.
func deleted(self, f string, parents map[string]bool) Step {
	to, from, rest, _ := layout.Split(f)
	switch {
	case from == self && !artifact.InboxArtifact(rest, artifact.Sender{Provider: true, Consumer: true}):
		// Not an artifact, so not one this cluster withdraws: a file
		// someone else put in its folder.
		return Step{Kind: RemoveFromInbox, Peer: to, Name: rest}
	case from == self:
		return Step{Kind: Withdraw, Peer: to, Name: strings.TrimSuffix(rest, ".yaml")}
	// A deletion under a peer's directory that still holds desired
	// files removes a file nobody signed, not the peering's objects.
	case strings.HasPrefix(rest, layout.LiqoDir+"/") && !parents[layout.PeerDir(self, peerOfRendered(rest))]:
		return Step{Kind: RemoveObjects, Peer: peerOfRendered(rest)}
	case rest == "":
		return Step{Kind: Remove, Name: f} // something in the way of a directory
	}
	return Step{Kind: Remove, Name: rest}
}

// isHandshake reports whether f is a nonce, Tenant or Identity in an inbox.
func isHandshake(f string) bool {
	_, from, rest, _ := layout.Split(f)
	return from != "" && (rest == layout.NonceFile || rest == layout.TenantFile || rest == layout.IdentityFile)
}

// isTombstone reports whether data, written at f, is a tombstone: the
// signed manifest of a withdrawn directory.
func isTombstone(f string, data []byte) bool {
	m, err := dirmanifest.Parse(f, data)
	return err == nil && m.Tombstone()
}

// MaxSubject is the longest subject line a pass's commit message has, in
// characters, "<cluster>: " included: Git's convention (git log --oneline
// and the Git hosts' commit lists cut longer subjects).
const MaxSubject = 72

// message is the commit message: a subject naming the cluster and its
// steps, and trailers a machine can read back (one Gitpeer-Step per step).
// When the steps do not fit in MaxSubject, the subject names the first
// ones that do and how many more there are, and the body lists them all,
// one per line. The same steps give the same bytes.
func message(self string, steps []string) string {
	if len(steps) == 0 {
		return ""
	}
	room := MaxSubject - utf8.RuneCountInString(self+": ")
	if all := strings.Join(steps, "; "); utf8.RuneCountInString(all) <= room {
		return trailer.Message(self, all, steps...)
	}
	var body strings.Builder
	for _, s := range steps {
		body.WriteString("- " + s + "\n")
	}
	return trailer.MessageWithBody(self, subject(steps, room), body.String(), steps...)
}

// subject is the first of steps that fit in room characters, then "and
// N more"; a first step too long by itself is cut, ending in "…".
func subject(steps []string, room int) string {
	for k := len(steps) - 1; k >= 1; k-- {
		s := strings.Join(steps[:k], "; ") + fmt.Sprintf(" and %d more", len(steps)-k)
		if utf8.RuneCountInString(s) <= room {
			return s
		}
	}
	more := ""
	if len(steps) > 1 {
		more = fmt.Sprintf(" and %d more", len(steps)-1)
	}
	first := []rune(steps[0])
	keep := max(room-utf8.RuneCountInString(more)-1, 0)
	return string(first[:min(keep, len(first))]) + "…" + more
}

// peerOfRendered is the peer of a path under liqo/ in a cluster's tree.
func peerOfRendered(rest string) string {
	return strings.SplitN(strings.TrimPrefix(rest, layout.LiqoDir+"/"), "/", 2)[0]
}
