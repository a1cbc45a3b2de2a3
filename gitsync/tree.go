package gitsync

import "github.com/gitpeer/gitpeer/internal/git/gitobj"

// TreeFS is the tip's tree as a pass reads it (see gitobj.TreeFS): the
// commit's Git objects, never the worktree.
type TreeFS = gitobj.TreeFS
