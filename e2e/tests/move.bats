#!/usr/bin/env bats
# A real `clusterctl move` between two real control planes on this machine.
#
# Two planes of their own ("src" and "tgt", each with its own PK_E2E_STATE
# under the suite's temporary folder; the suite's shared plane is not
# touched). On each, `clusterctl init` installs from a local repository a
# minimal Cluster API release (the module's CRDs and metadata.yaml, see
# clusterctl.bash) and poolkeeper's own release (scripts/release, as `make
# release` writes it). No Deployment runs (there is no kubelet): what counts
# is clusterctl's inventory and the labels it puts on the CRDs. On each
# plane poolkeeper-webhook and poolkeeper-controller run as the release's own
# ServiceAccounts (rendered from the chart), and the release's webhook
# registrations are pointed at the local webhook.
#
# The fixture, in namespace fleet of the source: a Cluster whose status says
# it is provisioned (what clusterctl move checks), 100 stand-in machines
# (ConfigMaps owned by the Cluster, which clusterctl moves with it), and 200
# claims owned by them, two per machine, shaped as CAPV makes them
# (controllers/vspherevm_ipaddress_reconciler.go of
# cluster-api-provider-vsphere: named <vm>-<device>-<pool>, the
# cluster-name label and no spec.clusterName, an owner reference with
# neither controller nor blockOwnerDeletion, CAPV's claim finalizer,
# IPAM v1beta1), one on an IPPool of the namespace and one on a GlobalIPPool.

load helpers
load poolkeeper
load clusterctl

CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io
POOLS=ippools.ipam.poolkeeper.io
GPOOLS=globalippools.ipam.poolkeeper.io
CLUSTERS=clusters.cluster.x-k8s.io
FLEET=fleet
GPOOL=move-shared
CAPV_FINALIZER=vspherevm.infrastructure.cluster.x-k8s.io/ip-claim-protection

# on <src|tgt>: this shell talks to that plane (kubectl, pk_start, pk_stop, its logs).
on() {
  export PK_E2E_STATE=$PLANES/$1
  eval "$("$CLUSTER" env)"
  if [[ -f $PK_E2E_STATE/poolkeeper.env ]]; then
    # shellcheck disable=SC1091
    . "$PK_E2E_STATE/poolkeeper.env"
  fi
  return 0
}

# _init_plane: clusterctl init, then poolkeeper's daemons as the release's ServiceAccounts.
_init_plane() {
  local capi k ca
  capi=$(. "$E2E_DIR/lib/common.sh" && echo "$CAPI_VERSION")
  pk_certmanager_standins "$PK_E2E_STATE/stand-in-crds" || return 1
  cctl init --core "cluster-api:$capi" --bootstrap "kubeadm:$capi" --control-plane "kubeadm:$capi" \
    --ipam "poolkeeper:$VERSION" >>"$PK_E2E_LOG_DIR/clusterctl.log" 2>&1 ||
    { tail -n 20 "$PK_E2E_LOG_DIR/clusterctl.log" >&2; return 1; }
  pk_certs "$PK_E2E_STATE/certs" || return 1
  WEBHOOK_PORT=$(pk_free_port)
  ca=$(base64 -w0 <"$PK_E2E_STATE/certs/ca.crt")
  # The release's registrations call the Service of its webhook Deployment: here they call
  # the webhook on loopback, at the same paths.
  for k in validating mutating; do
    kubectl get "${k}webhookconfiguration" "poolkeeper-$k" -o json |
      jq --arg base "https://127.0.0.1:$WEBHOOK_PORT" --arg ca "$ca" \
        '.webhooks |= map(.clientConfig = {url: ($base + .clientConfig.service.path), caBundle: $ca})' |
      kubectl replace -f - >/dev/null || return 1
  done
  mkdir -p "$PK_E2E_STATE/kubeconfigs"
  WEBHOOK_KUBECONFIG=$PK_E2E_STATE/kubeconfigs/webhook
  CONTROLLER_KUBECONFIG=$PK_E2E_STATE/kubeconfigs/controller
  PK_RELEASE_NS=poolkeeper-system
  "$CLUSTER" sa-kubeconfig poolkeeper-system poolkeeper-webhook "$WEBHOOK_KUBECONFIG" 4h || return 1
  "$CLUSTER" sa-kubeconfig poolkeeper-system poolkeeper-controller "$CONTROLLER_KUBECONFIG" 4h || return 1
  export WEBHOOK_PORT WEBHOOK_KUBECONFIG CONTROLLER_KUBECONFIG PK_RELEASE_NS
  declare -p WEBHOOK_PORT WEBHOOK_KUBECONFIG CONTROLLER_KUBECONFIG PK_RELEASE_NS |
    sed 's/^declare -x/export/' >"$PK_E2E_STATE/poolkeeper.env"
  pk_start_webhook webhook "$PK_E2E_STATE/certs" || return 1
  pk_start_controller controller
}

