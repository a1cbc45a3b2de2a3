// Package verifytest signs peering repo checkouts in tests: it writes the
// manifest.yaml that a cluster's reconciler keeps in each directory it
// writes, so that tests of verify (and of anything reading the repo through
// a dirmanifest.View) can start from a repo every check accepts and then attack
// it as a repo writer would.
package verifytest

import (
	"crypto"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// Sign writes, at sequence seq, the manifest of every writer's directory of
// the checkout at root (each clusters/<id>/ without its inbox, each
// clusters/<to>/inbox/<from>/) whose writer has a key in keys and that holds
// files. Directories of other writers are left as they are.
func Sign(root string, keys map[string]crypto.Signer, seq uint64) error {
	clusters, err := os.ReadDir(filepath.Join(root, layout.ClustersDir))
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if !c.IsDir() {
			continue
		}
		if key, ok := keys[c.Name()]; ok {
			if err := SignDir(root, c.Name(), layout.ClusterPath(c.Name()), key, seq); err != nil {
				return err
			}
		}
		senders, _ := os.ReadDir(filepath.Join(root, layout.ClustersDir, c.Name(), layout.InboxDir))
		for _, s := range senders {
			key, ok := keys[s.Name()]
			if !s.IsDir() || !ok {
				continue
			}
			if err := SignDir(root, s.Name(), layout.ClusterPath(c.Name(), layout.InboxDir, s.Name()), key, seq); err != nil {
				return err
			}
		}
	}
	return nil
}

// SignDir writes the manifest of the repo directory dir (e.g.
// "clusters/beta/inbox/alpha") of the checkout at root, signed by writer's
// key at sequence seq, listing every file under dir but manifest.yaml (and,
// for a cluster's own directory, its inbox). A directory without files gets
// no manifest, and loses the one it had.
func SignDir(root, writer, dir string, key crypto.Signer, seq uint64) error {
	base := filepath.Join(root, filepath.FromSlash(dir))
	files := map[string][]byte{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == layout.InboxDir && path.Dir(dir) == layout.ClustersDir {
				return fs.SkipDir
			}
			return nil
		}
		if rel == dirmanifest.FileName {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	if err != nil {
		return err
	}
	file := filepath.Join(base, dirmanifest.FileName)
	if len(files) == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	_, data, err := dirmanifest.Build(key, writer, dir, files, seq)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}
