#!/usr/bin/env bats
# `poolkeeper conformance` on the real plane, against three providers:
#   - poolkeeper, installed from the chart, its webhook and controller running
#     as the chart's ServiceAccounts: every check passes;
#   - the in-cluster IPAM provider (the reference provider), its manager built
#     unchanged from the Go module proxy by `e2e/build incluster`, its CRDs
#     applied from the module cache, run with its webhooks off as a
#     ServiceAccount bound to the ClusterRole it ships
#     (config/rbac/role.yaml): the results docs/compatibility.md records,
#     check for check;
#   - broken set-ups: poolkeeper's controller stopped, and a stand-in
#     provider (a shell loop) that binds claims with IPAddresses made by hand,
#     without owner references or finalizers: the checks that test what is
#     missing fail, and the run exits 1.
# conformance itself runs with the plane's admin kubeconfig.

bats_require_minimum_version 1.5.0

load helpers
load poolkeeper
# shellcheck source=../lib/common.sh
. "$E2E_DIR/lib/common.sh"

CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io
ICP_DIR=$(pk_module_dir "sigs.k8s.io/cluster-api-ipam-provider-in-cluster@$ICP_VERSION")
ICP_BIN=$PK_CACHE/incluster-$ICP_VERSION/bin/cluster-api-ipam-provider-in-cluster
ICP_NS=pk-e2e-incluster
SUITE_LABEL=e2e.poolkeeper.io/suite=conformance
# The stand-in provider's pool kind: a CRD of this suite's own.
HAND_GROUP=hand.e2e.poolkeeper.io

setup_file() {
  pk_setup_file
  [[ -x $ICP_BIN && -d $ICP_DIR/config/crd/bases ]] ||
    { echo "$ICP_BIN or $ICP_DIR is missing: run e2e/build incluster" >&2; return 1; }
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS"
  pk_start_webhook webhook "$CERTS"
  pk_start_controller controller
  _incluster_crds || return 1
  _hand_crd || return 1
  _incluster_account || return 1
}

teardown_file() {
  pk_stop incluster
  pk_stop controller
  pk_uninstall_poolkeeper poolkeeper poolkeeper-system
  pk_stop webhook
  kubectl delete clusterrolebinding,clusterrole -l "$SUITE_LABEL" --ignore-not-found >/dev/null 2>&1
  kubectl delete namespace "$ICP_NS" --ignore-not-found --wait=false >/dev/null 2>&1
  kubectl delete crd -l "$SUITE_LABEL" --ignore-not-found --wait=false >/dev/null 2>&1
}

setup() {
  pk_setup
  jq -n '{apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", metadata: {name: "prod"}, spec: {paused: false}}' |
    kubectl -n "$NS" apply -f - >/dev/null
}

teardown() {
  pk_stop hand
  pk_stop incluster
  if [[ -f $BATS_FILE_TMPDIR/controller-stopped ]]; then
    rm -f "$BATS_FILE_TMPDIR/controller-stopped"
    pk_start_controller controller
  fi
  pk_teardown
}

