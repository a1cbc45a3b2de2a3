package liqo_test

import (
	"errors"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// Each fuzz target feeds documents a peer could commit to an inbox. A
// decoder must never panic; it refuses with a *DecodeError; what it accepts
// has the right apiVersion and kind, and encodes to bytes that decode and
// encode to the same bytes again (so what is verified is what gets rendered).
// Structs are not compared: "ca: !!binary ''" decodes to an empty slice that
// encodes as nothing, and the same bytes either way.

func addSeeds(f *testing.F, valid []byte) {
	f.Add(valid)
	f.Add([]byte(""))
	f.Add([]byte("apiVersion: v1\nkind: Secret\n"))
	f.Add([]byte("- a\n"))
	f.Add([]byte("&a [*a, *a]\n"))
	f.Add(append(append([]byte(nil), valid...), "extra: 1\n"...))
	f.Add(append(append([]byte(nil), valid...), "---\nkind: Other\n"...))
}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *liqo.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %T %v is not a *DecodeError", err, err)
	}
}

func FuzzDecodeTenant(f *testing.F) {
	addSeeds(f, decoders["Tenant"].valid(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := liqo.DecodeTenant(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if tn.APIVersion != authv1beta1.GroupVersion.String() || tn.Kind != authv1beta1.TenantKind {
			t.Fatalf("accepted %s/%s", tn.APIVersion, tn.Kind)
		}
		once := encode(t, tn)
		again, err := liqo.DecodeTenant([]byte(once))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", once, err)
		}
		if twice := encode(t, again); twice != once {
			t.Fatalf("round trip changed\n%s\ninto\n%s", once, twice)
		}
	})
}

func FuzzDecodeIdentity(f *testing.F) {
	addSeeds(f, decoders["Identity"].valid(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := liqo.DecodeIdentity(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if id.APIVersion != authv1beta1.GroupVersion.String() || id.Kind != authv1beta1.IdentityKind {
			t.Fatalf("accepted %s/%s", id.APIVersion, id.Kind)
		}
		once := encode(t, id)
		again, err := liqo.DecodeIdentity([]byte(once))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", once, err)
		}
		if twice := encode(t, again); twice != once {
			t.Fatalf("round trip changed\n%s\ninto\n%s", once, twice)
		}
	})
}

func FuzzDecodeResourceSlice(f *testing.F) {
	addSeeds(f, decoders["ResourceSlice"].valid(f))
	f.Add([]byte("apiVersion: authentication.liqo.io/v1beta1\nkind: ResourceSlice\nspec:\n  resources: {cpu: 0.5, memory: 1e3Mi}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := liqo.DecodeResourceSlice(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if rs.APIVersion != authv1beta1.GroupVersion.String() || rs.Kind != authv1beta1.ResourceSliceKind {
			t.Fatalf("accepted %s/%s", rs.APIVersion, rs.Kind)
		}
		once := encode(t, rs)
		again, err := liqo.DecodeResourceSlice([]byte(once))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", once, err)
		}
		if twice := encode(t, again); twice != once {
			t.Fatalf("round trip changed\n%s\ninto\n%s", once, twice)
		}
	})
}

func FuzzDecodeNonceSecret(f *testing.F) {
	addSeeds(f, decoders["NonceSecret"].valid(f))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-nonce}\nstringData: {nonce: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, nonce, err := liqo.DecodeNonceSecret(data)
		if err != nil {
			checkDecodeError(t, err)
			if s != nil || nonce != "" {
				t.Fatal("a refusal returned a secret or a nonce")
			}
			return
		}
		if s.APIVersion != "v1" || s.Kind != "Secret" || s.Name != liqo.NonceSecretName {
			t.Fatalf("accepted %s/%s %s", s.APIVersion, s.Kind, s.Name)
		}
		if d, ok := s.Data[liqo.NonceSecretKey]; ok && string(d) != nonce {
			t.Fatalf("returned nonce %q, data.nonce is %q", nonce, d)
		}
		if _, ok := s.Data[liqo.NonceSecretKey]; !ok && s.StringData[liqo.NonceSecretKey] != nonce {
			t.Fatalf("returned nonce %q, stringData.nonce is %q", nonce, s.StringData[liqo.NonceSecretKey])
		}
	})
}
