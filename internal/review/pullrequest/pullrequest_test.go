package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// memHost is an in-memory Host for Ensure's policy: what the HTTP fakes of
// each host's tests would say, without HTTP.
type memHost struct {
	prs     []PullRequest // open ones
	next    int64
	creates int
	updates []int64
	// raceOnCreate makes the first Create fail with ErrExists after
	// adding a pull request, as a concurrent pass would.
	raceOnCreate bool
}

func (m *memHost) Kind() Kind { return Gitea }

func (m *memHost) Open(_ context.Context, head, base string) ([]PullRequest, error) {
	var out []PullRequest
	for _, pr := range m.prs {
		if pr.Head == head && pr.Base == base {
			out = append(out, pr)
		}
	}
	return out, nil
}

func (m *memHost) add(pr PullRequest) PullRequest {
	m.next++
	pr.Number = m.next
	pr.URL = fmt.Sprintf("https://example.org/o/r/pulls/%d", pr.Number)
	m.prs = append(m.prs, pr)
	return pr
}

func (m *memHost) Create(_ context.Context, req Request) (PullRequest, error) {
	m.creates++
	if m.raceOnCreate {
		m.raceOnCreate = false
		m.add(PullRequest{Head: req.Head, Base: req.Base, Title: "by the other pass", Body: "x"})
		return PullRequest{}, fmt.Errorf("%w: 409", ErrExists)
	}
	return m.add(PullRequest{Head: req.Head, Base: req.Base, Title: req.Title, Body: req.Body}), nil
}

func (m *memHost) Update(_ context.Context, n int64, title, body string) (PullRequest, error) {
	m.updates = append(m.updates, n)
	for i := range m.prs {
		if m.prs[i].Number == n {
			m.prs[i].Title, m.prs[i].Body = title, body
			return m.prs[i], nil
		}
	}
	return PullRequest{}, errors.New("no such pull request")
}

func proposal(commit string) Request {
	return Proposal{Cluster: "alpha", Head: "gitpeer/alpha", Base: "main", Commit: commit,
		Message: "alpha: sign tenant for beta; request slice\n\nGitpeer-Cluster: alpha\nGitpeer-Step: sign tenant for beta\nGitpeer-Step: request slice\n",
		Files:   []string{"clusters/alpha/liqo/beta/tenant.yaml"}}.Request()
}

func TestEnsureOpensOnceThenUpdatesThenLeavesAlone(t *testing.T) {
	ctx := context.Background()
	h := &memHost{}
	res, err := Ensure(ctx, h, proposal("1111111111111111"))
	if err != nil || res.Action != Opened || res.Number != 1 {
		t.Fatalf("first: %+v, %v", res, err)
	}
	res, err = Ensure(ctx, h, proposal("1111111111111111"))
	if err != nil || res.Action != Unchanged || len(h.updates) != 0 {
		t.Fatalf("same proposal again: %+v, %v (updates %v)", res, err, h.updates)
	}
	res, err = Ensure(ctx, h, proposal("2222222222222222"))
	if err != nil || res.Action != Updated || res.Number != 1 || !strings.Contains(res.Body, "222222222222") {
		t.Fatalf("new commit: %+v, %v", res, err)
	}
	if h.creates != 1 || len(h.prs) != 1 {
		t.Fatalf("%d creates, %d open pull requests: want 1 and 1", h.creates, len(h.prs))
	}
}

