package dirmanifest_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// Keys are generated at run time: no private key is a fixture.
func edKey(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func p256Key(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	alphaDir = "clusters/alpha"
	inboxDir = "clusters/beta/inbox/alpha"
)

// alphaFiles is what cluster alpha writes under clusters/alpha/.
func alphaFiles() map[string][]byte {
	return map[string][]byte{
		"cluster.yaml":          []byte("kind: Cluster\n"),
		"kustomization.yaml":    []byte("resources: []\n"),
		"liqo/beta/tenant.yaml": []byte("kind: Tenant\n"),
		"status.yaml":           []byte("kind: Status\n"),
	}
}

func build(t testing.TB, key crypto.Signer, writer, dir string, files map[string][]byte, seq uint64) (*dirmanifest.Manifest, []byte) {
	t.Helper()
	m, data, err := dirmanifest.Build(key, writer, dir, files, seq)
	if err != nil {
		t.Fatalf("build %s: %v", dir, err)
	}
	return m, data
}

// encode marshals m as it stands, bypassing Build's checks, the way a
// hostile writer would commit it.
func encode(t testing.TB, m *dirmanifest.Manifest) []byte {
	t.Helper()
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func clone(m *dirmanifest.Manifest) *dirmanifest.Manifest {
	c := *m
	c.Files = append([]dirmanifest.File(nil), m.Files...)
	c.Signature = bytes.Clone(m.Signature)
	return &c
}

func TestBuildParseVerifyRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		key   crypto.Signer
		dir   string
		files map[string][]byte
	}{
		{"an Ed25519 cluster's own directory round-trips", edKey(t), alphaDir, alphaFiles()},
		{"an Ed25519 cluster's inbox directory round-trips", edKey(t), inboxDir, map[string][]byte{"nonce.yaml": []byte("nonce\n")}},
		{"an ECDSA P-256 cluster's directory round-trips", p256Key(t), alphaDir, alphaFiles()},
		{"an empty directory round-trips", edKey(t), inboxDir, map[string][]byte{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, data := build(t, tc.key, "alpha", tc.dir, tc.files, 7)
			got, err := dirmanifest.Parse(tc.dir+"/manifest.yaml", data)
			if err != nil {
				t.Fatalf("parse what Build wrote: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("parse changed the manifest:\n%+v\nwant\n%+v", got, m)
			}
			if err := got.Verify(tc.key.Public(), "alpha", tc.dir); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if got.APIVersion != dirmanifest.APIVersion || got.Kind != dirmanifest.Kind || got.Sequence != 7 {
				t.Errorf("header %s %s sequence %d", got.APIVersion, got.Kind, got.Sequence)
			}
			if len(got.Files) != len(tc.files) {
				t.Fatalf("%d files listed, want %d", len(got.Files), len(tc.files))
			}
			for i, f := range got.Files {
				if i > 0 && got.Files[i-1].Path >= f.Path {
					t.Errorf("files not sorted: %q before %q", got.Files[i-1].Path, f.Path)
				}
				if f.SHA256 != dirmanifest.Sum(tc.files[f.Path]) {
					t.Errorf("%s: sha256 %s is not its content's", f.Path, f.SHA256)
				}
			}
			if !got.SameFiles(tc.files) {
				t.Error("SameFiles is false for the files it was built from")
			}
		})
	}
}

func TestBuildIsDeterministicUpToTheSignature(t *testing.T) {
	key := edKey(t)
	a, _ := build(t, key, "alpha", alphaDir, alphaFiles(), 3)
	b, _ := build(t, key, "alpha", alphaDir, alphaFiles(), 3)
	if !bytes.Equal(a.Payload(), b.Payload()) {
		t.Fatalf("the same files gave two payloads:\n%s\n%s", a.Payload(), b.Payload())
	}
}

func TestPayloadIsTheDocumentedByteString(t *testing.T) {
	m := &dirmanifest.Manifest{
		ClusterID: "alpha",
		Directory: "clusters/beta/inbox/alpha",
		Sequence:  42,
		Files: []dirmanifest.File{
			{Path: "identity.yaml", SHA256: dirmanifest.Sum([]byte("identity"))},
			{Path: "nonce.yaml", SHA256: dirmanifest.Sum([]byte("nonce"))},
		},
	}
	want := "gitpeer-manifest-v1\n" +
		"cluster alpha\n" +
		"directory clusters/beta/inbox/alpha\n" +
		"sequence 42\n" +
		"file " + dirmanifest.Sum([]byte("identity")) + " identity.yaml\n" +
		"file " + dirmanifest.Sum([]byte("nonce")) + " nonce.yaml\n"
	if got := string(m.Payload()); got != want {
		t.Fatalf("payload:\n%s\nwant\n%s", got, want)
	}
	if dirmanifest.Sum([]byte("")) != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatal("Sum is not the lowercase hex SHA-256")
	}
}

