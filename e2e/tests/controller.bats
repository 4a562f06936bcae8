#!/usr/bin/env bats
# poolkeeper-controller against the real control plane, with the webhook
# registered: allocation, release, exhaustion, a Cluster deleted first,
# foreground deletion through the real garbage collector, IPv6, a
# GlobalIPPool across namespaces, and a SIGKILL in the middle of 50 claims.

load helpers
load poolkeeper

POOLS=ippools.ipam.poolkeeper.io
GPOOLS=globalippools.ipam.poolkeeper.io
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io

setup_file() {
  pk_setup_file
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_serving_cert "$CERTS"
  pk_start_webhook webhook "$CERTS"
  pk_register_poolkeeper_webhooks "$CERTS" "$WEBHOOK_PORT"
  _start_controller
}

teardown_file() {
  pk_stop controller
  pk_unregister_poolkeeper_webhooks
  pk_stop webhook
}

setup() { pk_setup; }

# Claims, then pools, are deleted by name before the namespace goes, so that
# every scenario cleans up after itself through the controller (and the
# namespace controller's collection deletes never reach the pools).
teardown() {
  local ns
  for ns in "$NS" "$NS-b"; do
    kubectl -n "$ns" delete "$CLAIMS" --all --timeout=60s >/dev/null 2>&1 || true
    kubectl -n "$ns" delete "$POOLS" --all --timeout=60s >/dev/null 2>&1 || true
  done
  kubectl delete "$GPOOLS" "$NS" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$NS-b" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  pk_teardown
}

# _start_controller: poolkeeper-controller on free ports, leading on its Lease.
_start_controller() {
  local bin
  bin=$(pk_bin poolkeeper-controller) || return 1
  pk_start controller "$bin" --bind-address 127.0.0.1 --health-port 0 --metrics-port 0 \
    --leader-election-namespace default
  pk_wait_for -t 20 "the controller to listen" _pk_has_port controller health
}

# pool <name> <spec json>: an IPPool in $NS (retried while the webhook registration settles).
pool() {
  local doc
  doc=$(jq -n --arg n "$1" --argjson s "$2" \
    '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: $n}, spec: $s}')
  pk_wait_for -t 30 "IPPool $1 to be accepted" _apply "$NS" "$doc"
}

# _apply <namespace|""> <json>: kubectl apply of one document.
_apply() {
  if [[ -n $1 ]]; then kubectl -n "$1" apply -f - <<<"$2"; else kubectl apply -f - <<<"$2"; fi
}

# _machine [namespace]: the Cluster "prod" and a stand-in machine (ConfigMap
# "machine") that claims belong to, as the webhook requires of every claim.
_machine() {
  local ns=${1:-$NS}
  kubectl -n "$ns" apply -f - >/dev/null <<EOF
{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "prod"}, "spec": {"paused": false}}
EOF
  kubectl -n "$ns" get configmap machine >/dev/null 2>&1 || kubectl -n "$ns" create configmap machine >/dev/null
}

# claim_j <name> <pool kind> <pool name> [namespace]: a claim of Cluster prod owned by the
# machine ConfigMap (both made by _machine).
claim_j() {
  local name=$1 kind=$2 poolname=$3 ns=${4:-$NS} uid
  uid=$(kubectl -n "$ns" get configmap machine -o jsonpath='{.metadata.uid}') || return 1
  _claim_doc "$name" "$kind" "$poolname" "$uid" | kubectl -n "$ns" apply -f -
}

_claim_doc() {
  jq -n --arg n "$1" --arg k "$2" --arg p "$3" --arg u "$4" \
    '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
      metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"},
                 ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "machine", uid: $u,
                                    controller: true, blockOwnerDeletion: true}]},
      spec: {clusterName: "prod", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: $k, name: $p}}}'
}

# _ready <ns> <claim> [status] [reason]: the claim's Ready condition says so.
_ready() {
  local want=${3:-True} reason=${4:-} got
  got=$(kubectl -n "$1" get "$CLAIMS" "$2" -o json | jq -r '.status.conditions[]? | select(.type=="Ready") | "\(.status) \(.reason)"')
  echo "Ready: $got"
  [[ $got == "$want"* ]] && [[ -z $reason || $got == *" $reason" ]]
}

