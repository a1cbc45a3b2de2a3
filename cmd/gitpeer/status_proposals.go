package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/schema"
)

// maxProposals bounds how many unmerged branches status reads for the
// steps peerings wait for: a repo with hundreds of branches costs status
// no more than this many tree reads.
const maxProposals = 32

// proposalRefs is where the branches of a cloned URL are fetched to, in
// the clone status made and removes.
const proposalRefs = "refs/remotes/origin/"

// readPeerings reads the peerings of src under spec as status and wait show
// them: peerstatus.Read, and, when some peering is not Ready, again with
// the repo's unmerged branches as proposals, so that a peering waiting for
// a merge says which branch to merge. target and credentials are those src
// was opened from (a URL's other branches are fetched with them). A branch
// that cannot be listed or read is left out: the peerings are what counts.
func readPeerings(ctx context.Context, src *repoSource, spec *schema.Spec, specPath, target, credentials string) ([]peerstatus.Peering, error) {
	opts := peerstatus.Options{SpecFile: specPath}
	all, err := peerstatus.Read(src.Tree, spec, opts)
	if err != nil || allReady(all) || src.Commit == "" {
		return all, err
	}
	proposals, done := unmergedBranches(ctx, src, target, credentials)
	defer done()
	if len(proposals) == 0 {
		return all, nil
	}
	opts.Proposals = proposals
	return peerstatus.Read(src.Tree, spec, opts)
}

// unmergedBranches are the branches of src's repository (local and
// remote-tracking; for a clone, the remote's, fetched) whose tip is not
// merged into the commit read, less the applied branches (seals, never
// proposals), sorted by name, at most maxProposals. done releases them.
func unmergedBranches(ctx context.Context, src *repoSource, target, credentials string) ([]peerstatus.Proposal, func()) {
	var closers []func() error
	done := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	repo, err := gitobj.Open(src.Dir)
	if err != nil {
		return nil, done
	}
	if src.Cloned {
		if err := fetchBranches(ctx, repo, target, credentials); err != nil {
			return nil, done
		}
	}
	read, err := repo.CommitObject(plumbing.NewHash(src.Commit))
	if err != nil {
		return nil, done
	}
	refs, err := repo.References()
	if err != nil {
		return nil, done
	}
	tips := map[string]plumbing.Hash{}
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		name := r.Name().String()
		switch {
		case r.Name().IsBranch():
			name = r.Name().Short()
		case r.Name().IsRemote():
			// origin/gitpeer/beta is merged as gitpeer/beta.
			_, name, _ = strings.Cut(r.Name().Short(), "/")
		default:
			return nil
		}
		if strings.HasPrefix(name, "gitpeer/applied/") || name == "HEAD" || r.Hash().String() == src.Commit {
			return nil
		}
		if _, seen := tips[name]; !seen || r.Name().IsBranch() {
			tips[name] = r.Hash()
		}
		return nil
	})
	names := make([]string, 0, len(tips))
	for name := range tips {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []peerstatus.Proposal
	for _, name := range names {
		if len(out) == maxProposals {
			break
		}
		tip, err := repo.CommitObject(tips[name])
		if err != nil {
			continue
		}
		if merged, err := tip.IsAncestor(read); err != nil || merged {
			continue
		}
		if !touchesClusters(tip) {
			continue
		}
		tree, err := gitobj.OpenCommitTree(src.Dir, tips[name].String())
		if err != nil {
			continue
		}
		closers = append(closers, tree.Close)
		out = append(out, peerstatus.Proposal{Branch: name, Tree: tree.TreeFS})
	}
	return out, done
}

// touchesClusters reports whether tip's tree has a clusters/ folder: a
// branch without one (docs, CI) proposes nothing status reads.
func touchesClusters(tip *object.Commit) bool {
	tree, err := tip.Tree()
	if err != nil {
		return false
	}
	_, err = tree.FindEntry(layout.ClustersDir)
	return err == nil
}

// fetchBranches fetches every branch of target into the clone status made
// (under proposalRefs), with the credentials it was cloned with.
func fetchBranches(ctx context.Context, repo *gogit.Repository, target, credentials string) error {
	creds, err := gitauth.New(credentials, target)
	if err != nil {
		return err
	}
	auth, ca, err := creds.Transport()
	if err != nil {
		return err
	}
	// An anonymous remote: whatever the clone's configuration names.
	remote := gogit.NewRemote(repo.Storer, &config.RemoteConfig{Name: "gitpeer-status", URLs: []string{target}})
	err = remote.FetchContext(ctx, &gogit.FetchOptions{Auth: auth, CABundle: ca, Tags: gogit.NoTags, Force: true,
		RefSpecs: []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/*:%s*", proposalRefs))}})
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}
