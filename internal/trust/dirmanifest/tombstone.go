package dirmanifest

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// A tombstone is the manifest a writer leaves in a directory it withdrew
// (a peering revoked, say): an ordinary signed manifest that lists no
// files, at a sequence above every one the writer signed for the directory
// before. It is not an artifact: a reader reads a tombstoned directory as
// empty, and records its sequence like any other. What it adds over deleting
// the directory is that the withdrawal itself is signed: a repo writer who
// restores the directory from history restores a manifest below the
// tombstone's sequence, which a reader that saw the tombstone refuses
// (ManifestRolledBack), and verify's history check finds.
//
// The format is Manifest's; see docs/trust.md, "Withdrawals are signed".

// Tombstone reports whether m lists no files: the directory was withdrawn.
func (m *Manifest) Tombstone() bool { return len(m.Files) == 0 }

// BuildTombstone returns the signed tombstone of dir at sequence seq and
// its YAML: Build with no files.
func BuildTombstone(key crypto.Signer, clusterID, dir string, seq uint64) (*Manifest, []byte, error) {
	return Build(key, clusterID, dir, nil, seq)
}

// ErrMissing: the directory holds no manifest.yaml.
var ErrMissing = errors.New("no manifest")

// ReadVerified reads dir's manifest.yaml from tree (the repo as it is, not
// a View) and checks that writer signed it for dir with pub. It is for
// records a reader keeps whatever it reads (the sequence of a tombstone,
// the sequence of its own manifest found in the repo), not for reading
// files. Errors wrap ErrMissing, ErrMalformed, ErrWrongScope or
// ErrBadSignature, or the tree's error.
func ReadVerified(tree fs.FS, pub crypto.PublicKey, writer, dir string) (*Manifest, []byte, error) {
	file := path.Join(dir, FileName)
	data, err := fs.ReadFile(tree, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", file, ErrMissing)
	}
	if err != nil {
		return nil, nil, err
	}
	m, err := Parse(file, data)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Verify(pub, writer, dir); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return m, data, nil
}
