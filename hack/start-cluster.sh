#!/usr/bin/env bash
# Start a minimal real control plane on loopback: etcd + kube-apiserver (TLS,
# client-cert auth, RBAC) + kube-controller-manager (CSR signing/approving and a
# few housekeeping controllers). Everything runs as background processes; PIDs
# go to $DIR/*.pid so stop-cluster.sh can stop exactly these processes.
# gitpeer's e2e suite (test/e2e/) runs it once per cluster with ROOT in a temp dir.
#
# Usage: start-cluster.sh NAME IDX        (IDX 0,1,2.. picks a port block)
#   env: ROOT (parent of the cluster dir NAME; default <cache>/clusters)
#        BIN (dir with kube-apiserver, kube-controller-manager, etcd; default <cache>/bin,
#             filled by hack/build-k8s-bins.sh)
#        ETCD_BIN (default $BIN/etcd; /usr/bin/etcd for Debian's etcd-server)
#        KCM_CONTROLLERS (override the controller list)
#        START_TIMEOUT (seconds each component may take to be ready; default 300)
#   <cache> is ${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}.
# Ports for IDX=i: etcd client 20079+100i, etcd peer 20080+100i,
#                  apiserver 20043+100i, controller-manager 20057+100i
# Output: $ROOT/NAME/admin.kubeconfig (system:masters), ca.crt/ca.key (cluster CA,
#         also the CSR signing CA), env file NAME/env with ports.
# Each component is waited for until it says it is ready, not for a fixed
# time: etcd /health, kube-apiserver /readyz, kube-controller-manager /healthz
# and then the first effects of its controllers (a cold, loaded 2-core machine
# has taken over a minute for the apiserver alone). A component whose process
# exits, or that is not ready after START_TIMEOUT seconds, fails the start,
# naming it and showing the end of its log.
# Needs only openssl, curl and base64 besides the binaries (no kubectl).
set -euo pipefail
NAME=${1:?usage: start-cluster.sh NAME IDX}; IDX=${2:-0}
CACHE=${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}
ROOT=${ROOT:-$CACHE/clusters}
BIN=${BIN:-$CACHE/bin}
ETCD_BIN=${ETCD_BIN:-$BIN/etcd}
START_TIMEOUT=${START_TIMEOUT:-300}
DIR=$ROOT/$NAME
BASE=$((20000 + IDX * 100))
ETCD_PORT=$((BASE + 79)); ETCD_PEER=$((BASE + 80)); API_PORT=$((BASE + 43)); KCM_PORT=$((BASE + 57))
KCM_CONTROLLERS=${KCM_CONTROLLERS:-certificatesigningrequest-signing-controller,certificatesigningrequest-approving-controller,certificatesigningrequest-cleaner-controller,namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller}

for b in "$ETCD_BIN" "$BIN/kube-apiserver" "$BIN/kube-controller-manager"; do
  [ -x "$b" ] || { echo "$b: not found; build it with hack/build-k8s-bins.sh (make e2e-tools)" >&2; exit 1; }
