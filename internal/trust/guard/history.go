package guard

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// Finding is one blob of a repository's history that Check refuses.
type Finding struct {
	// Commit is the hex hash of the oldest commit (by committer time) found
	// holding the blob: usually the one that introduced it.
	Commit string
	// Path is the slash-separated path of the blob in that commit.
	Path string
	// Reason says what was found and where in the blob.
	Reason string
}

// String formats f as "commit path: reason".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s: %s", f.Commit, f.Path, f.Reason)
}

// ScanHistory checks every blob reachable from every ref (and HEAD) of the
// Git repository at dir, bare or not, and returns one Finding per offending
// blob, ordered by commit time then path. Each distinct blob and tree is read
// once, so the cost is that of the repository's unique objects, not of
// commits × files. It returns an error when dir is not a repository or an
// object cannot be read; it never shells out to git.
func ScanHistory(dir string) ([]Finding, error) {
	return ScanHistoryCached(dir, nil)
}

// ScanHistoryCached is ScanHistory with Inspect's answers taken from, and
// kept in, cache (nil: none): content a caller already inspected, such as
// the files of the checkout at the tip, is not scanned again.
func ScanHistoryCached(dir string, cache *Cache) ([]Finding, error) {
	repo, done, err := gitobj.OpenHistory(dir)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", dir, err)
	}
	defer done()
	commits, err := reachableCommits(repo)
	if err != nil {
		return nil, fmt.Errorf("scan history of %s: %w", dir, err)
	}
	// Oldest first, so a blob is attributed to the commit that introduced it.
	sort.SliceStable(commits, func(i, j int) bool {
		return commits[i].Committer.When.Before(commits[j].Committer.When)
	})
	h := &historyScan{
		repo:      repo,
		cache:     cache,
		seenTrees: map[plumbing.Hash]bool{},
		seenBlobs: map[plumbing.Hash]bool{},
	}
	for _, c := range commits {
		tree, err := c.Tree()
		if err != nil {
			return nil, fmt.Errorf("scan history of %s: commit %s: %w", dir, c.Hash, err)
		}
		if err := h.tree(c.Hash.String(), tree, ""); err != nil {
			return nil, fmt.Errorf("scan history of %s: commit %s: %w", dir, c.Hash, err)
		}
	}
	return h.findings, nil
}

// reachableCommits returns every commit reachable from HEAD and all refs,
// peeling annotated tags.
func reachableCommits(repo *git.Repository) ([]*object.Commit, error) {
	var tips []plumbing.Hash
	refs, err := repo.References()
	if err != nil {
		return nil, err
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			tips = append(tips, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if head, err := repo.Head(); err == nil { // a detached HEAD is a ref too
		tips = append(tips, head.Hash())
	}

	seen := map[plumbing.Hash]bool{}
	var out []*object.Commit
	for _, tip := range tips {
		c, err := peelToCommit(repo, tip)
		if err != nil {
			return nil, err
		}
		if c == nil || seen[c.Hash] {
			continue
		}
		iter := object.NewCommitPreorderIter(c, seen, nil)
		err = iter.ForEach(func(c *object.Commit) error {
			if !seen[c.Hash] {
				seen[c.Hash] = true
				out = append(out, c)
			}
			return nil
		})
		if err != nil && !errors.Is(err, storer.ErrStop) {
			return nil, err
		}
	}
	return out, nil
}

// peelToCommit follows annotated tags to a commit; refs naming trees or blobs
// directly are rare and yield nil.
func peelToCommit(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	for range 16 { // tags of tags, bounded
		obj, err := repo.Object(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", h, err)
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o, nil
		case *object.Tag:
			h = o.Target
		default:
			return nil, nil
		}
	}
	return nil, nil
}

type historyScan struct {
	repo      *git.Repository
	cache     *Cache
	seenTrees map[plumbing.Hash]bool
	seenBlobs map[plumbing.Hash]bool
	findings  []Finding
}

// tree walks t (at dir) recursively, skipping subtrees already walked: an
// unchanged subtree holds only blobs that were already checked.
func (h *historyScan) tree(commit string, t *object.Tree, dir string) error {
	if h.seenTrees[t.Hash] {
		return nil
	}
	h.seenTrees[t.Hash] = true
	for _, e := range t.Entries {
		p := path.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			sub, err := h.repo.TreeObject(e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s: %w", p, err)
			}
			if err := h.tree(commit, sub, p); err != nil {
				return err
			}
		case filemode.Submodule:
			// A commit of another repository: nothing to read here.
		default:
			if err := h.blob(commit, e.Hash, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *historyScan) blob(commit string, hash plumbing.Hash, p string) error {
	if h.seenBlobs[hash] {
		return nil
	}
	h.seenBlobs[hash] = true
	b, err := h.repo.BlobObject(hash)
	if err != nil {
		return fmt.Errorf("read blob %s: %w", p, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s: %w", p, err)
	}
	content, err := io.ReadAll(rd)
	_ = rd.Close()
	if err != nil {
		return fmt.Errorf("read blob %s: %w", p, err)
	}
	if reason, found := h.cache.Inspect(content); found {
		h.findings = append(h.findings, Finding{Commit: commit, Path: p, Reason: reason})
	}
	return nil
}