setup_file() {
  PLANES=$BATS_FILE_TMPDIR/planes
  export PLANES
  pk_cctl_repository "$BATS_FILE_TMPDIR/clusterctl" || return 1
  pk_cctl_core_release || return 1
  local p
  for p in src tgt; do
    on "$p"
    "$CLUSTER" up 3>&- >&2 || return 1
    _init_plane || return 1
  done
}

teardown_file() {
  local p
  for p in src tgt; do
    [[ -d $PLANES/$p ]] || continue
    on "$p"
    pk_stop controller
    pk_stop webhook
    "$CLUSTER" down >&2 || true
  done
  return 0
}

setup() { :; }

teardown() {
  local p f
  [[ -n ${BATS_TEST_COMPLETED:-} ]] && return 0
  for p in src tgt; do
    for f in "$PLANES/$p"/logs/{controller,webhook,clusterctl,kube-apiserver}.log; do
      [[ -f $f ]] || continue
      echo "----- last 30 lines of $p: $(basename "$f")"
      tail -n 30 "$f"
    done
  done
  return 0
}

# shellcheck disable=SC2016 # jq programs
# A stand-in machine per number: a ConfigMap owned by the Cluster, as a VSphereVM is (through
# its VSphereMachine and Machine) in a real cluster.
MACHINE_JQ='range($first; $first + $n) | "vm-\(. | tostring | ("00" + .)[-3:])" as $m |
  {apiVersion: "v1", kind: "ConfigMap",
   metadata: {name: $m, labels: {"cluster.x-k8s.io/cluster-name": "prod"},
              ownerReferences: [{apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "prod", uid: $uid}]}}'
# Two claims per machine (device 0: pool 0 the IPPool, pool 1 the GlobalIPPool), as CAPV
# creates them: EnsureOwnerRef (no controller, no blockOwnerDeletion), the cluster-name label,
# its finalizer, no spec.clusterName.
CLAIMS_JQ='.items[] | {name: .metadata.name, uid: .metadata.uid} as $m |
  ([["IPPool", "nodes"], ["GlobalIPPool", $gpool]] | to_entries[] |
   {apiVersion: "ipam.cluster.x-k8s.io/v1beta1", kind: "IPAddressClaim",
    metadata: {name: "\($m.name)-0-\(.key)", labels: {"cluster.x-k8s.io/cluster-name": "prod"},
               finalizers: [$fin],
               ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: $m.name, uid: $m.uid}]},
    spec: {poolRef: {apiGroup: "ipam.poolkeeper.io", kind: .value[0], name: .value[1]}}})'

