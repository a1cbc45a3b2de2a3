package dirmanifest

import (
	"crypto"
	"errors"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Reseal returns the manifest.yaml that signs the writer's directory dir of
// tree once writes (repo paths → content) are applied, for tools that
// publish into a cluster's directory outside a reconciler pass (gitpeer init,
// rotate-key). It returns nil when the manifest in tree, signed by key,
// already lists exactly that content. The sequence is at least now's Unix
// second and above the existing manifest's, signed by whichever key. The
// inbox under dir is other writers' and not covered.
func Reseal(tree fs.FS, key crypto.Signer, writer, dir string, writes map[string][]byte, now time.Time) ([]byte, error) {
	content := map[string][]byte{}
	err := fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, dir+"/")
		switch {
		case d.IsDir() && rel == "inbox" && writer == path.Base(dir):
			return fs.SkipDir
		case d.IsDir() || rel == FileName:
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
		return nil, err
	}
	for p, data := range writes {
		if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
			content[rel] = data
		}
	}
	file := path.Join(dir, FileName)
	seq := uint64(max(now.Unix(), 1))
	if data, err := fs.ReadFile(tree, file); err == nil {
		if old, err := Parse(file, data); err == nil {
			if old.Verify(key.Public(), writer, dir) == nil && old.SameFiles(content) {
				return nil, nil
			}
			seq = max(seq, old.Sequence+1)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	_, data, err := Build(key, writer, dir, content, seq)
	return data, err
}
