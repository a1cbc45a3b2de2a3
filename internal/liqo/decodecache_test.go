package liqo_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// Decoding the same bytes again (answered from the decode cache) gives an
// equal object of the caller's own, and a document decoded as one kind is
// still refused as any other.
func TestDecodeAgainGivesAFreshEqualObject(t *testing.T) {
	for kind, dec := range decoders {
		doc := dec.valid(t)
		first, err := dec.decode(doc)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		second, err := dec.decode(doc)
		if err != nil {
			t.Fatalf("%s again: %v", kind, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Errorf("%s: decoded %+v, then %+v", kind, first, second)
		}
		if reflect.ValueOf(first).Pointer() == reflect.ValueOf(second).Pointer() {
			t.Errorf("%s: two decodings share one object", kind)
		}
		for other, odec := range decoders {
			if other == kind {
				continue
			}
			var de *liqo.DecodeError
			if obj, err := odec.decode(doc); !errors.As(err, &de) {
				t.Errorf("a %s decoded as %s: %+v, %v", kind, other, obj, err)
			}
		}
	}
	doc := decoders["Tenant"].valid(t)
	tn, err := liqo.DecodeTenant(doc)
	if err != nil {
		t.Fatal(err)
	}
	tn.Spec.ClusterID = "cl-mallory" // the caller's to change: the next decoding does not see it
	again, err := liqo.DecodeTenant(doc)
	if err != nil || again.Spec.ClusterID != "cl-consumer" {
		t.Fatalf("decoded again: %+v, %v", again, err)
	}
}

// A document whose YAML converts but whose fields do not decode strictly
// is refused every time, not only the first.
func TestDecodeRefusesAnUnknownFieldEveryTime(t *testing.T) {
	doc := append(decoders["Identity"].valid(t), "extra: 1\n"...)
	for i := range 3 {
		if id, err := liqo.DecodeIdentity(doc); err == nil {
			t.Fatalf("decoding %d accepted %+v", i, id)
		}
	}
}
