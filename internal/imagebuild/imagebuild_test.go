package imagebuild

import (
	"archive/tar"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	testVersion  = "v0.0.0-test"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// staticGitpeer builds cmd/gitpeer once per test run as make image does
// (CGO_ENABLED=0, GOOS=linux, -trimpath, -s -w, version and revision set
// with -X) and returns its path.
func staticGitpeer(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on Linux only")
	}
	if _, ok := elfMachine[runtime.GOARCH]; !ok {
		t.Skipf("no image for GOARCH %s", runtime.GOARCH)
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imagebuild-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "gitpeer")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags",
			"-s -w -X main.version="+testVersion+" -X main.revision="+testRevision, "-o", binPath, "../../cmd/gitpeer")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// testCA writes a PEM bundle of one self-signed CA certificate, standing
// in for the build machine's CA roots.
func testCA(t *testing.T) string {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "imagebuild test root CA"},
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2046, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func options(t *testing.T) Options {
	return Options{
		Binary:   staticGitpeer(t),
		Arch:     runtime.GOARCH,
		CACerts:  testCA(t),
		Created:  time.Date(2026, 7, 14, 9, 30, 0, 0, time.UTC),
		Version:  testVersion,
		Revision: testRevision,
	}
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// file is one entry of the image's flattened filesystem.
type file struct {
	hdr  *tar.Header
	data []byte
}

// files flattens img's layers as a container runtime would.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = file{h, data}
	}
}

