#!/usr/bin/env bash
# Build the Gitea server from the Go module proxy into $OUT_DIR, and copy the
# files it reads at run time (templates, options, public) into $STATIC_DIR, for
# gitpeer's pull-request e2e test (test/e2e/forge/gitea_test.go; make e2e-gitea-tools).
#
# code.gitea.io/gitea's go.mod carries `replace` directives (forks and version
# pins), which `go install mod@v` refuses. A throw-away wrapper module requires
# Gitea and copies those replace directives; its main package is Gitea's root.
# Build tags `sqlite sqlite_unlock_notify` (cgo, gcc) give the test a database
# that needs no server. Without the `bindata` tag (whose generated files are
# not in the module zip) Gitea reads templates/options/public from its
# STATIC_ROOT_PATH, hence $STATIC_DIR.
#
# Version: v1.26.0 (go 1.26.2 in its go.mod; builds with Go 1.26.8).
# Cost: see the timing printed at the end (logs in $WORK/logs); nothing when the
# version is already in $OUT_DIR (checked first, so `make e2e` can always call
# this).
#
# env: GITEA_VERSION (v1.26.0) FORCE=1 (rebuild)
#      WORK (${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e})
#      OUT_DIR ($WORK/bin) STATIC_DIR ($WORK/gitea-static)
set -euo pipefail
GITEA_VERSION=${GITEA_VERSION:-v1.26.0}
WORK=${WORK:-${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}}
OUT_DIR=${OUT_DIR:-$WORK/bin}
STATIC_DIR=${STATIC_DIR:-$WORK/gitea-static}
TIME=${TIME:-$(command -v /usr/bin/time >/dev/null && echo "/usr/bin/time -v")}
STAMP=$OUT_DIR/.gitea-version
MOD=code.gitea.io/gitea

up_to_date() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$GITEA_VERSION" ] && [ -x "$OUT_DIR/gitea" ] \
    && [ -d "$STATIC_DIR/templates" ] && [ -d "$STATIC_DIR/options" ]
}
if [ -z "${FORCE:-}" ] && up_to_date; then
  echo "gitea $GITEA_VERSION already in $OUT_DIR (FORCE=1 to rebuild)"; exit 0
fi
command -v go >/dev/null || { echo "go not found"; exit 1; }
command -v gcc >/dev/null || { echo "gcc not found: Gitea's sqlite driver needs cgo (apt-get install gcc)"; exit 1; }
mkdir -p "$OUT_DIR" "$WORK/logs"
rm -f "$STAMP"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=1

w=$WORK/giteabin-$GITEA_VERSION
mkdir -p "$w"
cd "$w"
dir=$(go mod download -json "$MOD@$GITEA_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$dir" ] || { echo "go mod download $MOD@$GITEA_VERSION failed"; exit 1; }
if [ ! -f go.mod ]; then
  go mod init wrap-gitea >/dev/null 2>&1
  go mod edit -go="$(awk '/^go /{print $2; exit}' "$dir/go.mod")" -require="$MOD@$GITEA_VERSION"
  # Copy the replace directives that name a module version (not a local path):
  # `old [v] => new v` in the printed go.mod, in a block or one-line, with any
  # trailing // comment dropped.
  go mod edit -print "$dir/go.mod" | sed 's#[[:space:]]*//.*##' | awk '
    /^replace \(/ {blk=1; next} blk && /^\)/ {blk=0; next}
    { l=$0; if (!blk) { if (l !~ /^replace /) next; sub(/^replace /, "", l) }
      n=split(l, f, " "); a=0; for (i=1;i<=n;i++) if (f[i]=="=>") a=i
      if (a==0 || n-a!=2) next
      printf "-replace=%s%s=%s@%s\n", f[1], (a==3 ? "@" f[2] : ""), f[a+1], f[a+2] }' | xargs -r go mod edit
fi
echo ">> gitea $GITEA_VERSION: go get + build (logs in $WORK/logs)"
$TIME go get "$MOD@$GITEA_VERSION" 2> "$WORK/logs/gitea-get.log" >/dev/null || { tail -40 "$WORK/logs/gitea-get.log"; exit 1; }
$TIME go build -trimpath -tags "sqlite sqlite_unlock_notify" \
  -ldflags "-s -w -X main.Version=${GITEA_VERSION#v}" -o "$OUT_DIR/gitea" "$MOD" \
  2> "$WORK/logs/gitea-build.log" || { tail -40 "$WORK/logs/gitea-build.log"; exit 1; }
grep -E 'Elapsed|Maximum resident|User time|System time' "$WORK/logs/gitea-build.log" || true

rm -rf "$STATIC_DIR"
mkdir -p "$STATIC_DIR"
cp -r "$dir/templates" "$dir/options" "$dir/public" "$STATIC_DIR/"
chmod -R u+w "$STATIC_DIR"
echo "$GITEA_VERSION" > "$STAMP"
"$OUT_DIR/gitea" --version
