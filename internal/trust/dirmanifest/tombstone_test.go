package dirmanifest_test

import (
	"crypto"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// TestATombstoneIsASignedManifestWithNoFiles: BuildTombstone's YAML is the
// documented format with "files: []", parses back as a tombstone, and its
// payload has no file line.
func TestATombstoneIsASignedManifestWithNoFiles(t *testing.T) {
	key := edKey(t)
	m, data, err := dirmanifest.BuildTombstone(key, "alpha", inboxDir, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Tombstone() || !strings.Contains(string(data), "files: []\n") {
		t.Fatalf("tombstone YAML:\n%s", data)
	}
	parsed, err := dirmanifest.Parse(dirmanifest.FileName, data)
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.Tombstone() || parsed.Sequence != 42 {
		t.Fatalf("parsed %+v", parsed)
	}
	if err := parsed.Verify(key.Public(), "alpha", inboxDir); err != nil {
		t.Fatal(err)
	}
	want := "gitpeer-manifest-v1\ncluster alpha\ndirectory " + inboxDir + "\nsequence 42\n"
	if got := string(parsed.Payload()); got != want {
		t.Fatalf("payload %q, want %q", got, want)
	}
	full, _ := build(t, key, "alpha", inboxDir, map[string][]byte{"tenant.yaml": []byte("kind: Tenant\n")}, 41)
	if full.Tombstone() {
		t.Fatal("a manifest listing a file is a tombstone")
	}
}

// TestATombstonedDirectoryReadsAsEmptyAndItsPastIsRolledBack: a reader of a
// tombstoned directory finds no file, every file left there is an
// UnsignedChange; once the reader recorded the tombstone's sequence, the
// directory restored from before it, validly signed, is ManifestRolledBack
// and not one of its files is read.
func TestATombstonedDirectoryReadsAsEmptyAndItsPastIsRolledBack(t *testing.T) {
	key := edKey(t)
	tr := trust{keys: map[string]crypto.PublicKey{"alpha": key.Public()}, min: map[string]uint64{}}
	files := map[string][]byte{"tenant.yaml": []byte("kind: Tenant\n"), "resourceslice-pool.yaml": []byte("kind: ResourceSlice\n")}
	_, live := build(t, key, "alpha", inboxDir, files, 7)
	_, tomb, err := dirmanifest.BuildTombstone(key, "alpha", inboxDir, 9)
	if err != nil {
		t.Fatal(err)
	}
	tree := fstest.MapFS{inboxDir + "/" + dirmanifest.FileName: {Data: tomb}}
	for rel, data := range files {
		tree[inboxDir+"/"+rel] = &fstest.MapFile{Data: data} // left behind
	}

	v := dirmanifest.NewView(tree, tr)
	if m, ok := v.Verified("alpha", inboxDir); !ok || !m.Tombstone() || m.Sequence != 9 {
		t.Fatalf("Verified: %+v %v", m, ok)
	}
	entries, err := fs.ReadDir(v, inboxDir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("a tombstoned directory lists %v, %v", entries, err)
	}
	for _, ig := range v.Audit("alpha", inboxDir) {
		if ig.Reason != reasons.UnsignedChange {
			t.Fatalf("%s: %s, want %s", ig.Path, ig.Reason, reasons.UnsignedChange)
		}
	}
	if n := len(v.Audit("alpha", inboxDir)); n != len(files) {
		t.Fatalf("Audit names %d files, want %d", n, len(files))
	}

	// The directory as it was before the withdrawal, put back.
	tree[inboxDir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: live}
	tr.min[inboxDir] = 9
	v = dirmanifest.NewView(tree, tr)
	for rel := range files {
		if _, err := fs.ReadFile(v, inboxDir+"/"+rel); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("read %s of the restored directory: %v", rel, err)
		}
		if reason, _ := v.IgnoredReason("alpha", inboxDir, inboxDir+"/"+rel); reason != reasons.ManifestRolledBack {
			t.Fatalf("%s: %s, want %s", rel, reason, reasons.ManifestRolledBack)
		}
	}
	// A reader that never saw the tombstone (verify, offline) reads it: only
	// a record of the sequence tells a restored past from the present.
	tr.min[inboxDir] = 7
	if _, err := fs.ReadFile(dirmanifest.NewView(tree, tr), inboxDir+"/tenant.yaml"); err != nil {
		t.Fatalf("a reader at sequence 7 refuses the state it accepted: %v", err)
	}
}

// TestReadVerifiedChecksTheSignatureAndScope: ReadVerified returns the
// manifest only when the writer signed it for that directory with that key.
func TestReadVerifiedChecksTheSignatureAndScope(t *testing.T) {
	key, other := edKey(t), edKey(t)
	_, data, err := dirmanifest.BuildTombstone(key, "alpha", inboxDir, 3)
	if err != nil {
		t.Fatal(err)
	}
	tree := fstest.MapFS{inboxDir + "/" + dirmanifest.FileName: {Data: data}, "clusters/gamma/inbox/alpha/" + dirmanifest.FileName: {Data: data},
		"clusters/delta/inbox/alpha/" + dirmanifest.FileName: {Data: []byte("kind: Manifest\n")}}
	if m, raw, err := dirmanifest.ReadVerified(tree, key.Public(), "alpha", inboxDir); err != nil || m.Sequence != 3 || string(raw) != string(data) {
		t.Fatalf("ReadVerified: %+v, %v", m, err)
	}
	for _, c := range []struct {
		name string
		pub  crypto.PublicKey
		dir  string
		want error
	}{
		{"another key", other.Public(), inboxDir, dirmanifest.ErrBadSignature},
		{"another directory", key.Public(), "clusters/gamma/inbox/alpha", dirmanifest.ErrWrongScope},
		{"no manifest", key.Public(), "clusters/epsilon/inbox/alpha", dirmanifest.ErrMissing},
		{"malformed", key.Public(), "clusters/delta/inbox/alpha", dirmanifest.ErrMalformed},
	} {
		if _, _, err := dirmanifest.ReadVerified(tree, c.pub, "alpha", c.dir); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
