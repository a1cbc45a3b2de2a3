#!/usr/bin/env bash
# Times `gitpeer reconcile --once` as a process, one pass per process as a CI
# job or a CronJob runs it (issue 21): an idle pass and a working pass of one
# cluster of a converged mesh, N runs each, min/median/max of wall and CPU
# (user + system of the process and of the git processes it waits for).
#
#   hack/passbench/run.sh [DIR] [CLUSTERS] [PEERINGS] [RUNS] [CLUSTER] [CONSUMER]
#
# DIR (default /tmp/passbench) is a `gitpeer demo --clusters` dir: remote.git,
# state/<id>, checkouts/<id>. If DIR/remote.git is missing the mesh is built
# and brought to convergence first (100/1,000: several minutes). The working
# pass: a spec commit adds the peering CONSUMER (default c050, not a peer of
# c001 in the demo's mesh) consumes from CLUSTER, so CLUSTER's pass publishes a nonce; before each run the
# remote's main is reset to that commit (untimed), so every run does the same
# work. The idle pass runs on the tip as it is; at the end the script restores
# the converged spec (and one pass withdraws the nonce).
set -euo pipefail
DIR=${1:-/tmp/passbench} N=${2:-100} M=${3:-1000} RUNS=${4:-10} C=${5:-c001}
cd "$(dirname "$0")/../.."
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
go build -trimpath -o bin/passbench-gitpeer ./cmd/gitpeer
go build -o bin/passbench ./hack/passbench
if [ ! -d "$DIR/remote.git" ]; then
  bin/passbench-gitpeer demo --dir "$DIR" --clusters "$N" --peerings "$M" | tail -3
fi
R=$DIR/remote.git
pass=(bin/passbench-gitpeer reconcile --once --cluster "$C" --repo "$R" --state-dir "$DIR/state/$C" --checkout "$DIR/checkouts/$C")
echo "mesh $N/$M, cluster $C, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The warm-up run brings CLUSTER to the tip; the timed ones then commit nothing.
bin/passbench -n "$RUNS" -warmup 1 -label idle -- "${pass[@]}"
converged=$(git --git-dir "$R" rev-parse refs/heads/main)

# A spec commit, unsigned as an admin's, adding the peering $C -> consumer.
work=$DIR/work
rm -rf "$work" && git clone -q "$R" "$work"
spec=$(cd "$work" && ls peering.cue 2>/dev/null || ls *.cue | head -1)
consumer=${6:-c050}
python3 - "$work/$spec" "$C" "$consumer" <<'PY'
import re, sys
path, provider, consumer = sys.argv[1:]
s = open(path).read()
i = s.rindex("]")
s = s[:i] + '\t{consumer: "%s", provider: "%s"},\n' % (consumer, provider) + s[i:]
open(path, "w").write(s)
PY
(cd "$work" && git -c user.name=admin -c user.email=admin@example.com commit -qam "spec: $consumer consumes from $C" && git push -q origin HEAD:main)
changed=$(git --git-dir "$R" rev-parse refs/heads/main)
bin/passbench -n "$RUNS" -label working -prepare "git --git-dir '$R' update-ref refs/heads/main $changed" -- "${pass[@]}"
# Back to the converged spec: one untimed pass withdraws the nonce.
git --git-dir "$R" update-ref refs/heads/main "$converged"
"${pass[@]}" >/dev/null
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
