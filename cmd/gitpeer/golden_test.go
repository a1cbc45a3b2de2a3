package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update rewrites the expected outputs of golden tests
// (testdata/<command>/<case>/expected/) from what the code now produces:
// go test ./cmd/gitpeer/ -run Golden -update, then review the diff.
var update = flag.Bool("update", false, "rewrite the golden files of testdata/*/*/expected/")

// golden compares got with testdata/<command>/<name>/expected/<file>, or
// with -update writes it there.
func golden(t *testing.T, command, name, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", command, name, "expected", file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// goldenCases are the case directories of testdata/<command>/.
func goldenCases(t *testing.T, command string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", command))
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, e := range entries {
		if e.IsDir() {
			cases = append(cases, e.Name())
		}
	}
	if len(cases) == 0 {
		t.Fatalf("no cases in testdata/%s", command)
	}
	return cases
}
