package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaHost is a repository's pull requests on Gitea's (and Forgejo's) API
// v1.
type giteaHost struct {
	api, token  string
	hc          *http.Client
	owner, repo string
}

func newGitea(cfg Config, hc *http.Client) Host {
	return &giteaHost{api: strings.TrimSuffix(cfg.API, "/"), token: cfg.Token, hc: hc, owner: cfg.Owner, repo: cfg.Name}
}

// client is an SDK client bound to ctx (the SDK takes the context per
// client, not per call). It does not ask the server for its version: the
// calls used here exist in every Gitea since 1.11.
func (h *giteaHost) client(ctx context.Context) (*gitea.Client, error) {
	c, err := gitea.NewClient(h.api, gitea.SetToken(h.token), gitea.SetHTTPClient(h.hc), gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""))
	if err != nil {
		return nil, &APIError{Kind: Gitea, Op: "connect", Err: err}
	}
	return c, nil
}

func (h *giteaHost) Kind() Kind { return Gitea }

func (h *giteaHost) Open(ctx context.Context, head, base string) ([]PullRequest, error) {
	c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	// Gitea's list filters by state only: the head and base are checked here.
	opts := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	var out []PullRequest
	for {
		prs, resp, err := c.ListRepoPullRequests(h.owner, h.repo, opts)
		if err != nil {
			return nil, h.err("list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.Head == nil || pr.Base == nil || pr.Head.Ref != head || pr.Base.Ref != base ||
				pr.Head.RepoID != pr.Base.RepoID {
				continue
			}
			out = append(out, fromGitea(pr))
		}
		if resp == nil || resp.NextPage == 0 || len(prs) == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (h *giteaHost) Create(ctx context.Context, req Request) (PullRequest, error) {
	c, err := h.client(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	pr, resp, err := c.CreatePullRequest(h.owner, h.repo, gitea.CreatePullRequestOption{
		Head: req.Head, Base: req.Base, Title: req.Title, Body: req.Body,
	})
	if err != nil {
		e := h.err("open pull request", resp, err)
		if resp != nil && resp.StatusCode == http.StatusConflict {
			return PullRequest{}, fmt.Errorf("%w: %w", ErrExists, e) // "pull request already exists for these targets"
		}
		return PullRequest{}, e
	}
	return fromGitea(pr), nil
}

func (h *giteaHost) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	c, err := h.client(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	pr, resp, err := c.EditPullRequest(h.owner, h.repo, number, gitea.EditPullRequestOption{Title: title, Body: &body})
	if err != nil {
		return PullRequest{}, h.err(fmt.Sprintf("update pull request #%d", number), resp, err)
	}
	return fromGitea(pr), nil
}

func fromGitea(pr *gitea.PullRequest) PullRequest {
	out := PullRequest{Number: pr.Index, URL: pr.HTMLURL, Title: pr.Title, Body: pr.Body}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	return out
}

// err is an APIError for op. The SDK's error is the server's "message"
// as text; the status comes from the response.
func (h *giteaHost) err(op string, resp *gitea.Response, err error) error {
	e := &APIError{Kind: Gitea, Op: op, Err: err}
	// An answer that is not Gitea's JSON (a 404 page of whatever serves
	// the URL) comes as "unknown API error: <status>\nRequest: ...": the
	// status says it all.
	if msg, _, _ := strings.Cut(err.Error(), "\n"); !strings.HasPrefix(msg, "unknown API error") {
		e.Message = msg
	}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	if e.Message == "" && e.Status == 0 {
		e.Message = err.Error()
	}
	return e
}
