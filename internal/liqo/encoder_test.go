package liqo_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// An Encoder gives exactly Encode's bytes, for objects seen before or not,
// tells objects apart that differ in one field, and fails as Encode does.
func TestEncoderEncodesAsEncode(t *testing.T) {
	objs := []any{
		liqo.Namespace("cl-consumer"),
		liqo.NonceSecret("cl-consumer", strings.Repeat("A", 86)+"=="),
		liqo.NonceSecret("cl-consumer", strings.Repeat("B", 86)+"=="),
		liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "", resources(t, "cpu", "4", "memory", "8Gi"), true, []byte("csr")),
		liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "", resources(t, "cpu", "5", "memory", "8Gi"), true, []byte("csr")),
	}
	e := liqo.NewEncoder()
	for round := range 2 {
		for i, obj := range objs {
			want := encode(t, obj)
			got, err := e.Encode(obj)
			if err != nil || string(got) != want {
				t.Errorf("round %d, object %d: Encoder gave %q, %v; Encode %q", round, i, got, err, want)
			}
			got[0] = 'X' // the caller owns its bytes: no later answer changes
		}
	}
	for name, v := range map[string]any{"a string": "Tenant", "a list": []corev1.Secret{{}}, "an unmarshallable": func() {}} {
		for range 2 {
			if out, err := e.Encode(v); err == nil || !strings.HasPrefix(err.Error(), "encode: ") {
				t.Errorf("Encode(%s) = %q, %v; want an encode error", name, out, err)
			}
		}
	}
	var none *liqo.Encoder
	if got, err := none.Encode(objs[0]); err != nil || string(got) != encode(t, objs[0]) {
		t.Errorf("nil Encoder: %q, %v", got, err)
	}
}
