package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitlabHost is a project's merge requests on GitLab's REST API v4.
type gitlabHost struct {
	c       *gitlab.Client
	project string // namespace/name: the API takes the path as the project ID
}

func newGitLab(cfg Config, hc *http.Client) (Host, error) {
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(hc),
		// One retry for a 429 or 5xx: a pass that fails is run again at the next interval anyway.
		gitlab.WithCustomRetryMax(1)}
	if cfg.API != "" {
		opts = append(opts, gitlab.WithBaseURL(cfg.API))
	}
	c, err := gitlab.NewClient(cfg.Token, opts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return &gitlabHost{c: c, project: cfg.Owner + "/" + cfg.Name}, nil
}

func (h *gitlabHost) Kind() Kind { return GitLab }

func (h *gitlabHost) Open(ctx context.Context, head, base string) ([]PullRequest, error) {
	opts := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions: gitlab.ListOptions{PerPage: 100, Page: 1},
		State:       gitlab.Ptr("opened"), SourceBranch: &head, TargetBranch: &base,
	}
	var out []PullRequest
	for {
		mrs, resp, err := h.c.MergeRequests.ListProjectMergeRequests(h.project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, h.err("list merge requests", resp, err)
		}
		for _, mr := range mrs {
			// A project's list holds merge requests from forks too, whose
			// source branch may share the name.
			if mr.SourceBranch == head && mr.TargetBranch == base && mr.SourceProjectID == mr.TargetProjectID {
				out = append(out, PullRequest{Number: mr.IID, URL: mr.WebURL, Title: mr.Title, Body: mr.Description,
					Head: mr.SourceBranch, Base: mr.TargetBranch})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (h *gitlabHost) Create(ctx context.Context, req Request) (PullRequest, error) {
	mr, resp, err := h.c.MergeRequests.CreateMergeRequest(h.project, &gitlab.CreateMergeRequestOptions{
		Title: &req.Title, Description: &req.Body, SourceBranch: &req.Head, TargetBranch: &req.Base,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return PullRequest{}, h.err("open merge request", resp, err)
	}
	return fromGitLab(mr), nil
}

func (h *gitlabHost) Update(ctx context.Context, number int64, title, body string) (PullRequest, error) {
	mr, resp, err := h.c.MergeRequests.UpdateMergeRequest(h.project, number, &gitlab.UpdateMergeRequestOptions{
		Title: &title, Description: &body,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return PullRequest{}, h.err(fmt.Sprintf("update merge request !%d", number), resp, err)
	}
	return fromGitLab(mr), nil
}

func fromGitLab(mr *gitlab.MergeRequest) PullRequest {
	return PullRequest{Number: mr.IID, URL: mr.WebURL, Title: mr.Title, Body: mr.Description,
		Head: mr.SourceBranch, Base: mr.TargetBranch}
}

// err is an APIError for op; GitLab's 409 "Another open merge request
// already exists for this source branch" wraps ErrExists too.
func (h *gitlabHost) err(op string, resp *gitlab.Response, err error) error {
	e := &APIError{Kind: GitLab, Op: op, Err: err}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var er *gitlab.ErrorResponse
	if errors.As(err, &er) {
		e.Message = er.Message
	}
	if errors.Is(err, gitlab.ErrNotFound) && e.Message == "" {
		e.Message = "404 Not Found"
	}
	if e.Status == http.StatusConflict && strings.Contains(strings.ToLower(e.Message), "already exists") {
		return fmt.Errorf("%w: %w", ErrExists, e)
	}
	return e
}
