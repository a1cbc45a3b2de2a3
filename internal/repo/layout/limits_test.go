package layout_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

func TestSizeLimitIsByWhatTheFileIs(t *testing.T) {
	for name, want := range map[string]int64{
		"clusters/alpha/cluster.yaml":                      layout.MaxClusterInfoSize,
		"clusters/alpha/status.yaml":                       layout.MaxStatusSize,
		"clusters/alpha/kustomization.yaml":                layout.MaxKustomizationSize,
		"clusters/alpha/manifest.yaml":                     dirmanifest.MaxSize,
		"clusters/alpha/inbox/beta/manifest.yaml":          dirmanifest.MaxSize,
		"clusters/alpha/inbox/beta/nonce.yaml":             layout.MaxArtifactSize,
		"clusters/alpha/inbox/beta/resourceslice-gpu.yaml": layout.MaxArtifactSize,
		"clusters/alpha/inbox/beta/cluster.yaml":           layout.MaxArtifactSize, // beta's, not a cluster.yaml
		"clusters/alpha/liqo/beta/tenant-beta.yaml":        layout.MaxArtifactSize,
		"clusters/alpha/openpgp.asc":                       layout.MaxArtifactSize,
		"peering.cue":                                      layout.MaxFileSize,
		"alpha/cluster.yaml":                               layout.MaxFileSize,
	} {
		if got := layout.SizeLimit(name); got != want {
			t.Errorf("SizeLimit(%s) = %d, want %d", name, got, want)
		}
	}
}

// hugeTree is a tree whose every file is size bytes, as its Stat says,
// and that fails the test when a file is read: a file above its cap must be
// refused on its size alone.
type hugeTree struct {
	t    *testing.T
	size int64
}

func (h hugeTree) Open(name string) (fs.File, error) {
	h.t.Errorf("%s was opened", name)
	return nil, fs.ErrPermission
}

func (h hugeTree) ReadFile(name string) ([]byte, error) {
	h.t.Errorf("%s was read", name)
	return nil, fs.ErrPermission
}

func (h hugeTree) Stat(name string) (fs.FileInfo, error) {
	fi, err := fstest.MapFS{name: {}}.Stat(name) // a regular file…
	return sized{fi, h.size}, err
}

// sized is a FileInfo with another size.
type sized struct {
	fs.FileInfo
	size int64
}

func (s sized) Size() int64 { return s.size }

func TestAFileAboveItsCapIsRefusedWithoutBeingRead(t *testing.T) {
	tree := hugeTree{t: t, size: 192 << 20}
	for _, name := range []string{"clusters/alpha/cluster.yaml", "clusters/beta/inbox/alpha/tenant.yaml", "clusters/alpha/status.yaml"} {
		_, err := fs.ReadFile(layout.Capped(tree), name)
		if !errors.Is(err, layout.ErrTooLarge) {
			t.Fatalf("%s: %v, want ErrTooLarge", name, err)
		}
		if !strings.Contains(err.Error(), "201326592 bytes, more than") {
			t.Errorf("%s: %q does not say both sizes", name, err)
		}
		if _, err := layout.Capped(tree).Open(name); !errors.Is(err, layout.ErrTooLarge) {
			t.Fatalf("open %s: %v, want ErrTooLarge", name, err)
		}
	}
	_, err := layout.ReadClusterInfo(tree, "alpha")
	var fe *layout.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, layout.ErrTooLarge) {
		t.Fatalf("ReadClusterInfo: %v, want a *FieldError wrapping ErrTooLarge", err)
	}
	if _, err := layout.ReadStatus(tree, "alpha"); !errors.Is(err, layout.ErrTooLarge) {
		t.Fatalf("ReadStatus: %v, want ErrTooLarge", err)
	}
}

func TestAFileAtItsCapIsRead(t *testing.T) {
	data := []byte(strings.Repeat("a", layout.MaxArtifactSize))
	tree := fstest.MapFS{"clusters/beta/inbox/alpha/tenant.yaml": {Data: data}}
	got, err := fs.ReadFile(layout.Capped(tree), "clusters/beta/inbox/alpha/tenant.yaml")
	if err != nil || len(got) != len(data) {
		t.Fatalf("a file of exactly its cap: %d bytes, %v", len(got), err)
	}
	tree["clusters/beta/inbox/alpha/tenant.yaml"].Data = append(data, 'a')
	if _, err := fs.ReadFile(layout.Capped(tree), "clusters/beta/inbox/alpha/tenant.yaml"); !errors.Is(err, layout.ErrTooLarge) {
		t.Fatalf("one byte more: %v, want ErrTooLarge", err)
	}
}

func TestParseClusterInfoRefusesMoreThanItsCap(t *testing.T) {
	ci := validClusterInfo(t, "alpha")
	one := ci.CA
	for len(ci.CA) <= layout.MaxClusterInfoSize {
		ci.CA += one
	}
	data, err := ci.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := layout.ParseClusterInfo("clusters/alpha/cluster.yaml", "alpha", data); !errors.Is(err, layout.ErrTooLarge) {
		t.Fatalf("a cluster.yaml of %d bytes: %v, want ErrTooLarge", len(data), err)
	}
}
