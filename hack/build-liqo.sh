#!/usr/bin/env bash
# Build Liqo v1.2.0's liqo-controller-manager, crd-replicator, virtual-kubelet
# and webhook, plus gitpeer's Liqo driver (hack/liqo-driver), into $OUT_DIR for
# gitpeer's Liqo e2e test (test/e2e/liqo_test.go; make e2e-liqo-tools).
#
# Liqo's module is copied from the module cache (go mod download) into a
# writable directory under $WORK and built there with Liqo's own go.mod:
# gitpeer's go.mod cannot take the virtual-kubelet's dependencies. The driver's
# sources are copied into that copy (as ./gitpeer-liqo-driver) and built with
# the same go.mod, so it uses exactly Liqo's API types and client versions.
#
# Cost: ~5.5 min cold on 2 cores (the controller-manager ~4 min, the rest
# reuses its packages; plus the module download), seconds warm,
# nothing when the versioned outputs are already in $OUT_DIR (checked first, so
# `make e2e` can always call this). The driver is rebuilt when its sources
# change (their hash is part of the stamp).
#
# env: LIQO_VERSION (v1.2.0) FORCE=1 (rebuild)
#      WORK (${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e})
#      OUT_DIR ($WORK/bin) CHART_DIR ($WORK/liqo-chart: Liqo's chart, CRDs included)
set -euo pipefail
cd "$(dirname "$0")/.."
LIQO_VERSION=${LIQO_VERSION:-v1.2.0}
WORK=${WORK:-${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}}
OUT_DIR=${OUT_DIR:-$WORK/bin}
CHART_DIR=${CHART_DIR:-$WORK/liqo-chart}
TIME=${TIME:-$(command -v /usr/bin/time >/dev/null && echo "/usr/bin/time -v")}
STAMP=$OUT_DIR/.liqo-versions
# binaries: liqo-controller-manager liqo-crd-replicator liqo-virtual-kubelet liqo-webhook
COMPONENTS="controller-manager crd-replicator virtual-kubelet webhook"
DRIVER_SRC=$PWD/hack/liqo-driver
driver_hash=$(cd "$DRIVER_SRC" && find . -type f -name '*.go' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
want="$LIQO_VERSION driver-$driver_hash"

have_all() {
  local c
  for c in $COMPONENTS; do [ -x "$OUT_DIR/liqo-$c" ] || return 1; done
  [ -x "$OUT_DIR/gitpeer-liqo-driver" ] && [ -d "$CHART_DIR/charts/liqo-crds/crds" ]
}
if [ -z "${FORCE:-}" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && have_all; then
  echo "liqo $LIQO_VERSION and its driver already in $OUT_DIR (FORCE=1 to rebuild)"; exit 0
fi
command -v go >/dev/null || { echo "go not found"; exit 1; }
mkdir -p "$OUT_DIR" "$WORK/logs"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

src=$WORK/liqo-src-$LIQO_VERSION
if [ ! -f "$src/go.mod" ]; then
  dir=$(go mod download -json "github.com/liqotech/liqo@$LIQO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { echo "go mod download github.com/liqotech/liqo@$LIQO_VERSION failed"; exit 1; }
  rm -rf "$src.tmp" && cp -r "$dir" "$src.tmp" && chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src"
fi
rm -rf "$CHART_DIR" && cp -r "$src/deployments/liqo" "$CHART_DIR"

# build NAME PKG: one binary, its log kept in $WORK/logs/liqo-NAME-build.log
build() {
  local name=$1 pkg=$2 log=$WORK/logs/liqo-$1-build.log
  echo ">> liqo $LIQO_VERSION: build $name ($pkg)"
  (cd "$src" && nice -n 10 $TIME go build -trimpath -ldflags "-s -w" -o "$OUT_DIR/$name" "$pkg") 2> "$log" \
    || { tail -40 "$log"; echo "build of $name failed: see $log" >&2; exit 1; }
  grep -E 'Elapsed|Maximum resident' "$log" || true
}
if [ -n "${FORCE:-}" ] || [ "$(cut -d' ' -f1 "$STAMP" 2>/dev/null)" != "$LIQO_VERSION" ] || ! have_all; then
  rm -f "$STAMP"
  for c in $COMPONENTS; do
    case $c in controller-manager) pkg=./cmd/liqo-controller-manager ;; *) pkg=./cmd/$c ;; esac
    build "liqo-$c" "$pkg"
  done
fi
rm -rf "$src/gitpeer-liqo-driver" && mkdir -p "$src/gitpeer-liqo-driver"
cp "$DRIVER_SRC"/*.go "$src/gitpeer-liqo-driver/"
rm -f "$src/gitpeer-liqo-driver/"*_test.go
build gitpeer-liqo-driver ./gitpeer-liqo-driver
echo "$want" > "$STAMP"
ls -la "$OUT_DIR"/liqo-* "$OUT_DIR"/gitpeer-liqo-driver
