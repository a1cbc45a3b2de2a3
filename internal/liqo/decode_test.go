package liqo_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

// decoders wraps each Decode function so the refusal table runs over all.
var decoders = map[string]struct {
	decode func([]byte) (any, error)
	valid  func(t testing.TB) []byte
}{
	"Tenant": {
		func(b []byte) (any, error) { return liqo.DecodeTenant(b) },
		func(t testing.TB) []byte {
			return []byte(encode(t, liqo.Tenant("cl-consumer", []byte("k"), []byte("c"), []byte("s"))))
		},
	},
	"Identity": {
		func(b []byte) (any, error) { return liqo.DecodeIdentity(b) },
		func(t testing.TB) []byte {
			return []byte(encode(t, liqo.ControlPlaneIdentity("cl-consumer", "cl-provider", params)))
		},
	},
	"ResourceSlice": {
		func(b []byte) (any, error) { return liqo.DecodeResourceSlice(b) },
		func(t testing.TB) []byte {
			return []byte(encode(t, liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "", resources(t, "cpu", "2"), true, []byte("c"))))
		},
	},
	"NonceSecret": {
		func(b []byte) (any, error) { s, _, err := liqo.DecodeNonceSecret(b); return s, err },
		func(t testing.TB) []byte { return []byte(encode(t, liqo.NonceSecret("cl-consumer", "NONCE"))) },
	},
}

func TestDecodeReadsBackWhatWasRendered(t *testing.T) {
	t.Run("a Tenant", func(t *testing.T) {
		want := liqo.Tenant("cl-consumer", []byte("k"), []byte("c"), []byte("s"))
		got, err := liqo.DecodeTenant([]byte(encode(t, want)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("an Identity", func(t *testing.T) {
		want := liqo.ControlPlaneIdentity("cl-consumer", "cl-provider", params)
		got, err := liqo.DecodeIdentity([]byte(encode(t, want)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("a ResourceSlice", func(t *testing.T) {
		want := liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "default", nil, true, []byte("c"))
		got, err := liqo.DecodeResourceSlice([]byte(encode(t, want)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("a nonce secret, with its nonce", func(t *testing.T) {
		s, nonce, err := liqo.DecodeNonceSecret([]byte(encode(t, liqo.NonceSecret("cl-consumer", "NONCE"))))
		if err != nil || nonce != "NONCE" || s.Labels[liqo.LabelNonce] != "true" {
			t.Fatalf("got %+v, %q, %v", s, nonce, err)
		}
	})
	t.Run("a nonce secret written with stringData", func(t *testing.T) {
		doc := "apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-nonce}\nstringData: {nonce: NONCE}\n"
		_, nonce, err := liqo.DecodeNonceSecret([]byte(doc))
		if err != nil || nonce != "NONCE" {
			t.Fatalf("got %q, %v", nonce, err)
		}
	})
}

func TestDecodeRefusesMalformedDocuments(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(doc string) string
		field string
		says  string
	}{
		{"an empty document", func(string) string { return "" }, "", "empty document"},
		{"a document of blanks", func(string) string { return "  \n\t\n" }, "", "empty document"},
		{"a list", func(string) string { return "- a\n- b\n" }, "", "not a YAML object"},
		{"a scalar", func(string) string { return "hello\n" }, "", "not a YAML object"},
		{"broken YAML", func(d string) string { return d + "\t: [\n" }, "", ""},
		{"another apiVersion", func(d string) string { return replaceLine(d, "apiVersion: ", "apiVersion: example.com/v1") }, "apiVersion", "example.com/v1"},
		{"no apiVersion", func(d string) string { return replaceLine(d, "apiVersion: ", "") }, "apiVersion", `is ""`},
		{"another kind", func(d string) string { return replaceLine(d, "kind: ", "kind: ConfigMap") }, "kind", "ConfigMap"},
		{"an unknown top-level field", func(d string) string { return d + "extra: 1\n" }, "", `unknown field "extra"`},
		{"an unknown metadata field", func(d string) string {
			return strings.Replace(d, "metadata:\n", "metadata:\n  sneaky: 1\n", 1)
		}, "", `unknown field "metadata.sneaky"`},
		{"a key given twice, even with the same value", func(d string) string {
			return d + strings.SplitAfter(d[strings.Index(d, "kind: "):], "\n")[0]
		}, "", `"kind" already set`},
		{"a key given twice with another value", func(d string) string { return d + "kind: Other\n" }, "kind", "Other"},
		{"a second YAML document", func(d string) string { return d + "---\napiVersion: v1\nkind: ConfigMap\n" }, "", "holds 2 YAML documents, want 1"},
		{"more than MaxDocumentSize bytes", func(d string) string { return d + "# " + strings.Repeat("x", liqo.MaxDocumentSize) + "\n" }, "", "larger than 1 MiB"},
	}
	for kind, dec := range decoders {
		for _, tc := range cases {
			t.Run(kind+" refuses "+tc.name, func(t *testing.T) {
				doc := tc.edit(string(dec.valid(t)))
				obj, err := dec.decode([]byte(doc))
				var de *liqo.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("decoded %+v, %v; want a *DecodeError", obj, err)
				}
				if de.Field != tc.field {
					t.Errorf("error %q names field %q, want %q", err, de.Field, tc.field)
				}
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("error %q does not say %q", err, tc.says)
				}
				if tc.field != "" && !strings.HasPrefix(err.Error(), tc.field+": ") {
					t.Errorf("error %q does not start with its field", err)
				}
			})
		}
	}
}

func TestDecodeNonceSecretRefusesAnotherSecret(t *testing.T) {
	cases := []struct{ name, doc, field string }{
		{"a secret of another name", "apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-signed-nonce}\ndata: {nonce: Tk9OQ0U=}\n", "metadata.name"},
		{"a secret without a nonce", "apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-nonce}\ndata: {other: Tk9OQ0U=}\n", "data.nonce"},
		{"a secret whose nonce is not base64", "apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-nonce}\ndata: {nonce: \"***\"}\n", ""},
	}
	for _, tc := range cases {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			_, nonce, err := liqo.DecodeNonceSecret([]byte(tc.doc))
			var de *liqo.DecodeError
			if !errors.As(err, &de) || de.Field != tc.field {
				t.Fatalf("got nonce %q, %v; want a *DecodeError on %q", nonce, err, tc.field)
			}
		})
	}
}

// replaceLine replaces the first line starting with prefix by repl.
func replaceLine(doc, prefix, repl string) string {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = repl
			break
		}
	}
	return strings.Join(lines, "\n")
}
