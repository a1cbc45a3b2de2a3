package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/buildid"
	"github.com/gitpeer/gitpeer/schema"
)

// specCache keeps the last spec a Runner evaluated, keyed by the SHA-256 of
// the spec file's path and bytes: evaluating a large spec takes seconds (a
// bounded evaluator process), and most passes run on a spec that did not
// change. The bytes are the commit's, read by the pass, so a changed spec
// changes the key and a stale spec is never served; a spec that fails to
// load is not kept.
//
// With a keep path, the spec is also kept in that file (the clone's
// .git/gitpeer-spec), so that a process running one pass (reconcile
// --once, a CronJob) does not start an evaluator for the spec its
// predecessor evaluated: at 100 clusters / 1,000 peerings that is 0.2
// CPU-s of a 0.7 CPU-s idle pass. The file is read only when it names this
// key and this binary's Go build ID (an upgraded gitpeer may evaluate a
// spec differently); anything else (missing, another build, another spec,
// cut short, not JSON) means evaluating, never an error.
type specCache struct {
	mu   sync.Mutex
	key  [sha256.Size]byte
	spec *schema.Spec
}

// specFile is the content of the spec cache file, JSON: the evaluator's
// answer (schema.ParseBounded's protocol) with what it answers for.
type specFile struct {
	Version int `json:"version"`
	// Build is the Go build ID of the binary that evaluated the spec.
	Build string `json:"build"`
	// Key is the hex SHA-256 of the spec file's path, a NUL and its bytes.
	Key  string       `json:"key"`
	Spec *schema.Spec `json:"spec"`
}

const (
	specFileVersion = 1
	// maxSpecFile bounds what is read back: the evaluated spec of the
	// largest spec (10,000 peerings) is about 2 MiB of JSON.
	maxSpecFile = 64 << 20
)

// load returns the spec of file (holding data), from the cache when it holds
// these bytes, else from the file keep (when not ""), else from load.
func (c *specCache) load(ctx context.Context, keep, file string, data []byte, load func(context.Context, string, []byte) (*schema.Spec, error)) (*schema.Spec, error) {
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(data)
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	c.mu.Lock()
	if c.spec != nil && c.key == key {
		spec := c.spec
		c.mu.Unlock()
		return spec, nil
	}
	c.mu.Unlock()
	spec := readSpecFile(keep, key)
	if spec == nil {
		var err error
		if spec, err = load(ctx, file, data); err != nil {
			return nil, err
		}
		writeSpecFile(keep, key, spec)
	}
	c.mu.Lock()
	c.key, c.spec = key, spec
	c.mu.Unlock()
	return spec, nil
}

// readSpecFile returns the spec the file at path holds for key and this
// build, or nil.
func readSpecFile(path string, key [sha256.Size]byte) *schema.Spec {
	build := buildid.Self()
	if path == "" || build == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxSpecFile+1))
	if err != nil || len(raw) > maxSpecFile {
		return nil
	}
	var sf specFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&sf) != nil || sf.Version != specFileVersion || sf.Build != build || sf.Key != hex.EncodeToString(key[:]) {
		return nil
	}
	return sf.Spec
}

// writeSpecFile keeps spec for key in the file at path; a failure only
// costs the next process an evaluation.
func writeSpecFile(path string, key [sha256.Size]byte, spec *schema.Spec) {
	build := buildid.Self()
	if path == "" || build == "" {
		return
	}
	raw, err := json.Marshal(specFile{Version: specFileVersion, Build: build, Key: hex.EncodeToString(key[:]), Spec: spec})
	if err != nil || len(raw) > maxSpecFile {
		return
	}
	_ = atomicfile.Write(path, raw, 0o644)
}
