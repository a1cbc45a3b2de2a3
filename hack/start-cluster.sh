#!/usr/bin/env bash
# Start a minimal real control plane on loopback: etcd + kube-apiserver (TLS,
# client-cert auth, RBAC) + kube-controller-manager (CSR signing/approving and a
# few housekeeping controllers). Everything runs as background processes; PIDs
# go to $DIR/*.pid so stop-cluster.sh can stop exactly these processes.
# gitpeer's e2e suite (e2e/) runs it once per cluster with ROOT in a temp dir.
#
# Usage: start-cluster.sh NAME IDX        (IDX 0,1,2.. picks a port block)
#   env: ROOT (parent of the cluster dir NAME; default <cache>/clusters)
#        BIN (dir with kube-apiserver, kube-controller-manager, etcd; default <cache>/bin,
#             filled by hack/build-k8s-bins.sh)
#        ETCD_BIN (default $BIN/etcd; /usr/bin/etcd for Debian's etcd-server)
#        KCM_CONTROLLERS (override the controller list)
#   <cache> is ${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}.
# Ports for IDX=i: etcd client 20079+100i, etcd peer 20080+100i,
#                  apiserver 20043+100i, controller-manager 20057+100i
# Output: $ROOT/NAME/admin.kubeconfig (system:masters), ca.crt/ca.key (cluster CA,
#         also the CSR signing CA), env file NAME/env with ports.
# Needs only openssl, curl and base64 besides the binaries (no kubectl).
set -euo pipefail
NAME=${1:?usage: start-cluster.sh NAME IDX}; IDX=${2:-0}
CACHE=${GITPEER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitpeer-e2e}
ROOT=${ROOT:-$CACHE/clusters}
BIN=${BIN:-$CACHE/bin}
ETCD_BIN=${ETCD_BIN:-$BIN/etcd}
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
wait_url() { # url timeout-s log [curl args]: on timeout, show the component's log
  local url=$1 t=$2 log=$3; shift 3
  for _ in $(seq 1 $((t * 10))); do
    if [ "$(curl -s --max-time 2 "$@" "$url" 2>/dev/null)" = ok ]; then return 0; fi
    sleep 0.1
  done
  echo "timeout waiting for $url; last lines of $log:" >&2; tail -20 "$log" >&2; return 1
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
ok=
for _ in $(seq 1 300); do
  if curl -s --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; then ok=1; break; fi
  sleep 0.1
done
[ -n "$ok" ] || { echo "etcd not healthy after 30s; last lines of its log:" >&2; tail -20 "$DIR/logs/etcd.log" >&2; exit 1; }
echo "etcd ready after $(since "$T0")s (pid $(cat "$DIR/etcd.pid"))"

# ------------------------------------------------------------------ kube-apiserver
T1=$(now)
P=$DIR/pki
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
CURL_ADMIN=(--cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key")
wait_url "https://127.0.0.1:$API_PORT/readyz" 120 "$DIR/logs/kube-apiserver.log" "${CURL_ADMIN[@]}"
echo "kube-apiserver /readyz ok after $(since "$T1")s (pid $(cat "$DIR/kube-apiserver.pid"))"

# ------------------------------------------------------------------ kube-controller-manager
T2=$(now)
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
wait_url "https://127.0.0.1:$KCM_PORT/healthz" 60 "$DIR/logs/kube-controller-manager.log" -k
echo "kube-controller-manager /healthz ok after $(since "$T2")s (pid $(cat "$DIR/kube-controller-manager.pid"))"
echo "cluster $NAME up in $(since "$T0")s; export KUBECONFIG=$DIR/admin.kubeconfig"
