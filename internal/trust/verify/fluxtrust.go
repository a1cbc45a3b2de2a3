package verify

import (
	"bytes"
	"path"

	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// fluxTrust checks file (rest is its path under clusters/<id>/) of the
// Flux-only Component (package fluxtrust) against cluster id's published
// key: the key in force must be it, in both forms, a staged key must be
// one key in both forms, and the whole file must be what gitpeer renders
// for those keys, byte for byte.
func (v *verifier) fluxTrust(file, id, rest string, data []byte) {
	switch rest {
	case path.Join(fluxtrust.Dir, fluxtrust.ComponentFile):
		if want, err := fluxtrust.Component(); err == nil && !bytes.Equal(data, want) {
			v.add(file, "", reasons.FluxTrustMismatch, "is not the Component gitpeer renders (its one resource is %s)", fluxtrust.SecretFile)
		}
		return
	case path.Join(fluxtrust.Dir, fluxtrust.SecretFile):
	default:
		v.add(file, "", reasons.FluxTrustMismatch, "gitpeer writes no such file in %s/", fluxtrust.Dir)
		return
	}
	ci, ok := v.infos[id]
	if !ok {
		return // no published key to compare with: named elsewhere
	}
	pub, err := ci.Key()
	if err != nil {
		return // cluster.yaml was checked
	}
	k, err := fluxtrust.Parse(file, id, data)
	if err != nil {
		v.add(file, "", reasons.FluxTrustMismatch, "%v", err)
		return
	}
	cluster := layout.ClusterPath(id, layout.ClusterFile)
	if own, _ := fluxtrust.SSHKey(id, pub, false); !bytes.Equal(k.SSH, own) {
		v.add(file, "stringData."+fluxtrust.KeyName(id, commitsig.FormatSSH, false), reasons.FluxTrustMismatch, "is not the key %s publishes (%s): Flux would apply what another key signed", cluster, ci.Fingerprint)
		return
	}
	uid := commitsig.OpenPGPUserID(id)
	if _, _, err := commitsig.CheckOpenPGPKey(k.OpenPGP, pub, uid); err != nil {
		v.add(file, "stringData."+fluxtrust.KeyName(id, commitsig.FormatOpenPGP, false), reasons.FluxTrustMismatch, "is not the OpenPGP form of the key %s publishes (%s): %v", cluster, ci.Fingerprint, err)
		return
	}
	if k.NextSSH != nil {
		// The staged key is the cluster's own word: its two forms must be
		// one key.
		next, _, _, _, err := ssh.ParseAuthorizedKey(k.NextSSH)
		ck, ok := next.(ssh.CryptoPublicKey)
		if err != nil || !ok {
			v.add(file, "stringData."+fluxtrust.KeyName(id, commitsig.FormatSSH, true), reasons.FluxTrustMismatch, "not an Ed25519 key")
			return
		}
		if _, _, err := commitsig.CheckOpenPGPKey(k.NextOpenPGP, ck.CryptoPublicKey(), uid); err != nil {
			v.add(file, "stringData."+fluxtrust.KeyName(id, commitsig.FormatOpenPGP, true), reasons.FluxTrustMismatch, "is not the OpenPGP form of the staged key beside it: %v", err)
			return
		}
	}
	if want, err := fluxtrust.Files(id, k); err != nil || !bytes.Equal(data, want[path.Join(fluxtrust.Dir, fluxtrust.SecretFile)]) {
		v.add(file, "", reasons.FluxTrustMismatch, "is not the Secret gitpeer renders for these keys")
	}
}
