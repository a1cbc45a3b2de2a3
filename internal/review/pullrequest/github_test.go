package pullrequest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub answers GitHub's pull request endpoints of repo o/r the way
// GitHub does for what the tests need: pages of perPage with a Link header,
// 422 on a duplicate create, 401 without the token. It ignores the head
// and base filters (as a proxy dropping them would), so that the client's
// own check and its paging are what find the pull request.
type fakeGitHub struct {
	mu      sync.Mutex
	t       *testing.T
	prs     []map[string]any
	perPage int
	// hideFromList makes the next N lists answer no pull requests (a
	// replica lagging behind the one that refuses the create).
	hideFromList int
	// createErr, when set, is the 422 message of every create.
	createErr string
	creates   int
	edits     int
}

func (f *fakeGitHub) add(number int, head, base, title, body string) {
	f.prs = append(f.prs, map[string]any{
		"number": number, "title": title, "body": body, "state": "open",
		"html_url": fmt.Sprintf("https://github.example/o/r/pull/%d", number),
		"head":     map[string]any{"ref": head, "repo": map[string]any{"full_name": "o/r"}},
		"base":     map[string]any{"ref": base, "repo": map[string]any{"full_name": "o/r"}},
	})
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
		return
	}
	const prefix = "/api/v3/repos/o/r/pulls"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == prefix:
		if r.URL.Query().Get("state") != "open" {
			f.t.Errorf("list asks state=%q", r.URL.Query().Get("state"))
		}
		if f.hideFromList > 0 {
			f.hideFromList--
			fmt.Fprint(w, "[]")
			return
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		lo, hi := min((page-1)*f.perPage, len(f.prs)), min(page*f.perPage, len(f.prs))
		if hi < len(f.prs) {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?page=%d&state=open>; rel="next"`, r.Host, prefix, page+1))
		}
		_ = json.NewEncoder(w).Encode(f.prs[lo:hi])
	case r.Method == http.MethodPost && r.URL.Path == prefix:
		f.creates++
		if f.createErr != "" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":%q}]}`, f.createErr)
			return
		}
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.add(len(f.prs)+1, in["head"], in["base"], in["title"], in["body"])
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(f.prs[len(f.prs)-1])
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, prefix+"/"):
		f.edits++
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, prefix+"/"))
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		for _, pr := range f.prs {
			if pr["number"] == n {
				pr["title"], pr["body"] = in["title"], in["body"]
				_ = json.NewEncoder(w).Encode(pr)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found"}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found"}`)
	}
}

func githubFake(t *testing.T, f *fakeGitHub) Host {
	t.Helper()
	f.t = t
	if f.perPage == 0 {
		f.perPage = 100
	}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	h, err := New(Config{Kind: GitHub, API: srv.URL, Owner: "o", Name: "r", Token: "tok", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGitHubFindsItsPullRequestOnALaterPage(t *testing.T) {
	f := &fakeGitHub{perPage: 2}
	for i := 1; i <= 4; i++ {
		f.add(i, fmt.Sprintf("feature-%d", i), "main", "other", "")
	}
	f.add(5, "gitpeer/alpha", "release", "same head, other base", "")
	f.add(6, "gitpeer/alpha", "main", "ours", markerStart+"\nold\n"+markerEnd)
	f.add(7, "feature-7", "main", "other", "")
	res, err := Ensure(context.Background(), githubFake(t, f), proposal("abcdef0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Number != 6 || res.Action != Updated || f.creates != 0 || res.URL != "https://github.example/o/r/pull/6" {
		t.Fatalf("%+v after %d creates: want #6 updated, found on page 3", res, f.creates)
	}
	if !strings.Contains(f.prs[5]["body"].(string), "abcdef012345") {
		t.Errorf("#6 body not updated: %v", f.prs[5]["body"])
	}
}

func TestGitHubAlreadyExistsUpdatesTheOneOpen(t *testing.T) {
	f := &fakeGitHub{hideFromList: 1, createErr: "A pull request already exists for o:gitpeer/alpha."}
	f.add(9, "gitpeer/alpha", "main", "opened meanwhile", "")
	res, err := Ensure(context.Background(), githubFake(t, f), proposal("abcdef0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Number != 9 || res.Action != Updated || f.creates != 1 || f.edits != 1 {
		t.Fatalf("%+v, %d creates, %d edits: want #9 updated after the refused create", res, f.creates, f.edits)
	}
}

func TestGitHub422SaysWhy(t *testing.T) {
	f := &fakeGitHub{createErr: "No commits between main and gitpeer/alpha"}
	_, err := Ensure(context.Background(), githubFake(t, f), proposal("abcdef0123456789"))
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusUnprocessableEntity || errors.Is(err, ErrExists) {
		t.Fatalf("%v: want a 422 APIError, not ErrExists", err)
	}
	for _, want := range []string{"github: open pull request: 422 Unprocessable Entity", "No commits between main and gitpeer/alpha"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestGitHubBadTokenIs401(t *testing.T) {
	f := &fakeGitHub{}
	f.t = t
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	h, err := New(Config{Kind: GitHub, API: srv.URL, Owner: "o", Name: "r", Token: "wrong", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Ensure(context.Background(), h, proposal("abcdef0123456789"))
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("%v: want a 401 saying Bad credentials", err)
	}
}
