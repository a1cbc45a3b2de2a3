package layout_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

const secretText = "the state directory's secret"

// hostileCheckout is a checkout in which peer y committed, into its folder of
// x's inbox, a link to a file and a link to a directory outside the repo,
// both leading to a secret; and a whole cluster tree that is a link.
func hostileCheckout(t *testing.T) (root string) {
	t.Helper()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	files := map[string]string{
		".git/config":                  "[core]\n",
		"peering.cue":                  "clusters: []\n",
		"clusters/x/cluster.yaml":      "kind: Cluster\n",
		"clusters/x/inbox/y/real.yaml": "kind: Secret\n",
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"clusters/x/inbox/y/nonce.yaml": filepath.Join(outside, "secret"),
		"clusters/x/inbox/y/state":      outside,
		"clusters/z":                    outside,
		"clusters/x/inbox/y/relative":   "../../../../../" + filepath.Base(outside) + "/secret",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Skipf("symlinks unsupported: %v", err)
		}
	}
	return root
}

func TestTreeRefusesToReadThroughSymlinks(t *testing.T) {
	tree := layout.NewTree(hostileCheckout(t))
	paths := []struct{ name, path string }{
		{"a file link in an inbox", "clusters/x/inbox/y/nonce.yaml"},
		{"a relative file link in an inbox", "clusters/x/inbox/y/relative"},
		{"a file behind a directory link in an inbox", "clusters/x/inbox/y/state/secret"},
		{"a file behind a linked cluster tree", "clusters/z/secret"},
	}
	ops := []struct {
		name string
		do   func(name string) ([]byte, error)
	}{
		{"ReadFile", tree.ReadFile},
		{"fs.ReadFile", func(name string) ([]byte, error) { return fs.ReadFile(tree, name) }},
		{"Open", func(name string) ([]byte, error) {
			f, err := tree.Open(name)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			buf := make([]byte, 100)
			n, err := f.Read(buf)
			return buf[:n], err
		}},
		{"Stat", func(name string) ([]byte, error) {
			fi, err := tree.Stat(name)
			if err != nil {
				return nil, err
			}
			return []byte(fi.Name()), nil
		}},
	}
	for _, p := range paths {
		for _, op := range ops {
			t.Run(op.name+" refuses "+p.name, func(t *testing.T) {
				data, err := op.do(p.path)
				if !errors.Is(err, layout.ErrSymlink) {
					t.Fatalf("%s(%q) = %q, %v; want ErrSymlink", op.name, p.path, data, err)
				}
				if strings.Contains(err.Error(), secretText) || strings.Contains(string(data), secretText) {
					t.Fatal("the secret leaked")
				}
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != p.path {
					t.Errorf("error %v does not name %s", err, p.path)
				}
			})
		}
	}
	t.Run("ReadDir refuses a directory link", func(t *testing.T) {
		if _, err := tree.ReadDir("clusters/x/inbox/y/state"); !errors.Is(err, layout.ErrSymlink) {
			t.Fatalf("ReadDir through a link: %v, want ErrSymlink", err)
		}
		if _, err := fs.ReadDir(tree, "clusters/z"); !errors.Is(err, layout.ErrSymlink) {
			t.Fatalf("fs.ReadDir through a link: %v, want ErrSymlink", err)
		}
	})
}

func TestTreeWalkSeesLinksButReadsNoSecret(t *testing.T) {
	tree := layout.NewTree(hostileCheckout(t))
	var seen, refused []string
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		seen = append(seen, p)
		data, err := fs.ReadFile(tree, p)
		switch {
		case errors.Is(err, layout.ErrSymlink):
			refused = append(refused, p)
		case err != nil:
			t.Errorf("read %s: %v", p, err)
		case strings.Contains(string(data), secretText):
			t.Errorf("read the secret through %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantSeen := []string{
		"clusters/x/cluster.yaml",
		"clusters/x/inbox/y/nonce.yaml",
		"clusters/x/inbox/y/real.yaml",
		"clusters/x/inbox/y/relative",
		"clusters/x/inbox/y/state",
		"clusters/z",
		"peering.cue",
	}
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("walk saw %v, want %v (links listed, .git hidden)", seen, wantSeen)
	}
	wantRefused := []string{"clusters/x/inbox/y/nonce.yaml", "clusters/x/inbox/y/relative", "clusters/x/inbox/y/state", "clusters/z"}
	if !slices.Equal(refused, wantRefused) {
		t.Errorf("refused %v, want %v", refused, wantRefused)
	}
}

