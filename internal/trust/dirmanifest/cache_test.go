package dirmanifest_test

import (
	"crypto"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// allPaths are every file of the repo.
func allPaths(r repo) []string { return slices.Collect(maps.Keys(r.fs)) }

// A view with a cache, cold or warm, reads exactly what a view without one
// reads, and fails with the same words: the cache changes no check.
func TestCachedViewReadsWhatAViewReads(t *testing.T) {
	r := newRepo(t)
	cache := dirmanifest.NewCache()
	plain := dirmanifest.NewView(r.fs, r.trust)
	for round := range 2 {
		cached := dirmanifest.NewCachedView(r.fs, r.trust, cache)
		for _, p := range allPaths(r) {
			want, wantErr := plain.ReadFile(p)
			got, err := cached.ReadFile(p)
			if string(got) != string(want) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Errorf("round %d: %s: cached view read %q, %v; plain view %q, %v", round, p, got, err, want, wantErr)
			}
		}
	}
}

// A second view with the same cache reuses the manifest verified by the
// first instead of parsing and verifying it again.
func TestCachedViewReusesAVerifiedManifest(t *testing.T) {
	r := newRepo(t)
	cache := dirmanifest.NewCache()
	m1, ok1 := dirmanifest.NewCachedView(r.fs, r.trust, cache).Verified("alpha", "clusters/beta/inbox/alpha")
	m2, ok2 := dirmanifest.NewCachedView(r.fs, r.trust, cache).Verified("alpha", "clusters/beta/inbox/alpha")
	if !ok1 || !ok2 || m1 != m2 {
		t.Fatalf("Verified twice = %p %v, %p %v: want the same manifest", m1, ok1, m2, ok2)
	}
	m3, _ := dirmanifest.NewView(r.fs, r.trust).Verified("alpha", "clusters/beta/inbox/alpha")
	if m3 == m1 {
		t.Fatal("a view without cache returned the cached manifest")
	}
}

// What a cache entry vouched for once must not outlive the reason it held:
// each attack first warms the cache with alpha's good manifest of
// clusters/beta/inbox/alpha, then changes one thing the check depends on.
func TestCacheDoesNotVouchForWhatChanged(t *testing.T) {
	const dir = "clusters/beta/inbox/alpha"
	const file = dir + "/tenant.yaml"
	cases := []struct {
		name   string
		change func(r *repo)
		detail string
	}{
		{
			name: "the writer's pinned key changed (rotated or distrusted)",
			change: func(r *repo) {
				r.trust.keys = maps.Clone(r.trust.keys)
				r.trust.keys["alpha"] = edKey(t).Public()
			},
			detail: "does not verify",
		},
		{
			name: "the writer is no longer trusted",
			change: func(r *repo) {
				r.trust.keys = maps.Clone(r.trust.keys)
				delete(r.trust.keys, "alpha")
			},
			detail: "no trusted key for alpha",
		},
		{
			name: "a higher sequence was seen since: the cached manifest is now a rollback",
			change: func(r *repo) {
				r.trust.min = maps.Clone(r.trust.min)
				r.trust.min[dir] = 3
			},
			detail: "sequence 2 is lower than 3",
		},
		{
			name: "the manifest's bytes were replaced by one a repo writer signed",
			change: func(r *repo) {
				_, data := build(t, edKey(t), "alpha", dir, map[string][]byte{"tenant.yaml": []byte("kind: Tenant\n")}, 2)
				r.fs[dir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: data}
			},
			detail: "does not verify",
		},
		{
			name: "the manifest's bytes were changed so that they no longer parse",
			change: func(r *repo) {
				data := r.fs[dir+"/"+dirmanifest.FileName].Data
				r.fs[dir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: append([]byte("apiVersion: x\n"), data...)}
			},
			detail: "malformed manifest",
		},
		{
			name: "the listed file's content changed",
			change: func(r *repo) {
				r.fs[file] = &fstest.MapFile{Data: []byte("kind: Tenant\nspec: {evil: true}\n")}
			},
			detail: "not signed by alpha",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			cache := dirmanifest.NewCache()
			if _, err := dirmanifest.NewCachedView(r.fs, r.trust, cache).ReadFile(file); err != nil {
				t.Fatalf("before the change: %v", err)
			}
			r.fs = maps.Clone(r.fs)
			tc.change(&r)
			_, err := dirmanifest.NewCachedView(r.fs, r.trust, cache).ReadFile(file)
			if err == nil || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("after the change: read error %v, want one saying %q", err, tc.detail)
			}
		})
	}
}

