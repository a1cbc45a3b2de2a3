package dirmanifest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// FuzzParse feeds manifest.yaml files a repo writer could commit. Parse must
// never panic, must refuse with ErrMalformed, and whatever it accepts must
// keep the format's rules: it re-encodes and re-parses to the same payload
// and signature, and its payload has exactly one line per field and file (no
// field can spell a line of its own).
func FuzzParse(f *testing.F) {
	key := edKey(f)
	_, valid := build(f, key, "alpha", alphaDir, alphaFiles(), 3)
	_, empty := build(f, key, "alpha", inboxDir, nil, 1)
	f.Add(valid)
	f.Add(empty)
	f.Add(valid[:len(valid)/2])
	f.Add(bytes.Replace(valid, []byte("path: cluster.yaml"), []byte(`path: "cluster.yaml\nfile 00 x"`), 1))
	f.Add(bytes.Replace(valid, []byte("path: cluster.yaml"), []byte("path: ../cluster.yaml"), 1))
	f.Add(bytes.Replace(valid, []byte("path: cluster.yaml"), []byte("path: manifest.yaml"), 1))
	f.Add(bytes.Replace(valid, []byte("sequence: 3"), []byte("sequence: 18446744073709551615"), 1))
	f.Add(bytes.Replace(valid, []byte("sequence: 3"), []byte("sequence: 1e3"), 1))
	f.Add(bytes.Replace(valid, []byte("clusterID: alpha"), []byte("CLUSTERID: alpha"), 1))
	f.Add(append(bytes.Clone(valid), "extra: 1\n"...))
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: Manifest\nclusterID: a\ndirectory: clusters/a\nsequence: 1\nfiles: []\nsignature: AA==\n"))
	f.Add([]byte("&a [*a, *a]"))
	f.Add([]byte(""))
	for _, c := range badManifests(f) {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := dirmanifest.Parse("manifest.yaml", data)
		if err != nil {
			if !errors.Is(err, dirmanifest.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		payload := m.Payload()
		if lines := bytes.Count(payload, []byte("\n")); lines != 4+len(m.Files) {
			t.Fatalf("accepted a manifest whose payload has %d lines for %d files:\n%q", lines, len(m.Files), payload)
		}
		for _, f := range m.Files {
			if f.Path == dirmanifest.FileName || strings.HasPrefix(f.Path, "/") || hasDotDot(f.Path) {
				t.Fatalf("accepted path %q", f.Path)
			}
		}
		again, err := dirmanifest.Parse("manifest.yaml", encode(t, m))
		if err != nil {
			t.Fatalf("an accepted manifest does not re-parse: %v", err)
		}
		if !bytes.Equal(again.Payload(), payload) || !bytes.Equal(again.Signature, m.Signature) {
			t.Fatalf("re-encoding changed the manifest:\n%q\nwant\n%q", again.Payload(), payload)
		}
		// Verify never panics, whatever it is given.
		_ = m.Verify(key.Public(), m.ClusterID, m.Directory)
	})
}

func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}
