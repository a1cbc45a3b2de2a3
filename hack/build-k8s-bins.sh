#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager (and optionally kubectl) from the
# Go module proxy, plus etcd, into $OUT_DIR, for gitpeer's e2e suite (make e2e).
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces every staging
# module with ./staging/src/...), so we create a throw-away wrapper module that
# requires k8s.io/kubernetes vX.Y.Z and replaces each staging module with the
# published k8s.io/<name> v0.Y.Z.
#
# Cost: ~700 CPU-seconds cold (11-16 min on 2 busy cores, ~3 GB of Go build
# cache), under a minute warm, nothing when the versions are already in
# $OUT_DIR (checked first, so `make e2e` can always call this).
#
# Usage: build-k8s-bins.sh [kubectl]
#   env: K8S_VERSION (v1.34.4) ETCD_VERSION (v3.6.5) FORCE=1 (rebuild)
#        WORK (wrapper modules and logs; default
#              ${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e})
#        OUT_DIR ($WORK/bin)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.5}
WORK=${WORK:-${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}}
OUT_DIR=${OUT_DIR:-$WORK/bin}
WRAP=$WORK/kbin-$K8S_VERSION
EWRAP=$WORK/etcdbin-$ETCD_VERSION
# /usr/bin/time -v reports wall time and peak memory; not every machine has it.
TIME=${TIME:-$(command -v /usr/bin/time >/dev/null && echo "/usr/bin/time -v")}
STAGING_VERSION=v0.${K8S_VERSION#v1.}          # v1.34.4 -> v0.34.4
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)

# up_to_date: the wanted versions are already built (machines and CI caches are reused)
up_to_date() {
  [ -x "$OUT_DIR/etcd" ] && [ -x "$OUT_DIR/kube-controller-manager" ] \
    && [ "$("$OUT_DIR/kube-apiserver" --version 2>/dev/null)" = "Kubernetes $K8S_VERSION" ] \
    && "$OUT_DIR/etcd" --version 2>/dev/null | grep -q "etcd Version: ${ETCD_VERSION#v}\$" \
    && { [ "${1:-}" != kubectl ] || "$OUT_DIR/kubectl" version --client 2>/dev/null | grep -q "Client Version: $K8S_VERSION\$"; }
}
if [ -z "${FORCE:-}" ] && up_to_date "${1:-}"; then
  echo "k8s $K8S_VERSION / etcd $ETCD_VERSION already in $OUT_DIR (FORCE=1 to rebuild)"; exit 0
fi

mkdir -p "$OUT_DIR" "$WRAP" "$EWRAP" "$WORK/logs"
# Two builds at once would double the ~2 GB peak and fight over the wrapper
# modules: the second waits for the first, then finds the binaries there.
if command -v flock >/dev/null; then
  exec 9>"$WORK/.build.lock"
  if ! flock -n 9; then
    echo "another build-k8s-bins.sh is running in $WORK; waiting for it"
    flock 9
  fi
  if [ -z "${FORCE:-}" ] && up_to_date "${1:-}"; then
    echo "k8s $K8S_VERSION / etcd $ETCD_VERSION now in $OUT_DIR"; exit 0
  fi
fi
echo ">> building k8s $K8S_VERSION and etcd $ETCD_VERSION into $OUT_DIR (cold: 10-25 min; logs in $WORK/logs)"
export GOFLAGS=-mod=mod

# ---------------------------------------------------------------- kubernetes
cd "$WRAP"
if [ ! -f go.mod ]; then
  go mod init kbin >/dev/null 2>&1
  go mod download -json "k8s.io/kubernetes@$K8S_VERSION" > /dev/null
  KMOD=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
  GOVER=$(awk '/^go /{print $2; exit}' "$KMOD")
  go mod edit -go="$GOVER"
  go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
  # replace every k8s.io/<staging> => k8s.io/<staging> v0.Y.Z, but only those
  # k8s.io/kubernetes actually requires (sample-* are not published for every tag)
  for m in $(awk '/=> \.\/staging\/src\//{print $1}' "$KMOD"); do
    if grep -qE "^[[:space:]]+$m v0\.0\.0" "$KMOD"; then
      go mod edit -replace="$m=$m@$STAGING_VERSION"
    fi
  done
fi
PKGS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager"
[ "${1:-}" = kubectl ] && PKGS="$PKGS k8s.io/kubernetes/cmd/kubectl"
echo ">> go get ($K8S_VERSION)"
# pin the version: a bare `go get pkg` means @upgrade and would pull the newest k8s.io/kubernetes
$TIME go get $(for p in $PKGS; do echo "$p@$K8S_VERSION"; done) 2> "$WORK/logs/k8s-get.time" >/dev/null || { cat "$WORK/logs/k8s-get.time"; exit 1; }
LDPKG=k8s.io/component-base/version
CLPKG=k8s.io/client-go/pkg/version
LDFLAGS="-s -w"
# without these, /version and kubectl version report v0.0.0-master
for p in $LDPKG $CLPKG; do
  LDFLAGS="$LDFLAGS -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
echo ">> go build $PKGS"
$TIME go build -trimpath -ldflags "$LDFLAGS" -o "$OUT_DIR/" $PKGS 2> "$WORK/logs/k8s-build.time" \
  || { tail -50 "$WORK/logs/k8s-build.time"; exit 1; }
grep -E 'Elapsed|Maximum resident' "$WORK/logs/k8s-build.time" || true

# ---------------------------------------------------------------- etcd
# etcd's server module has a main package (server/main.go) but its go.mod uses
# replace directives too, so build it from a wrapper module as well.
cd "$EWRAP"
if [ ! -f go.mod ]; then
  go mod init etcdbin >/dev/null 2>&1
  go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
fi
echo ">> build etcd $ETCD_VERSION"
$TIME go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2> "$WORK/logs/etcd-get.time" >/dev/null || { cat "$WORK/logs/etcd-get.time"; exit 1; }
$TIME go build -trimpath -ldflags "-s -w" -o "$OUT_DIR/etcd" go.etcd.io/etcd/server/v3 2> "$WORK/logs/etcd-build.time" \
  || { tail -50 "$WORK/logs/etcd-build.time"; exit 1; }
grep -E 'Elapsed|Maximum resident' "$WORK/logs/etcd-build.time" || true

ls -la "$OUT_DIR"
"$OUT_DIR/kube-apiserver" --version
"$OUT_DIR/etcd" --version | head -1