_bound_count() {
  kubectl -n "$FLEET" get "$CLAIMS" -o json |
    jq '[.items[] | select(.status.addressRef.name == .metadata.name) |
         select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
_bound_is() { local n; n=$(_bound_count); echo "bound: $n"; [[ $n == "$1" ]]; }

# _specs: every IPAddress of the namespace, name and spec, sorted.
_specs() { kubectl -n "$FLEET" get "$ADDRS" -o json | jq -S '[.items[] | {name: .metadata.name, spec}] | sort_by(.name)'; }

# _provisioned: what clusterctl move checks of Cluster prod before it starts: infrastructure
# provisioned, control plane initialized (v1beta2 status; cmd/clusterctl/client/cluster/mover.go).
# Cluster API's own controller would write it; none runs on these planes, and a move drops status.
_provisioned() {
  kubectl -n "$FLEET" patch "$CLUSTERS" prod --subresource=status --type=merge -p \
    '{"status": {"initialization": {"infrastructureProvisioned": true}, "conditions": [{"type": "ControlPlaneInitialized", "status": "True", "reason": "Initialized", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' >/dev/null
}

_allocations() { grep -c 'msg="address allocated"' "$PK_E2E_LOG_DIR/controller.log" || true; }

@test "clusterctl init on both planes: Cluster API core and poolkeeper in the inventory, poolkeeper's CRDs labelled to move with their clusters" {
  local p
  for p in src tgt; do
    on "$p"
    run kubectl get providers.clusterctl.cluster.x-k8s.io -A -o jsonpath='{range .items[*]}{.type}/{.providerName}/{.version} {end}'
    [[ $status -eq 0 ]]
    [[ $output == *"CoreProvider/cluster-api/"* ]]
    [[ $output == *"IPAMProvider/poolkeeper/$VERSION"* ]]
    [[ $(kubectl get crd "$POOLS" -o json | jq -r '.metadata.labels | has("clusterctl.cluster.x-k8s.io/move-hierarchy")') == true ]]
    [[ $(kubectl get crd "$CLAIMS" -o json | jq -r '.metadata.labels | has("clusterctl.cluster.x-k8s.io")') == true ]]
  done
}

@test "the source: a provisioned Cluster, 100 stand-in machines and 200 claims shaped as CAPV's on an IPPool and a GlobalIPPool, all bound" {
  on src
  kubectl create namespace "$FLEET" >/dev/null
  kubectl -n "$FLEET" apply -f - >/dev/null <<EOF
{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "prod"},
 "spec": {"controlPlaneEndpoint": {"host": "192.0.2.10", "port": 6443}}}
EOF
  kubectl -n "$FLEET" apply -f - >/dev/null <<EOF
{"apiVersion": "ipam.poolkeeper.io/v1alpha1", "kind": "IPPool", "metadata": {"name": "nodes"},
 "spec": {"addresses": ["10.210.0.0/24"], "prefix": 24, "gateway": "10.210.0.1"}}
EOF
  kubectl apply -f - >/dev/null <<EOF
{"apiVersion": "ipam.poolkeeper.io/v1alpha1", "kind": "GlobalIPPool", "metadata": {"name": "$GPOOL"},
 "spec": {"addresses": ["10.211.0.0/24"], "prefix": 24, "gateway": "10.211.0.1"}}
EOF
  _provisioned
  local uid
  uid=$(kubectl -n "$FLEET" get "$CLUSTERS" prod -o jsonpath='{.metadata.uid}')
  jq -n --argjson first 0 --argjson n 100 --arg uid "$uid" "$MACHINE_JQ" | kubectl -n "$FLEET" create -f - >/dev/null
  kubectl -n "$FLEET" get configmap -l cluster.x-k8s.io/cluster-name=prod -o json |
    jq --arg gpool "$GPOOL" --arg fin "$CAPV_FINALIZER" "$CLAIMS_JQ" |
    kubectl -n "$FLEET" create -f - >/dev/null 2>&1
  [[ $(kubectl -n "$FLEET" get "$CLAIMS" -o name | wc -l) -eq 200 ]]
  pk_wait_for -t 120 "200 claims bound on the source" _bound_is 200
  # The webhook completed CAPV's claims: clusterName from the label, both owner flags.
  [[ $(kubectl -n "$FLEET" get "$CLAIMS" -o json | jq '[.items[] | select(.spec.clusterName == "prod" and .metadata.ownerReferences[0].controller == true and .metadata.ownerReferences[0].blockOwnerDeletion == true)] | length') -eq 200 ]]
  _specs >"$PLANES/src-specs.json"
  [[ $(jq length "$PLANES/src-specs.json") -eq 200 ]]
}