_address_of() { pk_jsonpath -n "$1" "$ADDRS" "$2" '{.spec.address}'; }

@test "a claim is allocated: Ready, addressRef, IPAddress with owners and finalizer, pool counts" {
  _machine
  pool p '{"addresses": ["10.10.0.10-10.10.0.20"], "prefix": 24, "gateway": "10.10.0.1"}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True Allocated
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.status.addressRef.name}') == c1 ]]
  local a
  a=$(kubectl -n "$NS" get "$ADDRS" c1 -o json)
  [[ $(jq -r .spec.address <<<"$a") == 10.10.0.10 ]]
  [[ $(jq -r .spec.prefix <<<"$a") == 24 ]]
  [[ $(jq -r .spec.gateway <<<"$a") == 10.10.0.1 ]]
  [[ $(jq -r '.spec.poolRef | "\(.apiGroup) \(.kind) \(.name)"' <<<"$a") == "ipam.poolkeeper.io IPPool p" ]]
  local cuid puid
  cuid=$(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.uid}')
  puid=$(pk_jsonpath -n "$NS" "$POOLS" p '{.metadata.uid}')
  jq -e --arg c "$cuid" '.metadata.ownerReferences[] | select(.kind=="IPAddressClaim" and .uid==$c and .controller==true and .blockOwnerDeletion==true)' <<<"$a"
  jq -e --arg p "$puid" '.metadata.ownerReferences[] | select(.kind=="IPPool" and .uid==$p and .controller==false and .blockOwnerDeletion==true)' <<<"$a"
  jq -e '.metadata.finalizers | index("ipam.poolkeeper.io/protect-address")' <<<"$a"
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.total}/{.status.ipAddresses.used}/{.status.ipAddresses.free}') == 11/1/10 ]]"
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.finalizers[0]}') == ipam.poolkeeper.io/release-address ]]
}

@test "deleting a claim releases its address: the IPAddress goes and the next claim reuses it" {
  _machine
  pool p '{"addresses": ["10.11.0.5"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  [[ $(_address_of "$NS" c1) == 10.11.0.5 ]]
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c2) == 10.11.0.5 ]]
}

@test "an exhausted pool: Ready=False PoolExhausted, then a release lets the waiting claim bind" {
  _machine
  pool p '{"addresses": ["10.12.0.5-10.12.0.6"], "prefix": 24}'
  claim_j c1 IPPool p
  claim_j c2 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  claim_j c3 IPPool p
  pk_wait_for "claim c3 exhausted" _ready "$NS" c3 False PoolExhausted
  local freed
  freed=$(_address_of "$NS" c1)
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_for -t 20 "claim c3 Ready after the release" _ready "$NS" c3 True Allocated
  [[ $(_address_of "$NS" c3) == "$freed" ]]
}

@test "a Cluster deleted before its claims does not block their deletion" {
  _machine
  pool p '{"addresses": ["10.13.0.5-10.13.0.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" c1 '{.metadata.labels.cluster\.x-k8s\.io/cluster-name}') == prod ]]
  kubectl -n "$NS" delete cluster.cluster.x-k8s.io prod --timeout=30s
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
}

@test "deleting the claim's owner with foreground propagation cleans up claim and address" {
  _machine
  pool p '{"addresses": ["10.14.0.5-10.14.0.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  kubectl -n "$NS" delete configmap machine --cascade=foreground --wait=false
  pk_wait_gone -t 90 -n "$NS" configmap machine
  pk_wait_gone -n "$NS" "$CLAIMS" c1
  pk_wait_gone -n "$NS" "$ADDRS" c1
}

@test "an IPv6 pool" {
  _machine
  pool p '{"addresses": ["fd00:10::10-fd00:10::20"], "prefix": 64, "gateway": "fd00:10::1"}'
  claim_j c1 IPPool p
  claim_j c2 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c1) == fd00:10::10 ]]
  [[ $(_address_of "$NS" c2) == fd00:10::11 ]]
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" c1 '{.spec.prefix}') == 64 ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == 2 ]]"
}