# _incluster_crds: the provider's four CRDs as its module ships them, labelled for the
# teardown, applied server-side; waits until they are established.
_incluster_crds() {
  local f
  for f in "$ICP_DIR"/config/crd/bases/*.yaml; do
    kubectl create --dry-run=client --validate=false -o json -f "$f" |
      jq -c --arg l "${SUITE_LABEL%%=*}" '.metadata.labels[$l] = "conformance"' |
      kubectl apply --server-side --force-conflicts -f - >/dev/null || return 1
  done
  kubectl wait --for=condition=Established --timeout=60s crd -l "$SUITE_LABEL" >/dev/null
}

# _hand_crd: HandPool, the stand-in provider's pool kind: namespaced, open schema.
_hand_crd() {
  jq -n --arg g "$HAND_GROUP" --arg l "${SUITE_LABEL%%=*}" '
    {apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition",
     metadata: {name: ("handpools." + $g), labels: {($l): "conformance"}},
     spec: {group: $g, scope: "Namespaced",
       names: {plural: "handpools", singular: "handpool", kind: "HandPool", listKind: "HandPoolList"},
       versions: [{name: "v1", served: true, storage: true,
         schema: {openAPIV3Schema: {type: "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}' |
    kubectl apply -f - >/dev/null || return 1
  kubectl wait --for=condition=Established --timeout=60s "crd/handpools.$HAND_GROUP" >/dev/null
}

# _incluster_account: ServiceAccount incluster in $ICP_NS bound to the ClusterRole the
# provider ships, and a kubeconfig for it.
_incluster_account() {
  kubectl create namespace "$ICP_NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n "$ICP_NS" create serviceaccount incluster --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create --dry-run=client --validate=false -o json -f "$ICP_DIR/config/rbac/role.yaml" |
    jq -c --arg l "${SUITE_LABEL%%=*}" '.metadata.name = "pk-e2e-incluster-manager" | .metadata.labels[$l] = "conformance"' |
    kubectl apply -f - >/dev/null || return 1
  kubectl create clusterrolebinding pk-e2e-incluster-manager --clusterrole=pk-e2e-incluster-manager \
    --serviceaccount="$ICP_NS:incluster" --dry-run=client -o json |
    jq -c --arg l "${SUITE_LABEL%%=*}" '.metadata.labels[$l] = "conformance"' | kubectl apply -f - >/dev/null || return 1
  mkdir -p "$PK_E2E_STATE/kubeconfigs"
  pk_sa_kubeconfig "$ICP_NS" incluster "$PK_E2E_STATE/kubeconfigs/incluster" 4h
}

# _start_incluster: the provider's manager running as that ServiceAccount: webhooks off
# (--webhook-port=0), no leader election, no diagnostics listener; returns once its claim
# controller runs. Only the tests that need it run it (see the last test for why).
_start_incluster() {
  local kc=$PK_E2E_STATE/kubeconfigs/incluster port
  port=$(pk_free_port)
  : >"$PK_E2E_LOG_DIR/incluster.log"
  PK_START_AS=$kc pk_start incluster "$ICP_BIN" --webhook-port=0 --leader-elect=false \
    --diagnostics-address=0 --insecure-diagnostics --health-probe-bind-address "127.0.0.1:$port" || return 1
  pk_wait_for -t 60 "the in-cluster provider's claim controller to start" \
    grep -q 'Starting workers.*ipaddressclaim' "$PK_E2E_LOG_DIR/incluster.log"
}

# _conformance <pool ref> [flags]: runs conformance in $NS with the admin's kubeconfig;
# output in $output, exit status in $status (bats run).
_conformance() {
  local bin
  bin=$(pk_bin poolkeeper)
  run "$bin" conformance --pool-ref "$1" --namespace "$NS" "${@:2}"
  echo "$output" >&3 2>/dev/null || true
}

# _expect <verdict> <check...>: each check's line has that verdict.
_expect() {
  local v=$1 c
  shift
  for c in "$@"; do
    grep -q "^$v $c: " <<<"$output" || { echo "want '$v $c', got:"; echo "$output"; return 1; }
  done
}

# _clean: nothing of the run is left in $NS (claims, addresses, Clusters other than
# the test's own, the owner).
_clean() {
  [[ -z $(kubectl -n "$NS" get "$CLAIMS,$ADDRS" -o name) ]] || return 1
  [[ $(kubectl -n "$NS" get clusters.cluster.x-k8s.io -o name) == "cluster.cluster.x-k8s.io/prod" ]] || return 1
  [[ -z $(kubectl -n "$NS" get configmaps -o name | grep conf-) ]]
}

ALL_CHECKS=(address-name owner-claim owner-pool claim-finalizer address-finalizer address-ref
  ready ready-reason paused unpaused release cluster-gone no-duplicates)

@test "poolkeeper's IPPool: every check passes, one line each, and nothing is left" {
  jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.70.0.0/24"], prefix: 24, gateway: "10.70.0.1"}}' | kubectl -n "$NS" apply -f - >/dev/null
  _conformance ipam.poolkeeper.io/IPPool/nodes --timeout 60s
  [ "$status" -eq 0 ]
  _expect pass "${ALL_CHECKS[@]}"
  [ "$(grep -c -E '^(pass|fail|skip) ' <<<"$output")" -eq "${#ALL_CHECKS[@]}" ]
  [[ $output == *"conformance: 13 passed, 0 failed, 0 skipped"* ]]
  # every line cites the contract
  [ "$(grep -E '^(pass|fail|skip) ' <<<"$output" | grep -c '\[.*"')" -eq "${#ALL_CHECKS[@]}" ]
  pk_wait_for -t 30 "the run's objects to be gone" _clean
}

@test "poolkeeper's GlobalIPPool from a namespace of the run's own, deleted afterwards" {
  local pool=conf-global-$RANDOM
  jq -n --arg n "$pool" '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "GlobalIPPool", metadata: {name: $n},
    spec: {addresses: ["10.71.0.0/24"], prefix: 24}}' | kubectl apply -f - >/dev/null
  run "$(pk_bin poolkeeper)" conformance --pool-ref "ipam.poolkeeper.io/GlobalIPPool/$pool" --burst 5
  kubectl delete globalippools.ipam.poolkeeper.io "$pool" --wait=false >/dev/null
  echo "$output"
  [ "$status" -eq 0 ]
  _expect pass "${ALL_CHECKS[@]}"
  local ns
  ns=$(sed -n 's/^conformance: pool .*, namespace \(pk-conformance-[a-z0-9]*\), run .*/\1/p' <<<"$output")
  [[ -n $ns ]]
  pk_wait_gone -t 60 namespace "$ns"
}

