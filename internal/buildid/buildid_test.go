package buildid

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSelfIsWhatGoToolBuildidSays: the ID read from the running test binary
// is the one `go tool buildid` prints for it.
func TestSelfIsWhatGoToolBuildidSays(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if got := Self(); got != want || got == "" {
		t.Errorf("Self() = %q, want %q", got, want)
	}
}

func TestNotABinaryHasNoBuildID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Read(p); got != "" {
		t.Errorf("Read(a script) = %q, want none", got)
	}
	if got := Read(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("Read(a missing file) = %q, want none", got)
	}
}

func FuzzParseNote(f *testing.F) {
	note := binary.LittleEndian.AppendUint32(nil, 4)
	note = binary.LittleEndian.AppendUint32(note, 3)
	note = binary.LittleEndian.AppendUint32(note, noteType)
	note = append(note, "Go\x00\x00abc"...)
	f.Add(note)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		id := parseNote(data, binary.LittleEndian)
		if len(id) > len(data) {
			t.Fatalf("an ID of %d bytes from a note of %d", len(id), len(data))
		}
	})
}
