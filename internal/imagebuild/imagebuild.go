// Package imagebuild builds gitpeer's container image without a container
// engine, with go-containerregistry (as ko does): no base image is pulled,
// the image is two layers written here, byte for byte the same from the same
// inputs, so that two builds of one commit give one digest.
//
// The image (an OCI image manifest and config, application/vnd.oci.*):
//
//   - layer 1, the system files: /etc/passwd and /etc/group naming user and
//     group nonroot (65532) and root, the build machine's CA roots at
//     /etc/ssl/certs/ca-certificates.crt (for https:// Git hosts and API
//     servers), /home/nonroot (owned by 65532) and /tmp (1777);
//   - layer 2, the binary at /usr/local/bin/gitpeer: a static Linux
//     executable (CGO_ENABLED=0), checked before it goes in;
//   - config: user 65532:65532 (numeric, so that the kubelet can check
//     runAsNonRoot), entrypoint /usr/local/bin/gitpeer, HOME and
//     SSL_CERT_FILE, the OCI labels org.opencontainers.image.{source,
//     revision,version,created,title,description}, and every timestamp (the
//     config's, the history's, each file's mtime) set to Options.Created.
//
// There is no shell, no package manager and no git: the reconciler fetches
// and pushes with go-git in process, over https:// and ssh:// (a file://
// remote would exec git-upload-pack, which the image does not have).
package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identities inside the image; manifests/deploy's Deployment
// runs as User and Group and mounts over Tmp.
const (
	BinaryPath = "/usr/local/bin/gitpeer"
	CACertPath = "/etc/ssl/certs/ca-certificates.crt"
	Home       = "/home/nonroot"
	UID        = 65532
	GID        = 65532
	// User is the config's user, numeric: "uid:gid".
	User = "65532:65532"
)

// DefaultCACerts is where Debian and Ubuntu (package ca-certificates), and
// Alpine, keep the system's CA roots as one PEM bundle.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// DefaultSource is the repository the image's source label names.
const DefaultSource = "https://github.com/gitpeer/gitpeer"

// OCI image-spec annotation keys (github.com/opencontainers/image-spec,
// annotations.md), used as the config's labels.
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelVersion     = "org.opencontainers.image.version"
	LabelCreated     = "org.opencontainers.image.created"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	// LabelRefName names an image in an OCI layout's index.json.
	LabelRefName = "org.opencontainers.image.ref.name"
)

// Options are the inputs of Build. Everything the image holds comes from
// them: the same Options and files give the same digest.
type Options struct {
	// Binary is the path of gitpeer built for Arch: a static Linux ELF
	// executable (CGO_ENABLED=0 GOOS=linux).
	Binary string
	// Arch is the image's architecture, as GOARCH (amd64, arm64, ...).
	Arch string
	// CACerts is the path of a PEM bundle of CA certificates; empty means
	// DefaultCACerts.
	CACerts string
	// Created is every timestamp in the image: the commit's time (or
	// SOURCE_DATE_EPOCH), never the time of the build.
	Created time.Time
	// Version and Revision are gitpeer's version (git describe) and the
	// full commit hash; Source is the repository URL (DefaultSource when
	// empty). They become labels; empty Version or Revision is an error.
	Version, Revision, Source string
}

