package verify

import (
	"path"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// tombstone reports whether p, the manifest.yaml of the inbox directory
// clusters/<cluster>/inbox/<from>/, holding data, is a tombstone that
// from signed with the key it publishes: the signed withdrawal a writer
// leaves in an inbox once a peering is revoked (docs/trust.md, "Withdrawals
// are signed"). It is not an artifact, so it is no finding between
// clusters that no longer peer.
func (v *verifier) tombstone(p, cluster, from string, data []byte) bool {
	ci, ok := v.infos[from]
	if !ok || path.Base(p) != dirmanifest.FileName {
		return false
	}
	pub, _, err := handshake.ParsePublicKey([]byte(ci.PublicKey))
	if err != nil {
		return false
	}
	m, err := dirmanifest.Parse(p, data)
	if err != nil || !m.Tombstone() {
		return false
	}
	return m.Verify(pub, from, layout.ClusterPath(cluster, layout.InboxDir, from)) == nil
}
