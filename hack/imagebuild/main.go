// Command imagebuild is what `make image` runs: it builds gitpeer's OCI
// image from a static binary with internal/imagebuild (no container
// engine), writes it as an OCI layout and a docker-archive tarball, and
// pushes it when -push names a reference. It prints the image's digest.
//
//	go run ./hack/imagebuild -binary _output/image/gitpeer-linux-amd64 -arch amd64 \
//	  -version "$(git describe --always --dirty)" -revision "$(git rev-parse HEAD)" \
//	  -created "$(git log -1 --format=%ct)" -layout _output/image/oci \
//	  -tarball _output/image/gitpeer.tar [-push registry.example.com/platform/gitpeer:tag]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gitpeer/gitpeer/internal/imagebuild"
)

func main() {
	var o imagebuild.Options
	var created, layoutDir, tarPath, ref, push string
	flag.StringVar(&o.Binary, "binary", "", "static Linux gitpeer binary (CGO_ENABLED=0 GOOS=linux)")
	flag.StringVar(&o.Arch, "arch", "amd64", "the binary's GOARCH, the image's architecture")
	flag.StringVar(&o.CACerts, "ca-certs", imagebuild.DefaultCACerts, "PEM bundle of CA roots to copy into the image")
	flag.StringVar(&o.Version, "version", "", "gitpeer's version (label org.opencontainers.image.version)")
	flag.StringVar(&o.Revision, "revision", "", "the commit built (label org.opencontainers.image.revision)")
	flag.StringVar(&o.Source, "source", imagebuild.DefaultSource, "the repository (label org.opencontainers.image.source)")
	flag.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "every timestamp in the image, in Unix seconds (the commit's time; default $SOURCE_DATE_EPOCH)")
	flag.StringVar(&layoutDir, "layout", "", "write the image as an OCI layout in this directory (replaced)")
	flag.StringVar(&tarPath, "tarball", "", "write the image as a docker-archive tarball at this path, tagged -ref")
	flag.StringVar(&ref, "ref", "gitpeer:dev", "the image's name in the layout's index and the tarball")
	flag.StringVar(&push, "push", "", "push the image to this reference (registry/repository:tag), with the Docker config's credentials")
	flag.Parse()
	if err := run(o, created, layoutDir, tarPath, ref, push); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o imagebuild.Options, created, layoutDir, tarPath, ref, push string) error {
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	secs, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: want Unix seconds (the commit's time, git log -1 --format=%%ct): %w", created, err)
	}
	o.Created = time.Unix(secs, 0)
	img, err := imagebuild.Build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if layoutDir != "" {
		if err := imagebuild.WriteLayout(layoutDir, img, ref); err != nil {
			return err
		}
		fmt.Printf("OCI layout: %s\n", layoutDir)
	}
	if tarPath != "" {
		if err := imagebuild.WriteTarball(tarPath, img, ref); err != nil {
			return err
		}
		fmt.Printf("tarball: %s (docker load -i, podman load -i)\n", tarPath)
	}
	fmt.Printf("image %s: %s\n", ref, digest)
	if push != "" {
		d, err := imagebuild.Push(context.Background(), img, push, authn.DefaultKeychain)
		if err != nil {
			return err
		}
		fmt.Printf("pushed: %s\n", d)
	}
	return nil
}
