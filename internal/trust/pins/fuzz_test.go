package pins_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

// FuzzPinsParse feeds pin stores as a damaged state directory or an edited
// Secret could hold them. Parse must never panic and must refuse with
// ErrMalformed; whatever it accepts encodes, clones and re-parses to the
// same bytes.
func FuzzPinsParse(f *testing.F) {
	data, err := store().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nclusterID: alpha\n"))
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\npeers:\n  beta: null\n"))
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\npeers:\n  beta:\n    nonce:\n      epoch: 3\n      expires: 2026-01-01T00:00:00+01:00\n      issued: [3, 1, 2, 2]\n"))
	f.Add([]byte("apiVersion: gitpeer.io/v1alpha1\nkind: PinStore\nown: {a: 18446744073709551615}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := pins.Parse("pins.yaml", data)
		if err != nil {
			if !errors.Is(err, pins.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		enc, err := s.Encode()
		if err != nil {
			t.Fatalf("an accepted store does not encode: %v", err)
		}
		back, err := pins.Parse("pins.yaml", enc)
		if err != nil {
			t.Fatalf("an encoded store does not parse: %v\n%s", err, enc)
		}
		again, err := back.Encode()
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encode is not stable (%v):\n%s\nwant\n%s", err, again, enc)
		}
		c, err := s.Clone().Encode()
		if err != nil || !bytes.Equal(c, enc) {
			t.Fatalf("clone differs (%v):\n%s\nwant\n%s", err, c, enc)
		}
	})
}
