#!/usr/bin/env bash
# Stop the processes started by start-cluster.sh NAME, by their recorded PIDs
# only (never by name: other clusters and suites may run the same binaries).
# Usage: stop-cluster.sh NAME [--wipe]
#   env: ROOT as for start-cluster.sh. --wipe also removes $ROOT/NAME.
# Not -e: one component failing to stop must not leave the others running.
set -uo pipefail
NAME=${1:?usage: stop-cluster.sh NAME [--wipe]}
CACHE=${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}
ROOT=${ROOT:-$CACHE/clusters}
DIR=$ROOT/$NAME
# Controller manager first, etcd last: each component's clients go before it.
for c in kube-controller-manager kube-apiserver etcd; do
  f=$DIR/$c.pid
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  # A PID file may outlive its process and the PID be reused: signal it only
  # if it still runs the component it was recorded for.
  if kill -0 "$pid" 2>/dev/null && ps -o args= -p "$pid" 2>/dev/null | grep -q "$c"; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$f"
done
[ "${2:-}" = --wipe ] && rm -rf "$DIR"
echo "stopped $NAME"