// Build assembles the image of o. Errors name the input at fault: a
// missing or dynamically linked binary, a binary for another architecture,
// a CA bundle that is missing or holds no certificate.
func Build(o Options) (v1.Image, error) {
	if o.Version == "" || o.Revision == "" {
		return nil, fmt.Errorf("image labels: version %q and revision %q must both be set (make image sets them from git)", o.Version, o.Revision)
	}
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if o.CACerts == "" {
		o.CACerts = DefaultCACerts
	}
	if o.Created.IsZero() {
		return nil, errors.New("image timestamps: Created is not set (make image uses the commit's time, or SOURCE_DATE_EPOCH)")
	}
	created := o.Created.UTC().Truncate(time.Second)

	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("gitpeer binary: %w", err)
	}
	if err := checkStatic(o.Binary, bin, o.Arch); err != nil {
		return nil, err
	}
	roots, err := readCACerts(o.CACerts)
	if err != nil {
		return nil, err
	}

	system, err := layer(created, []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: roots},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: UID, gid: GID},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	binary, err := layer(created, []entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/gitpeer", mode: 0o755, data: bin},
	})
	if err != nil {
		return nil, err
	}

	cfg := &v1.ConfigFile{
		Architecture: o.Arch,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{BinaryPath},
			WorkingDir: Home,
			Env: []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"HOME=" + Home,
				"SSL_CERT_FILE=" + CACertPath,
			},
			Labels: map[string]string{
				LabelSource:      o.Source,
				LabelRevision:    o.Revision,
				LabelVersion:     o.Version,
				LabelCreated:     created.Format(time.RFC3339),
				LabelTitle:       "gitpeer",
				LabelDescription: "Peer Liqo clusters through pull requests: the reconciler",
			},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: system, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "imagebuild: passwd, group, CA roots, /home/nonroot, /tmp", Comment: "CA roots from " + o.CACerts}},
		mutate.Addendum{Layer: binary, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "imagebuild: " + BinaryPath, Comment: "gitpeer " + o.Version}},
	)
}

// entry is one file or directory of a layer.
type entry struct {
	name     string
	mode     int64
	dir      bool
	uid, gid int
	data     []byte
}

// layer is an OCI gzip layer of entries, in name order, every mtime
// mtime and no user or group names: the same entries give the same bytes.
func layer(mtime time.Time, entries []entry) (v1.Layer, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// elfMachine maps GOARCH to the ELF machine a binary for it declares.
var elfMachine = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses what would not run in an image with no C library: a
// file that is no Linux ELF executable, one for another architecture than
// arch, one that asks for a dynamic loader (built with cgo).
func checkStatic(path string, data []byte, arch string) error {
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("image architecture %q: not one of amd64, arm64, arm, 386, ppc64le, s390x, riscv64", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("gitpeer binary %s: not a Linux executable (build it with GOOS=linux): %w", path, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("gitpeer binary %s: built for %s, the image is %s (build it with GOARCH=%s)", path, f.Machine, arch, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("gitpeer binary %s: dynamically linked (it asks for a loader), and the image has no C library: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// readCACerts reads a PEM bundle and checks that it holds at least one
// certificate Go can parse, so that an empty or wrong file fails the build
// instead of every HTTPS connection of the running image.
func readCACerts(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA roots: %w (install the ca-certificates package, or name a PEM bundle with CA_CERTS=)", err)
	}
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fmt.Errorf("CA roots %s: certificate %d: %w", path, n+1, err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("CA roots %s: no PEM certificate in it", path)
	}
	return data, nil
}

// WriteLayout writes img as the only image of a fresh OCI image layout
// (github.com/opencontainers/image-spec, image-layout.md) in dir, replacing
// what dir held, its index entry annotated with refName (a tag such as
// "gitpeer:6854991"; none when empty) and img's platform.
func WriteLayout(dir string, img v1.Image, refName string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	opts := []layout.Option{layout.WithPlatform(v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture})}
	if refName != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{LabelRefName: refName}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img as a docker-archive tarball at path, for `docker
// load -i`, `podman load -i` or `kind load image-archive`, tagged ref.
func WriteTarball(path string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(path, tag, img)
}

// Push writes img to the registry as ref (registry/repository:tag), with
// the credentials of keychain (authn.DefaultKeychain: the Docker config at
// $DOCKER_CONFIG or ~/.docker/config.json, its credential helpers, else
// anonymous). A registry on loopback (localhost:5000, 127.0.0.1:5000) is
// spoken to over plain HTTP, any other over HTTPS.
func Push(ctx context.Context, img v1.Image, ref string, keychain authn.Keychain) (name.Digest, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("IMAGE %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(keychain), remote.WithContext(ctx)); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}
