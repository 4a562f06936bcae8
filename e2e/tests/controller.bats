#!/usr/bin/env bats
# poolkeeper-controller against the real control plane, with the webhook
# registered: allocation, release, exhaustion, a Cluster deleted first,
# foreground deletion through the real garbage collector (20 times in a row, and
# once with the claim paused meanwhile, so that the collector leaves the IPAddress
# to the controller), IPv6, a
# GlobalIPPool across namespaces, pause and unpause (Cluster, pool and claim), a
# missing Cluster, pool delete protection, clusterctl move (adoption, and
# deletes annotated delete-for-move), an IPAddress deleted under its claim,
# an inconsistent hand-made IPAddress never adopted, Events and metrics, a reuse grace period kept across a restart, two
# controllers on one Lease, and a SIGKILL in the middle of 500 claims.

load helpers
load poolkeeper

POOLS=ippools.ipam.poolkeeper.io
GPOOLS=globalippools.ipam.poolkeeper.io
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io

setup_file() {
  pk_setup_file
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS"
  pk_start_webhook webhook "$CERTS"
  _start_controller
}

teardown_file() {
  pk_stop controller
  pk_uninstall_poolkeeper poolkeeper poolkeeper-system
  pk_stop webhook
}

setup() { pk_setup; }

# Claims, then pools, are deleted by name before the namespace goes, so that
# every scenario cleans up after itself through the controller (and the
# namespace controller's collection deletes never reach the pools).
teardown() {
  local ns
  _one_controller
  for ns in "$NS" "$NS-b"; do
    kubectl -n "$ns" delete "$CLAIMS" --all --timeout=60s >/dev/null 2>&1 || true
    kubectl -n "$ns" delete "$POOLS" --all --timeout=60s >/dev/null 2>&1 || true
  done
  kubectl delete "$GPOOLS" "$NS" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$NS-b" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  pk_teardown
}

# _start_controller: poolkeeper-controller on free ports, leading on its Lease.
_start_controller() { pk_start_controller controller; }

# _one_controller: the suite's single controller runs again, whatever a test
# stopped or killed (a second one, "controller2", is stopped).
_one_controller() {
  pk_stop controller2
  if [[ -f $PK_E2E_STATE/pids/controller.pid ]] && kill -0 "$(pk_pid controller)" 2>/dev/null; then
    return 0
  fi
  rm -f "$PK_E2E_STATE/pids/controller.pid"
  _start_controller
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

_claim_doc() { jq -n --arg n "$1" --arg k "$2" --arg p "$3" --arg u "$4" "$CLAIM_JQ"; }

# _claim_docs <first> <count> <pool kind> <pool name> <machine uid>: claims
# c<first>... as one stream of documents (one jq for all of them).
_claim_docs() {
  jq -n --argjson f "$1" --argjson c "$2" --arg k "$3" --arg p "$4" --arg u "$5" \
    "range(\$f; \$f + \$c) | \"c\\(.)\" as \$n | $CLAIM_JQ"
}

# shellcheck disable=SC2016 # a jq program
CLAIM_JQ='{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
  metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"},
             ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "machine", uid: $u,
                                controller: true, blockOwnerDeletion: true}]},
  spec: {clusterName: "prod", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: $k, name: $p}}}'

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

# _unowned_by_claim <ns> <ipaddress>: the garbage collector has taken the claim's owner
# reference off the IPAddress (it keeps the pool's).
_unowned_by_claim() {
  local refs
  refs=$(kubectl -n "$1" get "$ADDRS" "$2" -o json | jq -r '[.metadata.ownerReferences[]?.kind] | join(",")')
  echo "owners: $refs"
  [[ $refs != *IPAddressClaim* && $refs == *IPPool* ]]
}

_used_is() { [[ $(pk_jsonpath -n "$NS" "$POOLS" "$1" '{.status.ipAddresses.used}') == "$2" ]]; }

@test "a claim paused while its owner is deleted in the foreground: the collector takes the claim's reference off its IPAddress; unpaused, the IPAddress goes and the pool counts 0 used" {
  _machine
  pool p '{"addresses": ["10.14.1.5-10.14.1.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  kubectl -n "$NS" annotate "$CLAIMS" c1 "$PAUSED="
  kubectl -n "$NS" delete configmap machine --cascade=foreground --wait=false
  # The pool, a live blocking owner, keeps the IPAddress: the collector patches the claim's
  # reference out of it rather than deleting it (its "solid owners" branch).
  pk_wait_for -t 90 "the collector to take c1's reference off its IPAddress" _unowned_by_claim "$NS" c1
  [[ -n $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.deletionTimestamp}') ]]
  kubectl -n "$NS" annotate "$CLAIMS" c1 "$PAUSED-"
  pk_wait_gone -n "$NS" "$CLAIMS" c1
  pk_wait_gone -n "$NS" "$ADDRS" c1
  pk_wait_gone -t 90 -n "$NS" configmap machine
  pk_wait_for "pool p to count 0 used" _used_is p 0
  pk_wait_for "the address of c1 released" grep -F "msg=\"address released\" ipaddress=$NS/c1 " "$PK_E2E_LOG_DIR/controller.log"
  # The address is free again: the next claim gets it.
  kubectl -n "$NS" create configmap machine >/dev/null
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c2) == 10.14.1.5 ]]
}