func TestVerifyRefusesAnotherKeyWriterOrDirectory(t *testing.T) {
	key := edKey(t)
	m, _ := build(t, key, "alpha", alphaDir, alphaFiles(), 1)
	cases := []struct {
		name   string
		pub    crypto.PublicKey
		writer string
		dir    string
		want   error
	}{
		{"refuses a manifest checked with another Ed25519 key", edKey(t).Public(), "alpha", alphaDir, dirmanifest.ErrBadSignature},
		{"refuses a manifest checked with an ECDSA key", p256Key(t).Public(), "alpha", alphaDir, dirmanifest.ErrBadSignature},
		{"refuses a manifest checked with no key", nil, "alpha", alphaDir, dirmanifest.ErrBadSignature},
		{"refuses a manifest signed for another writer", key.Public(), "beta", alphaDir, dirmanifest.ErrWrongScope},
		{"refuses a manifest signed for another directory", key.Public(), "alpha", "clusters/alpha/inbox/beta", dirmanifest.ErrWrongScope},
		{"refuses a cluster's own manifest presented for its inbox directory", key.Public(), "alpha", inboxDir, dirmanifest.ErrWrongScope},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Verify(tc.pub, tc.writer, tc.dir)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyRefusesAnySingleByteChangeOfThePayload(t *testing.T) {
	key := edKey(t)
	orig, _ := build(t, key, "alpha", alphaDir, alphaFiles(), 1000)
	type edit struct {
		name string
		do   func(m *dirmanifest.Manifest)
	}
	var edits []edit
	flip := func(s string, i int) string {
		b := []byte(s)
		b[i] ^= 0x01
		return string(b)
	}
	for i := range orig.ClusterID {
		edits = append(edits, edit{fmt.Sprintf("clusterID byte %d", i), func(m *dirmanifest.Manifest) { m.ClusterID = flip(m.ClusterID, i) }})
	}
	for i := range orig.Directory {
		edits = append(edits, edit{fmt.Sprintf("directory byte %d", i), func(m *dirmanifest.Manifest) { m.Directory = flip(m.Directory, i) }})
	}
	for bit := range 64 {
		edits = append(edits, edit{fmt.Sprintf("sequence bit %d", bit), func(m *dirmanifest.Manifest) { m.Sequence ^= 1 << bit }})
	}
	for f := range orig.Files {
		for i := range orig.Files[f].Path {
			edits = append(edits, edit{fmt.Sprintf("files[%d].path byte %d", f, i), func(m *dirmanifest.Manifest) { m.Files[f].Path = flip(m.Files[f].Path, i) }})
		}
		for i := range orig.Files[f].SHA256 {
			edits = append(edits, edit{fmt.Sprintf("files[%d].sha256 byte %d", f, i), func(m *dirmanifest.Manifest) { m.Files[f].SHA256 = flip(m.Files[f].SHA256, i) }})
		}
	}
	for i := range orig.Signature {
		edits = append(edits, edit{fmt.Sprintf("signature byte %d", i), func(m *dirmanifest.Manifest) { m.Signature[i] ^= 0x01 }})
	}
	edits = append(edits,
		edit{"a file dropped", func(m *dirmanifest.Manifest) { m.Files = m.Files[1:] }},
		edit{"a file added", func(m *dirmanifest.Manifest) {
			m.Files = append(m.Files, dirmanifest.File{Path: "zz.yaml", SHA256: dirmanifest.Sum(nil)})
		}},
		edit{"signature truncated", func(m *dirmanifest.Manifest) { m.Signature = m.Signature[:len(m.Signature)-1] }},
		edit{"signature empty", func(m *dirmanifest.Manifest) { m.Signature = nil }},
	)
	for _, e := range edits {
		m := clone(orig)
		e.do(m)
		// Checked in the scope the edited manifest claims, so that only the
		// signature stands between the edit and a reader.
		if err := m.Verify(key.Public(), m.ClusterID, m.Directory); !errors.Is(err, dirmanifest.ErrBadSignature) {
			t.Errorf("%s: error = %v, want %v", e.name, err, dirmanifest.ErrBadSignature)
		}
		if err := m.Verify(key.Public(), "alpha", alphaDir); err == nil {
			t.Errorf("%s: verifies in the original scope", e.name)
		}
	}
	if err := orig.Verify(key.Public(), "alpha", alphaDir); err != nil {
		t.Fatalf("the edits changed the original: %v", err)
	}
}

// Every byte of manifest.yaml changed in turn: whatever still parses and
// verifies must mean exactly what was signed (spelling a key in another case,
// or unused base64 padding bits, are not changes).
func TestEveryByteOfManifestYAMLIsCoveredOrInert(t *testing.T) {
	key := edKey(t)
	orig, data := build(t, key, "alpha", alphaDir, alphaFiles(), 12)
	accepted := 0
	for i := range data {
		for _, delta := range []byte{0x01, 0x20} {
			d := bytes.Clone(data)
			d[i] ^= delta
			m, err := dirmanifest.Parse("manifest.yaml", d)
			if err != nil {
				continue
			}
			if err := m.Verify(key.Public(), "alpha", alphaDir); err != nil {
				continue
			}
			accepted++
			if !bytes.Equal(m.Payload(), orig.Payload()) || !bytes.Equal(m.Signature, orig.Signature) {
				t.Errorf("byte %d ^ %#x accepted with another meaning:\n%s", i, delta, m.Payload())
			}
		}
	}
	t.Logf("%d of %d single-byte edits still parse and verify, all with the signed meaning", accepted, 2*len(data))
}

func TestParseRefusesWhatBreaksTheFormat(t *testing.T) {
	key := edKey(t)
	valid, _ := build(t, key, "alpha", alphaDir, alphaFiles(), 5)
	sum := dirmanifest.Sum([]byte("x"))
	withFiles := func(files ...dirmanifest.File) func(m *dirmanifest.Manifest) {
		return func(m *dirmanifest.Manifest) { m.Files = files }
	}
	withPath := func(p string) func(m *dirmanifest.Manifest) {
		return withFiles(dirmanifest.File{Path: p, SHA256: sum})
	}
	tooMany := make([]dirmanifest.File, dirmanifest.MaxFiles+1)
	for i := range tooMany {
		tooMany[i] = dirmanifest.File{Path: fmt.Sprintf("f%05d", i), SHA256: sum}
	}
	cases := []struct {
		name  string
		edit  func(m *dirmanifest.Manifest)
		raw   func(data []byte) []byte
		field string // named in the error
	}{
		{name: "refuses unsorted paths", edit: withFiles(dirmanifest.File{Path: "b", SHA256: sum}, dirmanifest.File{Path: "a", SHA256: sum}), field: "files[1].path"},
		{name: "refuses a path listed twice", edit: withFiles(dirmanifest.File{Path: "a", SHA256: sum}, dirmanifest.File{Path: "a", SHA256: sum}), field: "files[1].path"},
		{name: "refuses an absolute path", edit: withPath("/etc/passwd"), field: "files[0].path"},
		{name: "refuses a path leaving the directory", edit: withPath("../beta/cluster.yaml"), field: "files[0].path"},
		{name: "refuses a path with .. inside", edit: withPath("liqo/../../beta/x"), field: "files[0].path"},
		{name: "refuses a path with a . element", edit: withPath("./x"), field: "files[0].path"},
		{name: "refuses a path with an empty element", edit: withPath("liqo//x"), field: "files[0].path"},
		{name: "refuses a path ending in a slash", edit: withPath("liqo/"), field: "files[0].path"},
		{name: "refuses the path .", edit: withPath("."), field: "files[0].path"},
		{name: "refuses an empty path", edit: withPath(""), field: "files[0].path"},
		{name: "refuses a path with a space", edit: withPath("a b"), field: "files[0].path"},
		{name: "refuses a path with a newline", edit: withPath("a\nfile " + sum + " b"), field: "files[0].path"},
		{name: "refuses a path with a carriage return", edit: withPath("a\rb"), field: "files[0].path"},
		{name: "refuses a path with a tab", edit: withPath("a\tb"), field: "files[0].path"},
		{name: "refuses a path with a NUL", edit: withPath("a\x00b"), field: "files[0].path"},
		{name: "refuses a path with DEL", raw: func(d []byte) []byte {
			return bytes.Replace(d, []byte("path: cluster.yaml"), []byte(`path: "cluster\x7f.yaml"`), 1)
		}, field: "files[0].path"},
		{name: "refuses a manifest listing itself", edit: withPath("manifest.yaml"), field: "files[0].path"},
		{name: "refuses an uppercase sha256", edit: withFiles(dirmanifest.File{Path: "a", SHA256: strings.ToUpper(sum)}), field: "files[0].sha256"},
		{name: "refuses a short sha256", edit: withFiles(dirmanifest.File{Path: "a", SHA256: sum[:63]}), field: "files[0].sha256"},
		{name: "refuses a non-hex sha256", edit: withFiles(dirmanifest.File{Path: "a", SHA256: "g" + sum[1:]}), field: "files[0].sha256"},
		{name: "refuses more than MaxFiles files", edit: withFiles(tooMany...), field: "files"},
		{name: "refuses another apiVersion", edit: func(m *dirmanifest.Manifest) { m.APIVersion = "gitpeer.io/v1" }, field: "apiVersion"},
		{name: "refuses another kind", edit: func(m *dirmanifest.Manifest) { m.Kind = "Tenant" }, field: "kind"},
		{name: "refuses an empty cluster ID", edit: func(m *dirmanifest.Manifest) { m.ClusterID = "" }, field: "clusterID"},
		{name: "refuses a cluster ID forging a payload line", edit: func(m *dirmanifest.Manifest) { m.ClusterID = "alpha\ndirectory clusters/beta" }, field: "clusterID"},
		{name: "refuses a cluster ID with a space", edit: func(m *dirmanifest.Manifest) { m.ClusterID = "al pha" }, field: "clusterID"},
		{name: "refuses an empty directory", edit: func(m *dirmanifest.Manifest) { m.Directory = "" }, field: "directory"},
		{name: "refuses the directory .", edit: func(m *dirmanifest.Manifest) { m.Directory = "." }, field: "directory"},
		{name: "refuses an absolute directory", edit: func(m *dirmanifest.Manifest) { m.Directory = "/clusters/alpha" }, field: "directory"},
		{name: "refuses a directory with ..", edit: func(m *dirmanifest.Manifest) { m.Directory = "clusters/alpha/../beta" }, field: "directory"},
		{name: "refuses a directory forging a payload line", edit: func(m *dirmanifest.Manifest) { m.Directory = "clusters/alpha\nsequence 9" }, field: "directory"},
		{name: "refuses sequence zero", edit: func(m *dirmanifest.Manifest) { m.Sequence = 0 }, field: "sequence"},
		{name: "refuses a missing signature", edit: func(m *dirmanifest.Manifest) { m.Signature = nil }, field: "signature"},
		{name: "refuses an unknown field", raw: func(d []byte) []byte { return append(d, "extra: 1\n"...) }, field: "extra"},
		{name: "refuses a repeated field", raw: func(d []byte) []byte { return append(d, "sequence: 6\n"...) }, field: "sequence"},
		{name: "refuses a negative sequence", raw: func(d []byte) []byte {
			return bytes.Replace(d, []byte("sequence: 5"), []byte("sequence: -5"), 1)
		}, field: "sequence"},
		{name: "refuses a signature that is not base64", raw: func(d []byte) []byte {
			i := bytes.Index(d, []byte("signature: "))
			return append(d[:i:i], "signature: '!!!'\n"...)
		}, field: "base64"},
		{name: "refuses more than MaxSize bytes", raw: func(d []byte) []byte {
			return append(d, "#"+strings.Repeat("x", dirmanifest.MaxSize)+"\n"...)
		}, field: "bytes"},
		{name: "refuses a YAML list", raw: func([]byte) []byte { return []byte("[1, 2]\n") }, field: ""},
		{name: "refuses an empty file", raw: func([]byte) []byte { return nil }, field: "apiVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := clone(valid)
			var data []byte
			if tc.edit != nil {
				tc.edit(m)
				data = encode(t, m)
			} else {
				data = tc.raw(encode(t, m))
			}
			const file = "clusters/alpha/manifest.yaml"
			got, err := dirmanifest.Parse(file, data)
			if !errors.Is(err, dirmanifest.ErrMalformed) {
				t.Fatalf("error = %v (manifest %+v), want %v", err, got, dirmanifest.ErrMalformed)
			}
			if !strings.HasPrefix(err.Error(), file+": ") || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s and %q", err, file, tc.field)
			}
		})
	}
}

