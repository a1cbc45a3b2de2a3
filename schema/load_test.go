package schema

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadFindsSpecFile(t *testing.T) {
	for _, name := range SpecFiles {
		t.Run(name, func(t *testing.T) {
			src := demoYAML
			if strings.HasSuffix(name, ".cue") {
				src = demoCUE
			}
			dir := writeFiles(t, map[string]string{name: src, "README.md": "# peering repo\n", "other.cue": "package other\n"})
			spec, path, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if want := filepath.Join(dir, name); path != want {
				t.Errorf("path = %q, want %q", path, want)
			}
			if !reflect.DeepEqual(spec, demoSpec) {
				t.Errorf("spec = %+v, want %+v", spec, demoSpec)
			}
		})
	}
}

func TestLoadReportsProblemsWithTheFilePath(t *testing.T) {
	dir := writeFiles(t, map[string]string{"peering.yaml": "clusters:\n- id: Alpha\n"})
	spec, path, err := Load(dir)
	if spec != nil {
		t.Errorf("spec = %+v, want nil", spec)
	}
	if want := filepath.Join(dir, "peering.yaml"); path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error is %T (%v), want *Error", err, err)
	}
	want := path + `:2:7: clusters[0].id: invalid cluster id "Alpha": ` + idRules
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		wantErr  func(dir string) string
		notExist bool
	}{
		{"no spec file", map[string]string{"peering.json": "{}", "README.md": ""},
			func(dir string) string {
				return "no peering spec in " + dir + " (want one of peering.cue, peering.yaml, peering.yml): file does not exist"
			}, true},
		{"both CUE and YAML", map[string]string{"peering.cue": demoCUE, "peering.yaml": demoYAML},
			func(dir string) string {
				return "more than one peering spec in " + dir + ": " + filepath.Join(dir, "peering.cue") + " and " + filepath.Join(dir, "peering.yaml") + "; keep only one"
			}, false},
		{"both YAML extensions", map[string]string{"peering.yaml": demoYAML, "peering.yml": demoYAML},
			func(dir string) string {
				return "more than one peering spec in " + dir + ": " + filepath.Join(dir, "peering.yaml") + " and " + filepath.Join(dir, "peering.yml") + "; keep only one"
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			spec, _, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded with %+v", spec)
			}
			if got, want := err.Error(), tt.wantErr(dir); got != want {
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.notExist)
			}
			var perr *Error
			if errors.As(err, &perr) {
				t.Errorf("error is a *Error, want a plain error")
			}
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, _, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(%q) = %v, want a not-exist error naming the dir", dir, err)
	}
}

func TestLoadUnreadableSpec(t *testing.T) {
	// A directory where the spec should be cannot be read as one.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "peering.cue"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, path, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load = %v, want an error naming %s", err, path)
	}
	var perr *Error
	if errors.As(err, &perr) {
		t.Errorf("error is a *Error, want a plain error")
	}
}

func TestLoadHugeFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"peering.yaml": "# " + strings.Repeat("x", 2*maxSpecSize)})
	_, path, err := Load(dir)
	if want := path + ": file is larger than 1 MiB: this cannot be a peering spec"; err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
}
