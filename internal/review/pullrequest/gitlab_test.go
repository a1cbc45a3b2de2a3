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

// fakeGitLab answers GitLab's merge request endpoints of project
// group/sub/peering (ID 7): pages with X-Next-Page, 409 on a duplicate,
// 404 for any other project, 401 without the PRIVATE-TOKEN. Like GitLab it
// lists merge requests from forks into the project too.
type fakeGitLab struct {
	mu        sync.Mutex
	mrs       []map[string]any
	perPage   int
	conflict  bool // every create answers 409
	creates   int
	updates   int
	lastQuery string
}

func (f *fakeGitLab) add(iid, sourceProject int, source, target, title string) {
	f.mrs = append(f.mrs, map[string]any{
		"iid": iid, "title": title, "description": "", "state": "opened",
		"source_branch": source, "target_branch": target, "source_project_id": sourceProject, "target_project_id": 7,
		"web_url": fmt.Sprintf("https://gitlab.example/group/sub/peering/-/merge_requests/%d", iid),
	})
}

func (f *fakeGitLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("PRIVATE-TOKEN") != "tok" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"401 Unauthorized"}`)
		return
	}
	prefix := "/api/v4/projects/group%2Fsub%2Fpeering/merge_requests"
	path := r.URL.EscapedPath()
	switch {
	case !strings.HasPrefix(path, prefix):
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"404 Project Not Found"}`)
	case r.Method == http.MethodGet && path == prefix:
		f.lastQuery = r.URL.RawQuery
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		lo, hi := min((page-1)*f.perPage, len(f.mrs)), min(page*f.perPage, len(f.mrs))
		if hi < len(f.mrs) {
			w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
		}
		_ = json.NewEncoder(w).Encode(f.mrs[lo:hi])
	case r.Method == http.MethodPost && path == prefix:
		f.creates++
		if f.conflict {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"message":["Another open merge request already exists for this source branch: !3"]}`)
			return
		}
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.add(len(f.mrs)+1, 7, in["source_branch"], in["target_branch"], in["title"])
		f.mrs[len(f.mrs)-1]["description"] = in["description"]
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(f.mrs[len(f.mrs)-1])
	case r.Method == http.MethodPut:
		f.updates++
		n, _ := strconv.Atoi(strings.TrimPrefix(path, prefix+"/"))
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		for _, mr := range f.mrs {
			if mr["iid"] == n {
				mr["title"], mr["description"] = in["title"], in["description"]
				_ = json.NewEncoder(w).Encode(mr)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"404 Not found"}`)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func gitlabFake(t *testing.T, f *fakeGitLab, project string) Host {
	t.Helper()
	if f.perPage == 0 {
		f.perPage = 100
	}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	owner, name, _ := strings.Cut(project, "|")
	h, err := New(Config{Kind: GitLab, API: srv.URL, Owner: owner, Name: name, Token: "tok", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGitLabSkipsForksAndReadsEveryPage(t *testing.T) {
	f := &fakeGitLab{perPage: 1}
	f.add(1, 99, "gitpeer/alpha", "main", "from a fork, same branch name")
	f.add(2, 7, "feature", "main", "other")
	f.add(3, 7, "gitpeer/alpha", "main", "ours")
	res, err := Ensure(context.Background(), gitlabFake(t, f, "group/sub|peering"), proposal("abcdef0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Number != 3 || res.Action != Updated || f.creates != 0 || len(res.Others) != 0 {
		t.Fatalf("%+v, %d creates: want !3 updated, the fork's left alone", res, f.creates)
	}
	for _, want := range []string{"state=opened", "source_branch=gitpeer%2Falpha", "target_branch=main"} {
		if !strings.Contains(f.lastQuery, want) {
			t.Errorf("list query %q lacks %q", f.lastQuery, want)
		}
	}
}

func TestGitLabConflictIsExists(t *testing.T) {
	f := &fakeGitLab{conflict: true}
	_, err := Ensure(context.Background(), gitlabFake(t, f, "group/sub|peering"), proposal("abcdef0123456789"))
	// The 409 says one exists, but the list (filtered like GitLab's) shows
	// none the client may update: Ensure tries once more, then reports it.
	if !errors.Is(err, ErrExists) || f.creates != 2 || !strings.Contains(err.Error(), "409 Conflict") {
		t.Fatalf("%v after %d creates: want ErrExists after two tries", err, f.creates)
	}
}

func TestGitLabUnknownProjectIs404(t *testing.T) {
	_, err := Ensure(context.Background(), gitlabFake(t, &fakeGitLab{}, "group|nothing"), proposal("abcdef0123456789"))
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusNotFound || !strings.Contains(err.Error(), "gitlab: list merge requests: 404") {
		t.Fatalf("%v: want a 404 APIError", err)
	}
}

func TestGitLabOpensWithTheRightFields(t *testing.T) {
	f := &fakeGitLab{}
	res, err := Ensure(context.Background(), gitlabFake(t, f, "group/sub|peering"), proposal("abcdef0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Opened || res.Head != "gitpeer/alpha" || res.Base != "main" || !strings.Contains(res.Body, markerStart) ||
		res.URL != "https://gitlab.example/group/sub/peering/-/merge_requests/1" {
		t.Fatalf("%+v", res)
	}
}