func TestBuildRefusesPathsTheFormatForbids(t *testing.T) {
	key := edKey(t)
	for _, p := range []string{"manifest.yaml", "../x", "/x", "a b", "a\nb", "a\x00b", "", "."} {
		t.Run(fmt.Sprintf("refuses %q", p), func(t *testing.T) {
			_, _, err := dirmanifest.Build(key, "alpha", alphaDir, map[string][]byte{p: nil}, 1)
			if !errors.Is(err, dirmanifest.ErrMalformed) {
				t.Fatalf("error = %v, want %v", err, dirmanifest.ErrMalformed)
			}
		})
	}
	if _, _, err := dirmanifest.Build(key, "alpha", alphaDir, nil, 0); !errors.Is(err, dirmanifest.ErrMalformed) {
		t.Errorf("sequence 0: error = %v, want %v", err, dirmanifest.ErrMalformed)
	}
	if _, _, err := dirmanifest.Build(nil, "alpha", alphaDir, nil, 1); !errors.Is(err, handshake.ErrMalformedKey) {
		t.Errorf("no key: error = %v, want %v", err, handshake.ErrMalformedKey)
	}
}

// The reason paths may hold no space or control character: a path with a
// newline could spell two files, and both manifests would share one signature.
func TestAPathCannotForgeAPayloadLine(t *testing.T) {
	key := edKey(t)
	a, b := dirmanifest.Sum([]byte("a")), dirmanifest.Sum([]byte("b"))
	honest, _ := build(t, key, "alpha", alphaDir, map[string][]byte{"a": []byte("a"), "b": []byte("b")}, 1)
	forged := clone(honest)
	forged.Files = []dirmanifest.File{{Path: "a\nfile " + b + " b", SHA256: a}}
	if !bytes.Equal(forged.Payload(), honest.Payload()) {
		t.Fatalf("the forgery does not collide, the test is not testing anything:\n%s\n%s", forged.Payload(), honest.Payload())
	}
	if _, err := dirmanifest.Parse("manifest.yaml", encode(t, forged)); !errors.Is(err, dirmanifest.ErrMalformed) {
		t.Fatalf("a manifest whose path spells a second payload line parsed: %v", err)
	}
}

