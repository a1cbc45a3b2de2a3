package gitsync

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// MemoryTree is a repo's tree held as Git objects in memory, changed as
// Sync's commits change the tip. It is for benchmarks that run thousands
// of passes: their passes read a TreeFS, as the runner's do, without a
// repository on disk or a commit per pass. Not safe for concurrent use.
type MemoryTree struct {
	s       *memory.Storage
	root    plumbing.Hash // zero: empty
	decoded *gitobj.TreeCache
}

// NewMemoryTree is an empty tree.
func NewMemoryTree() *MemoryTree {
	return &MemoryTree{s: memory.NewStorage(), decoded: gitobj.NewTreeCache()}
}

// FS is the tree as it stands, as a pass reads the tip: a fresh TreeFS, so
// each pass decodes the trees it reads, as in a Sync.
func (m *MemoryTree) FS() *TreeFS { return gitobj.TreeFSOf(m.s, m.root, m.decoded) }

// Apply changes the tree by ch as a Sync would commit it, with the same
// checks: an error wrapping ErrInvalidChange (or guard.ErrSecret) for a
// change Sync refuses, and nothing changed then.
func (m *MemoryTree) Apply(ch *Change) error {
	p, err := planChange(ch, m.FS(), "the memory tree")
	if err != nil {
		return err
	}
	if len(p.files) == 0 {
		return nil
	}
	h, err := treeWithPlan(gitobj.Writer{S: m.s}, p, m.root)
	if err != nil {
		return err
	}
	m.root = h
	return nil
}
