package layout

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// APIVersion is the version of the repo's own kinds.
const APIVersion = "gitpeer.io/v1alpha1"

// ClusterInfo is clusters/<id>/cluster.yaml: the public identity a cluster
// publishes once, through review. It holds nothing secret.
type ClusterInfo struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ClusterID is Liqo's cluster ID.
	ClusterID string `json:"clusterID"`
	// PublicKey is the cluster's Ed25519 key, PEM "PUBLIC KEY" (PKIX): the key
	// its Tenants must carry and sign with.
	PublicKey string `json:"publicKey"`
	// Fingerprint is "sha256:<hex>" of the PKIX DER of PublicKey, for humans
	// and for pinning in the spec.
	Fingerprint string `json:"fingerprint"`
	// APIServer is the https URL consumers reach this cluster's API server at.
	APIServer string `json:"apiServer"`
	// CA is the PEM bundle that signs this cluster's client certificates and
	// serves its API server: consumers trust exactly this.
	CA string `json:"ca"`
	// Rotation, when present, is the previous key's statement that this
	// cluster.yaml (key, API server and CA) succeeds it: peers that pinned the
	// previous key accept the change without an admin re-pinning.
	Rotation *Rotation `json:"rotation,omitempty"`
}

// ClusterKind is the kind of cluster.yaml.
const ClusterKind = "Cluster"

// FieldError names a file, the field at fault and why.
type FieldError struct {
	File   string
	Field  string
	Reason string
	// Err is the error behind Reason when there is one (reading the file
	// failed: ErrSymlink, fs.ErrInvalid, ...), for errors.Is.
	Err error
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Reason
	}
	return e.File + ": " + e.Field + ": " + e.Reason
}

// ErrNotPublished means a cluster's cluster.yaml is not in the repo yet.
var ErrNotPublished = errors.New("cluster not published")

// Encode renders c as YAML (sorted keys).
func (c *ClusterInfo) Encode() ([]byte, error) {
	return yaml.Marshal(c)
}

// ParseClusterInfo decodes and checks a cluster.yaml: known fields only, the
// cluster ID the file is filed under, a parseable public key whose fingerprint
// matches, an https API server URL and a PEM CA bundle. Errors are *FieldError.
func ParseClusterInfo(file, id string, data []byte) (*ClusterInfo, error) {
	if len(data) > MaxClusterInfoSize {
		return nil, &FieldError{File: file, Reason: fmt.Sprintf("%d bytes, more than %d", len(data), MaxClusterInfoSize), Err: ErrTooLarge}
	}
	var c ClusterInfo
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, &FieldError{File: file, Reason: err.Error()}
	}
	fe := func(field, format string, a ...any) error {
		return &FieldError{File: file, Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case c.APIVersion != APIVersion:
		return nil, fe("apiVersion", "is %q, want %q", c.APIVersion, APIVersion)
	case c.Kind != ClusterKind:
		return nil, fe("kind", "is %q, want %q", c.Kind, ClusterKind)
	case c.ClusterID != id:
		return nil, fe("clusterID", "is %q but the file is under clusters/%s", c.ClusterID, id)
	}
	pub, _, err := handshake.ParsePublicKey([]byte(c.PublicKey))
	if err != nil {
		return nil, fe("publicKey", "%v", err)
	}
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		return nil, fe("publicKey", "%v", err)
	}
	if c.Fingerprint != fp {
		return nil, fe("fingerprint", "is %q, but the public key's is %q", c.Fingerprint, fp)
	}
	if err := CheckAPIServer(c.APIServer); err != nil {
		return nil, fe("apiServer", "%v", err)
	}
	if err := CheckCABundle([]byte(c.CA)); err != nil {
		return nil, fe("ca", "%v", err)
	}
	return &c, nil
}

// ReadClusterInfo reads clusters/<id>/cluster.yaml from a repo tree. A missing
// file wraps ErrNotPublished; other errors are *FieldError (one above
// MaxClusterInfoSize wraps ErrTooLarge, and is not read).
func ReadClusterInfo(tree fs.FS, id string) (*ClusterInfo, error) {
	return (*ClusterInfoCache)(nil).Read(tree, id)
}

