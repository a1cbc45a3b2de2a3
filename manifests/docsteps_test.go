package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/yaml"
)

// docSection is the text of doc from the line heading to the next
// heading of the same or a higher level (outside code blocks), or "" when
// doc has no such line.
func docSection(doc []byte, heading string) string {
	level := headingLevel(heading)
	var out []string
	in, code := false, false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			code = !code
		}
		switch {
		case line == heading:
			in = true
		case in && !code && headingLevel(line) > 0 && headingLevel(line) <= level:
			return strings.Join(out, "\n")
		}
		if in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// headingLevel is the number of #s of a Markdown heading line, 0 for any
// other line.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || !strings.HasPrefix(line[n:], " ") {
		return 0
	}
	return n
}

// shLines are the lines of the ```sh blocks of text, comments cut off.
func shLines(text string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```sh"):
			in = true
		case strings.HasPrefix(trimmed, "```"):
			in = false
		case in:
			if i := strings.Index(trimmed, "  #"); i >= 0 {
				trimmed = strings.TrimSpace(trimmed[:i])
			}
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				out = append(out, trimmed)
			}
		}
	}
	return out
}

// TestFluxStepsOfTheDocs runs what docs/deploy.md (step 8) and
// docs/gitops.md (Flux) tell an admin to run to make a cluster's Flux
// overlay: gitpeer init into a checkout `peering` whose commit is then
// read by the docs' `gitpeer allowed-signers peering | awk … >
// flux/alpha/alpha.sshpub`, from beside the checkout. The key file must be
// the key init printed, the checkout must be left clean (nothing written
// into it for a later git add -A to commit), and the overlay docs/gitops.md
// shows must build with that file into the objects manifests/flux makes.
// deploy.md makes the Flux objects one way only: with that component, never
// with Flux objects of its own.
func TestFluxStepsOfTheDocs(t *testing.T) {
	deploy, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	gitops, err := os.ReadFile("../docs/gitops.md")
	if err != nil {
		t.Fatal(err)
	}
	step8 := docSection(deploy, "## 8. Flux: apply what the reconciler signed")
	if step8 == "" {
		t.Fatal("docs/deploy.md has no step 8 for Flux")
	}
	for _, api := range []string{"kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io"} {
		if strings.Contains(step8, api) {
			t.Errorf("docs/deploy.md, step 8 shows a Flux object of its own (%s): make them with manifests/flux, as docs/gitops.md does", api)
		}
	}
	if !strings.Contains(step8, "gitops.md#flux") {
		t.Error("docs/deploy.md, step 8 does not point at docs/gitops.md#flux for the overlay")
	}
	for _, line := range shLines(docSection(deploy, "## 5. Join the peering repo: `gitpeer init`")) {
		if strings.HasPrefix(line, "gitpeer init") && strings.Contains(line, ">") {
			t.Errorf("docs/deploy.md, step 5 redirects gitpeer init into the checkout, where git add -A commits it: %s", line)
		}
	}

	bin := buildGitpeer(t)
	for doc, text := range map[string]string{
		"docs/deploy.md, step 8": step8,
		"docs/gitops.md, Flux":   docSection(gitops, "## Flux"),
	} {
		t.Run(doc, func(t *testing.T) {
			tmp := t.TempDir()
			checkout := filepath.Join(tmp, "peering")
			run := func(dir, name string, args ...string) string {
				t.Helper()
				cmd := exec.Command(name, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
				out, err := cmd.Output()
				if err != nil {
					var stderr []byte
					if ee, ok := err.(*exec.ExitError); ok {
						stderr = ee.Stderr
					}
					t.Fatalf("%s %v: %v\n%s", name, args, err, stderr)
				}
				return string(out)
			}
			run(tmp, "git", "init", "-q", checkout)
			initCmd := exec.Command(bin, "init", "--cluster", "alpha", "--api-server", "https://alpha.example:6443",
				"--state-dir", filepath.Join(tmp, "state"), "--repo", ".")
			initCmd.Dir = checkout
			var initOut, initErr bytes.Buffer
			initCmd.Stdout, initCmd.Stderr = &initOut, &initErr
			if err := initCmd.Run(); err != nil {
				t.Fatalf("gitpeer init: %v\n%s", err, initErr.String())
			}
			printed := initOut.String()
			run(checkout, "git", "add", "clusters/alpha")
			run(checkout, "git", "-c", "user.name=admin", "-c", "user.email=admin@example.org", "commit", "-q", "-m", "clusters/alpha: join")
			var initKey string
			for _, d := range strings.Split(printed, "---\n") {
				var m struct {
					Kind       string            `json:"kind"`
					StringData map[string]string `json:"stringData"`
				}
				if yaml.Unmarshal([]byte(d), &m) == nil && m.Kind == "Secret" {
					initKey = m.StringData["alpha.sshpub"]
				}
			}
			if initKey == "" {
				t.Fatalf("gitpeer init printed no Secret with alpha.sshpub:\n%s", printed)
			}

			// The overlay's files, written as docs/gitops.md shows them.
			blocks := gitopsDocBlocks(t)
			for _, f := range []string{"kustomization.yaml", "params.env"} {
				if err := os.MkdirAll(filepath.Join(tmp, "flux", "alpha"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tmp, "flux", "alpha", f), []byte(blocks["flux/alpha/"+f]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var ran int
			for _, line := range shLines(text) {
				if !strings.HasPrefix(line, "mkdir ") && !strings.HasPrefix(line, "gitpeer allowed-signers") {
					continue
				}
				ran++
				run(tmp, "sh", "-c", line)
			}
			if ran == 0 {
				t.Fatalf("%s shows no gitpeer allowed-signers command", doc)
			}
			got, err := os.ReadFile(filepath.Join(tmp, "flux", "alpha", "alpha.sshpub"))
			if err != nil {
				t.Fatalf("%s's commands made no flux/alpha/alpha.sshpub beside the checkout: %v", doc, err)
			}
			if f := strings.Fields(initKey); len(f) < 2 || strings.TrimSpace(string(got)) != f[0]+" "+f[1] {
				t.Errorf("%s's commands wrote %q, gitpeer init printed the key %q", doc, got, initKey)
			}
			// The fingerprint the docs compare: ssh-keygen -lf of the file
			// is the one gitpeer init printed.
			const label = "commit-signing key fingerprint"
			initFP := regexp.MustCompile(label + ` \(as ssh-keygen -lf prints it\): (SHA256:\S+)\n`).FindStringSubmatch(initErr.String())
			if initFP == nil {
				t.Fatalf("gitpeer init printed no %s:\n%s", label, initErr.String())
			}
			var compared bool
			for _, line := range shLines(text) {
				if !strings.HasPrefix(line, "ssh-keygen -lf flux/alpha/alpha.sshpub") {
					continue
				}
				if !strings.Contains(text, `"`+label+`"`) {
					t.Errorf("%s: %q does not say which line of gitpeer init's output to compare with (%q)", doc, line, label)
				}
				compared = true
				if _, err := exec.LookPath("ssh-keygen"); err != nil {
					t.Logf("ssh-keygen is not installed (OpenSSH's client): the fingerprint is not compared")
					continue
				}
				if f := strings.Fields(run(tmp, "sh", "-c", line)); len(f) < 2 || f[1] != initFP[1] {
					t.Errorf("%s: %s prints %q, gitpeer init printed %s", doc, line, f, initFP[1])
				}
			}
			if !compared {
				t.Errorf("%s shows no ssh-keygen -lf flux/alpha/alpha.sshpub to compare the fingerprint", doc)
			}
			if st := run(checkout, "git", "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Errorf("after %s's commands the checkout holds files a git add -A would commit:\n%s", doc, st)
			}

			blocks["flux/alpha/alpha.sshpub"] = string(got)
			mem, _ := gitopsFS(t, blocks)
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/src/docs/flux/alpha")
			if err != nil {
				t.Fatalf("kustomize build of docs/gitops.md's flux/alpha with the key file: %v", err)
			}
			objs := toObjects(t, rm)
			checkFlux(t, objs, overlayParams(t, blocks, "flux/alpha"))
		})
	}
}
