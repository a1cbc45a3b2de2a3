package dirmanifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// The bad-input suite for manifest.yaml, the signed index of every directory
// a cluster writes (part of the repo layout family; see
// internal/repo/layout/badinput_layout_test.go for the rest). Each case is refused by Parse
// with ErrMalformed and a message naming the file and the field, before any
// signature is checked; the table also seeds FuzzParse.

// badManifest is one malformed manifest.yaml.
type badManifest struct {
	name  string
	input []byte
	says  string // "<field>: <reason>", or a part of the message
}

// badManifests builds the cases from a valid manifest of alpha's directory.
func badManifests(t testing.TB) []badManifest {
	t.Helper()
	m, valid := build(t, edKey(t), "alpha", alphaDir, alphaFiles(), 3)
	edit := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("%q not in\n%s", old, valid)
		}
		return bytes.Replace(valid, []byte(old), []byte(new), 1)
	}
	with := func(mod func(m *dirmanifest.Manifest)) []byte {
		c := clone(m)
		mod(c)
		return encode(t, c)
	}
	first := m.Files[0].Path
	many := with(func(m *dirmanifest.Manifest) {
		m.Files = nil
		for i := range dirmanifest.MaxFiles + 1 {
			m.Files = append(m.Files, dirmanifest.File{Path: fmt.Sprintf("f%06d", i), SHA256: strings.Repeat("0", 64)})
		}
	})
	return []badManifest{
		{name: "an empty manifest.yaml", input: nil, says: `apiVersion: is ""`},
		{name: "a manifest of another kind", input: edit("kind: Manifest", "kind: Cluster"), says: `kind: is "Cluster", want "Manifest"`},
		{name: "a manifest with an unknown field", input: append(bytes.Clone(valid), "trusted: true\n"...), says: `unknown field "trusted"`},
		{name: "a manifest with a duplicate key", input: append(bytes.Clone(valid), "sequence: 99\n"...), says: "already set"},
		{name: "a manifest with an alias bomb", input: []byte("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"), says: "excessive aliasing"},
		{name: "a manifest larger than 1 MiB", input: append(bytes.Clone(valid), ("# " + strings.Repeat("x", dirmanifest.MaxSize) + "\n")...), says: "more than 1048576"},
		{name: "a manifest listing more than MaxFiles files", input: many, says: "files: 4097 entries, more than 4096"},
		{name: "a sequence of zero", input: edit("sequence: 3", "sequence: 0"), says: "sequence: must be positive"},
		{name: "a negative sequence", input: edit("sequence: 3", "sequence: -1"), says: "sequence"},
		{name: "a cluster ID with a line break (forging a payload line)", input: with(func(m *dirmanifest.Manifest) { m.ClusterID = "alpha\ndirectory clusters/beta" }), says: "clusterID: "},
		{name: "a directory that climbs out with ../", input: with(func(m *dirmanifest.Manifest) { m.Directory = "clusters/alpha/../beta" }), says: "directory: "},
		{name: "an absolute directory", input: with(func(m *dirmanifest.Manifest) { m.Directory = "/clusters/alpha" }), says: "directory: "},
		{name: "a file path that climbs out with ../", input: with(func(m *dirmanifest.Manifest) { m.Files[0].Path = "../beta/" + first }), says: "files[0].path: "},
		{name: "a file path with a space (hides from a human reading the payload)", input: with(func(m *dirmanifest.Manifest) { m.Files[0].Path = first + " " }), says: "files[0].path: "},
		{name: "the manifest listing itself", input: with(func(m *dirmanifest.Manifest) { m.Files[0].Path = dirmanifest.FileName }), says: "files[0].path: "},
		{name: "a checksum in capitals", input: with(func(m *dirmanifest.Manifest) { m.Files[0].SHA256 = strings.ToUpper(m.Files[0].SHA256) }), says: "files[0].sha256: is not 64 lowercase hex digits"},
		{name: "a checksum one digit short", input: with(func(m *dirmanifest.Manifest) { m.Files[0].SHA256 = m.Files[0].SHA256[1:] }), says: "files[0].sha256: is not 64 lowercase hex digits"},
		{name: "a file listed twice", input: with(func(m *dirmanifest.Manifest) { m.Files[1] = m.Files[0] }), says: "files[1].path: " + `"` + first + `" is out of order or repeated`},
		{name: "an unsigned manifest", input: with(func(m *dirmanifest.Manifest) { m.Signature = nil }), says: "signature: missing"},
		{name: "a signature that is not base64", input: edit("signature: ", "signature: '%%%'\nx: "), says: "illegal base64"},
	}
}

// TestBadInputManifests: every malformed manifest.yaml is refused with
// ErrMalformed and a message naming the file, the field and why.
func TestBadInputManifests(t *testing.T) {
	const file = "clusters/alpha/manifest.yaml"
	for _, c := range badManifests(t) {
		t.Run(c.name, func(t *testing.T) {
			_, err := dirmanifest.Parse(file, c.input)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			if !errors.Is(err, dirmanifest.ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, file+": ") || !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not start with %q and say %q", msg, file+": ", c.says)
			}
		})
	}
}