// PublishFiles are the files `gitpeer init` writes for a cluster into a
// repo tree: its cluster.yaml and, unless one exists, an empty
// kustomization.yaml (so Flux never falls back to applying every file under
// the path, the unverified inbox included).
func PublishFiles(tree fs.FS, info *ClusterInfo) (map[string][]byte, error) {
	data, err := info.Encode()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{ClusterPath(info.ClusterID, ClusterFile): data}
	kfile := ClusterPath(info.ClusterID, KustomizationFile)
	if _, err := fs.Stat(tree, kfile); errors.Is(err, fs.ErrNotExist) {
		k, err := Kustomization(nil)
		if err != nil {
			return nil, err
		}
		files[kfile] = k
	}
	return files, nil
}

// MaxClusterIDLength keeps "liqo-tenant-<id>" within a 63-character label.
const MaxClusterIDLength = 51

// CheckClusterID checks a cluster ID is a DNS-1123 label of at most 51
// characters, as Liqo requires of the IDs it puts in names and labels.
func CheckClusterID(id string) error {
	if len(id) > MaxClusterIDLength {
		return fmt.Errorf("%q is %d characters; at most %d, so that liqo-tenant-<id> fits 63", id, len(id), MaxClusterIDLength)
	}
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("%q is not a DNS-1123 label: %s", id, errs[0])
	}
	return nil
}

// checkDirID refuses to read file of a cluster whose ID is not a cluster
// ID: ClusterPath cleans the path, so "../beta" would read beta's file.
func checkDirID(id, file string) error {
	if err := CheckClusterID(id); err != nil {
		return &FieldError{File: ClustersDir + "/" + id + "/" + file, Reason: "cluster ID " + err.Error(), Err: fs.ErrInvalid}
	}
	return nil
}

// CheckAPIServer checks an API server URL is https with a host.
func CheckAPIServer(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an https URL", s)
	}
	return nil
}

// NewClusterInfo builds the cluster.yaml of a cluster from its public facts:
// its public key (PEM PKIX and fingerprint), API server URL and CA bundle.
func NewClusterInfo(clusterID string, pub crypto.PublicKey, apiServer string, caPEM []byte) (*ClusterInfo, error) {
	pubPEM, err := handshake.MarshalPublicKey(pub)
	if err != nil {
		return nil, err
	}
	fp, err := handshake.Fingerprint(pub)
	if err != nil {
		return nil, err
	}
	return &ClusterInfo{
		APIVersion:  APIVersion,
		Kind:        ClusterKind,
		ClusterID:   clusterID,
		PublicKey:   string(pubPEM),
		Fingerprint: fp,
		APIServer:   apiServer,
		CA:          string(caPEM),
	}, nil
}

// CheckCABundle requires one or more PEM certificates that parse, with
// nothing but whitespace around and between them: consumers trust exactly
// this bundle, and pem.Decode alone would skip text (or a broken block) to
// reach the next certificate, where the handshake's stricter reader refuses
// the bundle only later, at the Identity.
func CheckCABundle(bundle []byte) error {
	rest, n := bundle, 0
	for {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) == 0 {
			break
		}
		if !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			return fmt.Errorf("has text before certificate %d; want only PEM certificates", n+1)
		}
		block, r := pem.Decode(rest)
		// A second BEGIN inside what pem.Decode consumed means it skipped a
		// malformed block.
		if block == nil || bytes.Count(rest[:len(rest)-len(r)], []byte("-----BEGIN ")) != 1 {
			return fmt.Errorf("has a malformed PEM block %d", n+1)
		}
		rest = r
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a %s block; want only certificates", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d does not parse: %v", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate")
	}
	return nil
}

// Key is the parsed PublicKey.
func (c *ClusterInfo) Key() (crypto.PublicKey, error) {
	pub, _, err := handshake.ParsePublicKey([]byte(c.PublicKey))
	return pub, err
}
