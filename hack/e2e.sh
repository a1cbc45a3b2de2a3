#!/usr/bin/env bash
# make e2e: build what the end-to-end suites need (cached after the first
# run), then run them (test/e2e/, test/e2e/forge/ and internal/controller/daemon/) against real control planes. Each
# step's output is shown and also written to $LOGS/<n>-<step>.log; a failing
# step is named with its exit status, and the suites copy the logs of every
# component they ran (etcd, kube-apiserver, kube-controller-manager, Flux's
# controllers, Liqo's components, the reconcilers) into $LOGS/e2e and $LOGS/daemon when a test
# or their set-up fails. The last line says where the logs are.
#
# env (the Makefile sets them): GO (go) MAKE (make) E2E_CACHE (the binaries'
#   cache) E2E_TIMEOUT (go test -timeout; 30m) GITPEER_E2E_LOGS (the logs'
#   directory; default _output/e2e-logs, emptied first)
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}
E2E_CACHE=${E2E_CACHE:-${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}}
E2E_TIMEOUT=${E2E_TIMEOUT:-30m}
LOGS=${GITPEER_E2E_LOGS:-$PWD/_output/e2e-logs}
case $LOGS in /*) ;; *) LOGS=$PWD/$LOGS ;; esac
rm -rf "$LOGS" && mkdir -p "$LOGS" || { echo "make e2e: cannot create $LOGS" >&2; exit 1; }
START=$SECONDS
n=0

# step NAME DESCRIPTION COMMAND...: runs COMMAND, its output shown and kept.
step() {
  local name=$1 what=$2 t0=$SECONDS status
  shift 2
  n=$((n + 1))
  local log=$LOGS/$n-$name.log
  echo "== make e2e: step $n ($name): $what"
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    echo "make e2e: FAILED at step $n ($name: $what), exit $status after $((SECONDS - t0))s" >&2
    echo "make e2e: logs in $LOGS:" >&2
    (cd "$LOGS" && find . -type f -name '*.log' | sort | sed 's|^\./|  |') >&2
    exit "$status"
  fi
  echo "== make e2e: step $n ($name) done in $((SECONDS - t0))s"
}

step k8s-bins "build Kubernetes and etcd into $E2E_CACHE/bin (cold: 10-25 min; then cached)" \
  env WORK="$E2E_CACHE" bash hack/build-k8s-bins.sh kubectl
step flux-bins "build Flux's source-controller and kustomize-controller (cold: ~7 min; then cached)" \
  env WORK="$E2E_CACHE" bash hack/build-flux.sh
step gitea-bins "build Gitea v1.26.0 into $E2E_CACHE/bin (cold: ~5 min on idle cores; then cached)" \
  env WORK="$E2E_CACHE" bash hack/build-gitea.sh
step liqo-bins "build Liqo v1.2.0's controller-manager, crd-replicator, virtual-kubelet, webhook and gitpeer's Liqo driver (cold: ~6 min; then cached)" \
  env WORK="$E2E_CACHE" bash hack/build-liqo.sh
step gitpeer "build bin/gitpeer" "$MAKE" --no-print-directory build
step backend-kubernetes "the real-API-server tests of the kubernetes backend (its RBAC, FluxTrusts) and of the attack suite (the admission policy) on a control plane of their own" \
  env GO="$GO" BIN="$E2E_CACHE/bin" LIQO_CHART="$E2E_CACHE/liqo-chart" bash hack/backend-real.sh
step tests "go test -tags e2e ./test/e2e/ ./test/e2e/forge/ ./internal/controller/daemon/ (control planes, Flux, Gitea, daemons)" \
  env PATH="$E2E_CACHE/bin:$PATH" KUBE_BIN="$E2E_CACHE/bin" GITPEER_E2E_BIN="$PWD/bin/gitpeer" \
  FLUX_CRDS="$E2E_CACHE/flux-crds" LIQO_CHART="$E2E_CACHE/liqo-chart" GITEA_BIN="$E2E_CACHE/bin/gitea" GITEA_STATIC="$E2E_CACHE/gitea-static" \
  GITPEER_E2E_LOGS="$LOGS" \
  "$GO" test -tags e2e -count=1 -v -timeout "$E2E_TIMEOUT" ./test/e2e/ ./test/e2e/forge/ ./internal/controller/daemon/
# The headline figure (test/e2e's Liqo test, issue 32), again at the end.
grep -h -o 'TIME TO PEER.*' "$LOGS/$n-tests.log" 2>/dev/null | sed 's/^/make e2e: /'
echo "make e2e: all $n steps passed in $((SECONDS - START))s; step logs in $LOGS"
