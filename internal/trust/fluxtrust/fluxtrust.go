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

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/liqo"
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
// during a rollover, the staged one, each in both forms source-controller
// reads: an authorized_keys line (SSH signatures, SSHKey) and an armored
// OpenPGP public key (OpenPGP signatures, commitsig.OpenPGPPublicKey).
// Flux then verifies a head signed in either format, so changing the
// cluster's --signing-format never meets a key Flux does not trust.
type Keys struct {
	SSH, OpenPGP         []byte
	NextSSH, NextOpenPGP []byte // nil: no rollover in progress
}

// KeyName is the Secret's data key for id's key (next: the staged one) in
// format: <id>.sshpub and <id>-next.sshpub, or .asc for OpenPGP, the
// suffixes source-controller reads.
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

// Of is the keys of cluster id: key in force, and next when a key is
// staged (nil otherwise), in both forms.
func Of(id string, key, next crypto.Signer) (Keys, error) {
	var k Keys
	var err error
	if k.SSH, k.OpenPGP, err = forms(id, key, false); err != nil {
		return Keys{}, err
	}
	if next != nil {
		if k.NextSSH, k.NextOpenPGP, err = forms(id, next, true); err != nil {
			return Keys{}, err
		}
	}
	return k, nil
}

func forms(id string, key crypto.Signer, next bool) (ssh, pgp []byte, err error) {
	if ssh, err = Key(id, key, commitsig.FormatSSH, next); err != nil {
		return nil, nil, err
	}
	if pgp, err = Key(id, key, commitsig.FormatOpenPGP, next); err != nil {
		return nil, nil, err
	}
	return ssh, pgp, nil
}

// Files returns the Component of cluster id holding k, by path relative to
// clusters/<id>/ (flux/kustomization.yaml and flux/secret-gitpeer-signing.yaml),
// encoded as liqo.Encode does: the same keys always give the same bytes.
func Files(id string, k Keys) (map[string][]byte, error) {
	if len(bytes.TrimSpace(k.SSH)) == 0 || len(bytes.TrimSpace(k.OpenPGP)) == 0 {
		return nil, fmt.Errorf("flux verify Secret of %s: no current key", id)
	}
	data := map[string]string{}
	for _, e := range k.entries(id) {
		if len(e.value) > 0 {
			data[e.name] = value(e.value)
		}
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

type entry struct {
	name  string
	value []byte
	ssh   bool
	next  bool
}

// entries are k's values by the Secret's data key.
func (k *Keys) entries(id string) []entry {
	return []entry{
		{KeyName(id, commitsig.FormatSSH, false), k.SSH, true, false},
		{KeyName(id, commitsig.FormatOpenPGP, false), k.OpenPGP, false, false},
		{KeyName(id, commitsig.FormatSSH, true), k.NextSSH, true, true},
		{KeyName(id, commitsig.FormatOpenPGP, true), k.NextOpenPGP, false, true},
	}
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
// and returns the keys it holds. It is the reader for verify: a file that
// is not a Secret of the shape Files writes, or whose authorized_keys lines
// are not written as SSHKey writes them, is an error, never a panic. The
// OpenPGP keys are returned as they are: whose key each is, is the
// caller's check (commitsig.CheckOpenPGPKey).
func Parse(file, id string, data []byte) (Keys, error) {
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Keys{}, fmt.Errorf("%s: %w", file, err)
	}
	if len(s.Data) > 0 {
		return Keys{}, fmt.Errorf("%s: data: gitpeer writes keys in stringData only", file)
	}
	var k Keys
	fields := map[string]*[]byte{}
	var names []string
	for _, e := range k.entries(id) {
		names = append(names, e.name)
	}
	fields[names[0]], fields[names[1]], fields[names[2]], fields[names[3]] = &k.SSH, &k.OpenPGP, &k.NextSSH, &k.NextOpenPGP
	for name, v := range s.StringData {
		f, ok := fields[name]
		if !ok {
			return Keys{}, fmt.Errorf("%s: stringData.%s: not a key gitpeer writes for %s (%s)", file, name, id, strings.Join(names, ", "))
		}
		*f = []byte(v)
	}
	for _, e := range k.entries(id) {
		switch {
		case !e.next && len(e.value) == 0:
			return Keys{}, fmt.Errorf("%s: stringData.%s: missing", file, e.name)
		case e.ssh && len(e.value) > 0:
			if err := checkSSHKey(id, e.value, e.next); err != nil {
				return Keys{}, fmt.Errorf("%s: stringData.%s: %w", file, e.name, err)
			}
		}
	}
	if (k.NextSSH == nil) != (k.NextOpenPGP == nil) {
		return Keys{}, fmt.Errorf("%s: a staged key in one format only (%s, %s)", file, names[2], names[3])
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
