package attack

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// Caps count entries as well as bytes (docs/trust.md, "Peer isolation and
// size caps"): a folder of more entries than layout.EntryLimit is refused
// from its tree object, before any entry of it is read.

// plantFolder commits on main, as a writer holding no key, folder dir
// holding n files that share one blob, replacing whatever was there: the
// tree object is built directly, so that a folder of many thousand entries
// takes a fraction of a second. Their names are 100 bytes long (a tree
// object of 128 bytes an entry), so that fewer files make a larger tree.
// It returns the commit.
func (w *world) plantFolder(dir string, n int) string {
	w.t.Helper()
	repo, s, tip := w.mainTip()
	wr := gitobj.Writer{S: s}
	o := s.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	wo, err := o.Writer()
	if err != nil {
		w.t.Fatal(err)
	}
	_, _ = wo.Write([]byte("kind: ConfigMap\n"))
	_ = wo.Close()
	blob, err := s.SetEncodedObject(o)
	if err != nil {
		w.t.Fatal(err)
	}
	pad := strings.Repeat("n", 100-len("-0000000.yaml"))
	big := &object.Tree{Entries: make([]object.TreeEntry, 0, n)}
	for i := 0; i < n; i++ {
		big.Entries = append(big.Entries, object.TreeEntry{Name: fmt.Sprintf("%s-%07d.yaml", pad, i), Mode: filemode.Regular, Hash: blob})
	}
	sub, err := wr.StoreTree(big)
	if err != nil {
		w.t.Fatal(err)
	}
	root, err := graft(s, wr, tip.TreeHash, strings.Split(dir, "/"), sub)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.commitTree(repo, tip, root, "notes for alpha\n")
}

// revertTo commits on main, as a writer holding no key, the tree of commit
// rev: what git revert of everything since would leave.
func (w *world) revertTo(rev string) string {
	w.t.Helper()
	repo, s, tip := w.mainTip()
	c, err := object.GetCommit(s, plumbing.NewHash(rev))
	if err != nil {
		w.t.Fatal(err)
	}
	return w.commitTree(repo, tip, c.TreeHash, "revert the notes\n")
}

func (w *world) mainTip() (*git.Repository, storer.EncodedObjectStorer, *object.Commit) {
	w.t.Helper()
	repo, err := gitobj.Open(w.remote)
	if err != nil {
		w.t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		w.t.Fatal(err)
	}
	tip, err := repo.CommitObject(ref.Hash())
	if err != nil {
		w.t.Fatal(err)
	}
	return repo, repo.Storer, tip
}

// commitTree commits root on tip as mallory, unsigned, and moves main to
// it, as a push would.
func (w *world) commitTree(repo *git.Repository, tip *object.Commit, root plumbing.Hash, message string) string {
	w.t.Helper()
	sig := object.Signature{Name: "mallory", Email: "mallory@example.com", When: w.clock.Now()}
	c, err := gitobj.Writer{S: repo.Storer}.Commit(&object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: root, ParentHashes: []plumbing.Hash{tip.Hash}}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), c)); err != nil {
		w.t.Fatal(err)
	}
	return c.String()
}

// graft returns tree root with the directory at path elems replaced by
// tree sub, writing the trees on the path.
func graft(s storer.EncodedObjectStorer, wr gitobj.Writer, root plumbing.Hash, elems []string, sub plumbing.Hash) (plumbing.Hash, error) {
	if len(elems) == 0 {
		return sub, nil
	}
	t := &object.Tree{}
	if !root.IsZero() {
		var err error
		if t, err = object.GetTree(s, root); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	var below plumbing.Hash
	entries := make([]object.TreeEntry, 0, len(t.Entries)+1)
	for _, e := range t.Entries {
		if e.Name == elems[0] {
			below = e.Hash
			continue
		}
		entries = append(entries, e)
	}
	h, err := graft(s, wr, below, elems[1:], sub)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries = append(entries, object.TreeEntry{Name: elems[0], Mode: filemode.Dir, Hash: h})
	// Git's order: a directory sorts as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return wr.StoreTree(&object.Tree{Entries: entries})
}

// TestAFolderOfManyEntriesStallsOnlyItsPeering: a writer holding no key
// commits, in alpha's folder of beta's inbox, 12,000 files sharing one
// blob (a tree object of 1.5 MB; the had a million entries). beta's pass reads
// none of them: its peerings with alpha are Stalled TooManyEntries naming
// the folder, its tree object's size and the cap, refused from the tree
// object alone; what beta signed for alpha is kept, nothing is signed, and
// gamma's peering with beta goes on. alpha, whose folder it is, stalls its
// peerings with beta the same way instead of failing its pass, and writes
// nothing into it. verify names the folder. A folder just above the cap
// (5,000 entries, in beta's folder of alpha's inbox) is named with its
// count. Once the writer's commits are reverted, every peering is Ready
// again.
func TestAFolderOfManyEntriesStallsOnlyItsPeering(t *testing.T) {
	t.Parallel()
	w := settled(t, twoWaySpec)
	before := w.signedAll()
	settledAt := w.ref("main")
	identity := w.mustShow("clusters/alpha/inbox/beta/identity.yaml")
	rendered := w.lsTree("main", layout.PeerDir("beta", "alpha"))
	const folder = "clusters/beta/inbox/alpha"
	w.plantFolder(folder, 12000)

	for _, id := range []string{"beta", "gamma", "beta", "alpha"} {
		w.pass(id)
	}
	w.nothingSigned(before)
	limit := fmt.Sprint(layout.MaxFolderEntries)
	for _, id := range []string{"beta", "alpha"} {
		for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}} {
			w.mustStall(id, pr.Consumer, pr.Provider, reasons.TooManyEntries, folder, "tree object of", "more than "+limit+" entries")
		}
	}
	w.mustBeReady("gamma", "beta")
	if got := w.mustShow("clusters/alpha/inbox/beta/identity.yaml"); !bytes.Equal(got, identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	if got := w.lsTree("main", layout.PeerDir("beta", "alpha")); got != rendered {
		t.Fatalf("beta's objects for alpha changed: %s, were %s", got, rendered)
	}
	mustFind(t, w.verify(), folder, reasons.TooManyEntries, "")

	// Just above the cap, the count is named.
	w.revertTo(settledAt)
	const outbox = "clusters/alpha/inbox/beta"
	w.plantFolder(outbox, layout.MaxFolderEntries+904)
	w.pass("beta")
	w.pass("alpha")
	for _, id := range []string{"beta", "alpha"} {
		w.mustStall(id, "beta", "alpha", reasons.TooManyEntries, outbox, "5000 entries, more than "+limit)
	}
	w.mustBeReady("gamma", "beta")

	w.revertTo(settledAt)
	w.converge()
	w.nothingSigned(before)
	for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}, {Consumer: "gamma", Provider: "beta"}} {
		w.mustBeReady(pr.Consumer, pr.Provider)
	}
}
