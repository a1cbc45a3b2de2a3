package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v75/github"
)

// githubHost is a repository's pull requests on GitHub's REST API v3.
type githubHost struct {
	c           *github.Client
	owner, repo string
}

func newGitHub(cfg Config, hc *http.Client) (Host, error) {
	c := github.NewClient(hc).WithAuthToken(cfg.Token)
	if cfg.API != "" {
		var err error
		if c, err = c.WithEnterpriseURLs(cfg.API, cfg.API); err != nil {
			return nil, fmt.Errorf("github: API URL %s: %w", cfg.API, err)
		}
	}
	return &githubHost{c: c, owner: cfg.Owner, repo: cfg.Name}, nil
}

func (h *githubHost) Kind() Kind { return GitHub }

func (h *githubHost) Open(ctx context.Context, head, base string) ([]PullRequest, error) {
	// head=owner:branch is GitHub's filter for a branch of the repo itself.
	opts := &github.PullRequestListOptions{State: "open", Head: h.owner + ":" + head, Base: base,
		ListOptions: github.ListOptions{PerPage: 100}}
	var out []PullRequest
	for {
		prs, resp, err := h.c.PullRequests.List(ctx, h.owner, h.repo, opts)
		if err != nil {
			return nil, h.err("list pull requests", resp, err)
		}
		for _, pr := range prs {
			// The filter is the server's: check it, a GHE proxy may drop it.
			if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base &&
				strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), h.owner+"/"+h.repo) {
				out = append(out, fromGitHub(pr))
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (h *githubHost) Create(ctx context.Context, req Request) (PullRequest, error) {
	pr, resp, err := h.c.PullRequests.Create(ctx, h.owner, h.repo, &github.NewPullRequest{
		Title: &req.Title, Head: &req.Head, Base: &req.Base, Body: &req.Body,
	})
	if err != nil {
		return PullRequest{}, h.err("open pull request", resp, err)
	}
	return fromGitHub(pr), nil
}

func (h *githubHost) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	pr, resp, err := h.c.PullRequests.Edit(ctx, h.owner, h.repo, int(number), &github.PullRequest{Title: &title, Body: &body})
	if err != nil {
		return PullRequest{}, h.err(fmt.Sprintf("update pull request #%d", number), resp, err)
	}
	return fromGitHub(pr), nil
}

func fromGitHub(pr *github.PullRequest) PullRequest {
	return PullRequest{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Body: pr.GetBody(),
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef()}
}

// err is an APIError for op; GitHub's 422 "A pull request already exists
// for owner:branch." wraps ErrExists too.
func (h *githubHost) err(op string, resp *github.Response, err error) error {
	e := &APIError{Kind: GitHub, Op: op, Err: err}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		msgs := []string{er.Message}
		for _, d := range er.Errors {
			if d.Message != "" {
				msgs = append(msgs, d.Message)
			}
		}
		e.Message = strings.Join(msgs, ": ")
		if e.Status == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(e.Message), "already exists") {
			return fmt.Errorf("%w: %w", ErrExists, e)
		}
	}
	return e
}
