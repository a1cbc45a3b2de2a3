package dirmanifest_test

import (
	"bytes"
	"crypto"
	"reflect"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// What a signer put in the cache with Signed is found by its next view,
// which then reads what a view without a cache reads; and nothing is kept
// that a view would not have accepted: a manifest that does not verify with
// the key given, or the same bytes under another directory.
func TestSignedManifestIsWhatTheNextViewFinds(t *testing.T) {
	key, other := edKey(t), edKey(t)
	files := map[string][]byte{"cluster.yaml": []byte("kind: Cluster\n"), "liqo/beta/tenant.yaml": []byte("kind: Tenant\n")}
	m, data, err := dirmanifest.Build(key, "alpha", alphaDir, files, 5)
	if err != nil {
		t.Fatal(err)
	}
	tree := fstest.MapFS{alphaDir + "/" + dirmanifest.FileName: {Data: data}}
	for rel, content := range files {
		tree[alphaDir+"/"+rel] = &fstest.MapFile{Data: content}
	}
	tr := trust{keys: map[string]crypto.PublicKey{"alpha": key.Public()}, min: map[string]uint64{}}

	cache := dirmanifest.NewCache()
	cache.Signed(m, data, other.Public()) // not the key that signed: not kept
	if got, ok := dirmanifest.NewCachedView(tree, tr, cache).Verified("alpha", alphaDir); !ok || got == m {
		t.Fatalf("a manifest kept for the wrong key: %p %v", got, ok)
	}
	cache = dirmanifest.NewCache()
	cache.Signed(m, data, key.Public())
	v := dirmanifest.NewCachedView(tree, tr, cache)
	if got, ok := v.Verified("alpha", alphaDir); !ok || got != m {
		t.Fatalf("the signed manifest was not found: %p %v, want %p", got, ok, m)
	}
	plain := dirmanifest.NewView(tree, tr)
	for p := range tree {
		want, werr := plain.ReadFile(p)
		got, err := v.ReadFile(p)
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
			t.Errorf("%s: %q, %v; without the cache %q, %v", p, got, err, want, werr)
		}
	}
	// The same bytes in another directory are still refused there.
	moved := fstest.MapFS{"clusters/alpha/inbox/x/" + dirmanifest.FileName: {Data: data}}
	if _, ok := dirmanifest.NewCachedView(moved, tr, cache).Verified("alpha", "clusters/alpha/inbox/x"); ok {
		t.Fatal("the signed bytes were accepted for another directory")
	}
	// A writer whose name is not UTF-8: YAML writes it otherwise, so the
	// bytes do not parse back to what Build returned, and nothing is kept.
	const odd = "al\xffpha"
	if bad, bdata, err := dirmanifest.Build(key, odd, "clusters/"+odd, files, 1); err == nil {
		c := dirmanifest.NewCache()
		c.Signed(bad, bdata, key.Public())
		oddTree := fstest.MapFS{"clusters/" + odd + "/" + dirmanifest.FileName: {Data: bdata}}
		oddTrust := trust{keys: map[string]crypto.PublicKey{odd: key.Public()}, min: map[string]uint64{}}
		if got, _ := dirmanifest.NewCachedView(oddTree, oddTrust, c).Verified(odd, "clusters/"+odd); got == bad {
			t.Fatal("a manifest whose strings YAML changes was kept")
		}
	}
	// One byte of the manifest changed: parsed and refused as without a cache.
	edited := bytes.Replace(data, []byte("sequence: 5"), []byte("sequence: 6"), 1)
	tree[alphaDir+"/"+dirmanifest.FileName] = &fstest.MapFile{Data: edited}
	if _, ok := dirmanifest.NewCachedView(tree, tr, cache).Verified("alpha", alphaDir); ok {
		t.Fatal("an edited manifest verified")
	}
}

// Build writes exactly what Parse reads back, whatever the files: Signed
// relies on it to keep Build's manifest for the bytes it wrote.
func FuzzBuildIsWhatParseReads(f *testing.F) {
	key := edKey(f)
	f.Add("alpha", "clusters/alpha", "liqo/beta/tenant.yaml", []byte("x"), uint64(3))
	f.Add("a", "clusters/b/inbox/a", "slice-\u00e9 \"q\".yaml", []byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, writer, dir, rel string, content []byte, seq uint64) {
		m, data, err := dirmanifest.Build(key, writer, dir, map[string][]byte{rel: content, "cluster.yaml": content}, seq)
		if err != nil {
			return
		}
		got, err := dirmanifest.Parse(dir+"/"+dirmanifest.FileName, data)
		if len(data) > dirmanifest.MaxSize || !utf8.ValidString(writer+dir+rel) {
			return // Signed keeps nothing this large, or with a string YAML would change
		}
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("Parse of what Build wrote: %+v, %v\nBuild: %+v\n%s", got, err, m, data)
		}
	})
}