// TestImageRunsGitpeerAsNonRoot opens the image as a runtime would: an OCI
// manifest whose config runs /usr/local/bin/gitpeer as 65532:65532, labelled
// with source, revision and version; the CA roots given and a passwd naming
// nonroot; and the binary in its layer runs and names the version and
// revision it was built with.
func TestImageRunsGitpeerAsNonRoot(t *testing.T) {
	o := options(t)
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q %v, want %s", mt, err, types.OCIManifestSchema1)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (numeric, non-root)", cfg.Config.User)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/gitpeer" || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/gitpeer] and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/gitpeer/gitpeer",
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.created":  "2026-07-14T09:30:00Z",
	} {
		if got := cfg.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}

	fs := files(t, img)
	ca, _ := os.ReadFile(o.CACerts)
	if f, ok := fs["etc/ssl/certs/ca-certificates.crt"]; !ok || string(f.data) != string(ca) {
		t.Errorf("etc/ssl/certs/ca-certificates.crt is not the CA bundle given (present: %v)", ok)
	}
	if !strings.Contains(string(fs["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("etc/passwd names no nonroot 65532:\n%s", fs["etc/passwd"].data)
	}
	if h := fs["home/nonroot"].hdr; h == nil || h.Uid != 65532 || h.Typeflag != tar.TypeDir {
		t.Errorf("home/nonroot: %+v, want a directory owned by 65532", h)
	}
	bin := fs["usr/local/bin/gitpeer"]
	if bin.hdr == nil || bin.hdr.Mode != 0o755 || bin.hdr.Uid != 0 {
		t.Fatalf("usr/local/bin/gitpeer: %+v, want mode 0755 owned by root (not writable by the user it runs as)", bin.hdr)
	}
	for p, f := range fs {
		if !f.hdr.ModTime.Equal(o.Created) {
			t.Errorf("%s: mtime %s, want the commit's time %s", p, f.hdr.ModTime, o.Created)
		}
	}

	// Run the binary the layer holds.
	extracted := filepath.Join(t.TempDir(), "gitpeer")
	if err := os.WriteFile(extracted, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(extracted, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("gitpeer version from the image's layer: %v\n%s", err, out)
	}
	var v map[string]string
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v["gitpeer"] != testVersion || v["revision"] != testRevision {
		t.Errorf("gitpeer version -o json in the image: %s", out)
	}
}

// TestImageIsReproducible: two builds from the same inputs give the same
// digest, kept by the OCI layout (and the same config in the tarball);
// another commit time gives another.
func TestImageIsReproducible(t *testing.T) {
	o := options(t)
	a, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	want := digest(t, a)
	if got := digest(t, b); got != want {
		t.Fatalf("two builds of the same inputs: %s and %s", want, got)
	}
	later := o
	later.Created = o.Created.Add(time.Second)
	c, err := Build(later)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, c) == want {
		t.Error("a build with another commit time has the same digest: the timestamps are not in the image")
	}

	// The OCI layout make image writes: one image, named, with its platform.
	dir := filepath.Join(t.TempDir(), "oci")
	for range 2 { // written again over itself: replaced, not appended to
		if err := WriteLayout(dir, b, "gitpeer:test"); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want || m.Manifests[0].Annotations[LabelRefName] != "gitpeer:test" ||
		m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Errorf("layout index: %+v, want one image %s named gitpeer:test for linux/%s", m.Manifests, want, runtime.GOARCH)
	}
	if img, err := idx.Image(want); err != nil {
		t.Error(err)
	} else if err := validateLayers(img); err != nil {
		t.Error(err)
	}

	tarPath := filepath.Join(t.TempDir(), "gitpeer.tar")
	if err := WriteTarball(tarPath, a, "gitpeer:test"); err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A docker archive keeps the config and layers, not the OCI manifest:
	// docker load names the image by its config's digest.
	wantConfig, err := a.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fromTar.ConfigName(); err != nil || got != wantConfig {
		t.Errorf("tarball image config %s %v, want %s", got, err, wantConfig)
	}
	if err := validateLayers(fromTar); err != nil {
		t.Error(err)
	}
}

// validateLayers reads every layer back and checks its digest.
func validateLayers(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		h, _, err := v1.SHA256(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if d, _ := l.Digest(); d != h {
			return errors.New("layer " + d.String() + " holds " + h.String())
		}
	}
	return nil
}

// TestPushWritesTheImageToTheRegistry pushes to a registry on loopback (an
// in-process OCI distribution registry) with the Docker config's
// credentials (none here), and pulls back the digest built.
func TestPushWritesTheImageToTheRegistry(t *testing.T) {
	img, err := Build(options(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	ref := strings.TrimPrefix(srv.URL, "http://") + "/platform/gitpeer:test"
	d, err := Push(t.Context(), img, ref, authn.DefaultKeychain)
	if err != nil {
		t.Fatal(err)
	}
	want := digest(t, img)
	if d.DigestStr() != want.String() {
		t.Errorf("Push returned %s, want %s", d, want)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, got) != want {
		t.Errorf("the registry serves %s as %s, want %s", ref, digest(t, got), want)
	}
}

// TestBuildRefusesWhatWouldNotRun: a binary that needs a C library, one for
// another architecture, a file that is no executable, and missing or empty
// CA roots fail the build, naming the file and what to do.
func TestBuildRefusesWhatWouldNotRun(t *testing.T) {
	good := options(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	notELF := filepath.Join(t.TempDir(), "gitpeer")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noCerts := filepath.Join(t.TempDir(), "empty.crt")
	if err := os.WriteFile(noCerts, []byte("# no certificates\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"a binary for another architecture", func(o *Options) { o.Arch = other }, "the image is " + other},
		{"a file that is no executable", func(o *Options) { o.Binary = notELF }, "not a Linux executable"},
		{"a missing binary", func(o *Options) { o.Binary = filepath.Join(t.TempDir(), "none") }, "gitpeer binary: open"},
		{"missing CA roots", func(o *Options) { o.CACerts = filepath.Join(t.TempDir(), "none.crt") }, "CA roots: open"},
		{"CA roots with no certificate", func(o *Options) { o.CACerts = noCerts }, "no PEM certificate"},
		{"no revision", func(o *Options) { o.Revision = "" }, "must both be set"},
		{"no commit time", func(o *Options) { o.Created = time.Time{} }, "Created is not set"},
	}
	// A dynamically linked executable: the go tool's own, when cgo built it,
	// or the system's sh.
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if isDynamic(p) {
			cases = append(cases, struct {
				name string
				edit func(*Options)
				want string
			}{"a dynamically linked binary (" + p + ")", func(o *Options) { o.Binary = p }, "build it with CGO_ENABLED=0"})
			break
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			_, err := Build(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func isDynamic(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	err = checkStatic(path, data, runtime.GOARCH)
	return err != nil && strings.Contains(err.Error(), "dynamically linked")
}