@test "clusterctl move --dry-run lists every poolkeeper and IPAM kind of the namespace" {
  on src
  run cctl move -n "$FLEET" --to-kubeconfig "$PLANES/tgt/kubeconfig" --dry-run -v 1
  [[ $status -eq 0 ]]
  echo "$output" | head -n 20
  [[ $output == *"Total objects count=503"* ]]
  # What it would create on the target, kind by kind.
  [[ $(grep -c '^Creating IPAddressClaim="' <<<"$output") -eq 200 ]]
  [[ $(grep -c '^Creating IPAddress="' <<<"$output") -eq 200 ]]
  [[ $(grep -c '^Creating IPPool="nodes" Namespace="fleet"' <<<"$output") -eq 1 ]]
  [[ $(grep -c "^Creating GlobalIPPool=\"$GPOOL\"" <<<"$output") -eq 1 ]]
  [[ $(grep -c '^Creating ConfigMap="' <<<"$output") -eq 100 ]]
  # A dry run changes nothing.
  [[ $(pk_jsonpath -n "$FLEET" "$CLUSTERS" prod '{.spec.paused}') != true ]]
}

@test "clusterctl move: exit 0, no IPAddress updated in place; the target allocates nothing and adopts every IPAddress with the source's name and spec; a claim made in the source meanwhile is allocated nowhere" {
  on tgt
  [[ $(_allocations) -eq 0 ]]
  on src
  local log=$PLANES/move.log uid pid
  cctl move -n "$FLEET" --to-kubeconfig "$PLANES/tgt/kubeconfig" -v 5 >"$log" 2>&1 &
  pid=$!
  # The move window: the source Cluster is paused, its objects are being copied.
  pk_wait_for -t 60 "the source Cluster to be paused by the move" \
    bash -c "[[ \$(kubectl -n $FLEET get $CLUSTERS prod -o jsonpath='{.spec.paused}') == true ]]"
  kubectl -n "$FLEET" create configmap vm-late >/dev/null
  uid=$(kubectl -n "$FLEET" get configmap vm-late -o jsonpath='{.metadata.uid}')
  jq -n --arg uid "$uid" --arg fin "$CAPV_FINALIZER" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta1", kind: "IPAddressClaim",
    metadata: {name: "vm-late-0-0", labels: {"cluster.x-k8s.io/cluster-name": "prod"}, finalizers: [$fin],
               ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "vm-late", uid: $uid}]},
    spec: {poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "nodes"}}}' |
    kubectl -n "$FLEET" create -f - >/dev/null
  local rc=0
  wait "$pid" || rc=$?
  tail -n 5 "$log"
  [[ $rc -eq 0 ]]
  # clusterctl logs "Object already exists, updating" when it finds an object on the target
  # (createTargetObject): no IPAddress may have been made there before it came.
  [[ $(grep -F 'Object already exists, updating' "$log" | grep -cF IPAddress) -eq 0 ]]

  on tgt
  pk_wait_for -t 120 "200 claims bound on the target" _bound_is 200
  [[ $(_allocations) -eq 0 ]]
  _specs >"$PLANES/tgt-specs.json"
  diff "$PLANES/src-specs.json" "$PLANES/tgt-specs.json"
  [[ $(pk_jsonpath -n "$FLEET" "$POOLS" nodes '{.status.ipAddresses.used}') == 100 ]]
  [[ $(pk_jsonpath "$GPOOLS" "$GPOOL" '{.status.ipAddresses.used}') == 100 ]]
  run kubectl -n "$FLEET" get "$CLAIMS" vm-late-0-0
  [[ $status -ne 0 ]]

  on src
  # What clusterctl leaves: the claim made during the window (its Cluster has gone, so it
  # waits, allocated nowhere); no other claim, no IPPool, no IPAddress of the IPPool.
  [[ $(kubectl -n "$FLEET" get "$CLAIMS" -o name) == "ipaddressclaim.ipam.cluster.x-k8s.io/vm-late-0-0" ]]
  [[ -z $(pk_jsonpath -n "$FLEET" "$CLAIMS" vm-late-0-0 '{.status.addressRef.name}') ]]
  run kubectl -n "$FLEET" get "$ADDRS" vm-late-0-0
  [[ $status -ne 0 ]]
  [[ -z $(kubectl -n "$FLEET" get "$POOLS" -o name) ]]
  [[ $(kubectl -n "$FLEET" get "$ADDRS" -o json | jq '[.items[] | select(.spec.poolRef.kind == "IPPool")] | length') -eq 0 ]]
  kubectl -n "$FLEET" patch "$CLAIMS" vm-late-0-0 --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null
  kubectl -n "$FLEET" delete "$CLAIMS" vm-late-0-0 >/dev/null
  [[ $(grep -c 'ipaddress=fleet/vm-late' "$PK_E2E_LOG_DIR/controller.log") -eq 0 ]]
}

