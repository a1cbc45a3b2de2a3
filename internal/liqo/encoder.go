package liqo

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/gitpeer/gitpeer/internal/boundedmap"
)

// maxEncoded bounds how many encodings an Encoder remembers; when full it
// starts over empty.
const maxEncoded = 1 << 14

// Encoder is Encode with a memory: the YAML of an object is a function of
// its JSON encoding alone, so the Encoder keeps it by the SHA-256 of that
// JSON and, for an object encoded before (a reconciler renders the same
// Tenant, ResourceSlice or RBAC object at every pass), skips the
// JSON-to-YAML conversion, the dear part of Encode. Safe for concurrent
// use; the zero value is not: use NewEncoder.
type Encoder struct {
	m *boundedmap.Map[[sha256.Size]byte, []byte]
}

// NewEncoder returns an Encoder that remembers nothing yet.
func NewEncoder() *Encoder { return &Encoder{m: boundedmap.New[[sha256.Size]byte, []byte](maxEncoded)} }

// Encode returns exactly what the package's Encode returns for obj. A nil
// Encoder is Encode.
func (e *Encoder) Encode(obj any) ([]byte, error) {
	if e == nil {
		return Encode(obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	k := sha256.Sum256(raw)
	data, ok := e.m.Get(k)
	if ok {
		return bytes.Clone(data), nil // the caller owns what it gets
	}
	data, err = encodeJSON(raw)
	if err != nil {
		return nil, err
	}
	e.m.Put(k, bytes.Clone(data))
	return data, nil
}
