package liqo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/yamljson"
)

// Encode renders a Kubernetes object as YAML with sorted keys, dropping the
// fields the API types serialise although nobody set them
// (metadata.creationTimestamp: null, an empty spec or status), so the same object always
// gives the same bytes and a manifest carries only what its author meant.
func Encode(obj any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return encodeJSON(raw)
}

// encodeJSON is the YAML Encode gives for an object whose JSON is raw: a
// function of raw alone.
func encodeJSON(raw []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		if meta["creationTimestamp"] == nil {
			delete(meta, "creationTimestamp")
		}
	}
	for _, k := range []string{"spec", "status"} {
		if v, ok := m[k].(map[string]any); ok && len(v) == 0 {
			delete(m, k)
		}
	}
	return yamljson.MarshalDecoded(m) // sigs.k8s.io/yaml.Marshal's bytes, cheaper
}

// DecodeError is a problem with a YAML artifact: the field at fault (a JSON
// path such as "spec.signature", or "" for the whole document) and why.
type DecodeError struct {
	Field  string
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// MaxDocumentSize bounds an artifact, in bytes. A Tenant or an Identity is a
// few KiB, and the Kubernetes API server refuses objects much over 1 MiB
// (etcd's request limit), so a larger file is never a real artifact; the
// bound keeps a hostile one from costing the YAML parser.
const MaxDocumentSize = 1 << 20

// decodeStrict unmarshals one YAML document into out, refusing unknown and
// duplicate fields (named by their JSON path, matched case-sensitively as the
// Kubernetes API server does) and checking apiVersion and kind, so a
// malformed artifact is named rather than half-read.
func decodeStrict(data []byte, apiVersion, kind string, out any) error {
	j, err := cachedJSON(data, apiVersion, kind)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, out)
	if err != nil {
		return &DecodeError{Reason: err.Error()}
	}
	if len(strict) > 0 {
		return &DecodeError{Reason: errors.Join(strict...).Error()}
	}
	return nil
}

// toJSON is the first half of decodeStrict: the checks of the YAML and its
// conversion to JSON, a function of data, apiVersion and kind alone.
func toJSON(data []byte, apiVersion, kind string) ([]byte, error) {
	if len(data) > MaxDocumentSize {
		return nil, &DecodeError{Reason: fmt.Sprintf("document is larger than %d MiB (%d bytes): not a handshake artifact", MaxDocumentSize>>20, len(data))}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &DecodeError{Reason: "empty document"}
	}
	// The YAML-to-JSON step reads only the first document; kustomize would
	// apply them all.
	if n := countDocuments(data); n > 1 {
		return nil, &DecodeError{Reason: fmt.Sprintf("holds %d YAML documents, want 1", n)}
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, &DecodeError{Reason: fmt.Sprintf("not a YAML object: %v", err)}
	}
	if head.APIVersion != apiVersion {
		return nil, &DecodeError{Field: "apiVersion", Reason: fmt.Sprintf("is %q, want %q", head.APIVersion, apiVersion)}
	}
	if head.Kind != kind {
		return nil, &DecodeError{Field: "kind", Reason: fmt.Sprintf("is %q, want %q", head.Kind, kind)}
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &DecodeError{Reason: err.Error()}
	}
	return j, nil
}

// countDocuments counts the non-empty YAML documents in data; it returns 1
// for data that does not parse, leaving the error to the decoder.
func countDocuments(data []byte) int {
	d := yamlv3.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var doc yamlv3.Node
		if err := d.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return n
			}
			return 1
		}
		if len(doc.Content) > 0 && doc.Content[0].Tag != "!!null" {
			n++
		}
	}
}

// DecodeTenant parses a Tenant (authentication.liqo.io/v1beta1). Errors are
// *DecodeError; semantic checks are the caller's.
func DecodeTenant(data []byte) (*authv1beta1.Tenant, error) {
	var t authv1beta1.Tenant
	if err := decodeStrict(data, authv1beta1.GroupVersion.String(), authv1beta1.TenantKind, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DecodeIdentity parses an Identity (authentication.liqo.io/v1beta1). Errors
// are *DecodeError; semantic checks are the caller's.
func DecodeIdentity(data []byte) (*authv1beta1.Identity, error) {
	var id authv1beta1.Identity
	if err := decodeStrict(data, authv1beta1.GroupVersion.String(), authv1beta1.IdentityKind, &id); err != nil {
		return nil, err
	}
	return &id, nil
}

// DecodeNonceSecret parses a nonce Secret (v1 Secret "liqo-nonce") and returns
// it with the nonce string of data.nonce. Errors are *DecodeError.
func DecodeNonceSecret(data []byte) (*corev1.Secret, string, error) {
	var s corev1.Secret
	if err := decodeStrict(data, "v1", "Secret", &s); err != nil {
		return nil, "", err
	}
	if s.Name != NonceSecretName {
		return nil, "", &DecodeError{Field: "metadata.name", Reason: fmt.Sprintf("is %q, want %q", s.Name, NonceSecretName)}
	}
	nonce, ok := s.Data[NonceSecretKey]
	if !ok {
		if sd, ok := s.StringData[NonceSecretKey]; ok {
			return &s, sd, nil
		}
		return nil, "", &DecodeError{Field: "data.nonce", Reason: "missing"}
	}
	return &s, string(nonce), nil
}
