// Package dirmanifest is gitpeer's signed-write format: every directory a
// cluster writes in the peering repo (clusters/<self>/ and each
// clusters/<peer>/inbox/<self>/) carries a manifest.yaml that lists each file
// of the directory with its SHA-256, a sequence number that only grows, and
// the writer's signature over all of it with its cluster key. A reader
// verifies the manifest with the key it pinned for the writer before reading
// any file, and treats a file that is not listed, or whose content does not
// match, as absent. So a writer of the repo who is not that cluster can add,
// change or delete files, but cannot make a reader act on them; and an old
// manifest from history is told apart by its lower sequence.
//
// The format is documented in docs/trust.md.
package dirmanifest

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/yamljson"
)

// FileName is the manifest's name inside the directory it covers.
const FileName = "manifest.yaml"

// APIVersion and Kind of manifest.yaml.
const (
	APIVersion = "gitpeer.io/v1alpha1"
	Kind       = "Manifest"
)

// MaxFiles bounds how many files a manifest may list; MaxSize how many bytes
// manifest.yaml may have. A hostile writer cannot make readers parse more.
const (
	MaxFiles = 4096
	MaxSize  = 1 << 20
)

// domain prefixes the signed payload so that a manifest signature is never
// valid as a nonce signature, a rotation statement or anything else.
const domain = "gitpeer-manifest-v1\n"

// Errors a reader branches on; they are wrapped with the file at fault.
var (
	// ErrMalformed: manifest.yaml does not parse or breaks a rule of the format.
	ErrMalformed = errors.New("malformed manifest")
	// ErrBadSignature: the signature does not verify with the writer's key.
	ErrBadSignature = errors.New("manifest signature does not verify")
	// ErrWrongScope: the manifest is signed for another writer or directory.
	ErrWrongScope = errors.New("manifest is for another writer or directory")
)

// File is one listed file: its path relative to the manifest's directory
// (slash-separated, clean, never manifest.yaml itself) and the lowercase hex
// SHA-256 of its content.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Manifest is the content of manifest.yaml.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ClusterID is the writer: the cluster whose key signs.
	ClusterID string `json:"clusterID"`
	// Directory is the repo directory covered, e.g. "clusters/beta/inbox/alpha".
	Directory string `json:"directory"`
	// Sequence grows with every change of the directory's content: readers
	// refuse one lower than the highest they have seen.
	Sequence uint64 `json:"sequence"`
	// Files are sorted by path, unique.
	Files []File `json:"files"`
	// Signature is the writer's signature over Payload (base64 in YAML).
	Signature []byte `json:"signature"`
}

// Payload is the exact byte string the signature covers: the domain line,
// then one line per field and one per file, sorted:
//
//	gitpeer-manifest-v1
//	cluster <clusterID>
//	directory <directory>
//	sequence <decimal>
//	file <sha256 hex> <path>
func (m *Manifest) Payload() []byte {
	var b bytes.Buffer
	b.WriteString(domain)
	fmt.Fprintf(&b, "cluster %s\ndirectory %s\nsequence %d\n", m.ClusterID, m.Directory, m.Sequence)
	for _, f := range m.Files {
		fmt.Fprintf(&b, "file %s %s\n", f.SHA256, f.Path)
	}
	return b.Bytes()
}