@test "a GlobalIPPool serves two namespaces without handing an address out twice" {
  local other=$NS-b gp=$NS
  kubectl create namespace "$other"
  _machine
  _machine "$other"
  local doc
  doc=$(jq -n --arg n "$gp" '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "GlobalIPPool",
    metadata: {name: $n}, spec: {addresses: ["10.15.0.5-10.15.0.9"], prefix: 24}}')
  pk_wait_for -t 30 "GlobalIPPool accepted" _apply "" "$doc"
  claim_j c1 GlobalIPPool "$gp" "$NS"
  claim_j c1 GlobalIPPool "$gp" "$other"
  pk_wait_for "claim c1 Ready in $NS" _ready "$NS" c1 True
  pk_wait_for "claim c1 Ready in $other" _ready "$other" c1 True
  local a b
  a=$(_address_of "$NS" c1)
  b=$(_address_of "$other" c1)
  echo "$a $b"
  [[ $a != "$b" ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl get $GPOOLS $gp -o jsonpath='{.status.ipAddresses.used}') == 2 ]]"
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  kubectl -n "$other" delete "$CLAIMS" c1 --timeout=60s
  kubectl delete namespace "$other" --wait=false
  kubectl delete "$GPOOLS" "$gp" --timeout=60s
}

@test "addressReuseGracePeriodSeconds holds a released address back, then the waiting claim gets it" {
  _machine
  pool p '{"addresses": ["10.17.0.5"], "prefix": 24, "addressReuseGracePeriodSeconds": 4}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  local released=$SECONDS
  claim_j c2 IPPool p
  pk_wait_for "claim c2 waits" _ready "$NS" c2 False PoolExhausted
  pk_wait_for -t 30 "claim c2 Ready after the grace period" _ready "$NS" c2 True
  echo "bound after $((SECONDS - released))s"
  ((SECONDS - released >= 3))
  [[ $(_address_of "$NS" c2) == 10.17.0.5 ]]
}

@test "SIGTERM: the controller exits 0 and gives the Lease up" {
  local pid
  pid=$(pk_pid controller)
  kill -TERM "$pid"
  pk_wait_for -t 20 "the controller to exit" bash -c "! kill -0 $pid 2>/dev/null"
  grep -q 'msg="stopped"' "$PK_E2E_LOG_DIR/controller.log"
  [[ -z $(pk_jsonpath -n default lease poolkeeper-controller '{.spec.holderIdentity}') ]]
  rm -f "$PK_E2E_STATE/pids/controller.pid"
  _start_controller
  _machine
  pool p '{"addresses": ["10.18.0.5"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready under the new leader" _ready "$NS" c1 True
}

# _all_ready <ns> <n>: n claims in ns, all Ready=True.
_all_ready() {
  local n
  n=$(kubectl -n "$1" get "$CLAIMS" -o json | jq '[.items[] | select(any(.status.conditions[]?; .type=="Ready" and .status=="True"))] | length')
  echo "$n of $2 ready"
  [[ $n == "$2" ]]
}

@test "SIGKILL while 50 claims are created: every claim ends Ready, no address held twice" {
  _machine
  pool p '{"addresses": ["10.16.0.0/24"], "prefix": 24}'
  local i
  local uid
  uid=$(pk_jsonpath -n "$NS" configmap machine '{.metadata.uid}')
  for ((i = 0; i < 50; i++)); do
    _claim_doc "c$i" IPPool p "$uid"
  done | kubectl -n "$NS" apply -f - >/dev/null &
  local creator=$!
  sleep 1
  pk_stop controller KILL
  wait "$creator"
  _start_controller
  pk_wait_for -t 120 "all 50 claims Ready" _all_ready "$NS" 50
  local addrs
  addrs=$(kubectl get "$ADDRS" -A -o json | jq -r '.items[] | select(.spec.poolRef.kind=="IPPool" and .spec.poolRef.name=="p" and .metadata.namespace==env.NS) | .spec.address')
  [[ $(wc -l <<<"$addrs") == 50 ]]
  [[ -z $(sort <<<"$addrs" | uniq -d) ]]
  # Every address in the cluster, all pools: no value held twice within a pool.
  [[ -z $(kubectl get "$ADDRS" -A -o json | jq -r '.items[] | "\(.spec.poolRef.kind)/\(.metadata.namespace)/\(.spec.poolRef.name) \(.spec.address)"' | sort | uniq -d) ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == 50 ]]"
}
