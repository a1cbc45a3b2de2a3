#!/usr/bin/env bash
# Build Flux source-controller and kustomize-controller from the Go module proxy
# into $OUT_DIR, and extract their CRDs into $CRD_DIR, for gitpeer's Flux e2e
# test (test/e2e/flux_test.go; make e2e-flux-tools).
#
# Their go.mod files carry `replace .../api => ./api` (plus a few version pins),
# so `go install` refuses them. A throw-away wrapper module per controller
# requires the controller module and copies its *non-local* replace directives;
# the local ./api replace is dropped and the api version the controller requires
# is used instead.
#
# Versions: source-controller v1.9.6 (verifies SSH commit signatures: spec.verify
# with <name>.sshpub keys) and kustomize-controller v1.9.5 (the flux2 v2.9 line;
# v1.10 needs Go >= 1.27). The module proxy does not serve every version:
# source-controller v1.9.6 needs fluxcd/pkg/artifact v0.18.3, which is replaced
# by the served v0.18.1; kustomize-controller v1.9.6 needs a fluxcd/pkg/kustomize
# that is not served, hence v1.9.5. Re-check a bump with `go mod download -json mod@ver`.
#
# Cost: ~700 CPU-seconds cold (~7 min on 2 cores), under a minute warm, nothing
# when the versions are already in $OUT_DIR (checked first, so `make e2e` can
# always call this).
#
# env: FLUX_SC (v1.9.6) FLUX_KC (v1.9.5) FORCE=1 (rebuild)
#      WORK (${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e})
#      OUT_DIR ($WORK/bin) CRD_DIR ($WORK/flux-crds)
#      SC_EXTRA_REPLACES KC_EXTRA_REPLACES (space-separated old=new@version)
set -euo pipefail
FLUX_SC=${FLUX_SC:-v1.9.6}
FLUX_KC=${FLUX_KC:-v1.9.5}
WORK=${WORK:-${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}}
OUT_DIR=${OUT_DIR:-$WORK/bin}
CRD_DIR=${CRD_DIR:-$WORK/flux-crds}
TIME=${TIME:-$(command -v /usr/bin/time >/dev/null && echo "/usr/bin/time -v")}
STAMP=$OUT_DIR/.flux-versions

if [ -z "${FORCE:-}" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$FLUX_SC $FLUX_KC" ] \
   && [ -x "$OUT_DIR/source-controller" ] && [ -x "$OUT_DIR/kustomize-controller" ] \
   && ls "$CRD_DIR"/*.yaml >/dev/null 2>&1; then
  echo "flux source-controller $FLUX_SC / kustomize-controller $FLUX_KC already in $OUT_DIR (FORCE=1 to rebuild)"; exit 0
fi
command -v go >/dev/null || { echo "go not found"; exit 1; }
mkdir -p "$OUT_DIR" "$CRD_DIR" "$WORK/logs"
rm -f "$STAMP"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

build_one() { # controller version
  local c=$1 v=$2 mod=github.com/fluxcd/$1
  local w=$WORK/fluxbin-$c-$v
  mkdir -p "$w"
  (
    cd "$w"
    if [ ! -f go.mod ]; then
      go mod init "wrap-$c" >/dev/null 2>&1
      local dir gomod
      dir=$(go mod download -json "$mod@$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
      [ -n "$dir" ] || { echo "go mod download $mod@$v failed"; rm -f go.mod; exit 1; }
      gomod=$dir/go.mod
      go mod edit -go="$(awk '/^go /{print $2; exit}' "$gomod")" -require="$mod@$v"
      # copy the replace directives that name a module version (not a local
      # path): `old [v] => new v` in the printed go.mod, in a block or one-line
      go mod edit -print "$gomod" | awk '
        /^replace \(/ {blk=1; next} blk && /^\)/ {blk=0; next}
        { l=$0; if (!blk) { if (l !~ /^replace /) next; sub(/^replace /, "", l) }
          n=split(l, f, " "); a=0; for (i=1;i<=n;i++) if (f[i]=="=>") a=i
          if (a==0 || n-a!=2) next
          printf "-replace=%s%s=%s@%s\n", f[1], (a==3 ? "@" f[2] : ""), f[a+1], f[a+2] }' | xargs -r go mod edit
      for r in ${EXTRA_REPLACES:-}; do go mod edit -replace="$r"; done
      cp "$dir"/config/crd/bases/*.yaml "$CRD_DIR/"
      chmod u+w "$CRD_DIR"/*.yaml
    fi
    echo ">> $c $v: go get + build"
    $TIME go get "$mod@$v" 2> "$WORK/logs/$c-get.log" >/dev/null || { tail -40 "$WORK/logs/$c-get.log"; exit 1; }
    $TIME go build -trimpath -ldflags "-s -w" -o "$OUT_DIR/$c" "$mod" 2> "$WORK/logs/$c-build.log" \
      || { tail -40 "$WORK/logs/$c-build.log"; exit 1; }
    grep -E 'Elapsed|Maximum resident' "$WORK/logs/$c-build.log" || true
  )
}
EXTRA_REPLACES=${SC_EXTRA_REPLACES-github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1} \
  build_one source-controller "$FLUX_SC"
EXTRA_REPLACES=${KC_EXTRA_REPLACES-} build_one kustomize-controller "$FLUX_KC"
echo "$FLUX_SC $FLUX_KC" > "$STAMP"
ls -la "$OUT_DIR"/source-controller "$OUT_DIR"/kustomize-controller "$CRD_DIR"
