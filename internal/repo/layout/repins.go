package layout

import (
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/yamljson"
)

// RepinsFile is clusters/<id>/repins.yaml: the keys of its peers that
// cluster <id> pinned on its admin's re-pin request (gitpeer trust), signed
// with the rest of its directory. A key that changed without a rotation
// statement is refused (KeyChanged) until each peer's admin re-pins it;
// this file is how a peer's reconciler says, in the repo and under its own
// signature, that it did, so that gitpeer verify can tell a documented key
// recovery from a key swap. Written only once the cluster re-pinned a
// peer; never applied (the kustomization does not list it).
const RepinsFile = "repins.yaml"

// RepinsKind is the kind of repins.yaml.
const RepinsKind = "Repins"

// MaxRepinsSize caps repins.yaml, in bytes: a few fingerprints per peer.
const MaxRepinsSize = 256 << 10

// Repins is repins.yaml.
type Repins struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	ClusterID  string `json:"clusterID"`
	// Peers are the re-pinned peers, sorted by ID.
	Peers []RepinnedPeer `json:"peers"`
}

// RepinnedPeer is one peer's keys pinned on an admin's re-pin request,
// oldest first, as "sha256:<hex>" fingerprints.
type RepinnedPeer struct {
	Peer         string   `json:"peer"`
	Fingerprints []string `json:"fingerprints"`
}

// Repinned reports whether r records fingerprint fp of peer's key.
func (r *Repins) Repinned(peer, fp string) bool {
	for _, p := range r.Peers {
		if p.Peer != peer {
			continue
		}
		for _, f := range p.Fingerprints {
			if f == fp {
				return true
			}
		}
	}
	return false
}

// Encode renders r as YAML with sorted keys.
func (r *Repins) Encode() ([]byte, error) { return yamljson.Marshal(r) }

var repinFingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseRepins decodes clusters/<id>/repins.yaml (file, for errors) of
// cluster id; errors are *FieldError naming the field.
func ParseRepins(file, id string, data []byte) (*Repins, error) {
	if len(data) > MaxRepinsSize {
		return nil, &FieldError{File: file, Reason: fmt.Sprintf("%d bytes, more than %d", len(data), MaxRepinsSize)}
	}
	var r Repins
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, &FieldError{File: file, Reason: err.Error()}
	}
	switch {
	case r.APIVersion != APIVersion:
		return nil, &FieldError{File: file, Field: "apiVersion", Reason: fmt.Sprintf("is %q, want %q", r.APIVersion, APIVersion)}
	case r.Kind != RepinsKind:
		return nil, &FieldError{File: file, Field: "kind", Reason: fmt.Sprintf("is %q, want %q", r.Kind, RepinsKind)}
	case r.ClusterID != id:
		return nil, &FieldError{File: file, Field: "clusterID", Reason: fmt.Sprintf("is %q but the file is under clusters/%s", r.ClusterID, id)}
	}
	for i, p := range r.Peers {
		for j, fp := range p.Fingerprints {
			if !repinFingerprintRE.MatchString(fp) {
				return nil, &FieldError{File: file, Field: fmt.Sprintf("peers[%d].fingerprints[%d]", i, j), Reason: fmt.Sprintf("%.80q is not sha256:<64 hex digits>", fp)}
			}
		}
	}
	return &r, nil
}