@test "after the move the GlobalIPPool stays in the source with the moved claims' IPAddresses, held for nobody: audit names each; deleting them releases their addresses" {
  on src
  # clusterctl copies a cluster-wide pool and every object it owns but deletes none of them
  # from the source (a global hierarchy): the GlobalIPPool's IPAddresses stay.
  [[ $(kubectl -n "$FLEET" get "$ADDRS" -o json | jq '[.items[] | select(.spec.poolRef.kind == "GlobalIPPool")] | length') -eq 100 ]]
  [[ $(pk_jsonpath "$GPOOLS" "$GPOOL" '{.status.ipAddresses.used}') == 100 ]]
  local bin
  bin=$(pk_bin poolkeeper)
  run "$bin" audit -o json
  [[ $status -eq 1 ]]
  [[ $(jq '[.findings[] | select(.rule == "address-claim-missing")] | length' <<<"$output") -eq 100 ]]
  # The clean-up docs/install.md gives: delete them; the controller takes its finalizer off
  # and releases each address.
  kubectl -n "$FLEET" delete "$ADDRS" --all --wait=false >/dev/null
  pk_wait_for -t 120 "the source's IPAddresses to be gone" \
    bash -c "[[ \$(kubectl -n $FLEET get $ADDRS -o name | wc -l) -eq 0 ]]"
  pk_wait_for "the source GlobalIPPool to count 0 used" \
    bash -c "[[ \$(kubectl get $GPOOLS $GPOOL -o jsonpath='{.status.ipAddresses.used}') == 0 ]]"
}

@test "on the target: poolkeeper conformance's duplicate check passes beside the moved addresses, and audit finds nothing held twice" {
  on tgt
  local bin
  bin=$(pk_bin poolkeeper)
  run "$bin" conformance --pool-ref ipam.poolkeeper.io/IPPool/nodes --namespace "$FLEET" --timeout 60s
  echo "$output"
  [[ $status -eq 0 ]]
  [[ $output == *duplicate* || $output == *Duplicate* ]]
  run "$bin" audit -o json
  echo "$output" | head -c 2000
  [[ $(jq '[.findings[] | select(.rule == "address-held-twice")] | length' <<<"$output") -eq 0 ]]
}

@test "the round trip: --to-directory from the target, then --from-directory into the source (status dropped): every claim bound again with its IPAddress, nothing allocated" {
  local dir=$PLANES/backup
  mkdir -p "$dir"
  on tgt
  _provisioned
  run cctl move -n "$FLEET" --to-directory "$dir"
  echo "$output" | tail -n 5
  [[ $status -eq 0 ]]
  # One file per object, <Kind>_<namespace>_<name>.yaml (cmd/clusterctl/client/cluster/mover.go).
  [[ $(find "$dir" -name 'IPAddressClaim_*' | wc -l) -eq 200 ]]
  [[ $(find "$dir" -name 'IPAddress_*' | wc -l) -eq 200 ]]
  [[ $(pk_jsonpath -n "$FLEET" "$CLUSTERS" prod '{.spec.paused}') != true ]]
  on src
  kubectl delete namespace "$FLEET" --wait=true --timeout=60s >/dev/null
  local before
  before=$(_allocations)
  run cctl move --from-directory "$dir" --to-kubeconfig "$PLANES/src/kubeconfig"
  echo "$output" | tail -n 5
  [[ $status -eq 0 ]]
  pk_wait_for -t 120 "200 claims bound on the source again" _bound_is 200
  [[ $(_allocations) -eq $before ]]
  _specs >"$PLANES/restored-specs.json"
  diff "$PLANES/src-specs.json" "$PLANES/restored-specs.json"
}
