package dirmanifest_test

import (
	"crypto"
	"errors"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// trust is a reader's pins: a key per writer, a lowest sequence per directory.
type trust struct {
	keys map[string]crypto.PublicKey
	min  map[string]uint64
}

func (t trust) Key(writer string) (crypto.PublicKey, bool) {
	k, ok := t.keys[writer]
	return k, ok
}

func (t trust) MinSequence(_, dir string) uint64 { return t.min[dir] }

// repo is a peering repo as a repo writer left it, with every case a View
// must tell apart, and the trust of the reader (cluster beta).
type repo struct {
	fs    fstest.MapFS
	trust trust
}

func newRepo(t *testing.T) repo {
	t.Helper()
	keys := map[string]crypto.Signer{"alpha": edKey(t), "beta": p256Key(t), "gamma": edKey(t), "delta": edKey(t), "epsilon": edKey(t), "zeta": edKey(t)}
	mallory := edKey(t)
	r := repo{fs: fstest.MapFS{}, trust: trust{keys: map[string]crypto.PublicKey{}, min: map[string]uint64{}}}
	for id, k := range keys {
		if id != "zeta" { // beta never pinned zeta
			r.trust.keys[id] = k.Public()
		}
	}
	// sign writes files under dir and its manifest, listing signed (relative
	// path → content) as writer's key (or another) signs it.
	sign := func(key crypto.Signer, writer, dir string, signed map[string]string, seq uint64) {
		files := map[string][]byte{}
		for rel, content := range signed {
			files[rel] = []byte(content)
			r.fs[dir+"/"+rel] = &fstest.MapFile{Data: []byte(content)}
		}
		_, data := build(t, key, writer, dir, files, seq)
		r.fs[dir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: data}
	}
	put := func(p, content string) { r.fs[p] = &fstest.MapFile{Data: []byte(content)} }

	put("peering.cue", "peerings: []\n")
	put("README.md", "# peering repo\n")

	// alpha's own directory: two signed files, one planted, one changed after
	// signing.
	sign(keys["alpha"], "alpha", "clusters/alpha", map[string]string{
		"cluster.yaml":          "kind: Cluster\n",
		"kustomization.yaml":    "resources: [liqo/beta/tenant.yaml]\n",
		"liqo/beta/tenant.yaml": "kind: Tenant\n",
	}, 4)
	put("clusters/alpha/planted.yaml", "kind: ClusterRoleBinding\n")
	put("clusters/alpha/liqo/beta/tenant.yaml", "kind: Tenant\nspec: {evil: true}\n")

	// beta's own directory, whose manifest also lists a file in its inbox
	// that gamma is supposed to write: beta cannot vouch for gamma.
	sign(keys["beta"], "beta", "clusters/beta", map[string]string{
		"cluster.yaml":            "kind: Cluster\n",
		"inbox/gamma/tenant.yaml": "kind: Tenant\n",
	}, 9)
	// alpha's signed inbox directory for beta.
	sign(keys["alpha"], "alpha", "clusters/beta/inbox/alpha", map[string]string{
		"tenant.yaml": "kind: Tenant\n",
	}, 2)
	put("clusters/beta/inbox/alpha/resourceslice-planted.yaml", "kind: ResourceSlice\n")
	// gamma's inbox directory has no manifest.
	put("clusters/beta/inbox/gamma/tenant.yaml", "kind: Tenant\n")
	// delta's inbox directory is signed by a key beta did not pin.
	sign(mallory, "delta", "clusters/beta/inbox/delta", map[string]string{"tenant.yaml": "kind: Tenant\n"}, 50)
	// epsilon's inbox directory is an old signed state, replayed.
	sign(keys["epsilon"], "epsilon", "clusters/beta/inbox/epsilon", map[string]string{"tenant.yaml": "kind: Tenant\n"}, 3)
	r.trust.min["clusters/beta/inbox/epsilon"] = 5
	// zeta is not trusted at all.
	sign(keys["zeta"], "zeta", "clusters/beta/inbox/zeta", map[string]string{"tenant.yaml": "kind: Tenant\n"}, 1)
	// gamma's own directory: at exactly the sequence already seen, readable.
	sign(keys["gamma"], "gamma", "clusters/gamma", map[string]string{"cluster.yaml": "kind: Cluster\n"}, 7)
	r.trust.min["clusters/gamma"] = 7
	// delta's own directory, and a copy of it as delta's inbox directory for
	// alpha: a manifest signed for one directory vouches for no other.
	sign(keys["delta"], "delta", "clusters/delta", map[string]string{"cluster.yaml": "kind: Cluster\n"}, 1)
	r.fs["clusters/alpha/inbox/delta/cluster.yaml"] = r.fs["clusters/delta/cluster.yaml"]
	r.fs["clusters/alpha/inbox/delta/manifest.yaml"] = r.fs["clusters/delta/manifest.yaml"]
	// epsilon's own directory holds a manifest that does not parse.
	put("clusters/epsilon/cluster.yaml", "kind: Cluster\n")
	put("clusters/epsilon/manifest.yaml", "apiVersion: gitpeer.io/v1alpha1\nkind: Manifest\n")
	return r
}

// signedFiles are the files of newRepo that a View reads.
var signedFiles = []string{
	"README.md",
	"clusters/alpha/cluster.yaml",
	"clusters/alpha/kustomization.yaml",
	"clusters/beta/cluster.yaml",
	"clusters/beta/inbox/alpha/tenant.yaml",
	"clusters/delta/cluster.yaml",
	"clusters/gamma/cluster.yaml",
	"peering.cue",
}

func TestViewReadsOnlySignedFiles(t *testing.T) {
	r := newRepo(t)
	v := dirmanifest.NewView(r.fs, r.trust)
	cases := []struct {
		name   string
		path   string
		reads  bool
		detail string // in the error when it does not read
	}{
		{name: "reads a listed file", path: "clusters/alpha/cluster.yaml", reads: true},
		{name: "reads a listed file signed with an ECDSA key", path: "clusters/beta/cluster.yaml", reads: true},
		{name: "reads a listed file of an inbox directory", path: "clusters/beta/inbox/alpha/tenant.yaml", reads: true},
		{name: "reads a manifest at exactly the sequence already seen", path: "clusters/gamma/cluster.yaml", reads: true},
		{name: "passes the spec through", path: "peering.cue", reads: true},
		{name: "passes files outside clusters/ through", path: "README.md", reads: true},
		{name: "hides an unlisted file", path: "clusters/alpha/planted.yaml", detail: "not signed by alpha"},
		{name: "hides a listed file whose content changed", path: "clusters/alpha/liqo/beta/tenant.yaml", detail: "not signed by alpha"},
		{name: "hides an unlisted file beside signed ones in an inbox", path: "clusters/beta/inbox/alpha/resourceslice-planted.yaml", detail: "not signed by alpha"},
		{name: "hides a file of a directory without manifest", path: "clusters/beta/inbox/gamma/tenant.yaml", detail: "missing"},
		{name: "hides a file the directory's owner listed in someone else's inbox", path: "clusters/beta/inbox/gamma/tenant.yaml", detail: "clusters/beta/inbox/gamma/manifest.yaml"},
		{name: "hides a directory signed by another key than the pinned one", path: "clusters/beta/inbox/delta/tenant.yaml", detail: "does not verify"},
		{name: "hides a directory whose manifest was rolled back", path: "clusters/beta/inbox/epsilon/tenant.yaml", detail: "lower than 5"},
		{name: "hides a directory of a writer with no trusted key", path: "clusters/beta/inbox/zeta/tenant.yaml", detail: "no trusted key for zeta"},
		{name: "hides a directory whose manifest was signed for another directory", path: "clusters/alpha/inbox/delta/cluster.yaml", detail: "another writer or directory"},
		{name: "hides a directory whose manifest does not parse", path: "clusters/epsilon/cluster.yaml", detail: "malformed manifest"},
		{name: "hides the manifest itself", path: "clusters/alpha/manifest.yaml"},
		{name: "hides an inbox manifest itself", path: "clusters/beta/inbox/alpha/manifest.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := v.ReadFile(tc.path)
			_, statErr := v.Stat(tc.path)
			f, openErr := v.Open(tc.path)
			if f != nil {
				f.Close()
			}
			if tc.reads {
				if err != nil || statErr != nil || openErr != nil {
					t.Fatalf("ReadFile: %v, Stat: %v, Open: %v", err, statErr, openErr)
				}
				if string(data) != string(r.fs[tc.path].Data) {
					t.Fatalf("read %q, want %q", data, r.fs[tc.path].Data)
				}
				return
			}
			for op, err := range map[string]error{"ReadFile": err, "Stat": statErr, "Open": openErr} {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: error = %v, want fs.ErrNotExist", op, err)
				}
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("error %q does not say %q", err, tc.detail)
			}
			if data, err := fs.ReadFile(v, tc.path); err == nil {
				t.Errorf("fs.ReadFile read %q", data)
			}
		})
	}
}