@test "deleting a claim's owner in the foreground 20 times, one after another: no IPAddress is left and the pool counts 0 used" {
  _machine
  pool p '{"addresses": ["10.14.2.0/27"], "prefix": 24}'
  local i uid from
  from=$(($(wc -l <"$PK_E2E_LOG_DIR/controller.log") + 1))
  for i in $(seq 1 20); do
    kubectl -n "$NS" create configmap "m$i" >/dev/null
    uid=$(kubectl -n "$NS" get configmap "m$i" -o jsonpath='{.metadata.uid}')
    _claim_doc "f$i" IPPool p "$uid" | jq --arg m "m$i" '.metadata.ownerReferences[0].name = $m' |
      kubectl -n "$NS" apply -f - >/dev/null
    pk_wait_for "claim f$i Ready" _ready "$NS" "f$i" True
    kubectl -n "$NS" delete configmap "m$i" --cascade=foreground --wait=false >/dev/null
  done
  for i in $(seq 1 20); do
    pk_wait_gone -t 90 -n "$NS" configmap "m$i"
    pk_wait_gone -n "$NS" "$CLAIMS" "f$i"
    pk_wait_gone -n "$NS" "$ADDRS" "f$i"
  done
  [[ $(kubectl -n "$NS" get "$ADDRS" -o name | wc -l) -eq 0 ]]
  pk_wait_for "pool p to count 0 used" _used_is p 0
  # The collector's owner reference patches and the deletions raced the controller's
  # finalizer patches, which test the entry and the uid, not the resourceVersion: none of
  # them failed.
  run bash -c "tail -n +$from '$PK_E2E_LOG_DIR/controller.log' | grep 'write failed' | grep finalizer"
  echo "$output"
  [[ -z $output ]]
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

# _untouched <ns> <claim> <seconds>: for that long the claim gets no finalizer
# of poolkeeper's and no IPAddress is made for it.
_untouched() {
  local end=$((SECONDS + $3)) f
  while :; do
    f=$(pk_jsonpath -n "$1" "$CLAIMS" "$2" '{.metadata.finalizers}') || return 1
    if [[ $f == *ipam.poolkeeper.io/release-address* ]]; then
      echo "claim $2 got the finalizer while it should wait: $f"
      return 1
    fi
    if kubectl -n "$1" get "$ADDRS" "$2" >/dev/null 2>&1; then
      echo "IPAddress $2 was created while the claim should wait"
      return 1
    fi
    ((SECONDS < end)) || return 0
    sleep 0.5
  done
}

# _bound_within <seconds> <ns> <claim>: Ready=True Allocated within that time.
_bound_within() {
  local t0=$SECONDS
  pk_wait_for -t "$1" "claim $3 Ready" _ready "$2" "$3" True Allocated || return 1
  echo "claim $3 Ready $((SECONDS - t0))s later"
  [[ $(pk_jsonpath -n "$2" "$CLAIMS" "$3" '{.status.addressRef.name}') == "$3" ]]
}

# _pool_protected <ns> <pool>: the IPPool carries the finalizer ipam.poolkeeper.io/protect-pool.
_pool_protected() {
  local f
  f=$(pk_jsonpath -n "$1" "$POOLS" "$2" '{.metadata.finalizers}') || return 1
  echo "finalizers: $f"
  [[ $f == *'"ipam.poolkeeper.io/protect-pool"'* ]]
}

CLUSTERS=clusters.cluster.x-k8s.io
PAUSED=cluster.x-k8s.io/paused
MOVE=clusterctl.cluster.x-k8s.io/delete-for-move

@test "a Cluster with spec.paused holds its claims; unpausing binds them at once" {
  _machine
  kubectl -n "$NS" patch "$CLUSTERS" prod --type=merge -p '{"spec": {"paused": true}}'
  pool p '{"addresses": ["10.19.0.5-10.19.0.9"], "prefix": 24}'
  sleep 1 # the controller's Cluster cache sees the pause before the claim
  claim_j c1 IPPool p
  _untouched "$NS" c1 4
  kubectl -n "$NS" patch "$CLUSTERS" prod --type=merge -p '{"spec": {"paused": false}}'
  _bound_within 10 "$NS" c1
  [[ $(_address_of "$NS" c1) == 10.19.0.5 ]]
}

@test "a Cluster annotated paused holds its claims; removing the annotation binds them at once" {
  _machine
  kubectl -n "$NS" annotate "$CLUSTERS" prod "$PAUSED="
  pool p '{"addresses": ["10.19.1.5-10.19.1.9"], "prefix": 24}'
  sleep 1
  claim_j c1 IPPool p
  claim_j c2 IPPool p
  _untouched "$NS" c1 4
  _untouched "$NS" c2 0
  kubectl -n "$NS" annotate "$CLUSTERS" prod "$PAUSED-"
  _bound_within 10 "$NS" c1
  _bound_within 10 "$NS" c2
}

@test "a pool annotated paused holds its claims until the annotation is removed" {
  _machine
  pool p '{"addresses": ["10.19.2.5-10.19.2.9"], "prefix": 24}'
  kubectl -n "$NS" annotate "$POOLS" p "$PAUSED="
  sleep 1
  claim_j c1 IPPool p
  _untouched "$NS" c1 4
  kubectl -n "$NS" annotate "$POOLS" p "$PAUSED-"
  _bound_within 10 "$NS" c1
}

@test "a claim annotated paused is held (Ready=False Paused) while its sibling binds; removing the annotation binds it, and a paused claim's deletion waits for the pause to be lifted" {
  _machine
  pool p '{"addresses": ["10.19.4.5-10.19.4.9"], "prefix": 24}'
  local uid
  uid=$(kubectl -n "$NS" get configmap machine -o jsonpath='{.metadata.uid}')
  _claim_doc c1 IPPool p "$uid" | jq --arg a "$PAUSED" '.metadata.annotations[$a] = ""' |
    kubectl -n "$NS" apply -f -
  claim_j c2 IPPool p
  _bound_within 10 "$NS" c2
  [[ $(_address_of "$NS" c2) == 10.19.4.5 ]]
  pk_wait_for "claim c1 Ready=False Paused" _ready "$NS" c1 False Paused
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.status.conditions[?(@.type=="Ready")].message}') == "IPAddressClaim $NS/c1 is paused" ]]
  pk_wait_for "a Normal Paused Event on c1" _has_event "$NS" c1 "^Normal Paused IPAddressClaim $NS/c1 is paused$"
  _untouched "$NS" c1 4
  # As in Cluster API, the key pauses whatever its value: "false" holds it too.
  kubectl -n "$NS" annotate --overwrite "$CLAIMS" c1 "$PAUSED=false"
  _untouched "$NS" c1 2
  kubectl -n "$NS" annotate "$CLAIMS" c1 "$PAUSED-"
  _bound_within 10 "$NS" c1
  [[ $(_address_of "$NS" c1) == 10.19.4.6 ]]

  # A bound claim paused keeps its address and Ready=True; deleted while paused, it keeps
  # its finalizer, its IPAddress and its address until the pause is lifted.
  kubectl -n "$NS" annotate "$CLAIMS" c2 "$PAUSED="
  kubectl -n "$NS" delete "$CLAIMS" c2 --wait=false
  sleep 3
  _ready "$NS" c2 True Allocated
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c2 '{.metadata.finalizers}') == *ipam.poolkeeper.io/release-address* ]]
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" c2 '{.metadata.finalizers}') == *ipam.poolkeeper.io/protect-address* ]]
  [[ -z $(pk_jsonpath -n "$NS" "$ADDRS" c2 '{.metadata.deletionTimestamp}') ]]
  if grep -F "msg=\"address released\" ipaddress=$NS/c2 " "$PK_E2E_LOG_DIR/controller.log"; then
    return 1
  fi
  kubectl -n "$NS" annotate "$CLAIMS" c2 "$PAUSED-"
  pk_wait_gone -n "$NS" "$CLAIMS" c2
  pk_wait_gone -n "$NS" "$ADDRS" c2
  pk_wait_for "the address of c2 released" grep -F "msg=\"address released\" ipaddress=$NS/c2 " "$PK_E2E_LOG_DIR/controller.log"
}

