// Package fluxtrust renders what a cluster's Flux trusts for the commits it
// applies: the Secret that GitRepository gitpeer-<id>'s spec.verify reads,
// as a kustomize Component in the cluster's own tree
// (clusters/<id>/flux/), which the Flux Kustomization of manifests/flux
// includes (spec.components) and no other engine sees. The reconciler signs
// it like every file of its tree, so the keys Flux trusts next are vouched
// for by the key it trusts now: that is how a key rolls over without Flux
// ever refusing a head (docs/trust.md, "Rolling the cluster key").
package fluxtrust

import (
	"bytes"
	"crypto"
	"fmt"
	"path"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/liqo"
)

const (
	// Dir is the Component's directory in clusters/<id>/.
	Dir = "flux"
	// ComponentFile is the Component's kustomization.
	ComponentFile = "kustomization.yaml"
	// SecretFile is the verify Secret's file beside it.
	SecretFile = "secret-gitpeer-signing.yaml"
	// SecretName and Namespace name the Secret GitRepository gitpeer-<id>
	// verifies with (manifests/flux): the overlay creates it once, without
	// a name hash and only if absent, and gitpeer keeps its content.
	SecretName = "gitpeer-signing"
	Namespace  = "flux-system"
)

// managedBy is the label value on the Secret: gitpeer keeps its content.
const managedBy = "gitpeer"

// Keys is what the Secret holds for one cluster: the key in force and,
// during a rollover, the next one, each as source-controller reads it (an
// authorized_keys line for SSH signatures, an armored public key for
// OpenPGP ones).
type Keys struct {
	Format  commitsig.Format
	Current []byte
	Next    []byte // nil: no rollover in progress
}

// KeyName is the Secret's data key for id's key (next: the staged one):
// <id>.sshpub and <id>-next.sshpub, or .asc for OpenPGP, the suffixes
// source-controller reads.
func KeyName(id string, format commitsig.Format, next bool) string {
	name := id
	if next {
		name += "-next"
	}
	if format == commitsig.FormatOpenPGP {
		return name + ".asc"
	}
	return name + ".sshpub"
}

// Files returns the Component of cluster id holding k, by path relative to
// clusters/<id>/ (flux/kustomization.yaml and flux/secret-gitpeer-signing.yaml),
// encoded as liqo.Encode does: the same keys always give the same bytes.
func Files(id string, k Keys) (map[string][]byte, error) {
	if len(bytes.TrimSpace(k.Current)) == 0 {
		return nil, fmt.Errorf("flux verify Secret of %s: no current key", id)
	}
	data := map[string]string{KeyName(id, k.Format, false): value(k.Current)}
	if len(k.Next) > 0 {
		data[KeyName(id, k.Format, true)] = value(k.Next)
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: SecretName, Namespace: Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": managedBy},
			// A tree that stops carrying the Component (an engine switch, a
			// downgrade) must not take Flux's trust with it: with no Secret,
			// Flux refuses every head.
			Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"},
		},
		Type:       corev1.SecretTypeOpaque,
		StringData: data,
	}
	s, err := liqo.Encode(secret)
	if err != nil {
		return nil, fmt.Errorf("flux verify Secret of %s: %w", id, err)
	}
	c, err := Component()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{path.Join(Dir, ComponentFile): c, path.Join(Dir, SecretFile): s}, nil
}

// Component is flux/kustomization.yaml: the kustomize Component whose one
// resource is the verify Secret.
func Component() ([]byte, error) {
	return liqo.Encode(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1alpha1",
		"kind":       "Component",
		"resources":  []string{SecretFile},
	})
}

// value is a key as the Secret holds it, without surrounding white space
// (source-controller trims it too).
func value(key []byte) string {
	return strings.TrimSpace(string(key))
}

// Parse reads the Secret file data of cluster id (file names it in errors)
// and returns the keys it holds, in format. It is the reader for verify: a
// file that is not a Secret of exactly the shape Files writes is an error,
// never a panic.
func Parse(file, id string, format commitsig.Format, data []byte) (Keys, error) {
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Keys{}, fmt.Errorf("%s: %w", file, err)
	}
	k := Keys{Format: format}
	for name, v := range s.StringData {
		switch name {
		case KeyName(id, format, false):
			k.Current = []byte(v)
		case KeyName(id, format, true):
			k.Next = []byte(v)
		default:
			return Keys{}, fmt.Errorf("%s: stringData.%s: not a key gitpeer writes for %s (want %s, and %s during a rollover)",
				file, name, id, KeyName(id, format, false), KeyName(id, format, true))
		}
	}
	if len(s.Data) > 0 {
		return Keys{}, fmt.Errorf("%s: data: gitpeer writes keys in stringData only", file)
	}
	if k.Current == nil {
		return Keys{}, fmt.Errorf("%s: stringData.%s: missing", file, KeyName(id, format, false))
	}
	if format != commitsig.FormatOpenPGP {
		for _, v := range []struct {
			value []byte
			next  bool
		}{{k.Current, false}, {k.Next, true}} {
			if v.value != nil {
				if err := checkSSHKey(id, v.value, v.next); err != nil {
					return Keys{}, fmt.Errorf("%s: stringData.%s: %w", file, KeyName(id, format, v.next), err)
				}
			}
		}
	}
	return k, nil
}

// checkSSHKey checks that line is an Ed25519 key as SSHKey writes it for
// id: one authorized_keys line, with its comment.
func checkSSHKey(id string, line []byte, next bool) error {
	pub, _, _, rest, err := ssh.ParseAuthorizedKey(line)
	if err != nil {
		return fmt.Errorf("not an authorized_keys line: %w", err)
	}
	if len(rest) > 0 {
		return fmt.Errorf("more than one key")
	}
	ck, ok := pub.(ssh.CryptoPublicKey)
	if !ok {
		return fmt.Errorf("a %s key, not ssh-ed25519", pub.Type())
	}
	want, err := SSHKey(id, ck.CryptoPublicKey(), next)
	if err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(line), want) {
		return fmt.Errorf("is not written as gitpeer writes %s's key (%q)", id, want)
	}
	return nil
}

// SSHKey is cluster id's public key pub (next: the staged one) as the
// Secret holds it for SSH signatures: one authorized_keys line commented
// gitpeer-<id> (or gitpeer-<id>-next), as gitpeer init prints it.
func SSHKey(id string, pub crypto.PublicKey, next bool) ([]byte, error) {
	comment := "gitpeer-" + id
	if next {
		comment += "-next"
	}
	line, err := commitsig.AuthorizedKey(pub, comment)
	if err != nil {
		return nil, err
	}
	return []byte(strings.TrimSpace(line)), nil
}

// Key is cluster id's key (next: the staged one) as the Secret holds it
// for commits signed in format: SSHKey's line, or the armored OpenPGP
// public key (commitsig.OpenPGPPublicKey), which takes a signature by key.
func Key(id string, key crypto.Signer, format commitsig.Format, next bool) ([]byte, error) {
	if format == commitsig.FormatOpenPGP {
		return commitsig.OpenPGPPublicKey(key, commitsig.OpenPGPUserID(id))
	}
	return SSHKey(id, key.Public(), next)
}