func TestViewReadDirHidesUnsignedFiles(t *testing.T) {
	r := newRepo(t)
	v := dirmanifest.NewView(r.fs, r.trust)
	dirs := []struct {
		dir  string
		want []string
	}{
		{".", []string{"README.md", "clusters", "peering.cue"}},
		{"clusters/alpha", []string{"cluster.yaml", "inbox", "kustomization.yaml", "liqo"}},
		{"clusters/alpha/inbox/delta", []string{}},
		{"clusters/alpha/liqo/beta", []string{}},
		{"clusters/beta", []string{"cluster.yaml", "inbox"}},
		{"clusters/beta/inbox", []string{"alpha", "delta", "epsilon", "gamma", "zeta"}},
		{"clusters/beta/inbox/alpha", []string{"tenant.yaml"}},
		{"clusters/beta/inbox/gamma", []string{}},
		{"clusters/beta/inbox/epsilon", []string{}},
	}
	for _, tc := range dirs {
		t.Run("lists only signed files in "+tc.dir, func(t *testing.T) {
			entries, err := v.ReadDir(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ReadDir(%s) = %q, want %q", tc.dir, got, tc.want)
			}
			if _, err := fs.ReadDir(v, tc.dir); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("walks only signed files", func(t *testing.T) {
		var got []string
		err := fs.WalkDir(v, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				got = append(got, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, signedFiles) {
			t.Fatalf("walked\n%q\nwant\n%q", got, signedFiles)
		}
	})
	if _, err := v.ReadDir("clusters/nobody"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir of a missing directory: %v", err)
	}
}

// The view is a well-behaved fs.FS: every way to list and read it agrees.
func TestViewIsAConsistentFS(t *testing.T) {
	r := newRepo(t)
	if err := fstest.TestFS(dirmanifest.NewView(r.fs, r.trust), signedFiles...); err != nil {
		t.Fatal(err)
	}
}

func TestAuditNamesEachIgnoredFileAndWhy(t *testing.T) {
	r := newRepo(t)
	v := dirmanifest.NewView(r.fs, r.trust)
	cases := []struct {
		name   string
		writer string
		dir    string
		want   []dirmanifest.Ignored // Detail checked by substring
	}{
		{"reports an unlisted and a changed file", "alpha", "clusters/alpha", []dirmanifest.Ignored{
			{Path: "clusters/alpha/liqo/beta/tenant.yaml", Reason: reasons.UnsignedChange, Detail: "not signed by alpha"},
			{Path: "clusters/alpha/planted.yaml", Reason: reasons.UnsignedChange, Detail: "not signed by alpha"},
		}},
		{"reports nothing in a fully signed directory, and leaves the inbox to its writers", "beta", "clusters/beta", nil},
		{"reports an unlisted file in an inbox directory", "alpha", "clusters/beta/inbox/alpha", []dirmanifest.Ignored{
			{Path: "clusters/beta/inbox/alpha/resourceslice-planted.yaml", Reason: reasons.UnsignedChange, Detail: "not signed by alpha"},
		}},
		{"reports every file of a directory without manifest", "gamma", "clusters/beta/inbox/gamma", []dirmanifest.Ignored{
			{Path: "clusters/beta/inbox/gamma/tenant.yaml", Reason: reasons.ManifestInvalid, Detail: "clusters/beta/inbox/gamma/manifest.yaml: missing"},
		}},
		{"reports a directory signed by another key", "delta", "clusters/beta/inbox/delta", []dirmanifest.Ignored{
			{Path: "clusters/beta/inbox/delta/tenant.yaml", Reason: reasons.ManifestInvalid, Detail: "manifest signature does not verify"},
		}},
		{"reports a rolled-back directory", "epsilon", "clusters/beta/inbox/epsilon", []dirmanifest.Ignored{
			{Path: "clusters/beta/inbox/epsilon/tenant.yaml", Reason: reasons.ManifestRolledBack, Detail: "sequence 3 is lower than 5"},
		}},
		{"reports a directory of an untrusted writer", "zeta", "clusters/beta/inbox/zeta", []dirmanifest.Ignored{
			{Path: "clusters/beta/inbox/zeta/tenant.yaml", Reason: reasons.ManifestInvalid, Detail: "no trusted key"},
		}},
		{"reports a directory whose manifest does not parse", "epsilon", "clusters/epsilon", []dirmanifest.Ignored{
			{Path: "clusters/epsilon/cluster.yaml", Reason: reasons.ManifestInvalid, Detail: "malformed manifest"},
		}},
		{"reports a directory whose manifest was signed for another directory", "delta", "clusters/alpha/inbox/delta", []dirmanifest.Ignored{
			{Path: "clusters/alpha/inbox/delta/cluster.yaml", Reason: reasons.ManifestInvalid, Detail: "another writer or directory"},
		}},
		{"reports nothing for a directory that does not exist", "omega", "clusters/omega", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := v.Audit(tc.writer, tc.dir)
			if len(got) != len(tc.want) {
				t.Fatalf("Audit = %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Path != w.Path || g.Reason != w.Reason || g.Writer != tc.writer || !strings.Contains(g.Detail, w.Detail) {
					t.Errorf("Audit[%d] = %+v, want %+v (detail containing %q)", i, g, w, w.Detail)
				}
			}
		})
	}
}

func TestVerifiedReturnsOnlyAVerifiedManifest(t *testing.T) {
	r := newRepo(t)
	v := dirmanifest.NewView(r.fs, r.trust)
	if m, ok := v.Verified("alpha", "clusters/alpha"); !ok || m.Sequence != 4 {
		t.Errorf("Verified(alpha) = %+v, %v", m, ok)
	}
	for _, d := range []struct{ writer, dir string }{
		{"gamma", "clusters/beta/inbox/gamma"},
		{"delta", "clusters/beta/inbox/delta"},
		{"epsilon", "clusters/beta/inbox/epsilon"},
		{"zeta", "clusters/beta/inbox/zeta"},
		{"delta", "clusters/alpha/inbox/delta"},
		{"beta", "clusters/beta/inbox/alpha"}, // alpha's directory claimed for beta
	} {
		if m, ok := v.Verified(d.writer, d.dir); ok || m != nil {
			t.Errorf("Verified(%s, %s) = %+v, %v", d.writer, d.dir, m, ok)
		}
	}
}

func TestScope(t *testing.T) {
	cases := []struct {
		name, path, writer, dir string
		ok                      bool
	}{
		{"a cluster's file is its own", "clusters/a/x", "a", "clusters/a", true},
		{"a cluster's nested file is its own", "clusters/a/liqo/b/tenant.yaml", "a", "clusters/a", true},
		{"a cluster's manifest is in its own directory", "clusters/a/manifest.yaml", "a", "clusters/a", true},
		{"an inbox file is its sender's", "clusters/a/inbox/b/x", "b", "clusters/a/inbox/b", true},
		{"a nested inbox file is its sender's", "clusters/a/inbox/b/c/x", "b", "clusters/a/inbox/b", true},
		{"an inbox directory is its sender's", "clusters/a/inbox/b", "b", "clusters/a/inbox/b", true},
		{"the inbox itself is nobody's", "clusters/a/inbox", "", "", false},
		{"the spec is nobody's", "peering.cue", "", "", false},
		{"clusters/ itself is nobody's", "clusters", "", "", false},
		{"a file elsewhere is nobody's", "docs/clusters/a/x", "", "", false},
		{"a cluster directory is its own", "clusters/a", "a", "clusters/a", true},
		{"a directory named inbox deeper down is the cluster's", "clusters/a/liqo/inbox/b/x", "a", "clusters/a", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, d, ok := dirmanifest.Scope(tc.path)
			if w != tc.writer || d != tc.dir || ok != tc.ok {
				t.Fatalf("Scope(%q) = %q, %q, %v; want %q, %q, %v", tc.path, w, d, ok, tc.writer, tc.dir, tc.ok)
			}
		})
	}
}

// A View checks each directory's manifest once, even when read concurrently.
func TestViewAsksTrustOncePerDirectory(t *testing.T) {
	r := newRepo(t)
	ct := &countingTrust{trust: r.trust, keys: map[string]int{}}
	v := dirmanifest.NewView(r.fs, ct)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, p := range signedFiles {
				_, _ = v.ReadFile(p)
			}
		}()
	}
	for range 8 {
		<-done
	}
	want := map[string]int{"alpha": 2, "beta": 1, "delta": 1, "gamma": 1}
	if !reflect.DeepEqual(ct.keys, want) {
		t.Fatalf("Key asked %v, want %v", ct.keys, want)
	}
}

type countingTrust struct {
	trust
	keys map[string]int // guarded by View's lock: Key is only called under it
}

func (c *countingTrust) Key(writer string) (crypto.PublicKey, bool) {
	c.keys[writer]++
	return c.trust.Key(writer)
}
