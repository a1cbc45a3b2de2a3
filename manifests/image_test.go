package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMakeImage runs `make image` (the target manifests/deploy's image
// comes from) with fake docker and podman on PATH: with neither able to
// run it fails, saying so, so that a script does not go on to push an
// image that was never built; with one that can, it builds IMAGE with
// VERSION, and CONTAINER_ENGINE picks the engine.
func TestMakeImage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	// bin holds what the recipe runs besides the engines: bash (the
	// Makefile's SHELL, found through env) and git (VERSION's default).
	bin := t.TempDir()
	for _, tool := range []string{"bash", "git"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "builds")
	// engine writes a fake engine whose `info` exits infoExit and which
	// logs every other call.
	engine := func(name string, infoExit int) {
		t.Helper()
		script := "#!/usr/bin/env bash\n[ \"$1\" = info ] && exit " + strconv.Itoa(infoExit) + "\necho \"" + name + " $*\" >> " + log + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	makeImage := func(args ...string) (string, error) {
		t.Helper()
		os.Remove(log)
		cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", "..", "image", "VERSION=test-version", "IMAGE=registry.example/gitpeer:test"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	builds := func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}

	// No engine at all, then a docker whose daemon is not reachable.
	for _, setup := range []func(){func() {}, func() { engine("docker", 1) }} {
		setup()
		out, err := makeImage()
		if err == nil || !strings.Contains(out, "make image: no container builder available") || builds() != "" {
			t.Fatalf("make image with no engine that can run: %v\n%s\nbuilds: %q", err, out, builds())
		}
	}
	engine("podman", 0)
	if out, err := makeImage(); err != nil || builds() != "podman build --build-arg VERSION=test-version -t registry.example/gitpeer:test .\n" {
		t.Fatalf("make image with podman able to run: %v\n%s\nbuilds: %q", err, out, builds())
	}
	engine("docker", 0)
	if out, err := makeImage(); err != nil || !strings.HasPrefix(builds(), "docker build ") {
		t.Fatalf("make image with docker and podman able to run: %v\n%s\nbuilds: %q, want docker first", err, out, builds())
	}
	if out, err := makeImage("CONTAINER_ENGINE=podman"); err != nil || !strings.HasPrefix(builds(), "podman build ") {
		t.Fatalf("make image CONTAINER_ENGINE=podman: %v\n%s\nbuilds: %q", err, out, builds())
	}

	// make help says what the target does, failing included.
	out, err := exec.Command("make", "--no-print-directory", "-C", "..", "help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "image") || !strings.Contains(string(out), "fails if neither can run") {
		t.Errorf("make help: %v\n%s", err, out)
	}
}
