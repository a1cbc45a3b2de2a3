package verify

import (
	"errors"
	"io/fs"
	"path"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// writerDir is a directory one cluster writes and signs.
type writerDir struct{ writer, dir string }

// writerDirs lists every writer's directory of the tree in the trees of the
// clusters whose ID keep accepts: each clusters/<id>/ (its inbox aside) and
// each clusters/<id>/inbox/<from>/.
func writerDirs(tree fs.FS, keep func(id string) bool) []writerDir {
	var out []writerDir
	clusters, _ := fs.ReadDir(tree, layout.ClustersDir)
	for _, c := range clusters {
		if !c.IsDir() || !keep(c.Name()) {
			continue
		}
		out = append(out, writerDir{c.Name(), layout.ClusterPath(c.Name())})
		senders, _ := fs.ReadDir(tree, layout.ClusterPath(c.Name(), layout.InboxDir))
		for _, s := range senders {
			if s.IsDir() {
				out = append(out, writerDir{s.Name(), layout.ClusterPath(c.Name(), layout.InboxDir, s.Name())})
			}
		}
	}
	return out
}

// manifests checks every writer's directory against its manifest, verified
// with the key the writer publishes (and the spec pins): each file not
// listed with its content, and each listed file someone deleted, is a
// finding. Without require, directories with no manifest are skipped.
func (v *verifier) manifests(require bool) {
	trust := dirmanifest.Keys{}
	for id, ci := range v.infos {
		if pub, _, err := handshake.ParsePublicKey([]byte(ci.PublicKey)); err == nil {
			trust[id] = pub
		}
	}
	dirs := writerDirs(v.tree, v.scope.has)
	v.parallel(len(dirs), func(sub *verifier, i int) { sub.manifest(dirs[i], trust, require) })
}

// manifest checks one writer's directory (see manifests). Each has a view
// of its own: a view's state is per directory, and one view would verify
// one manifest at a time.
func (v *verifier) manifest(wd writerDir, trust dirmanifest.Keys, require bool) {
	file := path.Join(wd.dir, dirmanifest.FileName)
	if _, err := fs.Stat(v.tree, file); errors.Is(err, fs.ErrNotExist) && !require {
		return
	}
	view := dirmanifest.NewCachedView(v.tree, trust, v.verified)
	m, verified := view.Verified(wd.writer, wd.dir)
	if !verified {
		v.manifestScope(wd, file)
	}
	for _, ig := range view.Audit(wd.writer, wd.dir) {
		if ig.Reason == reasons.UnsignedChange {
			v.add(ig.Path, "", ig.Reason, "not listed with this content in %s: not signed by %s, so no reader acts on it", file, wd.writer)
			continue
		}
		v.add(ig.Path, "", ig.Reason, "not vouched for: %s", ig.Detail)
	}
	if !verified {
		return
	}
	for _, f := range m.Files {
		p := path.Join(wd.dir, f.Path)
		if _, err := fs.Stat(v.tree, p); errors.Is(err, fs.ErrNotExist) {
			v.add(p, "", reasons.UnsignedChange, "listed in %s, signed by %s, but missing: deleted without %s's signature", file, wd.writer, wd.writer)
		}
	}
}

// manifestScope reports a manifest that another writer signed, or that is
// filed under another directory: a cluster writing where it may not.
func (v *verifier) manifestScope(wd writerDir, file string) {
	data, err := fs.ReadFile(v.tree, file)
	if err != nil {
		return
	}
	m, err := dirmanifest.Parse(file, data)
	if err != nil {
		return
	}
	if m.ClusterID != wd.writer || m.Directory != wd.dir {
		v.add(file, "clusterID", reasons.OwnershipViolation, "signed for %s's %s, but %s is written only by %s", m.ClusterID, m.Directory, wd.dir, wd.writer)
	}
}
