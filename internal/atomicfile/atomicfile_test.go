package atomicfile_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
)

// writerEnv makes this test binary a process that rewrites a file forever,
// for the test that kills it.
const writerEnv = "ATOMICFILE_TEST_WRITER"

// payloads are what the writer alternates between: big enough that a write
// takes a while, each byte telling which one it is.
func payloads() [2][]byte {
	return [2][]byte{bytes.Repeat([]byte{'a'}, 4<<20), bytes.Repeat([]byte{'b'}, 4<<20)}
}

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		p := payloads()
		for i := 0; ; i++ {
			if err := atomicfile.Write(path, p[i%2], 0o600); err != nil {
				os.Exit(3)
			}
			if i == 0 {
				os.Stdout.WriteString("ready\n")
			}
		}
	}
	os.Exit(m.Run())
}

func TestWriteReplacesTheFileWithItsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pins.yaml")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, perm := range []os.FileMode{0o600, 0o644} {
		data := []byte("new " + perm.String() + "\n")
		if err := atomicfile.Write(path, data, perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("content %q (%v), want %q", got, err, data)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), perm)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only pins.yaml: %v", len(entries), entries)
	}
}

func TestAFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file goes: the rename fails after the
	// temporary file was written.
	target := filepath.Join(dir, "state")
	if err := os.MkdirAll(filepath.Join(target, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(target, []byte("data"), 0o600)
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("Write over a directory: %v, want an error naming %s", err, target)
	}
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Errorf("the directory was replaced: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a temporary file was left behind: %v", entries)
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}

// TestAKilledWriterLeavesAWholeFile kills, with SIGKILL, a process that
// rewrites a 4 MiB file in a loop: whenever it dies, the file holds one
// whole version, never a mix or a truncated one.
func TestAKilledWriterLeavesAWholeFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pins.yaml")
	p := payloads()
	for round := range 8 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil {
			t.Fatalf("round %d: the writer did not start: %v", round, err)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if cmd.ProcessState.Success() || cmd.ProcessState.ExitCode() == 3 {
			t.Fatalf("round %d: the writer exited by itself: %v", round, cmd.ProcessState)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(got, p[0]) && !bytes.Equal(got, p[1]) {
			t.Fatalf("round %d: the file holds %d bytes starting %q, not one whole version", round, len(got), got[:min(len(got), 8)])
		}
	}
}
