package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/review/pullrequest"
)

// pushBranchHelp is added to reconcile's help.
const pushBranchHelp = `

--push-branch TEMPLATE turns the push into a review flow: the pass still reads
only --branch (merged = approved), but its commit goes to the branch TEMPLATE
names ({cluster} is this cluster's ID, e.g. gitpeer/{cluster}), rebuilt at
every pass as --branch's tip plus exactly one signed commit. A pass with
nothing left to propose deletes the branch (hosts then close its pull
request). Re-running replaces the branch only when it holds this cluster's
own previous proposal, or something already merged: a commit anyone else
pushed there is never overwritten, the pass fails naming it. reconcile prints
the branch and where to compare it; opening the pull request is left to you,
your host's automation or --open-pull-request. A pass on the same tip with
the same inputs proposes the same commit, byte for byte: the branch, and its
review, stay as they are.

--review-scope applied proposes only what the cluster applies (clusters/<id>/
but its inbox: what its applied branch holds); the handshake artifacts it
puts in its peers' inboxes, which no engine applies, are pushed to --branch
directly, as a commit of their own before the proposal. A handshake then
completes without waiting for merges, and each cluster's proposal is merged
once. --review-scope all (the default) proposes everything. See
docs/gitops.md, "Review branches".`

// placeholder matches a {name} of a --push-branch template.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// expandPushBranch returns the branch --push-branch template names for
// cluster: {cluster} replaced by its ID. The result must be a valid branch
// name other than target and outside the applied branches (gitpeer/applied/).
func expandPushBranch(template, cluster, target string) (string, error) {
	var unknown []string
	branch := placeholder.ReplaceAllStringFunc(template, func(p string) string {
		if p == "{cluster}" {
			return cluster
		}
		unknown = append(unknown, p)
		return p
	})
	appliedPrefix := layout.AppliedBranchPrefix
	switch {
	case len(unknown) > 0:
		return "", fmt.Errorf("--push-branch %q: unknown placeholder %s (only {cluster} is known)", template, unknown[0])
	case plumbing.NewBranchReferenceName(branch).Validate() != nil || strings.HasPrefix(branch, "refs/"):
		return "", fmt.Errorf("--push-branch %q: %q is not a valid branch name", template, branch)
	case branch == target:
		return "", fmt.Errorf("--push-branch %q: %s is the branch reconciled (--branch): proposals go to another branch", template, branch)
	case strings.HasPrefix(branch+"/", appliedPrefix):
		return "", fmt.Errorf("--push-branch %q: %s is under %s, where the applied branches live", template, branch, appliedPrefix)
	}
	return branch, nil
}

// compareHint tells where to see what branch proposes for target: the
// compare page of the repo's host when repoURL is an https or ssh URL of a
// GitHub, GitLab or Gitea (Forgejo, Codeberg) host, recognised by its name,
// else the git command that lists the proposed commit.
func compareHint(repoURL, target, branch string) string {
	fallback := fmt.Sprintf("git log %s..%s", target, branch)
	loc, err := pullrequest.Locate(repoURL)
	if err != nil {
		return fallback
	}
	base := "https://" + loc.Host + "/" + loc.Path
	name := strings.ToLower(loc.Host)
	switch {
	case strings.Contains(name, "github"):
		return fmt.Sprintf("%s/compare/%s...%s", base, target, branch)
	case strings.Contains(name, "gitlab"):
		return fmt.Sprintf("%s/-/compare/%s...%s", base, target, branch)
	case strings.Contains(name, "gitea"), strings.Contains(name, "forgejo"), strings.Contains(name, "codeberg"):
		return fmt.Sprintf("%s/compare/%s...%s", base, target, branch)
	}
	return fallback
}