@test "a claim of a Cluster that does not exist yet waits; creating the Cluster lets it bind" {
  kubectl -n "$NS" create configmap machine
  pool p '{"addresses": ["10.19.3.5-10.19.3.9"], "prefix": 24}'
  claim_j c1 IPPool p
  _untouched "$NS" c1 4
  _machine
  _bound_within 10 "$NS" c1
}

@test "deleting a pool that still has addresses is refused until they are gone" {
  _machine
  pool p '{"addresses": ["10.20.0.5-10.20.0.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  pk_wait_for "the pool's finalizer" _pool_protected "$NS" p
  # The webhook refuses the deletion and names what holds the pool.
  run kubectl -n "$NS" delete "$POOLS" p --wait=false
  echo "$output"
  ((status != 0))
  [[ $output == *denied* && $output == *"1 IPAddress allocated from this pool still exists"* ]]
  [[ $output == *"(first: IPAddress $NS/c1)"* ]]
  [[ -z $(pk_jsonpath -n "$NS" "$POOLS" p '{.metadata.deletionTimestamp}') ]]
  _ready "$NS" c1 True Allocated
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  # Nothing holds the pool any more: the finalizer comes off, the deletion goes through.
  pk_wait_for -t 20 "the pool's deletion to be admitted" kubectl -n "$NS" delete "$POOLS" p --wait=false
  pk_wait_gone -t 20 -n "$NS" "$POOLS" p
}

@test "a pool deleted past the webhook (skip-delete-protection) is held by its finalizer until its addresses are gone" {
  _machine
  pool p '{"addresses": ["10.20.1.5-10.20.1.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  pk_wait_for "the pool's finalizer" _pool_protected "$NS" p
  kubectl -n "$NS" annotate "$POOLS" p ipam.poolkeeper.io/skip-delete-protection=true
  kubectl -n "$NS" delete "$POOLS" p --wait=false
  [[ -n $(pk_jsonpath -n "$NS" "$POOLS" p '{.metadata.deletionTimestamp}') ]]
  sleep 2
  # Still there, held by the finalizer; the bound claim keeps its address; a new
  # claim is told the pool is going.
  _pool_protected "$NS" p
  _ready "$NS" c1 True Allocated
  claim_j c2 IPPool p
  pk_wait_for "claim c2 not ready" _ready "$NS" c2 False PoolNotReady
  if kubectl -n "$NS" get "$ADDRS" c2; then return 1; fi
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  pk_wait_gone -t 20 -n "$NS" "$POOLS" p
}