done
# A port already taken means a leftover control plane (or another suite on
# this IDX): fail now with a clear message rather than time out on /readyz of
# somebody else's apiserver.
for p in "$ETCD_PORT" "$ETCD_PEER" "$API_PORT" "$KCM_PORT"; do
  if (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p (IDX $IDX) is in use on 127.0.0.1: a cluster left running? stop it with stop-cluster.sh, or pick another IDX" >&2
    exit 1
  fi
done

mkdir -p "$DIR/pki" "$DIR/logs"
cd "$DIR/pki"

# ------------------------------------------------------------------ PKI
if [ ! -f ca.crt ]; then
  ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
  ec ca.key
  openssl req -x509 -new -key ca.key -days 3650 -subj "/CN=$NAME-ca" -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  leaf() { # name subject extfile-content
    ec "$1.key"
    openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
    printf "%b" "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
  }
  CLIENT='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n'
  leaf apiserver "/CN=kube-apiserver" 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n'
  leaf admin "/CN=admin/O=system:masters" "$CLIENT"
  leaf kcm "/CN=system:kube-controller-manager" "$CLIENT"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
  openssl pkey -in sa.key -pubout -out sa.pub
fi

b64() { base64 -w0 < "$1"; }
kcfg() { # file user: a kubeconfig with embedded certificates, written directly
  # (no kubectl needed to start a cluster); 0600, it holds a client key.
  local f=$DIR/$1.kubeconfig
  ( umask 077; cat > "$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $NAME
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(b64 "$DIR/pki/$2.crt")
    client-key-data: $(b64 "$DIR/pki/$2.key")
contexts:
- name: $NAME
  context:
    cluster: $NAME
    user: $2
current-context: $NAME
EOF
  )
}
kcfg admin admin
kcfg kcm kcm
cat > "$DIR/env" <<EOF
NAME=$NAME
ETCD_PORT=$ETCD_PORT
API_PORT=$API_PORT
KCM_PORT=$KCM_PORT
KUBECONFIG=$DIR/admin.kubeconfig
EOF

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
# wait_ready COMPONENT PIDFILE LOG CHECK...: runs CHECK until it succeeds.
# Gives up when the component's process exits or after START_TIMEOUT seconds,
# naming the component and showing the last lines of its log.
wait_ready() {
  local comp=$1 pidf=$2 log=$3 t0 deadline
  shift 3
  t0=$(now); deadline=$(($(date +%s) + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$pidf")" 2>/dev/null; then
      echo "$comp exited before it was ready ($*); last lines of $log:" >&2; tail -20 "$log" >&2; return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "$comp not ready after ${START_TIMEOUT}s ($*); last lines of $log:" >&2; tail -20 "$log" >&2; return 1
    fi
    sleep 0.2
  done
  echo "$comp ready after $(since "$t0")s: $* (pid $(cat "$pidf"))"
}
P=$DIR/pki
CURL_ADMIN=(--cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key")
etcd_health() { curl -s --max-time 5 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
api_readyz() { [ "$(curl -s --max-time 5 "${CURL_ADMIN[@]}" "https://127.0.0.1:$API_PORT/readyz")" = ok ]; }
kcm_healthz() { [ "$(curl -s --max-time 5 -k "https://127.0.0.1:$KCM_PORT/healthz")" = ok ]; }
# /healthz answers before the controllers have synced their informers; these
# objects are made by the serviceaccount and root-ca-certificate-publisher
# controllers once they run (when they are in the list).
api_get() { curl -sf --max-time 5 "${CURL_ADMIN[@]}" "https://127.0.0.1:$API_PORT$1" >/dev/null; }
kcm_controllers_run() {
  case ",$KCM_CONTROLLERS," in *,serviceaccount-controller,*) api_get /api/v1/namespaces/default/serviceaccounts/default || return 1 ;; esac
  case ",$KCM_CONTROLLERS," in *,root-ca-certificate-publisher-controller,*) api_get /api/v1/namespaces/default/configmaps/kube-root-ca.crt || return 1 ;; esac
}

# ------------------------------------------------------------------ etcd
T0=$(now)
"$ETCD_BIN" --name "$NAME" --data-dir "$DIR/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "$NAME=http://127.0.0.1:$ETCD_PEER" \
  --unsafe-no-fsync --quota-backend-bytes=$((2 * 1024 * 1024 * 1024)) \
  > "$DIR/logs/etcd.log" 2>&1 &
echo $! > "$DIR/etcd.pid"
wait_ready etcd "$DIR/etcd.pid" "$DIR/logs/etcd.log" etcd_health

# ------------------------------------------------------------------ kube-apiserver
"$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
  --cert-dir="$DIR/apiserver-certs" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --profiling=false \
  > "$DIR/logs/kube-apiserver.log" 2>&1 &
echo $! > "$DIR/kube-apiserver.pid"
wait_ready kube-apiserver "$DIR/kube-apiserver.pid" "$DIR/logs/kube-apiserver.log" api_readyz

# ------------------------------------------------------------------ kube-controller-manager
"$BIN/kube-controller-manager" \
  --kubeconfig="$DIR/kcm.kubeconfig" \
  --authentication-kubeconfig="$DIR/kcm.kubeconfig" --authorization-kubeconfig="$DIR/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$DIR/kcm-certs" \
  --controllers="$KCM_CONTROLLERS" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --cluster-signing-duration=24h \
  --root-ca-file="$P/ca.crt" --service-account-private-key-file="$P/sa.key" \
  --use-service-account-credentials=true --leader-elect=false --profiling=false \
  > "$DIR/logs/kube-controller-manager.log" 2>&1 &
echo $! > "$DIR/kube-controller-manager.pid"
wait_ready kube-controller-manager "$DIR/kube-controller-manager.pid" "$DIR/logs/kube-controller-manager.log" kcm_healthz
wait_ready kube-controller-manager "$DIR/kube-controller-manager.pid" "$DIR/logs/kube-controller-manager.log" kcm_controllers_run
echo "cluster $NAME up in $(since "$T0")s; export KUBECONFIG=$DIR/admin.kubeconfig"
