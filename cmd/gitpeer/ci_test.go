package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// ciJob is one CI job of examples/ci: the shell it runs, and how deep it
// clones the repository ("0": the whole history).
type ciJob struct {
	name  string
	shell []string
	depth string
}

// githubJobs reads a GitHub Actions workflow: each job's run steps, and
// the fetch-depth of its actions/checkout (GitHub's default is 1).
func githubJobs(t *testing.T, data []byte) []ciJob {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var jobs []ciJob
	for name, j := range wf.Jobs {
		job := ciJob{name: name, depth: "1"}
		for _, s := range j.Steps {
			if strings.HasPrefix(s.Uses, "actions/checkout@") {
				if d, ok := s.With["fetch-depth"]; ok {
					job.depth = d
				}
			}
			if s.Run != "" {
				job.shell = append(job.shell, s.Run)
			}
		}
		jobs = append(jobs, job)
	}
	return jobs
}

// gitlabJobs reads a .gitlab-ci.yml: each job's before_script (its own or
// the one it extends) and script, and its GIT_DEPTH (unset: shallow).
func gitlabJobs(t *testing.T, data []byte) []ciJob {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	lines := func(v any) []string {
		var out []string
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				out = append(out, fmt.Sprint(e))
			}
		}
		return out
	}
	var jobs []ciJob
	for name, v := range doc {
		job, ok := v.(map[string]any)
		if !ok || strings.HasPrefix(name, ".") || name == "variables" || name == "default" {
			continue
		}
		j := ciJob{name: name, depth: "20"}
		if parent, ok := job["extends"].(string); ok {
			if p, ok := doc[parent].(map[string]any); ok {
				j.shell = append(j.shell, lines(p["before_script"])...)
			}
		}
		j.shell = append(j.shell, lines(job["before_script"])...)
		j.shell = append(j.shell, lines(job["script"])...)
		if vars, ok := job["variables"].(map[string]any); ok {
			if d, ok := vars["GIT_DEPTH"]; ok {
				j.depth = fmt.Sprint(d)
			}
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// commands are the simple commands of a shell script, split into words:
// lines joined at a trailing backslash, then cut at ;, &&, || and braces.
// Quotes group words; expansions are left as written.
func commands(script string) [][]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		var words []string
		var word strings.Builder
		inWord, quote := false, rune(0)
		flush := func() {
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		}
		end := func() {
			flush()
			if len(words) > 0 {
				out = append(out, words)
			}
			words = nil
		}
		runes := []rune(line)
		for i := 0; i < len(runes); i++ {
			r := runes[i]
			switch {
			case quote != 0 && r == quote:
				quote = 0
			case quote != 0:
				word.WriteRune(r)
			case r == '"' || r == '\'':
				quote, inWord = r, true
			case r == ' ' || r == '\t':
				flush()
			case r == ';' || r == '{' || r == '}' || r == '#' && !inWord:
				end()
				if r == '#' {
					i = len(runes)
				}
			case (r == '&' || r == '|') && i+1 < len(runes) && runes[i+1] == r:
				end()
				i++
			default:
				word.WriteRune(r)
				inWord = true
			}
		}
		end()
	}
	return out
}

// TestCIExamplesRunCommandsGitpeerHas reads examples/ci's GitHub workflow
// and GitLab pipeline as their hosts would, and checks every gitpeer
// command they run against this CLI: the subcommand exists and takes
// those flags and arguments. Checks of pull/merge requests validate and
// verify --base over the whole history; a job writes STATUS.md; gitpeer is
// installed from this module.
func TestCIExamplesRunCommandsGitpeerHas(t *testing.T) {
	files := map[string]func(*testing.T, []byte) []ciJob{
		"github/gitpeer.yml":    githubJobs,
		"gitlab/.gitlab-ci.yml": gitlabJobs,
	}
	for file, read := range files {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", file))
			if err != nil {
				t.Fatal(err)
			}
			jobs := read(t, data)
			var ran []string
			for _, job := range jobs {
				var installed bool
				for _, script := range job.shell {
					for _, words := range commands(script) {
						if words = withoutAssignments(words); len(words) == 0 {
							continue
						}
						if len(words) >= 3 && words[0] == "go" && words[1] == "install" {
							installed = installed || strings.HasPrefix(words[2], "github.com/gitpeer/gitpeer/cmd/gitpeer@")
						}
						if words[0] != "gitpeer" {
							continue
						}
						if !installed {
							t.Errorf("job %s runs %v before installing gitpeer with go install github.com/gitpeer/gitpeer/cmd/gitpeer@<version>", job.name, words)
						}
						sub := checkCommand(t, words[1:])
						ran = append(ran, sub)
						if sub == "verify" {
							if !slices.ContainsFunc(words, func(w string) bool { return w == "--base" || strings.HasPrefix(w, "--base=") }) {
								t.Errorf("job %s verifies without --base: %v", job.name, words)
							}
							if job.depth != "0" {
								t.Errorf("job %s runs verify --base on a clone of depth %s, want the whole history (0)", job.name, job.depth)
							}
						}
						if sub == "status" && !slices.Contains(words, "--write") {
							t.Errorf("job %s runs status without --write: %v", job.name, words)
						}
					}
				}
			}
			for _, want := range []string{"validate", "verify", "status"} {
				if !slices.Contains(ran, want) {
					t.Errorf("%s never runs gitpeer %s (runs %v)", file, want, ran)
				}
			}
		})
	}
}