@test "clusterctl move: a claim and IPAddress recreated without status are adopted, same address, same IPAddress" {
  _machine
  pool p '{"addresses": ["10.21.0.5-10.21.0.9"], "prefix": 24}'
  claim_j c0 IPPool p
  pk_wait_for "claim c0 Ready" _ready "$NS" c0 True
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  local addr old_claim_uid
  addr=$(_address_of "$NS" c1)
  old_claim_uid=$(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.uid}')
  pk_stop controller
  # What clusterctl move does to the source objects.
  kubectl -n "$NS" annotate "$CLAIMS" c1 "$MOVE="
  kubectl -n "$NS" annotate "$ADDRS" c1 "$MOVE="
  local claim_json addr_json
  claim_json=$(kubectl -n "$NS" get "$CLAIMS" c1 -o json)
  addr_json=$(kubectl -n "$NS" get "$ADDRS" c1 -o json)
  kubectl -n "$NS" patch "$ADDRS" c1 --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]'
  kubectl -n "$NS" patch "$CLAIMS" c1 --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]'
  kubectl -n "$NS" delete "$ADDRS" c1 --ignore-not-found --timeout=30s
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=30s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  pk_wait_gone -n "$NS" "$CLAIMS" c1
  # What it creates on the target: the objects without status, uid and the like.
  # shellcheck disable=SC2016 # a jq program
  local clean='del(.status, .metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp,
    .metadata.managedFields, .metadata.generation, .metadata.annotations[$m])'
  jq --arg m "$MOVE" "$clean" <<<"$claim_json" | kubectl -n "$NS" create -f -
  local new_claim_uid
  new_claim_uid=$(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.uid}')
  [[ -n $new_claim_uid && $new_claim_uid != "$old_claim_uid" ]]
  jq --arg m "$MOVE" --arg old "$old_claim_uid" --arg new "$new_claim_uid" \
    "$clean | .metadata.ownerReferences |= map(if .uid == \$old then .uid = \$new else . end)" <<<"$addr_json" |
    kubectl -n "$NS" create -f -
  local addr_uid
  addr_uid=$(pk_jsonpath -n "$NS" "$ADDRS" c1 '{.metadata.uid}')
  [[ -z $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.status}') ]]
  _start_controller
  _bound_within 30 "$NS" c1
  local a
  a=$(kubectl -n "$NS" get "$ADDRS" c1 -o json)
  [[ $(jq -r .spec.address <<<"$a") == "$addr" ]]
  [[ $(jq -r .metadata.uid <<<"$a") == "$addr_uid" ]]
  [[ $(jq -r '.metadata.deletionTimestamp // ""' <<<"$a") == "" ]]
  jq -e --arg c "$new_claim_uid" '.metadata.ownerReferences[] | select(.kind=="IPAddressClaim" and .uid==$c)' <<<"$a"
  [[ $(_address_of "$NS" c0) != "$addr" ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}/{.status.ipAddresses.free}') == 2/3 ]]"
  # The adopted address stays held: the next claim gets another one.
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c2) != "$addr" && $(_address_of "$NS" c2) != "$(_address_of "$NS" c0)" ]]
}

# _recreated <ns> <name> <old uid>: an IPAddress of that name, not deleting, with another uid.
_recreated() {
  local a
  a=$(kubectl -n "$1" get "$ADDRS" "$2" -o json) || return 1
  jq -r '"\(.metadata.uid) \(.metadata.deletionTimestamp // "-") \(.spec.address)"' <<<"$a"
  [[ $(jq -r .metadata.uid <<<"$a") != "$3" && $(jq -r '.metadata.deletionTimestamp // ""' <<<"$a") == "" ]]
}

@test "an IPAddress deleted while its claim lives is re-created with the same address" {
  _machine
  # The grace period would hold a released address back: getting the same
  # address at once shows that it was never released.
  pool p '{"addresses": ["10.22.0.5-10.22.0.6"], "prefix": 24, "addressReuseGracePeriodSeconds": 600}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  local addr uid claim_uid
  addr=$(_address_of "$NS" c1)
  uid=$(pk_jsonpath -n "$NS" "$ADDRS" c1 '{.metadata.uid}')
  claim_uid=$(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.uid}')
  kubectl -n "$NS" delete "$ADDRS" c1 --wait=false
  pk_wait_for -t 30 "IPAddress c1 re-created" _recreated "$NS" c1 "$uid"
  local a
  a=$(kubectl -n "$NS" get "$ADDRS" c1 -o json)
  [[ $(jq -r .spec.address <<<"$a") == "$addr" ]]
  jq -e --arg c "$claim_uid" '.metadata.ownerReferences[] | select(.kind=="IPAddressClaim" and .uid==$c and .controller==true)' <<<"$a"
  jq -e '.metadata.finalizers | index("ipam.poolkeeper.io/protect-address")' <<<"$a"
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True Allocated
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.status.addressRef.name}') == c1 ]]
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c2) != "$addr" ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == 2 ]]"
}

@test "a claim deleted for clusterctl move loses only its finalizer: its IPAddress and address stay" {
  _machine
  pool p '{"addresses": ["10.23.0.5"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  kubectl -n "$NS" annotate "$CLAIMS" c1 "$MOVE="
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=30s
  pk_wait_gone -n "$NS" "$CLAIMS" c1
  # The IPAddress is clusterctl's to delete: poolkeeper neither unprotects
  # nor deletes it, and does not release its address.
  sleep 2
  local a
  a=$(kubectl -n "$NS" get "$ADDRS" c1 -o json)
  [[ $(jq -r .spec.address <<<"$a") == 10.23.0.5 ]]
  jq -e '.metadata.finalizers | index("ipam.poolkeeper.io/protect-address")' <<<"$a"
  if grep -F "msg=\"address released\" ipaddress=$NS/c1 " "$PK_E2E_LOG_DIR/controller.log"; then
    return 1
  fi
  claim_j c2 IPPool p
  pk_wait_for "claim c2 waits" _ready "$NS" c2 False PoolExhausted
  # clusterctl then unprotects and deletes the IPAddress: the address is free.
  kubectl -n "$NS" patch "$ADDRS" c1 --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]'
  kubectl -n "$NS" delete "$ADDRS" c1 --ignore-not-found --timeout=30s
  pk_wait_for -t 20 "claim c2 Ready once the IPAddress is gone" _ready "$NS" c2 True Allocated
  [[ $(_address_of "$NS" c2) == 10.23.0.5 ]]
}

