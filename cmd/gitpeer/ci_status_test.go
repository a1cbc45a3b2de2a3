package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCIStatusJobKeepsOffProtectedBranches runs the status job of each CI
// example as its host would (its shell, in order, in a clone of a peering
// repo; go and gitpeer are stand-ins) and checks that it never pushes to
// the branches docs/deploy.md protects (main takes pull requests only; the
// applied branches their clusters' keys only): STATUS.md goes to the branch
// gitpeer-status, which holds it alone, one fast-forward commit per change,
// none when it did not change. Every git push in the examples names that
// branch alone and forces nothing.
func TestCIStatusJobKeepsOffProtectedBranches(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for file, read := range map[string]func(*testing.T, []byte) []ciJob{
		"github/gitpeer.yml":    githubJobs,
		"gitlab/.gitlab-ci.yml": gitlabJobs,
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", file))
			if err != nil {
				t.Fatal(err)
			}
			var status *ciJob
			for _, job := range read(t, data) {
				for _, script := range job.shell {
					for _, words := range commands(script) {
						if words[0] == "git" && slices.Contains(words, "push") {
							checkStatusPush(t, job.name, words)
						}
						if words[0] == "gitpeer" && len(words) > 1 && words[1] == "status" {
							status = &job
						}
					}
				}
			}
			if status == nil {
				t.Fatal("no job runs gitpeer status")
			}

			root := t.TempDir()
			bare := filepath.Join(root, "remote.git")
			work := filepath.Join(root, "work")
			git(t, root, "init", "-q", "--bare", "--initial-branch=main", bare)
			// GitLab's job pushes with -o ci.skip, which GitLab accepts.
			git(t, bare, "config", "receive.advertisePushOptions", "true")
			git(t, root, "clone", "-q", bare, work)
			write(t, filepath.Join(work, "peering.cue"), spec)
			git(t, work, "add", "-A")
			git(t, work, "commit", "-qm", "spec")
			git(t, work, "push", "-q", "origin", "main")
			main := strings.TrimSpace(git(t, bare, "rev-parse", "main"))

			// Stand-ins: go installs nothing, gitpeer status writes
			// $STATUS into the file it is given.
			bin := filepath.Join(root, "bin")
			write(t, filepath.Join(bin, "go"), "#!/bin/sh\n[ \"$1\" = env ] && echo "+root+"/gopath\nexit 0\n")
			write(t, filepath.Join(bin, "gitpeer"), "#!/bin/sh\n[ \"$1 $2\" = \"status --write\" ] || exit 2\nprintf '%s\\n' \"$STATUS\" > \"$3\"\n")
			for _, f := range []string{"go", "gitpeer"} {
				if err := os.Chmod(filepath.Join(bin, f), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			run := func(content string) {
				t.Helper()
				dir := filepath.Join(root, "job")
				os.RemoveAll(dir)
				git(t, root, "clone", "-q", bare, dir)
				for _, script := range status.shell {
					cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STATUS="+content,
						"GITHUB_SHA="+main, "GITHUB_PATH="+filepath.Join(root, "github_path"), "CI_COMMIT_SHA="+main, "CI_DEFAULT_BRANCH=main", "CI_SERVER_HOST=gitlab.example",
						"CI_PROJECT_PATH=org/peering", "GITPEER_STATUS_TOKEN=token",
						// GitLab's job pushes to the project's https URL: here, the bare repo.
						"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=url."+bare+".insteadOf",
						"GIT_CONFIG_VALUE_0=https://gitpeer-status:token@gitlab.example/org/peering.git")
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("job %s: %v\n%s\n%s", status.name, err, script, out)
					}
				}
			}
			branch := func() string { return revParse(bare, "gitpeer-status") }
			run("# Peering status\n\nalpha → beta: Ready")
			first := branch()
			if first == "" {
				t.Fatal("the status job made no gitpeer-status branch")
			}
			if got := git(t, bare, "ls-tree", "-r", "--name-only", first); got != "STATUS.md" {
				t.Errorf("gitpeer-status holds %q, want STATUS.md alone", got)
			}
			if got := git(t, bare, "show", first+":STATUS.md"); !strings.Contains(got, "alpha → beta: Ready") {
				t.Errorf("gitpeer-status's STATUS.md = %q", got)
			}
			run("# Peering status\n\nalpha → beta: Ready")
			if again := branch(); again != first {
				t.Errorf("an unchanged STATUS.md made commit %s on gitpeer-status (was %s)", again, first)
			}
			run("# Peering status\n\nalpha → beta: Stalled")
			if next := branch(); next == first || strings.TrimSpace(git(t, bare, "rev-parse", next+"^")) != first {
				t.Errorf("a changed STATUS.md: gitpeer-status %s, want one commit on top of %s", next, first)
			}
			if got := strings.TrimSpace(git(t, bare, "rev-parse", "main")); got != main {
				t.Errorf("the status job moved main to %s", got)
			}
			if refs := git(t, bare, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/gitpeer-status\nrefs/heads/main" {
				t.Errorf("the remote's branches after the status job:\n%s", refs)
			}
		})
	}
}

// checkStatusPush fails the test unless the git push words push one
// commit to refs/heads/gitpeer-status, without force.
func checkStatusPush(t *testing.T, job string, words []string) {
	t.Helper()
	refspec := words[len(words)-1]
	_, dst, _ := strings.Cut(refspec, ":")
	if dst != "refs/heads/gitpeer-status" || strings.HasPrefix(refspec, "+") ||
		slices.ContainsFunc(words, func(w string) bool { return w == "-f" || strings.HasPrefix(w, "--force") }) {
		t.Errorf("job %s runs %v: want a push of one commit to refs/heads/gitpeer-status, never to main nor an applied branch, never forced", job, words)
	}
}
