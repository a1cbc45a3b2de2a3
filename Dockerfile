# gitpeer's container image: a static binary on a distroless base, running as
# uid 65532 (the base's "nonroot"), as manifests/deploy expects.
#
#   make image                          # gitpeer:dev, with docker or podman
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t registry.example.com/platform/gitpeer:$(git describe --always --dirty) .
#
# No git in the image: the reconciler fetches and pushes with go-git over
# https:// and ssh://, in process. A file:// remote (or a plain path) would
# make go-git exec git-upload-pack / git-receive-pack, which this image does
# not have: in a cluster, use an https:// or ssh:// remote.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# go.mod pins the toolchain: never let go fetch another one. No .git in the
# build context (.dockerignore): the version comes from VERSION.
ENV GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
# main.version is what `gitpeer version` prints.
RUN GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gitpeer ./cmd/gitpeer

# static: CA certificates (for https:// remotes and the API server), tzdata,
# /etc/passwd with nonroot (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian13:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="gitpeer" \
      org.opencontainers.image.description="Peer Liqo clusters through pull requests: the reconciler" \
      org.opencontainers.image.source="https://github.com/gitpeer/gitpeer" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/gitpeer /usr/local/bin/gitpeer
# Numeric, so that the kubelet can check runAsNonRoot against the image.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gitpeer"]