# _metric <name{labels}>: the value of one sample on the controller's /metrics.
_metric() {
  local port
  port=$(pk_log_port controller metrics) || return 1
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

_metric_is() { [[ $(_metric "$1") == "$2" ]]; }

# _has_event <ns> <claim> <regex>: an Event about the claim reads "<type> <reason> <note>" like that.
_has_event() {
  kubectl -n "$1" get events.events.k8s.io -o json |
    jq -r --arg n "$2" '.items[] | select(.regarding.name == $n and .regarding.kind == "IPAddressClaim") | "\(.type) \(.reason) \(.note)"' |
    grep -E "$3"
}

@test "allocation, exhaustion and release are told as Events on the claim, and counted in /metrics" {
  _machine
  pool p '{"addresses": ["10.19.0.5-10.19.0.6"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  claim_j c3 IPPool p
  pk_wait_for "claim c3 exhausted" _ready "$NS" c3 False PoolExhausted
  pk_wait_for "an AddressAllocated Event on c1" _has_event "$NS" c1 "^Normal AddressAllocated address 10\.19\.0\.5 allocated from IPPool $NS/p$"
  pk_wait_for "a PoolExhausted Warning on c3" _has_event "$NS" c3 "^Warning PoolExhausted IPPool $NS/p has no free address"
  local labels="{namespace=\"$NS\",pool=\"p\",kind=\"IPPool\"}"
  pk_wait_for "pool gauge used=2" _metric_is "poolkeeper_pool_used_addresses$labels" 2
  _metric_is "poolkeeper_pool_addresses$labels" 2
  _metric_is "poolkeeper_pool_free_addresses$labels" 0
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_for "an AddressReleased Event on c1" _has_event "$NS" c1 "^Normal AddressReleased address 10\.19\.0\.5 returned to IPPool/$NS/p$"
  pk_wait_for "claim c3 Ready" _ready "$NS" c3 True
  (($(_metric poolkeeper_allocations_total) >= 3))
  (($(_metric poolkeeper_releases_total) >= 1))
  (($(_metric 'poolkeeper_allocation_failures_total{reason="PoolExhausted"}') >= 1))
  (($(_metric poolkeeper_claim_ready_seconds_count) >= 3))
  (($(_metric 'poolkeeper_api_requests_total{verb="post",code="201"}') >= 3))
  _metric_is poolkeeper_leader 1
}

@test "a reuse grace period survives a controller restart (recorded in the pool's status)" {
  _machine
  pool p '{"addresses": ["10.20.0.5"], "prefix": 24, "addressReuseGracePeriodSeconds": 25}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  local released=$SECONDS
  pk_wait_for "the quarantine in the pool's status" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.quarantinedAddresses[0].address}') == 10.20.0.5 ]]"
  pk_stop controller KILL
  kubectl -n "$PK_RELEASE_NS" delete lease poolkeeper-controller --ignore-not-found
  _start_controller
  claim_j c2 IPPool p
  pk_wait_for "claim c2 waits for the grace period" _ready "$NS" c2 False PoolExhausted
  pk_wait_for -t 60 "claim c2 Ready after the grace period" _ready "$NS" c2 True
  echo "bound $((SECONDS - released))s after the release"
  ((SECONDS - released >= 23))
  [[ $(_address_of "$NS" c2) == 10.20.0.5 ]]
  pk_wait_for "the quarantine cleared" bash -c "[[ -z \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.quarantinedAddresses[*].address}') ]]"
}

# _past_the_webhook <command...>: runs the command while the IPAddress
# admission registration is taken out (as if poolkeeper-webhook were not
# installed), retried until the apiserver no longer calls the webhook; then
# puts the registration back as it was.
_past_the_webhook() {
  local name=addresses.validate.ipam.poolkeeper.io vwc saved rc=0
  vwc=$(kubectl get validatingwebhookconfigurations -o json |
    jq -r --arg w "$name" '.items[] | select(any(.webhooks[]; .name == $w)) | .metadata.name')
  saved=$(kubectl get validatingwebhookconfiguration "$vwc" -o json |
    jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)')
  jq --arg w "$name" '.webhooks |= map(select(.name != $w))' <<<"$saved" | kubectl replace -f - >/dev/null
  pk_wait_for -t 30 "$* past the webhook" "$@" || rc=$?
  kubectl replace -f - >/dev/null <<<"$saved"
  return $rc
}

