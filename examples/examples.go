// Package examples embeds the ready-made peering repos under this directory,
// so `gitpeer demo --example NAME` works from an installed binary.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed all:two-clusters all:three-clusters
var files embed.FS

// Names lists the embedded examples.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Get returns the files of example name, keyed by slash-separated path
// relative to the example's root. An unknown name is an error listing the
// known ones.
func Get(name string) (map[string][]byte, error) {
	sub, err := fs.Sub(files, name)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(sub, p)
		out[p] = data
		return err
	})
	if err != nil || len(out) == 0 {
		return nil, fmt.Errorf("unknown example %q (known: %v)", name, Names())
	}
	return out, nil
}
