package verify

import (
	"bytes"
	"path"

	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/fluxtrust"
	"github.com/gitpeer/gitpeer/layout"
)

// ReasonFluxTrustMismatch: clusters/<id>/flux/, the Secret the cluster's
// Flux verifies its applied head with, is not what gitpeer renders: it
// trusts a key other than the one cluster.yaml publishes (and, during a
// rollover, one staged key), or holds a file gitpeer does not write. Flux
// would then apply commits of a key nobody reviewed.
const ReasonFluxTrustMismatch = "FluxTrustMismatch"

// fluxTrust checks file (rest is its path under clusters/<id>/) of the
// Flux-only Component (package fluxtrust) against cluster id's published
// key: the key in force must be it, in the format the cluster signs in (its
// openpgp.asc when it publishes one), and the whole file must be what
// gitpeer renders for those keys, byte for byte.
func (v *verifier) fluxTrust(file, id, rest string, data []byte) {
	switch rest {
	case path.Join(fluxtrust.Dir, fluxtrust.ComponentFile):
		if want, err := fluxtrust.Component(); err == nil && !bytes.Equal(data, want) {
			v.add(file, "", ReasonFluxTrustMismatch, "is not the Component gitpeer renders (its one resource is %s)", fluxtrust.SecretFile)
		}
		return
	case path.Join(fluxtrust.Dir, fluxtrust.SecretFile):
	default:
		v.add(file, "", ReasonFluxTrustMismatch, "gitpeer writes no such file in %s/", fluxtrust.Dir)
		return
	}
	ci, ok := v.infos[id]
	if !ok {
		return // no published key to compare with: named elsewhere
	}
	format, current := commitsig.FormatSSH, []byte(nil)
	if asc, ok := v.read(layout.ClusterPath(id, layout.OpenPGPKeyFile)); ok {
		format, current = commitsig.FormatOpenPGP, asc
	} else if pub, err := ci.Key(); err == nil {
		current, _ = fluxtrust.SSHKey(id, pub, false)
	}
	k, err := fluxtrust.Parse(file, id, format, data)
	if err != nil {
		v.add(file, "", ReasonFluxTrustMismatch, "%v", err)
		return
	}
	if !bytes.Equal(bytes.TrimSpace(k.Current), bytes.TrimSpace(current)) {
		v.add(file, "stringData."+fluxtrust.KeyName(id, format, false), ReasonFluxTrustMismatch,
			"is not the key %s publishes (%s): Flux would apply what another key signed", layout.ClusterPath(id, layout.ClusterFile), ci.Fingerprint)
		return
	}
	if want, err := fluxtrust.Files(id, k); err != nil || !bytes.Equal(data, want[path.Join(fluxtrust.Dir, fluxtrust.SecretFile)]) {
		v.add(file, "", ReasonFluxTrustMismatch, "is not the Secret gitpeer renders for these keys")
	}
}
