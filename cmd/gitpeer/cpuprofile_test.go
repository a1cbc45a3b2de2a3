package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfileEnvWritesAProfile: GITPEER_CPUPROFILE=FILE leaves a pprof
// profile (gzip-compressed protobuf) in FILE; a path that cannot be created
// is reported and the command runs on unprofiled.
func TestCPUProfileEnvWritesAProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(cpuProfileEnv, path)
	var stderr bytes.Buffer
	stop := startCPUProfile(&stderr)
	stop()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("%s is not a gzip-compressed profile: % x", path, data[:min(len(data), 8)])
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr: %s", stderr.String())
	}

	t.Setenv(cpuProfileEnv, filepath.Join(t.TempDir(), "missing", "cpu.pprof"))
	stderr.Reset()
	startCPUProfile(&stderr)()
	if !strings.Contains(stderr.String(), cpuProfileEnv) {
		t.Fatalf("an uncreatable profile path was not reported: %q", stderr.String())
	}
}