@test "an address held by two IPAddresses is reported (condition, Event, metric) and left as it is" {
  _machine
  pool p '{"addresses": ["10.21.0.5-10.21.0.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  # A second IPAddress for 10.21.0.5, made by hand for a claim of a paused
  # Cluster (so the controller leaves that claim alone).
  kubectl -n "$NS" apply -f - <<<'{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "frozen"}, "spec": {"paused": true}}'
  local uid cuid puid doc
  uid=$(pk_jsonpath -n "$NS" configmap machine '{.metadata.uid}')
  _claim_doc by-hand IPPool p "$uid" |
    jq '.spec.clusterName = "frozen" | .metadata.labels["cluster.x-k8s.io/cluster-name"] = "frozen"' |
    kubectl -n "$NS" apply -f -
  cuid=$(pk_jsonpath -n "$NS" "$CLAIMS" by-hand '{.metadata.uid}')
  puid=$(pk_jsonpath -n "$NS" "$POOLS" p '{.metadata.uid}')
  doc=$(jq -n --arg c "$cuid" --arg p "$puid" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddress",
    metadata: {name: "by-hand", ownerReferences: [
      {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim", name: "by-hand", uid: $c,
       controller: true, blockOwnerDeletion: true},
      {apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", name: "p", uid: $p,
       controller: false, blockOwnerDeletion: true}]},
    spec: {address: "10.21.0.5", prefix: 24, claimRef: {name: "by-hand"},
           poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "p"}}}')
  # The webhook refuses a duplicate: only an IPAddress made while it is away can be one.
  run kubectl -n "$NS" create -f - <<<"$doc"
  [ "$status" -ne 0 ]
  [[ $output == *'spec.address: "10.21.0.5" is already held by another IPAddress of the pool'* ]]
  echo "$doc" >"$PK_TMP/by-hand.json"
  _past_the_webhook kubectl -n "$NS" create -f "$PK_TMP/by-hand.json"
  pk_wait_for "the pool's Ready condition says DuplicateAddresses" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}') == DuplicateAddresses ]]"
  pk_jsonpath -n "$NS" "$POOLS" p '{.status.conditions[?(@.type=="Ready")].message}' | grep -F "address 10.21.0.5 is held by more than one IPAddress"
  pk_wait_for "a DuplicateAddresses Warning on the pool" bash -c "kubectl -n $NS get events.events.k8s.io -o json | jq -e '.items[] | select(.regarding.kind == \"IPPool\" and .reason == \"DuplicateAddresses\" and .type == \"Warning\")'"
  _metric_is "poolkeeper_pool_duplicate_addresses{namespace=\"$NS\",pool=\"p\",kind=\"IPPool\"}" 1
  # Nothing was changed: both IPAddresses hold 10.21.0.5, the claim is still bound.
  [[ $(_address_of "$NS" c1) == 10.21.0.5 && $(_address_of "$NS" by-hand) == 10.21.0.5 ]]
  _ready "$NS" c1 True Allocated
  # The next claim does not get the duplicated address either.
  claim_j c2 IPPool p
  pk_wait_for "claim c2 Ready" _ready "$NS" c2 True
  [[ $(_address_of "$NS" c2) == 10.21.0.6 ]]
  # The copy and its claim deleted by hand (the pool, its other owner, keeps the
  # garbage collector from taking it): the duplicate goes with it.
  kubectl -n "$NS" delete "$CLAIMS" by-hand --timeout=60s
  kubectl -n "$NS" delete "$ADDRS" by-hand --timeout=60s
  pk_wait_for "the pool Ready again" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}') == Ready ]]"
  _metric_is "poolkeeper_pool_duplicate_addresses{namespace=\"$NS\",pool=\"p\",kind=\"IPPool\"}" 0
  # c1 still holds its address: releasing the copy did not free it.
  [[ $(pk_jsonpath -n "$NS" "$POOLS" p '{.status.ipAddresses.used}') == 2 ]]
}

# _inconsistent_ipaddress <name> <address> <claim> <pool>: an IPAddress named <name>
# and owned (controller) by claim <name>, claiming <address> of IPPool <pool> for
# claim <claim>, made by hand past the webhook.
_inconsistent_ipaddress() {
  local cuid puid doc
  cuid=$(pk_jsonpath -n "$NS" "$CLAIMS" "$1" '{.metadata.uid}')
  puid=$(pk_jsonpath -n "$NS" "$POOLS" "$4" '{.metadata.uid}')
  doc=$(jq -n --arg n "$1" --arg a "$2" --arg c "$3" --arg p "$4" --arg cu "$cuid" --arg pu "$puid" \
    '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddress",
      metadata: {name: $n, ownerReferences: [
        {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim", name: $n, uid: $cu,
         controller: true, blockOwnerDeletion: true},
        {apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", name: $p, uid: $pu,
         controller: false, blockOwnerDeletion: true}]},
      spec: {address: $a, prefix: 24, claimRef: {name: $c},
             poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: $p}}}')
  echo "$doc" >"$PK_TMP/$1.json"
  _past_the_webhook kubectl -n "$NS" create -f "$PK_TMP/$1.json"
}

_metric_at_least() { (($(_metric "$1") >= $2)); }

