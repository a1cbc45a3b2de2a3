package yamljson

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"sigs.k8s.io/yaml"
)

// same fails t unless Marshal(v) gives what sigs.k8s.io/yaml.Marshal(v)
// gives: the same bytes or the same error.
func same(t *testing.T, v any) {
	t.Helper()
	got, gerr := Marshal(v)
	want, werr := yaml.Marshal(v)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || string(got) != string(want) {
		t.Fatalf("Marshal(%#v):\n%s (%v)\nsigs.k8s.io/yaml:\n%s (%v)", v, got, gerr, want, werr)
	}
}

func TestMarshalIsSigsYAMLMarshal(t *testing.T) {
	type inner struct {
		A string            `json:"a"`
		B []byte            `json:"b,omitempty"`
		C map[string]string `json:"c,omitempty"`
		D *int              `json:"d"`
	}
	one := 1
	for _, v := range []any{
		nil, true, "", "plain", "yes", "no", "~", "null", "0x1F", "017", "1e3", "2026-11-26", "12:30", "<<", "- a", "a: b", "#c",
		"multi\nline\n", " lead", "trail ", "tab\there", "quote\"s", `back\slash`, "html <&>", "é ü ∑ 😀", "\u2028\u2029",
		"ctl\x01\x7f\u0085\u00a0\ufeff\ufffe", string([]byte{0xff, 0xfe}), "a very long string " + string(make([]byte, 0)) + "that goes on and on past eighty columns of text so that an emitter might fold it somewhere",
		0, 1, -1, 3.5, -0.0, 1e21, 1e-7, math.MaxInt64, uint64(math.MaxUint64), float32(0.1), 1 << 53, json.Number("017"),
		[]any{}, map[string]any{}, []any{nil, 1, "x", []any{}, map[string]any{"k": "v"}},
		map[string]any{"<<": "merge"}, map[string]any{"b": 1, "a": 2, "10": 3, "9": 4, "a10": 5, "a9": 6, "": 7, "x\ty": 8, "\x00": 9},
		inner{A: "x", B: []byte("private"), C: map[string]string{"z": "1", "y": "true"}, D: &one},
		[]inner{{}, {A: "-"}}, map[string]any{"nan": math.NaN()}, func() {},
	} {
		same(t, v)
	}
	for _, n := range []int{999, 1000, 1001, 1002, 9999, 10000, 10001, 10002} {
		var deep any = "x"
		for range n {
			deep = []any{deep}
		}
		same(t, deep)
	}
}

// sameDecoded fails t unless MarshalDecoded(v) gives what Marshal(v)
// gives, for v as encoding/json decodes.
func sameDecoded(t *testing.T, v any) {
	t.Helper()
	got, gerr := MarshalDecoded(v)
	want, werr := yaml.Marshal(v)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || string(got) != string(want) {
		t.Fatalf("MarshalDecoded(%#v):\n%s (%v)\nsigs.k8s.io/yaml:\n%s (%v)", v, got, gerr, want, werr)
	}
}

func TestMarshalDecodedIsMarshal(t *testing.T) {
	for _, j := range []string{`{"a":1,"b":1.5,"c":-0,"d":1e21,"e":123456789012345678901,"f":1e-7,"g":[0.1,2,null,"s",true]}`,
		`{"metadata":{"name":"x","labels":{"<<":"m"}},"spec":{}}`, `"\u0001"`, `{"k":"\ufeff"}`, `[[[[1]]]]`, `{}`} {
		var v any
		if err := json.Unmarshal([]byte(j), &v); err != nil {
			t.Fatal(err)
		}
		sameDecoded(t, v)
	}
	var deep any = 1.0
	for range 1005 {
		deep = map[string]any{"a": deep}
	}
	sameDecoded(t, deep)
}

func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"x",null,true,{"<<":2}]`, `"\u0001"`, `{"k":"v\u2028"}`, `1e400`, `-0`, `{"a":{"b":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, j []byte) {
		var v any
		if json.Unmarshal(j, &v) != nil {
			return
		}
		same(t, v)
		sameDecoded(t, v)
		var n any
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber()
		if dec.Decode(&n) == nil {
			same(t, n)
		}
	})
}
