// Package yamljson renders Go values as YAML exactly as sigs.k8s.io/yaml
// does (through their JSON), without its dear step: sigs.k8s.io/yaml
// turns the JSON into YAML by parsing the JSON text with the YAML parser
// (yaml.v2) and marshalling what it decoded. Marshal builds the value that
// parse would decode straight from the JSON, and hands it to the same
// yaml.v2 marshaller, so the bytes are the same; it falls back to
// sigs.k8s.io/yaml whenever the YAML parser could decode the JSON
// differently or refuse it.
package yamljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// maxDepth is the deepest nesting Marshal converts itself, far below the
// YAML parser's limit (10,000 levels, where it fails): deeper values go
// through sigs.k8s.io/yaml, which gives its error.
const maxDepth = 1000

// Marshal is sigs.k8s.io/yaml.Marshal(obj): the same bytes, or the same
// error.
func Marshal(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // the number's text, as the YAML parser would read it
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if tree, ok := convert(v, 0); ok {
			return yamlv2.Marshal(tree)
		}
	}
	return yaml.JSONToYAML(j)
}

// MarshalDecoded is Marshal(v) for v as encoding/json decodes into an
// interface{} (maps of string keys, slices, strings, float64, bool, nil),
// without writing v's JSON and reading it back: a number is the text JSON
// writes for the float64. Anything else goes through Marshal.
func MarshalDecoded(v any) ([]byte, error) {
	if tree, ok := convertDecoded(v, 0); ok {
		return yamlv2.Marshal(tree)
	}
	return Marshal(v)
}

// convertDecoded is convert for a value encoding/json decoded without
// UseNumber.
func convertDecoded(v any, depth int) (out any, ok bool) {
	switch v := v.(type) {
	case float64:
		j, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		return number(string(j))
	case []any:
		if depth > maxDepth {
			return nil, false
		}
		s := make([]any, len(v))
		for i, e := range v {
			if s[i], ok = convertDecoded(e, depth+1); !ok {
				return nil, false
			}
		}
		return s, true
	case map[string]any:
		if depth > maxDepth {
			return nil, false
		}
		m := make(map[any]any, len(v))
		for k, e := range v {
			if k == "<<" || !printable(k) {
				return nil, false
			}
			if m[k], ok = convertDecoded(e, depth+1); !ok {
				return nil, false
			}
		}
		return m, true
	case json.Number:
		return nil, false // not what encoding/json decodes by default
	}
	return convert(v, depth)
}

// convert is what yaml.v2 decodes from the JSON text of v into an
// interface{}: mappings as map[interface{}]interface{}, sequences as
// []interface{}, strings as they are, numbers resolved as YAML resolves
// plain scalars. ok is false when the YAML parser might read the text
// otherwise: a string with a character it refuses, a merge key ("<<"),
// nesting near its depth limit.
func convert(v any, depth int) (out any, ok bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, printable(v)
	case json.Number:
		return number(string(v))
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			if s[i], ok = convert(e, depth+1); !ok {
				return nil, false
			}
		}
		return s, true
	case map[string]any:
		m := make(map[any]any, len(v))
		for k, e := range v {
			if k == "<<" || !printable(k) {
				return nil, false
			}
			if m[k], ok = convert(e, depth+1); !ok {
				return nil, false
			}
		}
		return m, true
	}
	return nil, false
}

// number is what YAML resolves the plain scalar t (a JSON number) to.
func number(t string) (any, bool) {
	// A JSON integer has no leading zero, sign '+', base prefix or '_',
	// which YAML's integer rule would read otherwise.
	if i, err := strconv.ParseInt(t, 10, 64); err == nil && t != "-0" && (len(t) == 1 || t[0] != '0') {
		if i == int64(int(i)) {
			return int(i), true
		}
		return i, true
	}
	var out any
	if err := yamlv2.Unmarshal([]byte(t), &out); err != nil {
		return nil, false
	}
	return out, true
}

// printable reports whether the YAML parser reads s, inside a JSON
// string, as it is: every character is one YAML allows in a stream, and
// none is a byte order mark.
func printable(s string) bool {
	for _, r := range s {
		switch {
		case r >= 0x20 && r <= 0x7E, r == 0x09, r == 0x0A, r == 0x0D, r == 0x85:
		case r >= 0xA0 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}
