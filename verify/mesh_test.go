package verify_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/backend/file"
	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/pins"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
	"github.com/gitpeer/gitpeer/verify"
)

// benchNow is the clock of the benchmark mesh: its certificates are checked
// at the time they were made.
var benchNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// verifyMeshSpec peers n clusters m times: cluster i consumes from the m/n
// clusters after it (mod n).
func verifyMeshSpec(n, m int) string {
	var b strings.Builder
	b.WriteString("clusters: [\n")
	for i := range n {
		fmt.Fprintf(&b, "\t{id: \"c%04d\"},\n", i)
	}
	b.WriteString("]\npeerings: [\n")
	for i := range n {
		for j := 1; j <= m/n; j++ {
			fmt.Fprintf(&b, "\t{consumer: \"c%04d\", provider: \"c%04d\"},\n", i, (i+j)%n)
		}
	}
	b.WriteString("]\n")
	return b.String()
}

// convergedMesh builds, in dir, the checkout of a mesh of n clusters and m
// peerings as the reconcilers leave it once every handshake is done: each
// cluster's passes (file backends, providers first) in rounds until a round
// changes nothing, every round committed with git (unsigned commits; the
// files carry the reconcilers' signed manifests). root, when set, is a
// directory to keep it in and reuse (its size in a marker file); building
// a 200/2,000 mesh takes minutes.
func convergedMesh(b testing.TB, root string, n, m int) (dir string, spec *schema.Spec) {
	b.Helper()
	src := verifyMeshSpec(n, m)
	spec, err := schema.Parse("peering.cue", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	if root == "" {
		root = b.TempDir()
	}
	marker := filepath.Join(root, "mesh")
	want := fmt.Sprintf("%dx%d\n", n, m)
	dir = filepath.Join(root, "repo")
	if got, err := os.ReadFile(marker); err == nil && string(got) == want {
		return dir, spec
	}
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	git := func(args ...string) {
		b.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	writeMesh(b, dir, map[string][]byte{"peering.cue": []byte(src)}, nil)
	tree := layout.NewTree(dir)
	order := make([]string, n)
	backends := map[string]*file.Backend{}
	stores := map[string]*pins.Store{}
	caches := map[string]*reconcile.Cache{}
	for i := range n {
		id := fmt.Sprintf("c%04d", i)
		order[i] = id
		be, _, err := file.Init(filepath.Join(root, "state", id), file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".example:6443", Now: benchNow})
		if err != nil {
			b.Fatal(err)
		}
		be.Now = func() time.Time { return benchNow }
		backends[id] = be
		caches[id] = reconcile.NewCache()
		info, err := be.ClusterInfo()
		if err != nil {
			b.Fatal(err)
		}
		files, err := layout.PublishFiles(tree, info)
		if err != nil {
			b.Fatal(err)
		}
		writeMesh(b, dir, files, nil)
	}
	for round := 0; ; round++ {
		if round == 10 {
			b.Fatal("no convergence in 10 rounds")
		}
		changed := false
		for _, id := range order {
			out, err := reconcile.Pass(context.Background(), reconcile.Input{Spec: spec, Tree: tree, Backend: backends[id], Now: benchNow, Pins: stores[id], Cache: caches[id]})
			if err != nil {
				b.Fatal(err)
			}
			plan, err := reconcile.Diff(tree, id, out.Files)
			if err != nil {
				b.Fatal(err)
			}
			stores[id] = out.Pins
			if !plan.Empty() {
				changed = true
				writeMesh(b, dir, plan.Writes, plan.Deletes)
			}
		}
		if !changed {
			break
		}
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("round %d", round))
	}
	if err := os.WriteFile(marker, []byte(want), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, spec
}

// writeMesh applies writes and deletes (repo paths) to the checkout dir.
func writeMesh(b testing.TB, dir string, writes map[string][]byte, deletes []string) {
	b.Helper()
	for _, p := range deletes {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			b.Fatal(err)
		}
	}
	for p, data := range writes {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
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
		if p.Name() == reconcile.SharedDir {
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
		{rendered, "", verify.ReasonRenderedMismatch},
		{rendered, "", verify.ReasonUnsignedChange},
		{planted, "", verify.ReasonPrivateMaterial},
		{planted, "", verify.ReasonUnsignedChange},
		{kust, "resources[", verify.ReasonRemoteBase},
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
