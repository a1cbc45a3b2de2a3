package verify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/test/meshbench"
)

// benchNow is the clock of the benchmark mesh: its certificates are checked
// at the time they were made.
var benchNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// convergedMesh is the checkout of a mesh of n clusters and m peerings as
// the reconcilers leave it once every handshake is done, every round
// committed (meshbench). root, when set, is a directory to keep it in and
// reuse: building a 200/2,000 mesh takes minutes.
func convergedMesh(b testing.TB, root string, n, m int) (dir string, spec *schema.Spec) {
	b.Helper()
	mesh := meshbench.Build(b, n, m, benchNow, meshbench.Options{Root: root, Commit: true})
	return mesh.Repo, mesh.Spec
}

// The checks run in parallel across clusters, files and peerings: a file
// tampered with in one cluster of many is still named, with every finding
// a run on one goroutine gives, in the same order.
func TestATamperedFileInOneOfManyClustersIsNamed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	if testing.Short() {
		t.Skip("converges a 12-cluster mesh")
	}
	dir, spec := convergedMesh(t, "", 12, 36)
	opts := verify.Options{Now: benchNow, RequireManifests: true}
	if findings := verify.CheckTree(layout.NewSnapshotTree(dir), spec, opts); len(findings) != 0 {
		t.Fatalf("findings in a converged mesh:\n%s", list(findings))
	}

	// A rendered object of c0007 edited, a private key planted in c0002's
	// inbox from c0003, a remote base in c0010's kustomization.
	peers, err := os.ReadDir(filepath.Join(dir, "clusters", "c0007", "liqo"))
	if err != nil {
		t.Fatal(err)
	}
	var rendered string
	for _, p := range peers {
		if p.Name() == render.SharedDir {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, "clusters", "c0007", "liqo", p.Name()))
		if err != nil || len(files) == 0 {
			t.Fatalf("liqo/%s: %v", p.Name(), err)
		}
		rendered = "clusters/c0007/liqo/" + p.Name() + "/" + files[0].Name()
		break
	}
	appendTo(t, filepath.Join(dir, filepath.FromSlash(rendered)), "# edited\n")
	planted := "clusters/c0002/inbox/c0003/planted.yaml"
	writeFile(t, filepath.Join(dir, filepath.FromSlash(planted)), privateKeyPEM(t))
	kust := "clusters/c0010/kustomization.yaml"
	appendTo(t, filepath.Join(dir, filepath.FromSlash(kust)), "- https://example.com/evil\n")

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	serial := verify.CheckTree(layout.NewSnapshotTree(dir), spec, opts)
	for _, want := range []struct{ file, field, reason string }{
		{rendered, "", reasons.RenderedMismatch},
		{rendered, "", reasons.UnsignedChange},
		{planted, "", reasons.PrivateMaterial},
		{planted, "", reasons.UnsignedChange},
		{kust, "resources[", reasons.RemoteBase},
	} {
		found := false
		for _, f := range serial {
			if f.File == want.file && strings.HasPrefix(f.Field, want.field) && f.Reason == want.reason {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s finding for %s; findings:\n%s", want.reason, want.file, list(serial))
		}
	}
	for _, procs := range []int{2, 4, 8} {
		runtime.GOMAXPROCS(procs)
		for range 2 {
			if got := verify.CheckTree(layout.NewSnapshotTree(dir), spec, opts); !reflect.DeepEqual(got, serial) {
				t.Fatalf("GOMAXPROCS=%d: findings differ from a run on one goroutine:\n%s\nwant:\n%s", procs, list(got), list(serial))
			}
		}
	}
}