func TestEnsureUpdatesItsOwnAmongDuplicates(t *testing.T) {
	h := &memHost{}
	h.add(PullRequest{Head: "gitpeer/alpha", Base: "main", Title: "opened by hand", Body: "please look"})
	own := h.add(PullRequest{Head: "gitpeer/alpha", Base: "main", Title: "old", Body: markerStart + "\nold\n" + markerEnd})
	h.add(PullRequest{Head: "gitpeer/alpha", Base: "release", Title: "another base"})
	res, err := Ensure(context.Background(), h, proposal("3333333333333333"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Number != own.Number || res.Action != Updated || len(res.Others) != 1 || res.Others[0].Title != "opened by hand" {
		t.Fatalf("updated #%d (%s), others %+v: want #%d and the hand-made one left alone", res.Number, res.Action, res.Others, own.Number)
	}
	if h.creates != 0 {
		t.Fatal("opened a duplicate")
	}
}

func TestEnsureKeepsWhatAReviewerAddedToTheBody(t *testing.T) {
	h := &memHost{}
	h.add(PullRequest{Head: "gitpeer/alpha", Base: "main", Title: "t",
		Body: "Opened by Ann.\n" + markerStart + "\nold\n" + markerEnd + "\n\nReviewed: the slice size is fine."})
	res, err := Ensure(context.Background(), h, proposal("4444444444444444"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Opened by Ann.", "Reviewed: the slice size is fine.", "444444444444"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("body lost %q:\n%s", want, res.Body)
		}
	}
	if strings.Contains(res.Body, "\nold\n") || strings.Count(res.Body, markerStart) != 1 {
		t.Errorf("gitpeer's old part kept, or twice:\n%s", res.Body)
	}
	// And a hand-opened pull request without the marker keeps its text.
	h = &memHost{}
	h.add(PullRequest{Head: "gitpeer/alpha", Base: "main", Title: "mine", Body: "context for reviewers"})
	res, err = Ensure(context.Background(), h, proposal("5555555555555555"))
	if err != nil || !strings.HasSuffix(res.Body, "context for reviewers") || !strings.HasPrefix(res.Body, markerStart) {
		t.Fatalf("%v:\n%s", err, res.Body)
	}
}

func TestEnsureSettlesACreateRace(t *testing.T) {
	h := &memHost{raceOnCreate: true}
	res, err := Ensure(context.Background(), h, proposal("6666666666666666"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Updated || len(h.prs) != 1 || h.prs[0].Title != "alpha: sign tenant for beta; request slice" {
		t.Fatalf("%+v; open %+v: want the one opened meanwhile updated", res, h.prs)
	}
}

func TestProposalRequestSaysWhatChanges(t *testing.T) {
	req := proposal("0123456789abcdef0123")
	if req.Title != "alpha: sign tenant for beta; request slice" || req.Head != "gitpeer/alpha" || req.Base != "main" {
		t.Fatalf("%+v", req)
	}
	for _, want := range []string{markerStart, markerEnd, "`alpha`", "0123456789ab", "- sign tenant for beta\n- request slice",
		"`clusters/alpha/liqo/beta/tenant.yaml`", "Merging approves"} {
		if !strings.Contains(req.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, req.Body)
		}
	}
	long := Proposal{Cluster: "a", Message: strings.Repeat("é", 300)}.Request()
	if n := len([]rune(long.Title)); n != maxTitle {
		t.Errorf("title of %d characters, want %d", n, maxTitle)
	}
}

func TestParseKind(t *testing.T) {
	for _, s := range []string{"github", "GitLab", "gitea"} {
		if _, err := ParseKind(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseKind("bitbucket"); err == nil || !strings.Contains(err.Error(), "github, gitlab, gitea") {
		t.Errorf("bitbucket: %v", err)
	}
}

func TestLocate(t *testing.T) {
	for _, c := range []struct {
		url, host, path string
		https           bool
		err             string
	}{
		{url: "https://github.com/example-org/peering.git", host: "github.com", path: "example-org/peering", https: true},
		{url: "git@gitlab.com:group/sub/peering.git", host: "gitlab.com", path: "group/sub/peering"},
		{url: "ssh://git@git.example.org:2222/org/peering", host: "git.example.org", path: "org/peering"},
		{url: "https://127.0.0.1:3443/gitea/org/peering", host: "127.0.0.1:3443", path: "gitea/org/peering", https: true},
		{url: "https://github.com/peering", err: "names no owner/repo"},
		{url: "/srv/git/peering.git", err: "local path"},
		{url: "file:///srv/git/peering.git", err: "file:// URL"},
		{url: "http://git.example.org/org/peering", err: "http:// URL"},
	} {
		loc, err := Locate(c.url)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.url, err, c.err)
			}
			continue
		}
		if err != nil || loc.Host != c.host || loc.Path != c.path || loc.HTTPS != c.https {
			t.Errorf("%s: %+v, %v", c.url, loc, err)
		}
	}
}

func TestLocationRepo(t *testing.T) {
	loc := Location{Host: "h", Path: "gitea/org/peering"}
	if o, n, err := loc.Repo(Gitea, "https://h/gitea/"); err != nil || o != "org" || n != "peering" {
		t.Errorf("under a prefix: %s %s %v", o, n, err)
	}
	if _, _, err := loc.Repo(Gitea, "https://h/"); err == nil || !strings.Contains(err.Error(), "names no owner/repo on gitea") {
		t.Errorf("three segments on gitea: %v", err)
	}
	if o, n, err := loc.Repo(GitLab, "https://h/api/v4"); err != nil || o != "gitea/org" || n != "peering" {
		t.Errorf("nested group on gitlab: %s %s %v", o, n, err)
	}
	if o, n, err := (Location{Path: "o/r"}).Repo(GitHub, "https://ghe.example.org/api/v3/"); err != nil || o != "o" || n != "r" {
		t.Errorf("GHE API path is no prefix: %s %s %v", o, n, err)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{Kind: GitHub, Owner: "o", Name: "r"}, "no API token"},
		{Config{Kind: Gitea, Owner: "o", Name: "r", Token: "t"}, "gitea: no API URL"},
		{Config{Kind: Gitea, Owner: "o", Name: "r", Token: "t", API: "http://127.0.0.1:3000"}, "over http://"},
		{Config{Kind: GitLab, Owner: "o", Name: "r", Token: "t", API: "https://u:p@gitlab.example.org"}, "holds credentials"},
		{Config{Kind: "bitbucket", Owner: "o", Name: "r", Token: "t"}, "unknown forge"},
		{Config{Kind: GitHub, Owner: "o", Name: "r", Token: "t", CA: []byte("not pem")}, "no PEM certificate"},
	} {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.err)
		}
	}
}
