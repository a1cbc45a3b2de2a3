#!/usr/bin/env bash
# A step of make e2e: the kubernetes backend's tests that need a real
# kube-apiserver (GITPEER_TEST_KUBECONFIG: TestRealCluster, as the
# ServiceAccount of manifests/rbac; TestFluxTrustsRealCluster, as Role
# gitpeer-flux alone; TestPinSourceRealCluster, as Roles gitpeer-flux and
# gitpeer-argocd alone), and the attack suite's tests of what a provider's
# API server admits (test/attack: TestRealCluster…, with Liqo's CRDs from
# LIQO_CHART), on a throwaway control plane of their own (IDX 36, beside the
# suites' 31-35), stopped and removed afterwards.
#   env: GO (go), BIN (the control plane's binaries, as for start-cluster.sh),
#        LIQO_CHART (Liqo's chart; default the e2e cache's)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(mktemp -d)
export ROOT
trap 'bash hack/stop-cluster.sh backend-it --wipe >/dev/null 2>&1 || true; rm -rf "$ROOT"' EXIT
bash hack/start-cluster.sh backend-it 36
GITPEER_TEST_KUBECONFIG="$ROOT/backend-it/admin.kubeconfig" "${GO:-go}" test -count=1 -v -run 'RealCluster' ./internal/backend/kubernetes/ ./test/attack/
