package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// sealFiles is what cluster self applies after a pass (gitsync.Change.Seal):
// what the pass computed now from the merged spec and the backend's state
// (files, reconcile.Output.Files), never what the tip merely holds. A
// signature proves who made a seal, never when, so a seal must not carry
// anything the reconciler would not render now: a file of a manifest
// restored from history, an object of a peering the spec no longer holds,
// a proposal nobody merged (docs/trust.md, "A cluster applies only its
// freshest seal").
//
// Without review (reviewed false for the cluster's tree) the pass's change
// is committed to the shared branch, so the seal is its tree: files under
// clusters/<self>/, less the inbox. With review, the tip (tip) is what is
// merged, and a file is sealed
//
//   - as computed, when the tip holds it with those bytes (merged);
//   - as the cluster applies it now (applied, the newest seal; nil when
//     the clone does not hold it), when the pass changed it and the change
//     awaits review: a renewed certificate waits for its merge without the
//     object going away;
//   - not at all otherwise: an object the pass adds waits for its merge,
//     and one it no longer renders (a revoked peering, a withdrawn slice)
//     goes at once: taking access away never waits for a review.
//
// The kustomization is rendered anew for the objects sealed, and the Flux
// component (the cluster's own verify keys, which Flux cannot build the
// tree without) is always as computed.
func sealFiles(self string, files map[string][]byte, tip, applied fs.FS, reviewed bool) (map[string][]byte, error) {
	root := layout.ClusterPath(self) + "/"
	inbox := root + layout.InboxDir + "/"
	kust := root + layout.KustomizationFile
	flux := root + fluxtrust.Dir + "/"
	seal := make(map[string][]byte)
	for name, data := range files {
		if strings.HasPrefix(name, root) && !strings.HasPrefix(name, inbox) {
			seal[name] = data
		}
	}
	if !reviewed {
		return seal, nil
	}
	for name, data := range seal {
		if name == kust || strings.HasPrefix(name, flux) {
			continue
		}
		merged, err := readIfAny(tip, name)
		if err != nil {
			return nil, err
		}
		if merged != nil && bytes.Equal(merged, data) {
			continue
		}
		var now []byte
		if applied != nil {
			if now, err = readIfAny(applied, name); err != nil {
				return nil, err
			}
		}
		if now == nil {
			delete(seal, name)
		} else {
			seal[name] = now
		}
	}
	var resources []string
	for name := range seal {
		if rel, ok := strings.CutPrefix(name, root); ok && strings.HasPrefix(rel, layout.LiqoDir+"/") {
			resources = append(resources, rel)
		}
	}
	sort.Strings(resources)
	k, err := layout.Kustomization(resources)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", kust, err)
	}
	seal[kust] = k
	return seal, nil
}

// readIfAny reads name from fsys; nil, nil when there is no such file.
func readIfAny(fsys fs.FS, name string) ([]byte, error) {
	data, err := fs.ReadFile(fsys, name)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	default:
		return nil, fmt.Errorf("seal: %s: %w", name, err)
	}
}