func TestTreeHidesTheGitDirectoryFromListings(t *testing.T) {
	tree := layout.NewTree(hostileCheckout(t))
	entries, err := tree.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"clusters", "peering.cue"}) {
		t.Errorf("root lists %v, want clusters and peering.cue only", names)
	}
}

func TestTreeReadsOrdinaryFilesAndRefusesInvalidPaths(t *testing.T) {
	tree := layout.NewTree(hostileCheckout(t))
	data, err := tree.ReadFile("clusters/x/inbox/y/real.yaml")
	if err != nil || string(data) != "kind: Secret\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if fi, err := tree.Stat("clusters/x"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(clusters/x) = %v, %v", fi, err)
	}
	if _, err := tree.ReadFile("clusters/x"); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
	if _, err := tree.ReadFile("clusters/x/missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file gives %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"../secret", "/etc/passwd", "clusters/../..", "clusters//x", "clusters/x/"} {
		if _, err := tree.ReadFile(bad); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("ReadFile(%q) = %v, want fs.ErrInvalid", bad, err)
		}
		if _, err := tree.Open(bad); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want fs.ErrInvalid", bad, err)
		}
	}
}

func TestTreeRefusesToReadAFifo(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "clusters/x/inbox/y"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "clusters/x/inbox/y/nonce.yaml"), 0o644); err != nil {
		t.Skipf("no fifos: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := layout.NewTree(root).ReadFile("clusters/x/inbox/y/nonce.yaml")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("ReadFile of a fifo: %v, want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile blocks on a fifo a peer could make the reconciler wait on")
	}
}

// A snapshot tree skips the Lstat of directories it has seen, never of the
// file asked for: after reading every ordinary file next to the links (so
// that their directories are remembered), each link is still refused.
func TestSnapshotTreeRefusesLinksNextToWhatItRead(t *testing.T) {
	tree := layout.NewSnapshotTree(hostileCheckout(t))
	for _, p := range []string{"clusters/x/cluster.yaml", "clusters/x/inbox/y/real.yaml", "peering.cue"} {
		if _, err := tree.ReadFile(p); err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
	}
	if _, err := tree.ReadDir("clusters/x/inbox/y"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"clusters/x/inbox/y/nonce.yaml", "clusters/x/inbox/y/relative", "clusters/x/inbox/y/state/secret", "clusters/z/secret", "clusters/z"} {
		for name, do := range map[string]func(string) error{
			"ReadFile": func(p string) error { _, err := tree.ReadFile(p); return err },
			"Stat":     func(p string) error { _, err := tree.Stat(p); return err },
			"ReadDir":  func(p string) error { _, err := tree.ReadDir(p); return err },
			"Open": func(p string) error {
				f, err := tree.Open(p)
				if err == nil {
					f.Close()
				}
				return err
			},
		} {
			err := do(p)
			if !errors.Is(err, layout.ErrSymlink) {
				t.Errorf("%s(%q) = %v, want ErrSymlink", name, p, err)
				continue
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != p || strings.Contains(err.Error(), secretText) {
				t.Errorf("%s(%q): error %v does not name the path, or leaks", name, p, err)
			}
		}
	}
	if _, err := tree.ReadFile("clusters/x/inbox/y/missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file in a remembered directory: %v, want ErrNotExist", err)
	}
}