// The same signed bytes copied into another writer's directory, or claimed
// for another writer, are not vouched for by the entry of the original.
func TestCacheIsPerWriterAndDirectory(t *testing.T) {
	r := newRepo(t)
	cache := dirmanifest.NewCache()
	const dir = "clusters/beta/inbox/alpha"
	if _, ok := dirmanifest.NewCachedView(r.fs, r.trust, cache).Verified("alpha", dir); !ok {
		t.Fatal("alpha's manifest does not verify")
	}
	r.fs["clusters/gamma/inbox/alpha/tenant.yaml"] = r.fs[dir+"/tenant.yaml"]
	r.fs["clusters/gamma/inbox/alpha/manifest.yaml"] = r.fs[dir+"/manifest.yaml"]
	v := dirmanifest.NewCachedView(r.fs, r.trust, cache)
	if _, err := v.ReadFile("clusters/gamma/inbox/alpha/tenant.yaml"); err == nil || !strings.Contains(err.Error(), "another writer or directory") {
		t.Errorf("copy in another directory: %v", err)
	}
	// The same bytes checked for a writer with the same key: still refused.
	r.trust.keys = map[string]crypto.PublicKey{"beta": r.trust.keys["alpha"]}
	if m, ok := dirmanifest.NewCachedView(r.fs, r.trust, cache).Verified("beta", dir); ok {
		t.Errorf("alpha's manifest verified for beta: %+v", m)
	}
	if _, err := fs.ReadFile(v, dir+"/tenant.yaml"); err != nil {
		t.Errorf("the original still reads: %v", err)
	}
}

// Lookup answers what Remember was told about the very bytes, key, writer
// and directory, and a View sharing the cache reuses it: a reader outside a
// View (verify's history walk) and a View verify a manifest once between
// them, and the manifest they get is the one Parse and Verify give.
func TestCacheLookupIsWhatRememberWasToldOfTheSameInput(t *testing.T) {
	r := newRepo(t)
	const dir = "clusters/beta/inbox/alpha"
	data := r.fs[dir+"/"+dirmanifest.FileName].Data
	key := r.trust.keys["alpha"]
	m, err := dirmanifest.Parse(dir+"/"+dirmanifest.FileName, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(key, "alpha", dir); err != nil {
		t.Fatal(err)
	}
	cache := dirmanifest.NewCache()
	if got, ok := cache.Lookup(data, key, "alpha", dir); ok {
		t.Fatalf("an empty cache answered %+v", got)
	}
	cache.Remember(data, key, "alpha", dir, m)
	if got, ok := cache.Lookup(data, key, "alpha", dir); !ok || got != m {
		t.Fatalf("Lookup after Remember = %p, %v; want %p", got, ok, m)
	}
	if got, ok := dirmanifest.NewCachedView(r.fs, r.trust, cache).Verified("alpha", dir); !ok || got != m {
		t.Fatalf("a view sharing the cache verified %p, %v; want the remembered %p", got, ok, m)
	}
	// And the other way: what a view verified, Lookup answers.
	other := dirmanifest.NewCache()
	vm, ok := dirmanifest.NewCachedView(r.fs, r.trust, other).Verified("alpha", dir)
	if got, hit := other.Lookup(data, key, "alpha", dir); !ok || !hit || got != vm {
		t.Fatalf("Lookup of what a view verified = %p, %v; want %p", got, hit, vm)
	}
}

// A changed byte, another key, writer or directory is not served what was
// remembered for the original.
func TestCacheLookupMissesAChangedByteOrKey(t *testing.T) {
	r := newRepo(t)
	const dir = "clusters/beta/inbox/alpha"
	data := r.fs[dir+"/"+dirmanifest.FileName].Data
	key := r.trust.keys["alpha"]
	m, err := dirmanifest.Parse(dir+"/"+dirmanifest.FileName, data)
	if err != nil {
		t.Fatal(err)
	}
	cache := dirmanifest.NewCache()
	cache.Remember(data, key, "alpha", dir, m)
	flipped := slices.Clone(data)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		data        []byte
		key         crypto.PublicKey
		writer, dir string
	}{
		"a byte changed":      {flipped, key, "alpha", dir},
		"a byte appended":     {append(slices.Clone(data), '\n'), key, "alpha", dir},
		"another key":         {data, edKey(t).Public(), "alpha", dir},
		"another writer":      {data, key, "gamma", dir},
		"another directory":   {data, key, "alpha", "clusters/gamma/inbox/alpha"},
		"a key of other type": {data, p256Key(t).Public(), "alpha", dir},
	} {
		if got, ok := cache.Lookup(c.data, c.key, c.writer, c.dir); ok {
			t.Errorf("%s: served %+v from the cache", name, got)
		}
	}
}