@test "the in-cluster provider's InClusterIPPool: the results docs/compatibility.md records" {
  jq -n '{apiVersion: "ipam.cluster.x-k8s.io/v1alpha2", kind: "InClusterIPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.80.0.10-10.80.0.60"], prefix: 24, gateway: "10.80.0.1"}}' | kubectl -n "$NS" apply -f - >/dev/null
  _start_incluster
  _conformance ipam.cluster.x-k8s.io/InClusterIPPool/nodes --timeout 30s
  [ "$status" -eq 1 ]
  _expect pass address-name owner-claim owner-pool claim-finalizer address-finalizer address-ref \
    paused unpaused release cluster-gone no-duplicates
  _expect fail ready ready-reason
  [[ $output == *"fail ready: "*": no Ready condition ["* ]]
  [[ $output == *"conformance: 11 passed, 2 failed, 0 skipped"* ]]
  pk_wait_for -t 30 "the run's objects to be gone" _clean
}

@test "poolkeeper's controller stopped: allocation checks fail, those with nothing to inspect skip, exit 1" {
  jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.72.0.0/24"], prefix: 24}}' | kubectl -n "$NS" apply -f - >/dev/null
  pk_stop controller
  touch "$BATS_FILE_TMPDIR/controller-stopped"
  _conformance ipam.poolkeeper.io/IPPool/nodes --timeout 8s --burst 5
  [ "$status" -eq 1 ]
  _expect fail address-name claim-finalizer address-ref ready ready-reason unpaused no-duplicates
  _expect skip owner-claim owner-pool address-finalizer release cluster-gone
  # nothing ran, so nothing was allocated while the Cluster was paused
  _expect pass paused
  pk_wait_for -t 30 "the run's objects to be gone" _clean
}

# _hand_provider: binds every unbound claim of $NS on a HandPool, as a careless provider
# would: an IPAddress made by hand (no owner references, no finalizer), then
# status.addressRef; it ignores pauses and never deletes anything.
_hand_provider() {
  local i=10 c
  while :; do
    for c in $(kubectl -n "$NS" get "$CLAIMS" -o json |
      jq -r '.items[] | select(.spec.poolRef.kind == "HandPool" and .status.addressRef.name == null) | .metadata.name'); do
      i=$((i + 1))
      jq -n --arg n "$c" --arg a "10.99.0.$i" --arg g "$HAND_GROUP" '
        {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddress", metadata: {name: $n},
         spec: {address: $a, prefix: 24, claimRef: {name: $n}, poolRef: {apiGroup: $g, kind: "HandPool", name: "nodes"}}}' |
        kubectl -n "$NS" create -f - >/dev/null 2>&1
      kubectl -n "$NS" patch "$CLAIMS" "$c" --subresource=status --type=merge \
        -p "{\"status\":{\"addressRef\":{\"name\":\"$c\"}}}" >/dev/null 2>&1
    done
    sleep 0.3
  done
}

