package verify

import (
	"errors"
	"fmt"
	"io"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/layout"
)

// TrailerCluster is the commit trailer naming the cluster whose reconciler
// made a commit.
const TrailerCluster = "Gitpeer-Cluster:"

// History checks the ownership rule over a repository's history: every
// commit a reconciler made (it carries a Gitpeer-Cluster trailer) may only
// touch paths that cluster may write. Commits without the trailer are the
// humans' (the spec, cluster.yaml), reviewed in pull requests. It walks
// first parents from HEAD; dir may be a checkout or a bare repository.
func History(dir string) ([]Problem, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: false})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var problems []Problem
	c, err := repo.CommitObject(head.Hash())
	for err == nil {
		cluster := trailer(c.Message)
		if cluster != "" {
			problems = append(problems, commitProblems(c, cluster)...)
		}
		if c.NumParents() == 0 {
			break
		}
		c, err = c.Parent(0)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return problems, nil
}

func trailer(msg string) string {
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(line, TrailerCluster); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func commitProblems(c *object.Commit, cluster string) []Problem {
	tree, err := c.Tree()
	if err != nil {
		return []Problem{{File: c.Hash.String(), Reason: ReasonUnreadable, Message: err.Error()}}
	}
	var parentTree *object.Tree
	if c.NumParents() > 0 {
		p, err := c.Parent(0)
		if err != nil {
			return []Problem{{File: c.Hash.String(), Reason: ReasonUnreadable, Message: err.Error()}}
		}
		if parentTree, err = p.Tree(); err != nil {
			return []Problem{{File: c.Hash.String(), Reason: ReasonUnreadable, Message: err.Error()}}
		}
	}
	changes, err := object.DiffTree(parentTree, tree)
	if err != nil {
		return []Problem{{File: c.Hash.String(), Reason: ReasonUnreadable, Message: err.Error()}}
	}
	var out []Problem
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if name == "" || layout.Writable(cluster, name) {
				continue
			}
			out = append(out, Problem{File: name, Field: "commit " + c.Hash.String()[:12], Reason: ReasonOwnershipViolation,
				Message: fmt.Sprintf("written by %s's reconciler, which may only write clusters/%s/ and clusters/*/inbox/%s/", cluster, cluster, cluster)})
			break
		}
	}
	return out
}
