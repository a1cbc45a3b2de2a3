package runner

import (
	"fmt"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// The review scopes of a review branch (reconcile --review-scope): which
// part of a pass's change waits for a merge.
const (
	// ReviewAll proposes the whole change: nothing reaches the shared
	// branch unmerged.
	ReviewAll = "all"
	// ReviewApplied proposes only what the cluster applies: its own tree
	// but its inbox (clusters/<id>/, what its applied branch holds). The
	// handshake artifacts it puts in its peers' inboxes
	// (clusters/<peer>/inbox/<id>/), which no engine applies and every
	// peer checks against the keys it pinned, go to the shared branch
	// directly.
	ReviewApplied = "applied"
)

// ReviewScopes are the values of --review-scope, the default first.
var ReviewScopes = []string{ReviewAll, ReviewApplied}

// Reviewed is gitsync.Review.Paths for cluster id and scope (one of
// ReviewScopes): nil for ReviewAll (every path is reviewed); for
// ReviewApplied, true for a path of id's own tree outside its inbox. An
// unknown scope is an error naming the allowed ones.
func Reviewed(scope, id string) (func(path string) bool, error) {
	switch scope {
	case ReviewAll:
		return nil, nil
	case ReviewApplied:
		return func(p string) bool {
			cluster, from, _, ok := layout.Split(p)
			return ok && cluster == id && from == ""
		}, nil
	}
	return nil, fmt.Errorf("unknown review scope %q: want %s or %s", scope, ReviewAll, ReviewApplied)
}
