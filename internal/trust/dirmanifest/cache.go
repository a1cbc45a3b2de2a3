package dirmanifest

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"unicode/utf8"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
)

// MaxCached bounds how many verified manifests a Cache holds; when full it
// starts over empty, so memory stays bounded whatever the repo holds.
const MaxCached = 1 << 14

// Cache remembers manifests that parsed and verified, so a reader that
// sees the same manifest.yaml again (every pass of a daemon, while its
// writer does not change it) neither parses nor verifies it again. An entry
// is keyed by the SHA-256 of the exact bytes of manifest.yaml, the DER of
// the public key it verified with, the writer and the directory: a hit
// means the very same check already succeeded on the very same input. Never
// a path alone: any change of the bytes or of the trusted key misses.
// Failures are not remembered, and the rollback check (Trust.MinSequence)
// is done by each View, never cached. Safe for concurrent use; the zero
// value is not: use NewCache.
type Cache struct {
	m *boundedmap.Map[cacheKey, *Manifest]
}

type cacheKey struct {
	data   [sha256.Size]byte
	key    string // PKIX DER of the trusted key
	writer string
	dir    string
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{m: boundedmap.New[cacheKey, *Manifest](MaxCached)} }

// get returns the manifest remembered for data (manifest.yaml of dir)
// verified with key for writer, and the entry's key for put. ok is false on
// a miss, and cacheable false when key has no exact encoding (then put is
// not called).
func (c *Cache) get(data []byte, key crypto.PublicKey, writer, dir string) (m *Manifest, k cacheKey, ok, cacheable bool) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, k, false, false
	}
	k = cacheKey{data: sha256.Sum256(data), key: string(der), writer: writer, dir: dir}
	m, ok = c.m.Get(k)
	return m, k, ok, true
}

// put remembers m, which parsed from and verified as k says.
func (c *Cache) put(k cacheKey, m *Manifest) {
	c.m.Put(k, m)
}

// Signed remembers m, which Build just returned with data, once it
// verifies with pub for its writer and directory: the signer's next pass
// reads its own directory back and finds it here, without parsing the
// bytes it wrote itself (Build writes exactly what Parse reads back when
// its strings are UTF-8, which YAML would otherwise replace:
// FuzzBuildIsWhatParseReads). Nothing is kept when Parse would refuse data
// (over MaxSize, no signature), for a string that is not UTF-8, or when m
// does not verify with pub. A nil cache keeps nothing.
func (c *Cache) Signed(m *Manifest, data []byte, pub crypto.PublicKey) {
	if c == nil || m == nil || len(data) > MaxSize || len(m.Signature) == 0 || !validUTF8(m) {
		return
	}
	if err := m.Verify(pub, m.ClusterID, m.Directory); err != nil {
		return
	}
	if _, k, _, cacheable := c.get(data, pub, m.ClusterID, m.Directory); cacheable {
		c.put(k, m)
	}
}

// validUTF8 reports whether every string of m is UTF-8.
func validUTF8(m *Manifest) bool {
	if !utf8.ValidString(m.ClusterID) || !utf8.ValidString(m.Directory) {
		return false
	}
	for _, f := range m.Files {
		if !utf8.ValidString(f.Path) {
			return false
		}
	}
	return true
}

// Lookup returns the manifest c remembers for data (manifest.yaml of dir,
// exact bytes) verified with key for writer: ok means Parse of data and
// Verify with key, writer and dir succeeded before, giving m. A reader
// outside a View (verify's history walk) uses it with Remember.
func (c *Cache) Lookup(data []byte, key crypto.PublicKey, writer, dir string) (m *Manifest, ok bool) {
	m, _, ok, _ = c.get(data, key, writer, dir)
	return m, ok
}

// Remember records m, which Parse gave for data and which verified with
// key for writer over dir: only a success, never a failure.
func (c *Cache) Remember(data []byte, key crypto.PublicKey, writer, dir string, m *Manifest) {
	if _, k, _, cacheable := c.get(data, key, writer, dir); cacheable {
		c.put(k, m)
	}
}