@test "a hand-made IPAddress owned by a claim but inconsistent is never adopted: reported (condition, Event, metric), left as it is; once deleted the claim gets a free address" {
  _machine
  pool p '{"addresses": ["10.24.0.5-10.24.0.9"], "prefix": 24}'
  claim_j c1 IPPool p
  pk_wait_for "claim c1 Ready" _ready "$NS" c1 True
  [[ $(_address_of "$NS" c1) == 10.24.0.5 ]]
  # Claims t1 and t2 with IPAddresses made before the controller could allocate:
  # t1's takes c1's address, t2's names another claim.
  pk_stop controller
  claim_j t1 IPPool p
  claim_j t2 IPPool p
  _inconsistent_ipaddress t1 10.24.0.5 t1 p
  _inconsistent_ipaddress t2 10.24.0.7 c1 p
  local t1_uid
  t1_uid=$(pk_jsonpath -n "$NS" "$ADDRS" t1 '{.metadata.uid}')
  _start_controller
  pk_wait_for "claim t1 not ready: InconsistentIPAddress" _ready "$NS" t1 False InconsistentIPAddress
  pk_wait_for "claim t2 not ready: InconsistentIPAddress" _ready "$NS" t2 False InconsistentIPAddress
  local m1 m2
  m1=$(pk_jsonpath -n "$NS" "$CLAIMS" t1 '{.status.conditions[?(@.type=="Ready")].message}')
  m2=$(pk_jsonpath -n "$NS" "$CLAIMS" t2 '{.status.conditions[?(@.type=="Ready")].message}')
  echo "t1: $m1"
  echo "t2: $m2"
  [[ $m1 == *'spec.address: "10.24.0.5" is already held by another IPAddress of the pool'* ]]
  [[ $m2 == *'spec.claimRef.name: "c1" is not IPAddressClaim "t2", which owns this IPAddress'* ]]
  pk_wait_for "an InconsistentIPAddress Warning on t1" _has_event "$NS" t1 "^Warning InconsistentIPAddress .*already held by another IPAddress"
  # counted once per claim (the restarted controller counts from 0)
  pk_wait_for "the metric counts both" _metric_at_least poolkeeper_inconsistent_ipaddresses_total 2
  # Not adopted and not changed: no addressRef, the IPAddress as it was made.
  [[ -z $(pk_jsonpath -n "$NS" "$CLAIMS" t1 '{.status.addressRef.name}') ]]
  local a
  a=$(kubectl -n "$NS" get "$ADDRS" t1 -o json)
  [[ $(jq -r .metadata.uid <<<"$a") == "$t1_uid" && $(jq -r .spec.address <<<"$a") == 10.24.0.5 ]]
  [[ $(jq -r '.metadata.finalizers // [] | length' <<<"$a") == 0 ]]
  # c1 keeps its address and stays Ready.
  _ready "$NS" c1 True Allocated
  [[ $(_address_of "$NS" c1) == 10.24.0.5 ]]
  # Deleted by hand: t1 gets a free address, never c1's again.
  kubectl -n "$NS" delete "$ADDRS" t1 --timeout=30s
  pk_wait_for "claim t1 Ready" _ready "$NS" t1 True Allocated
  local t1_addr
  t1_addr=$(_address_of "$NS" t1)
  echo "t1 now holds $t1_addr"
  [[ $t1_addr != 10.24.0.5 && $t1_addr != 10.24.0.7 ]]
  [[ $(_address_of "$NS" c1) == 10.24.0.5 ]]
  # ... and t2 likewise.
  kubectl -n "$NS" delete "$ADDRS" t2 --timeout=30s
  pk_wait_for "claim t2 Ready" _ready "$NS" t2 True Allocated
  [[ $(_address_of "$NS" t2) != 10.24.0.5 && $(_address_of "$NS" t2) != "$t1_addr" ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == 3 ]]"
}