func TestCoversAndSameFiles(t *testing.T) {
	m, _ := build(t, edKey(t), "alpha", alphaDir, alphaFiles(), 1)
	covers := []struct {
		name    string
		rel     string
		content []byte
		want    bool
	}{
		{"covers a listed file with its content", "cluster.yaml", []byte("kind: Cluster\n"), true},
		{"covers a listed file in a subdirectory", "liqo/beta/tenant.yaml", []byte("kind: Tenant\n"), true},
		{"does not cover a listed file with other content", "cluster.yaml", []byte("kind: Cluster \n"), false},
		{"does not cover a listed file emptied", "cluster.yaml", nil, false},
		{"does not cover an unlisted file", "planted.yaml", []byte("kind: Cluster\n"), false},
		{"does not cover a listed path spelt with a prefix", "./cluster.yaml", []byte("kind: Cluster\n"), false},
		{"does not cover the manifest itself", "manifest.yaml", nil, false},
	}
	for _, tc := range covers {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Covers(tc.rel, tc.content); got != tc.want {
				t.Fatalf("Covers(%q) = %v, want %v", tc.rel, got, tc.want)
			}
		})
	}
	with := func(edit func(map[string][]byte)) map[string][]byte {
		f := alphaFiles()
		edit(f)
		return f
	}
	same := []struct {
		name  string
		files map[string][]byte
		want  bool
	}{
		{"the same files are the same", alphaFiles(), true},
		{"a changed file is not the same", with(func(f map[string][]byte) { f["status.yaml"] = []byte("kind: Status2\n") }), false},
		{"an added file is not the same", with(func(f map[string][]byte) { f["new.yaml"] = nil }), false},
		{"a removed file is not the same", with(func(f map[string][]byte) { delete(f, "status.yaml") }), false},
		{"a renamed file is not the same", with(func(f map[string][]byte) { f["status2.yaml"] = f["status.yaml"]; delete(f, "status.yaml") }), false},
		{"no files are not the same", map[string][]byte{}, false},
	}
	for _, tc := range same {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.SameFiles(tc.files); got != tc.want {
				t.Fatalf("SameFiles = %v, want %v", got, tc.want)
			}
		})
	}
	empty, _ := build(t, edKey(t), "alpha", inboxDir, nil, 1)
	if !empty.SameFiles(nil) || !empty.SameFiles(map[string][]byte{}) {
		t.Error("an empty manifest is not the same as no files")
	}
}

func TestLookup(t *testing.T) {
	m, _ := build(t, edKey(t), "alpha", alphaDir, alphaFiles(), 1)
	if sum, ok := m.Lookup("kustomization.yaml"); !ok || sum != dirmanifest.Sum([]byte("resources: []\n")) {
		t.Errorf("Lookup(kustomization.yaml) = %s, %v", sum, ok)
	}
	for _, rel := range []string{"", "a", "cluster", "cluster.yaml0", "zzz"} {
		if _, ok := m.Lookup(rel); ok {
			t.Errorf("Lookup(%q) found an unlisted path", rel)
		}
	}
}
