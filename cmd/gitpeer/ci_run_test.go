package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ciRunner is what a CI job runs in here: a minimal PATH (bash, git and
// the few tools the jobs use, never the real go), a go stand-in that
// installs this test binary as gitpeer when asked for the pinned module and
// version, and a log of those installs.
type ciRunner struct {
	t       *testing.T
	root    string
	tools   string // bash, git, sh, mkdir, cat, chmod
	goStub  string // a directory holding the go stand-in
	remote  string // the demo's bare repository: origin
	pin     string // GITPEER_VERSION
	install string // the go stand-in's log of go install calls
}

func newCIRunner(t *testing.T, pin string) *ciRunner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &ciRunner{t: t, root: t.TempDir(), pin: pin}
	r.tools = filepath.Join(r.root, "tools")
	r.goStub = filepath.Join(r.root, "go")
	r.install = filepath.Join(r.root, "installs")
	for _, tool := range []string{"bash", "git", "sh", "mkdir", "cat", "chmod"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if err := os.MkdirAll(r.tools, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(r.tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	// gitpeer as go install would leave it: this test binary running main().
	wrapper := "#!/bin/sh\n" + runMainEnv + "=1 exec " + exe + " \"$@\"\n"
	// go install of the pinned module puts the wrapper in $GOBIN; anything
	// else the jobs ask of go fails.
	goScript := `#!/bin/sh -e
if [ "$1" != install ] || [ "$#" != 2 ]; then echo "go $*: not expected of a CI job" >&2; exit 3; fi
if [ "$2" != "github.com/gitpeer/gitpeer/cmd/gitpeer@` + pin + `" ]; then echo "go install $2: not the pinned gitpeer" >&2; exit 3; fi
if [ -z "$GOBIN" ]; then echo "go install without GOBIN: the job would not find gitpeer where it caches it" >&2; exit 3; fi
mkdir -p "$GOBIN"
cat > "$GOBIN/gitpeer" <<'EOF'
` + wrapper + `EOF
chmod 755 "$GOBIN/gitpeer"
echo "$2" >> ` + r.install + "\n"
	write(t, filepath.Join(r.goStub, "go"), goScript)
	if err := os.Chmod(filepath.Join(r.goStub, "go"), 0o755); err != nil {
		t.Fatal(err)
	}

	demo := filepath.Join(r.root, "demo")
	if code, _, stderr := gitpeer(t, "demo", "--dir", demo); code != 0 {
		t.Fatalf("gitpeer demo: exit %d\n%s", code, stderr)
	}
	r.remote = filepath.Join(demo, "remote.git")
	return r
}

// installs is how many times the jobs ran go install so far.
func (r *ciRunner) installs() int {
	data, _ := os.ReadFile(r.install)
	return strings.Count(string(data), "\n")
}

// clone is the job's checkout of the demo repo, with its whole history;
// pr adds a reviewer's commit on a branch, as a pull request would.
func (r *ciRunner) clone(name string, pr bool) string {
	dir := filepath.Join(r.root, name)
	git(r.t, r.root, "clone", "-q", r.remote, dir)
	if pr {
		git(r.t, dir, "checkout", "-q", "-b", "pr")
		write(r.t, filepath.Join(dir, "NOTES.md"), "Who to call about the peerings.\n")
		git(r.t, dir, "add", "NOTES.md")
		git(r.t, dir, "commit", "-qm", "NOTES.md: who to call")
	}
	return dir
}

// sh runs one shell step of a job in dir, as bash -e with the job's env.
func (r *ciRunner) sh(job, dir, script string, env []string) {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(r.tools, "bash"), "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"}, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("job %s: %v\n$ %s\n%s", job, err, script, out)
	}
}

// githubWorkflow is the part of a GitHub Actions workflow the runner reads.
type githubWorkflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Steps []struct {
			ID   string            `yaml:"id"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var cacheHitIf = regexp.MustCompile(`^steps\.([A-Za-z0-9_-]+)\.outputs\.cache-hit != 'true'$`)

// runGitHubJob runs a job's steps as a GitHub runner would: actions/cache
// restores its path when home holds it (a hit), an if on that hit skips a
// step, actions/setup-go puts go on PATH, each run step is a bash step,
// and what a step appends to $GITHUB_PATH is on PATH for the steps after.
func (r *ciRunner) runGitHubJob(wf *githubWorkflow, name, dir, home string, env []string) {
	r.t.Helper()
	job, ok := wf.Jobs[name]
	if !ok {
		r.t.Fatalf("no job %s", name)
	}
	ghPath := filepath.Join(r.root, name+"-github-path")
	os.Remove(ghPath)
	path := []string{r.tools}
	hit := map[string]bool{}
	for _, s := range job.Steps {
		if s.If != "" {
			m := cacheHitIf.FindStringSubmatch(s.If)
			if m == nil {
				r.t.Fatalf("job %s: a step's if %q is beyond this runner", name, s.If)
			}
			if hit[m[1]] {
				continue
			}
		}
		switch {
		case strings.HasPrefix(s.Uses, "actions/checkout@"):
		case strings.HasPrefix(s.Uses, "actions/cache@"):
			p := strings.Replace(s.With["path"], "~", home, 1)
			if !strings.Contains(s.With["key"], "env.GITPEER_VERSION") {
				r.t.Errorf("job %s caches %s under key %q, which does not change with GITPEER_VERSION", name, p, s.With["key"])
			}
			if _, err := os.Stat(p); err == nil {
				hit[s.ID] = true
			}
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			path = append([]string{r.goStub}, path...)
		case s.Uses != "":
			r.t.Fatalf("job %s uses %s, beyond this runner", name, s.Uses)
		}
		if s.Run == "" {
			continue
		}
		if data, err := os.ReadFile(ghPath); err == nil {
			for _, p := range strings.Fields(string(data)) {
				path = append([]string{p}, path...)
			}
			os.Remove(ghPath)
		}
		stepEnv := append([]string{"HOME=" + home, "GITHUB_PATH=" + ghPath, "PATH=" + strings.Join(path, ":")}, env...)
		for k, v := range wf.Env {
			stepEnv = append(stepEnv, k+"="+v)
		}
		r.sh(name, dir, s.Run, stepEnv)
	}
}

// runGitLabJob runs a job's before_script (its own, else the one it
// extends) and script in one bash session in dir, as GitLab's shell
// executor does, with the pipeline's variables and the job's.
func (r *ciRunner) runGitLabJob(doc map[string]any, name, dir string, env []string) {
	r.t.Helper()
	job, ok := doc[name].(map[string]any)
	if !ok {
		r.t.Fatalf("no job %s", name)
	}
	var lines []string
	add := func(v any) {
		for _, l := range v.([]any) {
			lines = append(lines, l.(string))
		}
	}
	before := job["before_script"]
	if parent, ok := job["extends"].(string); ok && before == nil {
		before = doc[parent].(map[string]any)["before_script"]
	}
	add(before)
	add(job["script"])
	vars := []string{"HOME=" + r.root, "PATH=" + r.goStub + ":" + r.tools, "CI_PROJECT_DIR=" + dir}
	for _, m := range []any{doc["variables"], job["variables"]} {
		if m, ok := m.(map[string]any); ok {
			for k, v := range m {
				vars = append(vars, k+"="+strings.TrimSpace(strings.ReplaceAll(yamlString(v), "\n", "")))
			}
		}
	}
	r.sh(name, dir, strings.Join(lines, "\n"), append(vars, env...))
}

func yamlString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := yaml.Marshal(v)
	return string(b)
}

// checkStatusBranch fails unless the remote's gitpeer-status holds a
// STATUS.md that shows the demo's peering Ready.
func (r *ciRunner) checkStatusBranch(job string) {
	r.t.Helper()
	status := git(r.t, r.remote, "show", "gitpeer-status:STATUS.md")
	if !strings.Contains(status, "alpha") || !strings.Contains(status, "beta") || !strings.Contains(status, "Ready") {
		r.t.Errorf("job %s: gitpeer-status's STATUS.md does not show alpha/beta Ready:\n%s", job, status)
	}
}

// TestCIJobsRunOnTheDemoRepo runs the jobs of examples/ci as their hosts
// would, on the repo `gitpeer demo` peers: gitpeer installed with go install
// at GITPEER_VERSION (a stand-in go puts this build there), then every
// gitpeer command the jobs hold, with the jobs' own arguments and
// variables: validate and verify --base on a pull request, status --write
// and its push on main. A second run finds gitpeer in the cache and runs
// with no Go on PATH at all.
func TestCIJobsRunOnTheDemoRepo(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", "github", "gitpeer.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := ciVersion.FindSubmatch(data)
	if m == nil {
		t.Fatal("github/gitpeer.yml sets no GITPEER_VERSION")
	}
	pin := string(m[1])

	t.Run("github", func(t *testing.T) {
		r := newCIRunner(t, pin)
		var wf githubWorkflow
		if err := yaml.Unmarshal(data, &wf); err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(r.root, "home")
		for run, wantInstalls := range []int{1, 1} { // the second run: a cache hit
			pr := r.clone("pr-"+string(rune('0'+run)), true)
			r.runGitHubJob(&wf, "check", pr, home, []string{"GITHUB_BASE_REF=main"})
			main := r.clone("main-"+string(rune('0'+run)), false)
			head := strings.TrimSpace(git(t, main, "rev-parse", "HEAD"))
			r.runGitHubJob(&wf, "status", main, home, []string{"GITHUB_SHA=" + head})
			r.checkStatusBranch("status")
			if got := r.installs(); got != wantInstalls {
				t.Errorf("run %d: go install ran %d times in all, want %d (built once, then cached)", run+1, got, wantInstalls)
			}
		}
	})

	t.Run("gitlab", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", "gitlab", ".gitlab-ci.yml"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		cache, _ := doc[".gitpeer"].(map[string]any)["cache"].(map[string]any)
		paths, _ := cache["paths"].([]any)
		if !strings.Contains(yamlString(cache["key"]), "GITPEER_VERSION") || len(paths) != 1 {
			t.Fatalf(".gitpeer's cache %v: want one path, under a key that changes with GITPEER_VERSION", cache)
		}
		cached := strings.TrimSuffix(paths[0].(string), "/")

		r := newCIRunner(t, pin)
		// GitLab's job pushes to the project's https URL: here, the bare repo.
		insteadOf := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=url." + r.remote + ".insteadOf",
			"GIT_CONFIG_VALUE_0=https://gitpeer-status:token@gitlab.example/org/peering.git"}
		git(t, r.remote, "config", "receive.advertisePushOptions", "true")
		var cacheDir string
		for run := range 2 {
			pr := r.clone("pr-"+string(rune('0'+run)), true)
			main := r.clone("main-"+string(rune('0'+run)), false)
			if run == 1 { // GitLab restores the cache into the project dir
				for _, dir := range []string{pr, main} {
					if err := os.CopyFS(filepath.Join(dir, cached), os.DirFS(cacheDir)); err != nil {
						t.Fatal(err)
					}
				}
			}
			r.runGitLabJob(doc, "gitpeer-check", pr, []string{"CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main"})
			head := strings.TrimSpace(git(t, main, "rev-parse", "HEAD"))
			r.runGitLabJob(doc, "gitpeer-status", main, append([]string{"CI_COMMIT_SHA=" + head, "CI_DEFAULT_BRANCH=main",
				"CI_SERVER_HOST=gitlab.example", "CI_PROJECT_PATH=org/peering", "GITPEER_STATUS_TOKEN=token"}, insteadOf...))
			r.checkStatusBranch("gitpeer-status")
			if run == 0 {
				cacheDir = filepath.Join(pr, cached)
				if _, err := os.Stat(filepath.Join(cacheDir, "gitpeer")); err != nil {
					t.Fatalf("the job installed gitpeer outside its cached path %s: %v", cached, err)
				}
			}
			if got, want := r.installs(), 2; got != want {
				t.Errorf("run %d: go install ran %d times in all, want %d (once per job of the first run, then cached)", run+1, got, want)
			}
		}
	})
}
