package main

import (
	"crypto"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// publish writes files (repo paths) into the working tree repo together
// with the manifest of clusters/<id>/ signed over what the directory then
// holds, as the reconciler would sign it: a pull request adding or rotating
// a cluster verifies. An unchanged directory keeps its manifest.
func publish(repo string, key crypto.Signer, id string, files map[string][]byte, now time.Time, log io.Writer) error {
	dir := layout.ClusterPath(id)
	m, err := dirmanifest.Reseal(layout.NewTree(repo), key, id, dir, files, now)
	if err != nil {
		return err
	}
	if m != nil {
		files[path.Join(dir, dirmanifest.FileName)] = m
	}
	for name, data := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(p, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s\n", p)
	}
	return nil
}