// withoutAssignments drops the VAR=value words a simple command starts
// with (its environment), leaving the command and its arguments.
func withoutAssignments(words []string) []string {
	for len(words) > 0 {
		name, _, ok := strings.Cut(words[0], "=")
		if !ok || name == "" || strings.ContainsAny(name, "-./${}\"'") {
			break
		}
		words = words[1:]
	}
	return words
}

// ciVersion is GITPEER_VERSION as a CI example sets it.
var ciVersion = regexp.MustCompile(`(?m)^\s*GITPEER_VERSION:\s*(\S+)\s*$`)

// TestCIExamplesPinACommitThatExists: the examples install gitpeer at a
// full commit hash (gitpeer has no release, and a tag that does not exist
// fails every job), the same in both, and that commit is in this
// repository's history, so go install finds it wherever the history is
// published.
func TestCIExamplesPinACommitThatExists(t *testing.T) {
	var pins []string
	for _, file := range []string{"github/gitpeer.yml", "gitlab/.gitlab-ci.yml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", file))
		if err != nil {
			t.Fatal(err)
		}
		m := ciVersion.FindAllSubmatch(data, -1)
		if len(m) != 1 {
			t.Fatalf("%s sets GITPEER_VERSION %d times, want once", file, len(m))
		}
		pin := string(m[0][1])
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(pin) {
			t.Errorf("%s pins GITPEER_VERSION %q, want a full commit hash (gitpeer has no release yet)", file, pin)
		}
		pins = append(pins, pin)
	}
	if pins[0] != pins[1] {
		t.Errorf("the examples pin different commits: %v", pins)
	}
	if _, err := os.Stat(filepath.Join("..", "..", ".git")); err != nil {
		t.Skip("not a Git checkout: cannot check the commit exists")
	}
	root := filepath.Join("..", "..")
	if shallow := git(t, root, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		t.Skip("a shallow clone: cannot check the commit is in the history")
	}
	cmd := testgit.Command(root, "merge-base", "--is-ancestor", pins[0], "HEAD")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("GITPEER_VERSION %s is not a commit of this repository's history (git merge-base --is-ancestor: %v %s)", pins[0], err, out)
	}
}

// checkCommand resolves args as the CLI would and fails the test when a
// subcommand, flag or argument is unknown; it returns the subcommand's name.
func checkCommand(t *testing.T, args []string) string {
	t.Helper()
	root := newRootCmd(io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Errorf("gitpeer %s: no such command (%v)", strings.Join(args, " "), err)
		return ""
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("gitpeer %s: %v", strings.Join(args, " "), err)
		return cmd.Name()
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("gitpeer %s: %v", strings.Join(args, " "), err)
	}
	return cmd.Name()
}

func TestCommandsSplitsShellAsTheCITestNeeds(t *testing.T) {
	got := commands(`git add x
if git diff --cached --quiet; then exit 0; fi
gitpeer verify --base "origin/${X}" # comment
a || { b "c d" && e; }
f \
  --g`)
	want := [][]string{{"git", "add", "x"}, {"if", "git", "diff", "--cached", "--quiet"}, {"then", "exit", "0"}, {"fi"},
		{"gitpeer", "verify", "--base", "origin/${X}"}, {"a"}, {"b", "c d"}, {"e"}, {"f", "--g"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands:\n got %q\nwant %q", got, want)
	}
}
