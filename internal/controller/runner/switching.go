package runner

import (
	"context"
	"crypto"
	"errors"
	"io/fs"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// switching is a cluster's backend as it will be once a key switch that
// waits for review is merged: its staged key (next) stands as the cluster
// key, and the key in force (prev) as the one the switch replaces. A pass
// computes the switch's proposal with it (the new cluster.yaml with the
// rotation statement prev signs, every manifest signed by next), while the
// backend itself, and the commits and seals the Repo signs, stay on prev
// until the proposal is merged: the backend acts only on what the cluster
// applies (docs/gitops.md, "Review branches").
type switching struct {
	backend.Backend
	next *backend.NextKey
	prev crypto.Signer
}

// Signer is the staged key.
func (s switching) Signer() crypto.Signer { return s.next.Signer }

// ClusterInfo is the cluster.yaml the switch publishes: the staged key,
// and the staged API server when one was given.
func (s switching) ClusterInfo() (*layout.ClusterInfo, error) {
	ci, err := s.Backend.ClusterInfo()
	if err != nil {
		return nil, err
	}
	pem, err := handshake.MarshalPublicKey(s.next.Signer.Public())
	if err != nil {
		return nil, err
	}
	fp, err := handshake.Fingerprint(s.next.Signer.Public())
	if err != nil {
		return nil, err
	}
	out := *ci
	out.PublicKey, out.Fingerprint, out.Rotation = string(pem), fp, nil
	if s.next.APIServer != "" {
		out.APIServer = s.next.APIServer
	}
	return &out, nil
}

// PreviousKey is the key in force, which the switch replaces.
func (s switching) PreviousKey(context.Context) (crypto.Signer, error) { return s.prev, nil }

// errSwitchUnderReview: a switch is never promoted from its proposal.
var errSwitchUnderReview = errors.New("the key switch waits for its proposal to be merged")

// PromoteNextKey refuses: the switch is promoted once merged.
func (s switching) PromoteNextKey(context.Context) (crypto.Signer, error) {
	return nil, errSwitchUnderReview
}

var _ backend.Backend = switching{}

// switchMerged reports whether tree (the shared branch's tip) publishes
// cluster id's staged key next in its cluster.yaml, with a rotation
// statement signed by cur, the key in force: the switch proposed for
// review was merged.
func switchMerged(tree fs.FS, id string, next, cur crypto.PublicKey) bool {
	ci, err := layout.ReadClusterInfo(tree, id)
	if err != nil {
		return false
	}
	fp, err := handshake.Fingerprint(next)
	if err != nil || ci.Fingerprint != fp {
		return false
	}
	was, err := handshake.Fingerprint(cur)
	return err == nil && ci.VerifyRotation(was) == nil
}
