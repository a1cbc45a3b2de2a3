// Package buildid reads the Go build ID of the running executable: a hash
// the Go linker writes over the binary's inputs, so that two binaries built
// from different code (or with another toolchain) have different IDs. A
// cache kept on disk between processes keys on it, so that a gitpeer
// upgraded in place never reads what an older build computed.
package buildid

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"sync"
)

// noteName and noteType identify the build ID note ("Go\x00\x00", type 4)
// in the ELF section .note.go.buildid, as cmd/link writes it.
const (
	noteSection = ".note.go.buildid"
	noteName    = "Go\x00\x00"
	noteType    = 4
	maxNote     = 1 << 10 // bytes; a build ID is about 90
)

var self = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return Read(exe)
})

// Self is the build ID of the running executable, or "" when it has none
// that can be read (not an ELF binary, or one built without an ID). It is
// read once per process.
func Self() string { return self() }

// Read returns the Go build ID of the ELF executable at path, or "" when
// the file cannot be read as one or carries no build ID note.
func Read(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(noteSection)
	if s == nil || s.Size > maxNote {
		return ""
	}
	data, err := io.ReadAll(s.Open())
	if err != nil {
		return ""
	}
	return parseNote(data, f.ByteOrder)
}

// parseNote returns the descriptor of an ELF note of the Go build ID's name
// and type: namesz, descsz and type (4 bytes each), the name padded to 4
// bytes, then the descriptor.
func parseNote(data []byte, order binary.ByteOrder) string {
	if len(data) < 12+len(noteName) {
		return ""
	}
	namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
	if namesz != 4 || typ != noteType || !bytes.Equal(data[12:16], []byte(noteName)) {
		return ""
	}
	if uint64(descsz) > uint64(len(data)-16) {
		return ""
	}
	return string(data[16 : 16+descsz])
}
