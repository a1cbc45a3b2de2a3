#!/usr/bin/env bash
# Compares two gitpeer binaries' `reconcile --once` as processes, back to
# back on the same mesh: blocks of RUNS idle and working passes, alternating
# binaries, twice (a binary's first run after the other's re-evaluates the
# spec, which is kept per build: each block has a warm-up run).
#
#   hack/passbench/compare.sh DIR BASE NEW [RUNS] [CLUSTER]
#
# DIR is a mesh run.sh built and used once (its work/ clone holds the spec
# commit of the working pass); BASE and NEW are gitpeer binaries.
set -euo pipefail
DIR=$1 BASE=$2 NEW=$3 RUNS=${4:-5} C=${5:-c001}
cd "$(dirname "$0")/../.."
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
go build -o bin/passbench ./hack/passbench
R=$DIR/remote.git
converged=$(git --git-dir "$R" rev-parse refs/heads/main)
changed=$(git -C "$DIR/work" rev-parse HEAD)
for round in 1 2; do
  for bin in "$BASE" "$NEW"; do
    pass=("$bin" reconcile --once --cluster "$C" --repo "$R" --state-dir "$DIR/state/$C" --checkout "$DIR/checkouts/$C")
    echo "== $bin, round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
    bin/passbench -n "$RUNS" -warmup 1 -label idle -- "${pass[@]}"
    bin/passbench -n "$RUNS" -warmup 1 -label working -prepare "git --git-dir '$R' update-ref refs/heads/main $changed" -- "${pass[@]}"
    git --git-dir "$R" update-ref refs/heads/main "$converged"
    "${pass[@]}" >/dev/null
  done
done
