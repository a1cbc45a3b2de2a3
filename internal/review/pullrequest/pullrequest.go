// Package pullrequest opens or updates the one pull request that carries a
// review branch (reconcile --push-branch) to its target branch, through the
// API of the Git host: GitHub (go-github), GitLab (merge requests, GitLab's
// client-go) or Gitea and Forgejo (Gitea's SDK).
//
// Ensure is the policy, shared by every host: list the open pull requests
// from the branch to the target, update the one found (preferring the one
// whose body carries gitpeer's marker), and open one only when there is
// none, so re-runs never make a duplicate. A Host adapts one API to the
// three calls Ensure needs; New builds it from a Config, which Locate
// derives from the repo URL.
package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gitpeer/gitpeer/internal/git/trailer"
)

// Kind names a host's API.
type Kind string

// The hosts New knows.
const (
	GitHub Kind = "github" // github.com or GitHub Enterprise Server (REST v3)
	GitLab Kind = "gitlab" // gitlab.com or a self-managed GitLab (REST v4): merge requests
	Gitea  Kind = "gitea"  // Gitea or Forgejo (API v1)
)

// Kinds are the values ParseKind accepts, in the order help texts list them.
var Kinds = []Kind{GitHub, GitLab, Gitea}

// ParseKind returns the Kind named s (github, gitlab or gitea).
func ParseKind(s string) (Kind, error) {
	if k := Kind(strings.ToLower(s)); slices.Contains(Kinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown forge %q: one of github, gitlab, gitea", s)
}

// PullRequest is one pull (GitLab: merge) request as a host reports it.
type PullRequest struct {
	Number int64  // GitHub and Gitea: the number; GitLab: the project-scoped IID
	URL    string // the web page of the pull request
	Title  string
	Body   string
	Head   string // source branch
	Base   string // target branch
}

// Request is the pull request Ensure wants open from Head to Base, both
// branches of the repository itself (not of a fork).
type Request struct {
	Head, Base  string
	Title, Body string
}

// Host is one repository's pull requests on one host's API.
type Host interface {
	// Kind is the host's API.
	Kind() Kind
	// Open returns the open pull requests from head to base whose head is
	// in the repository itself, reading every page.
	Open(ctx context.Context, head, base string) ([]PullRequest, error)
	// Create opens a pull request. When the host refuses it because one
	// from head to base is already open, the error wraps ErrExists.
	Create(ctx context.Context, req Request) (PullRequest, error)
	// Update sets the title and body of the open pull request number.
	Update(ctx context.Context, number int64, title, body string) (PullRequest, error)
}

// ErrExists is wrapped by Host.Create when the host refuses a pull request
// because one from the same head to the same base is open already.
var ErrExists = errors.New("a pull request from this branch is already open")

// APIError is a host's refusal of an API call, with its HTTP status.
type APIError struct {
	Kind    Kind
	Op      string // what was asked: "list pull requests", "open pull request", ...
	Status  int    // HTTP status code; 0 when no response came
	Message string // the host's own words, when it said any
	Err     error  // the client library's error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Kind, e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d %s", e.Status, http.StatusText(e.Status))
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// Action says what Ensure did.
type Action string

// Ensure's actions.
const (
	Opened    Action = "opened"    // no pull request was open: one was created
	Updated   Action = "updated"   // the open one got the new title and body
	Unchanged Action = "unchanged" // the open one already said the same
)

// Result is the pull request Ensure left open, and what it did to it.
type Result struct {
	PullRequest
	Action Action
	// Others are further open pull requests from the same head to the same
	// base (made by hand or by another tool), left alone: Ensure updates one.
	Others []PullRequest
}

// Ensure leaves exactly one open pull request from req.Head to req.Base
// saying req.Title and req.Body: it updates the open one (the one carrying
// gitpeer's marker, else the oldest), keeping any text a person added to
// its body after gitpeer's part, or opens one when none is open. A create
// refused because one appeared meanwhile (ErrExists) is settled by listing
// again and updating it. Errors are a Host's, wrapped.
func Ensure(ctx context.Context, h Host, req Request) (Result, error) {
	for attempt := 0; ; attempt++ {
		open, err := h.Open(ctx, req.Head, req.Base)
		if err != nil {
			return Result{}, err
		}
		if len(open) == 0 {
			pr, err := h.Create(ctx, req)
			if errors.Is(err, ErrExists) && attempt == 0 {
				continue // opened meanwhile, perhaps by a concurrent pass: update that one
			}
			if err != nil {
				return Result{}, err
			}
			return Result{PullRequest: pr, Action: Opened}, nil
		}
		pick := pickOwn(open)
		res := Result{PullRequest: open[pick]}
		res.Others = slices.Delete(slices.Clone(open), pick, pick+1)
		body := mergeBody(req.Body, res.Body)
		if res.Title == req.Title && sameText(res.Body, body) {
			res.Action = Unchanged
			return res, nil
		}
		pr, err := h.Update(ctx, res.Number, req.Title, body)
		if err != nil {
			return Result{}, err
		}
		res.PullRequest, res.Action = pr, Updated
		return res, nil
	}
}

// pickOwn is the index of the pull request Ensure updates: the first
// carrying gitpeer's marker, else the lowest number.
func pickOwn(open []PullRequest) int {
	best := -1
	for i, pr := range open {
		if strings.Contains(pr.Body, markerStart) {
			return i
		}
		if best < 0 || pr.Number < open[best].Number {
			best = i
		}
	}
	return best
}

// sameText compares bodies as hosts store them: GitLab and GitHub may turn
// "\n" into "\r\n" and trim trailing space.
func sameText(a, b string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(a) == norm(b)
}

// The marker delimits gitpeer's part of a pull request's body: Ensure
// recognises its own pull request by it and replaces only what lies
// between, so text a reviewer adds after markerEnd survives updates. HTML
// comments: every host's Markdown renderer hides them.
const (
	markerStart = "<!-- gitpeer:proposal -->"
	markerEnd   = "<!-- /gitpeer:proposal -->"
)

// mergeBody is the body to set: ours (which carries the markers), followed
// by whatever the current body holds outside gitpeer's part (all of it,
// when a person opened the pull request).
func mergeBody(ours, current string) string {
	current = strings.ReplaceAll(current, "\r\n", "\n")
	rest := current
	if i := strings.Index(current, markerStart); i >= 0 {
		rest = current[:i]
		if j := strings.Index(current[i:], markerEnd); j >= 0 {
			rest += current[i+j+len(markerEnd):]
		}
	}
	if rest = strings.TrimSpace(rest); rest == "" {
		return ours
	}
	return ours + "\n\n" + rest
}

// Proposal is what a pass proposed on a review branch: the facts a pull
// request's title and body are written from.
type Proposal struct {
	Cluster string   // the proposing cluster's ID
	Head    string   // the review branch
	Base    string   // the branch the pass reads (--branch)
	Commit  string   // hex hash of the proposed commit
	Message string   // its commit message: a subject, then trailers
	Files   []string // the paths it changes
}

// maxTitle bounds a title in characters: GitHub and GitLab refuse titles
// longer than 256 and 255.
const maxTitle = 200

// Request is the pull request for p: titled with the commit's subject, its
// body saying what the commit changes and how the review works, between
// gitpeer's markers.
func (p Proposal) Request() Request {
	subject, _, _ := strings.Cut(strings.TrimSpace(p.Message), "\n")
	if subject == "" {
		subject = fmt.Sprintf("%s: proposal", p.Cluster)
	}
	if utf8.RuneCountInString(subject) > maxTitle {
		subject = string([]rune(subject)[:maxTitle-1]) + "…"
	}
	var b strings.Builder
	b.WriteString(markerStart + "\n")
	commit := p.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	fmt.Fprintf(&b, "gitpeer's reconciler for cluster `%s` proposes commit %s on `%s`, signed with the cluster's key.\n\n",
		p.Cluster, commit, p.Base)
	if steps := trailer.Values(p.Message, trailer.Step); len(steps) > 0 {
		b.WriteString("Steps:\n")
		for _, s := range steps {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		b.WriteString("\n")
	}
	if len(p.Files) > 0 {
		fmt.Fprintf(&b, "Files (%d):\n", len(p.Files))
		for _, f := range p.Files {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Merging approves the change: the next pass reads `%s` and no longer proposes it. "+
		"Every pass rebuilds `%s` on the tip of `%s` and updates this pull request; "+
		"a commit pushed to the branch by anyone else stops the reconciler until it is merged or the branch deleted. "+
		"Closing this pull request does not withdraw the proposal (the next pass opens another): change the peering spec instead.\n",
		p.Base, p.Head, p.Base)
	b.WriteString(markerEnd)
	return Request{Head: p.Head, Base: p.Base, Title: subject, Body: b.String()}
}
