package liqo

import (
	"bytes"
	"encoding/json"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
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
	return yaml.Marshal(m)
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

// decodeStrict unmarshals one YAML document into out, refusing unknown fields
// and checking apiVersion and kind, so a malformed artifact is named rather
// than half-read.
func decodeStrict(data []byte, apiVersion, kind string, out any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &DecodeError{Reason: "empty document"}
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return &DecodeError{Reason: fmt.Sprintf("not a YAML object: %v", err)}
	}
	if head.APIVersion != apiVersion {
		return &DecodeError{Field: "apiVersion", Reason: fmt.Sprintf("is %q, want %q", head.APIVersion, apiVersion)}
	}
	if head.Kind != kind {
		return &DecodeError{Field: "kind", Reason: fmt.Sprintf("is %q, want %q", head.Kind, kind)}
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return &DecodeError{Reason: err.Error()}
	}
	return nil
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