@test "IPAddresses made by hand without owner references: the owner, finalizer, pause and release checks fail" {
  jq -n --arg g "$HAND_GROUP" '{apiVersion: ($g + "/v1"), kind: "HandPool", metadata: {name: "nodes"}, spec: {}}' |
    kubectl -n "$NS" apply -f - >/dev/null
  export -f _hand_provider
  export CLAIMS HAND_GROUP
  pk_start hand bash -c _hand_provider
  _conformance "$HAND_GROUP/HandPool/nodes" --timeout 8s --burst 5
  [ "$status" -eq 1 ]
  _expect pass address-name address-ref unpaused no-duplicates
  _expect fail owner-claim owner-pool claim-finalizer address-finalizer ready ready-reason paused release cluster-gone
  [[ $output == *"fail owner-claim: "*"no owner reference with uid"* ]]
  pk_stop hand
  # the run removed the IPAddresses the stand-in provider left behind
  pk_wait_for -t 30 "the run's objects to be gone" _clean
}

_finalizers() { kubectl -n "$NS" get "$CLAIMS" "$1" -o 'jsonpath={.metadata.finalizers}'; }
_has_icp_finalizer() { [[ $(_finalizers "$1") == *'"ipam.cluster.x-k8s.io/ReleaseAddress"'* ]]; }

@test "both providers installed: the in-cluster provider puts its finalizer on a poolkeeper claim whose Cluster is unpaused, and never removes it" {
  jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.73.0.0/24"], prefix: 24}}' | kubectl -n "$NS" apply -f - >/dev/null
  jq -n '{apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", metadata: {name: "held"}, spec: {paused: true}}' |
    kubectl -n "$NS" apply -f - >/dev/null
  local uid
  uid=$(kubectl -n "$NS" create configmap m1 -o 'jsonpath={.metadata.uid}')
  jq -n --arg u "$uid" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
    metadata: {name: "c1", ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "m1", uid: $u,
      controller: true, blockOwnerDeletion: true}]},
    spec: {clusterName: "held", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "nodes"}}}' |
    kubectl -n "$NS" create -f - >/dev/null
  _start_incluster
  kubectl -n "$NS" patch clusters.cluster.x-k8s.io held --type=merge -p '{"spec":{"paused":false}}' >/dev/null
  # pkg/ipamutil/reconciler.go: clusterToIPClaims maps the Cluster to every claim naming it,
  # whatever its pool; Reconcile adds its finalizer before it looks at the pool
  pk_wait_for -t 30 "the in-cluster provider's finalizer on c1" _has_icp_finalizer c1
  pk_wait_for -t 30 "poolkeeper to bind c1" pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.status.addressRef.name}'
  kubectl -n "$NS" delete "$CLAIMS" c1 --wait=false >/dev/null
  # poolkeeper releases the address and drops its own finalizer; the in-cluster provider's stays
  pk_wait_gone -t 30 -n "$NS" "$ADDRS" c1
  sleep 3
  [[ $(_finalizers c1) == '["ipam.cluster.x-k8s.io/ReleaseAddress"]' ]]
  kubectl -n "$NS" patch "$CLAIMS" c1 --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  pk_wait_gone -t 30 -n "$NS" "$CLAIMS" c1
}

@test "usage errors and an unreachable cluster exit 2" {
  local bin
  bin=$(pk_bin poolkeeper)
  run "$bin" conformance
  [ "$status" -eq 2 ]
  [[ $output == *"--pool-ref is required"* ]]
  run "$bin" conformance --pool-ref ipam.poolkeeper.io/IPPool
  [ "$status" -eq 2 ]
  run "$bin" conformance --pool-ref ipam.poolkeeper.io/IPPool/nodes
  [ "$status" -eq 2 ]
  [[ $output == *"namespaced: name the pool's namespace with --namespace"* ]]
  run "$bin" conformance --pool-ref ipam.poolkeeper.io/IPPool/absent --namespace "$NS"
  [ "$status" -eq 2 ]
  [[ $output == *"pool ipam.poolkeeper.io/IPPool/absent"* ]]
  run "$bin" conformance --pool-ref example.invalid/NoPool/x --namespace "$NS"
  [ "$status" -eq 2 ]
  printf 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n' >"$PK_TMP/kc"
  run "$bin" conformance --pool-ref ipam.poolkeeper.io/IPPool/nodes --namespace "$NS" --kubeconfig "$PK_TMP/kc" --timeout 2s
  [ "$status" -eq 2 ]
}
