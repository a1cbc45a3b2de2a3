package file_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/backend/file"
)

// TestADamagedStateDirIsAnErrorNeverANewIdentity cuts each state file short
// as a crash in the middle of a non-atomic write would (nothing, half, all
// but its last line), or removes it: Open names the file, says how to
// recover, and Init refuses to make a new key over it. The surviving files
// are left exactly as they were.
func TestADamagedStateDirIsAnErrorNeverANewIdentity(t *testing.T) {
	type damage struct {
		name string
		cut  func(data []byte) []byte // nil: remove the file
	}
	cuts := []damage{
		{"is empty", func([]byte) []byte { return nil }},
		{"is cut in half", func(d []byte) []byte { return d[:len(d)/2] }},
		{"lost its last line", func(d []byte) []byte {
			return d[:bytes.LastIndexByte(bytes.TrimRight(d, "\n"), '\n')+1]
		}},
		{"is missing", nil},
	}
	for _, name := range stateFiles {
		for _, d := range cuts {
			if name == file.NonceSecretFile && d.name == "lost its last line" {
				continue // binary: has no lines
			}
			t.Run(name+" "+d.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "alpha")
				initState(t, dir, "alpha")
				before := readAll(t, dir)
				p := filepath.Join(dir, name)
				if d.cut == nil {
					remove(t, p)
				} else {
					write(t, p, string(d.cut(before[name])))
				}
				_, err := file.Open(dir)
				if !errors.Is(err, file.ErrDamaged) || errors.Is(err, file.ErrNotInitialized) {
					t.Fatalf("Open: %v, want ErrDamaged", err)
				}
				for _, want := range []string{"state dir " + dir + " is damaged: " + p + ": ", "restore the state dir from a backup"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Open: %q does not say %q", err, want)
					}
				}
				_, created, err := file.Init(dir, file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: now})
				if !errors.Is(err, file.ErrDamaged) || created {
					t.Fatalf("Init over the damaged state: created %v, %v; want ErrDamaged", created, err)
				}
				for other, data := range before {
					got, err := os.ReadFile(filepath.Join(dir, other))
					if other == name {
						continue
					}
					if err != nil || !bytes.Equal(got, data) {
						t.Errorf("%s changed (%v)", other, err)
					}
				}
			})
		}
	}
}

// TestAStateDirWithoutConfigButWithStateIsDamaged: config.yaml gone but the
// key or the pins still there is damaged state, not "run gitpeer init".
func TestAStateDirWithoutConfigButWithStateIsDamaged(t *testing.T) {
	for _, keep := range []string{file.KeyFile, file.PinsFile, file.NextKeyFile, "checkout"} {
		t.Run(keep, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "alpha")
			initState(t, dir, "alpha")
			if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
				write(t, filepath.Join(dir, keep), "x") // made by a pass, not by init
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != keep {
					remove(t, filepath.Join(dir, e.Name()))
				}
			}
			_, err := file.Open(dir)
			want := "state dir " + dir + " is damaged: " + filepath.Join(dir, file.ConfigFile) + ": missing, but " + keep + " is there"
			if !errors.Is(err, file.ErrDamaged) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open: %v, want %q", err, want)
			}
			if _, _, err := file.Init(dir, file.InitOptions{ClusterID: "alpha", APIServer: "https://alpha.example:6443", Now: now}); err == nil {
				t.Fatal("Init made new state over a damaged state dir")
			}
			if _, err := os.Stat(filepath.Join(dir, file.KeyFile)); keep != file.KeyFile && err == nil {
				t.Error("Init wrote a key")
			}
		})
	}
}