// Sum is the hex SHA-256 of content, as File.SHA256 holds it.
func Sum(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

// Build returns the signed manifest of dir with the given files (paths
// relative to dir) at sequence seq, and its YAML. It fails when a path
// breaks the format's rules or the key cannot sign.
func Build(key crypto.Signer, clusterID, dir string, files map[string][]byte, seq uint64) (*Manifest, []byte, error) {
	m := &Manifest{APIVersion: APIVersion, Kind: Kind, ClusterID: clusterID, Directory: dir, Sequence: seq, Files: []File{}}
	for p, data := range files {
		m.Files = append(m.Files, File{Path: p, SHA256: Sum(data)})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	sig, err := handshake.SignStatement(key, m.Payload())
	if err != nil {
		return nil, nil, fmt.Errorf("sign manifest of %s: %w", dir, err)
	}
	m.Signature = sig
	data, err := yamljson.Marshal(m) // sigs.k8s.io/yaml.Marshal's bytes, cheaper
	if err != nil {
		return nil, nil, err
	}
	return m, data, nil
}

// Parse decodes manifest.yaml (file names it in errors) and checks the
// format's rules; it does not check the signature. Errors wrap ErrMalformed.
func Parse(file string, data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: %d bytes, more than %d: %w", file, len(data), MaxSize, ErrMalformed)
	}
	var m Manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", file, err, ErrMalformed)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(m.Signature) == 0 {
		return nil, fmt.Errorf("%s: signature: missing: %w", file, ErrMalformed)
	}
	return &m, nil
}

func (m *Manifest) check() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, a...), ErrMalformed)
	}
	switch {
	case m.APIVersion != APIVersion:
		return bad("apiVersion", "is %q, want %q", m.APIVersion, APIVersion)
	case m.Kind != Kind:
		return bad("kind", "is %q, want %q", m.Kind, Kind)
	case !cleanLine(m.ClusterID) || m.ClusterID == "":
		return bad("clusterID", "%q is not a cluster ID", m.ClusterID)
	case !fs.ValidPath(m.Directory) || m.Directory == "." || !cleanLine(m.Directory):
		return bad("directory", "%q is not a repo directory", m.Directory)
	case m.Sequence == 0:
		return bad("sequence", "must be positive")
	case len(m.Files) > MaxFiles:
		return bad("files", "%d entries, more than %d", len(m.Files), MaxFiles)
	}
	for i, f := range m.Files {
		field := "files[" + strconv.Itoa(i) + "]"
		switch {
		case !fs.ValidPath(f.Path) || f.Path == "." || !cleanLine(f.Path) || f.Path == FileName:
			return bad(field+".path", "%q is not a file path inside the directory", f.Path)
		case len(f.SHA256) != 64 || strings.Trim(f.SHA256, "0123456789abcdef") != "":
			return bad(field+".sha256", "is not 64 lowercase hex digits")
		case i > 0 && m.Files[i-1].Path >= f.Path:
			return bad(field+".path", "%q is out of order or repeated", f.Path)
		}
	}
	return nil
}

// cleanLine refuses what could forge a line of the payload or hide from a
// human reading it: control characters and spaces.
func cleanLine(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// Verify checks that m was signed by pub for writer clusterID over dir.
// Errors wrap ErrWrongScope or ErrBadSignature.
func (m *Manifest) Verify(pub crypto.PublicKey, clusterID, dir string) error {
	if m.ClusterID != clusterID || m.Directory != dir {
		return fmt.Errorf("signed by %q for %q, expected %q for %q: %w", m.ClusterID, m.Directory, clusterID, dir, ErrWrongScope)
	}
	if err := handshake.VerifyStatement(pub, m.Payload(), m.Signature); err != nil {
		return fmt.Errorf("%v: %w", err, ErrBadSignature)
	}
	return nil
}

// Lookup returns the listed SHA-256 of rel, a path relative to the directory.
func (m *Manifest) Lookup(rel string) (string, bool) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= rel })
	if i < len(m.Files) && m.Files[i].Path == rel {
		return m.Files[i].SHA256, true
	}
	return "", false
}

// Covers reports whether rel is listed with exactly content.
func (m *Manifest) Covers(rel string, content []byte) bool {
	sum, ok := m.Lookup(rel)
	return ok && sum == Sum(content)
}

// SameFiles reports whether m lists exactly files (relative path → content):
// a writer whose directory did not change keeps its manifest, sequence and
// all, so a settled repo makes no commit.
func (m *Manifest) SameFiles(files map[string][]byte) bool {
	if len(m.Files) != len(files) {
		return false
	}
	for p, data := range files {
		if !m.Covers(p, data) {
			return false
		}
	}
	return true
}
