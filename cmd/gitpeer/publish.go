package main

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/manifest"
)

// publish writes files (repo paths) into the working tree repo and signs the
// manifest of clusters/<id>/ over what the directory then holds, as the
// reconciler would: a pull request adding or rotating a cluster verifies.
// An unchanged directory keeps its manifest.
func publish(repo string, key crypto.Signer, id string, files map[string][]byte, now time.Time, log io.Writer) error {
	for name, data := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s\n", p)
	}
	dir := layout.ClusterPath(id)
	tree := layout.NewTree(repo)
	content := map[string][]byte{}
	err := fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, dir+"/")
		switch {
		case d.IsDir() && rel == layout.InboxDir:
			return fs.SkipDir // others write there
		case d.IsDir() || rel == manifest.FileName:
			return nil
		}
		data, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		content[rel] = data
		return nil
	})
	if err != nil {
		return err
	}
	file := path.Join(dir, manifest.FileName)
	seq := uint64(max(now.Unix(), 1))
	if data, err := fs.ReadFile(tree, file); err == nil {
		if old, err := manifest.Parse(file, data); err == nil {
			if old.Verify(key.Public(), id, dir) == nil && old.SameFiles(content) {
				return nil
			}
			seq = max(seq, old.Sequence+1)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_, data, err := manifest.Build(key, id, dir, content, seq)
	if err != nil {
		return err
	}
	p := filepath.Join(repo, filepath.FromSlash(file))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s\n", p)
	return nil
}