@test "SIGTERM: the controller exits 0 and gives the Lease up" {
  local pid
  pid=$(pk_pid controller)
  kill -TERM "$pid"
  pk_wait_for -t 20 "the controller to exit" bash -c "! kill -0 $pid 2>/dev/null"
  grep -q 'msg="stopped"' "$PK_E2E_LOG_DIR/controller.log"
  [[ -z $(pk_jsonpath -n "$PK_RELEASE_NS" lease poolkeeper-controller '{.spec.holderIdentity}') ]]
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

# _identity <name>: the Lease identity a controller's log reports.
_identity() {
  grep -o 'msg="leader election" .*' "$PK_E2E_LOG_DIR/$1.log" | tail -n 1 | grep -o 'identity=[^ ]*' | cut -d= -f2
}

# _holder_is <identity>...: the Lease names one of them as holder.
_holder_is() {
  local h id
  h=$(pk_jsonpath -n "$PK_RELEASE_NS" lease poolkeeper-controller '{.spec.holderIdentity}')
  echo "holder: $h"
  for id in "$@"; do
    [[ -n $id && $h == "$id" ]] && return 0
  done
  return 1
}

# Log lines of the controller's writes (info, and debug with --v=1).
WRITES='msg="(address allocated|address released|claim ready|claim not ready|patched|IPAddress exists: adopting|write failed)"'

# _pool_addresses <ns> <pool>: the addresses of the IPAddresses of an IPPool, one a line.
_pool_addresses() {
  kubectl -n "$1" get "$ADDRS" -o json |
    jq -r --arg p "$2" '.items[] | select(.spec.poolRef.kind=="IPPool" and .spec.poolRef.name==$p) | .spec.address'
}

@test "two controllers: only the Lease holder writes; after a SIGKILL of the holder the other takes over" {
  local bin log=$PK_E2E_LOG_DIR
  bin=$(pk_bin poolkeeper-controller)
  local from1
  from1=$(($(wc -l <"$log/controller.log") + 1))
  : >"$log/controller2.log"
  PK_START_AS=$CONTROLLER_KUBECONFIG pk_start controller2 "$bin" --v=1 --health-probe-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 \
    --leader-election-namespace "$PK_RELEASE_NS"
  pk_wait_for -t 20 "controller2 to campaign" grep -q 'msg="leader election"' "$log/controller2.log"
  local id1 id2 leader standby standby_id
  id1=$(_identity controller)
  id2=$(_identity controller2)
  echo "controller: $id1, controller2: $id2"
  [[ -n $id1 && -n $id2 && $id1 != "$id2" ]]
  pk_wait_for -t 30 "one of them to hold the Lease" _holder_is "$id1" "$id2"
  if _holder_is "$id1"; then
    leader=controller standby=controller2 standby_id=$id2
  else
    leader=controller2 standby=controller standby_id=$id1
  fi
  echo "leader $leader, standby $standby"
  # Only lines written from now on count.
  local from_l from_s
  if [[ $leader == controller ]]; then from_l=$from1 from_s=1; else from_l=1 from_s=$from1; fi

  _machine
  pool p '{"addresses": ["10.24.0.0/24"], "prefix": 24}'
  local uid
  uid=$(pk_jsonpath -n "$NS" configmap machine '{.metadata.uid}')
  _claim_docs 0 20 IPPool p "$uid" | kubectl -n "$NS" create -f - >/dev/null
  pk_wait_for -t 60 "all 20 claims Ready" _all_ready "$NS" 20
  local addrs
  addrs=$(_pool_addresses "$NS" p)
  [[ $(wc -l <<<"$addrs") == 20 && -z $(sort <<<"$addrs" | uniq -d) ]]
  # The leader's log shows its writes; the standby's shows none.
  [[ $(tail -n +"$from_l" "$log/$leader.log" | grep -cF "msg=\"address allocated\" claim=$NS/") == 20 ]]
  if tail -n +"$from_s" "$log/$standby.log" | grep -E "$WRITES"; then
    echo "the standby wrote"
    return 1
  fi
  grep -q 'msg="another process leads"' "$log/$standby.log"

  # The leader dies without giving the Lease up: the standby takes it once it expires.
  pk_stop "$leader" KILL
  local t0=$SECONDS
  pk_wait_for -t 45 "$standby to take the Lease" _holder_is "$standby_id"
  echo "took over after $((SECONDS - t0))s"
  _claim_docs 20 5 IPPool p "$uid" | kubectl -n "$NS" create -f - >/dev/null
  pk_wait_for -t 30 "all 25 claims Ready" _all_ready "$NS" 25
  addrs=$(_pool_addresses "$NS" p)
  [[ $(wc -l <<<"$addrs") == 25 && -z $(sort <<<"$addrs" | uniq -d) ]]
  [[ $(tail -n +"$from_s" "$log/$standby.log" | grep -cF "msg=\"address allocated\" claim=$NS/") == 5 ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == 25 ]]"

  # Back to the suite's single controller, leading.
  pk_stop controller2
  _one_controller
  pk_wait_for -t 30 "controller to lead" _controller_leads
}

_controller_leads() { _holder_is "$(_identity controller)"; }

# _pool_empty <ns> <pool>: the IPPool's status counts nothing used, all free.
_pool_empty() {
  local c used free total
  c=$(pk_jsonpath -n "$1" "$POOLS" "$2" '{.status.ipAddresses.used} {.status.ipAddresses.free} {.status.ipAddresses.total}')
  echo "used free total: $c"
  read -r used free total <<<"$c"
  [[ $used == 0 && -n $total && $free == "$total" ]]
}

@test "SIGKILL while 500 claims are created: every claim ends Ready, no address held twice, none leaks" {
  _machine
  pool p '{"addresses": ["10.16.0.0/22"], "prefix": 22}'
  local uid n=500
  uid=$(pk_jsonpath -n "$NS" configmap machine '{.metadata.uid}')
  # Four streams of 125, as four machines' worth of provider workers would.
  local creators=() j
  for ((j = 0; j < 4; j++)); do
    _claim_docs $((j * n / 4)) $((n / 4)) IPPool p "$uid" | kubectl -n "$NS" create -f - >/dev/null &
    creators+=($!)
  done
  # Killed once it has allocated some, while claims are still being created;
  # the new process starts at once and leads once the Lease expires.
  pk_wait_for -t 60 "the first allocations" bash -c "(( \$(kubectl -n $NS get $ADDRS -o name | wc -l) >= 10 ))"
  pk_stop controller KILL
  echo "controller killed with $(kubectl -n "$NS" get "$CLAIMS" -o name | wc -l) of $n claims created"
  _start_controller
  for j in "${creators[@]}"; do wait "$j"; done
  local t0=$SECONDS
  # Generous: each IPAddress create is reviewed against the namespace's other
  # IPAddresses (a LIST per review until the webhook answers from a cache).
  pk_wait_for -t 300 "all $n claims Ready" _all_ready "$NS" "$n"
  echo "all Ready $((SECONDS - t0))s after the last claim was created"
  local addrs
  addrs=$(_pool_addresses "$NS" p)
  [[ $(wc -l <<<"$addrs") == "$n" ]]
  [[ -z $(sort <<<"$addrs" | uniq -d) ]]
  # Every address in the cluster, all pools: no value held twice within a pool.
  [[ -z $(kubectl get "$ADDRS" -A -o json | jq -r '.items[] | "\(.spec.poolRef.kind)/\(.metadata.namespace)/\(.spec.poolRef.name) \(.spec.address)"' | sort | uniq -d) ]]
  pk_wait_for "pool counts" bash -c "[[ \$(kubectl -n $NS get $POOLS p -o jsonpath='{.status.ipAddresses.used}') == $n ]]"
  # No leak: once the claims are gone, so is every IPAddress of the pool, and
  # the pool counts nothing used.
  t0=$SECONDS
  kubectl -n "$NS" delete "$CLAIMS" --all --wait=false >/dev/null
  pk_wait_for -t 150 "every claim gone" bash -c "[[ -z \$(kubectl -n $NS get $CLAIMS -o name) ]]"
  echo "all claims gone after $((SECONDS - t0))s"
  [[ -z $(_pool_addresses "$NS" p) ]]
  pk_wait_for "pool counts back to 0" _pool_empty "$NS" p
  # Nothing holds the pool any more.
  kubectl -n "$NS" delete "$POOLS" p --timeout=60s
}
