#!/usr/bin/env bats
# poolkeeper on Cluster API before 1.11, which serves ipam.cluster.x-k8s.io
# and cluster.x-k8s.io only in v1beta1: the controller falls back to v1beta1
# (controller/main.c, served_version), creates v1beta1 IPAddresses and writes
# the claim's Ready condition in CAPI's v1beta1 shape (severity, no
# observedGeneration); the webhook reviews v1beta1 claims and reads v1beta1
# IPAddresses (webhook/lookup.c).
#
# The plane installs CAPI v1.14's CRDs (v1beta2 served and stored, no
# conversion webhook: strategy None). For the duration of this suite
# setup_file rewrites the IPAddressClaim, IPAddress and Cluster CRDs the way
# CAPI 1.10's look from outside: v1beta2 not served, v1beta1 served, stored
# and not deprecated. teardown_file puts back their spec, then (once etcd
# holds no CAPI object in v1beta1) their status.storedVersions, checks that
# both are as they were, and waits until v1beta2 is served again and the
# API server's admission maps it (pk_wait_owner_mapping), so later suites
# find the plane as it was. Nothing is converted (strategy None):
# every object this suite makes is created and read as v1beta1 and deleted
# before the restore.
#
# One instrument on top: the v1beta1 claim schema keeps unknown fields in
# status.conditions[] (x-kubernetes-preserve-unknown-fields). Otherwise the
# apiserver would prune a field the v1beta1 Condition does not have (say
# observedGeneration) and the shape checks could not see what the controller
# wrote.
#
# kubectl here uses a private discovery cache (KUBECACHEDIR), emptied after
# each CRD change: the shared one must not learn "v1beta1 preferred", and
# this suite's must not keep "v1beta2 served".

load helpers
load poolkeeper

IPAM=ipam.cluster.x-k8s.io
CRD_CLAIMS=ipaddressclaims.$IPAM
CRD_ADDRS=ipaddresses.$IPAM
CRD_CLUSTERS=clusters.cluster.x-k8s.io
CRDS=("$CRD_CLAIMS" "$CRD_ADDRS" "$CRD_CLUSTERS")
# Always with the version, so that no kubectl call picks one from discovery.
CLAIMS=ipaddressclaims.v1beta1.$IPAM
ADDRS=ipaddresses.v1beta1.$IPAM
CLUSTERS=clusters.v1beta1.cluster.x-k8s.io
POOLS=ippools.ipam.poolkeeper.io

# jq: the CRD as CAPI before 1.11 serves it (see the top of the file).
# shellcheck disable=SC2016
ONLY_V1BETA1='.spec.versions |= map(
    if .name == "v1beta2" then .served = false | .storage = false
    elif .name == "v1beta1" then .served = true | .storage = true | del(.deprecated, .deprecationWarning)
    else . end)
  | if .metadata.name == $claims then
      (.spec.versions[] | select(.name == "v1beta1")
       | .schema.openAPIV3Schema.properties.status.properties.conditions.items)
        += {"x-kubernetes-preserve-unknown-fields": true}
    else . end'

setup_file() {
  export KUBECACHEDIR=$BATS_FILE_TMPDIR/kube-cache
  pk_setup_file
  export SAVED=$BATS_FILE_TMPDIR/crds.json
  kubectl get crd "${CRDS[@]}" -o json >"$SAVED.tmp"
  # Refuse a plane this suite (killed before its teardown) left changed:
  # restoring would then keep the change.
  if ! jq -e 'all(.items[]; any(.spec.versions[]; .name == "v1beta2" and .served and .storage)
      and (.status.storedVersions | index("v1beta1") | not))' "$SAVED.tmp" >/dev/null; then
    echo "the CAPI CRDs do not serve and store only v1beta2; a run of this suite killed before its teardown_file?" >&2
    jq -c '.items[] | [.metadata.name, [.spec.versions[] | {name, served, storage}], .status.storedVersions]' "$SAVED.tmp" >&2
    return 1
  fi
  mv "$SAVED.tmp" "$SAVED"
  # The v1beta1 Condition of the claim CRD the plane installed, before the
  # instrument: what the shape checks compare with.
  export CONDITION_SCHEMA
  CONDITION_SCHEMA=$(jq -c --arg claims "$CRD_CLAIMS" '.items[] | select(.metadata.name == $claims)
    | .spec.versions[] | select(.name == "v1beta1")
    | .schema.openAPIV3Schema.properties.status.properties.conditions.items
    | {properties: (.properties | keys), required: .required}' "$SAVED")
  pk_wait_for -t 30 "the CRDs to serve only v1beta1" _rewrite only-v1beta1
  _crds_settled only-v1beta1
  # The Lease in a namespace of its own: no other suite's controller competes.
  LEASE_NS=e2e-v1beta1-$(tr -dc 'a-z0-9' </dev/urandom | head -c 6)
  export LEASE_NS
  kubectl create namespace "$LEASE_NS" >/dev/null
  # Both started after the change: each reads the served versions once, at start.
  # poolkeeper installed by the chart in that namespace: its Lease Role is there.
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper-v1beta1 "$LEASE_NS" "$CERTS"
  pk_start_webhook webhook-v1beta1 "$CERTS"
  pk_start_controller controller-v1beta1
  pk_wait_http -t 30 "http://127.0.0.1:$CONTROLLER_HEALTH_PORT/readyz"
}

teardown_file() {
  local rc=0
  _sweep || rc=1
  pk_stop controller-v1beta1 || rc=1
  if [[ -n ${LEASE_NS:-} ]]; then
    pk_uninstall_poolkeeper poolkeeper-v1beta1 "$LEASE_NS" || rc=1
  fi
  pk_stop webhook-v1beta1 || rc=1
  if [[ -n ${LEASE_NS:-} ]]; then
    kubectl delete namespace "$LEASE_NS" --wait=false >/dev/null || rc=1
  fi
  # The CRDs as they were: spec, then status.storedVersions, once etcd holds
  # no object in v1beta1 (only this suite made such objects).
  if [[ -f ${SAVED:-} ]]; then
    pk_wait_for -t 30 "the CRDs' spec restored" _rewrite spec || rc=1
    if pk_wait_for -t 20 "no CAPI object stored as v1beta1 in etcd" _none_stored_as_v1beta1; then
      pk_wait_for -t 30 "the CRDs' storedVersions restored" _rewrite status || rc=1
    else
      rc=1
    fi
    _crds_settled restored || rc=1
    _crds_as_saved || rc=1
    # the API server's admission, too, maps the owners controllers name
    pk_wait_owner_mapping "$IPAM/v1beta2" IPAddressClaim IPAddress || rc=1
    pk_wait_owner_mapping cluster.x-k8s.io/v1beta2 Cluster || rc=1
  fi
  return "$rc"
}

# _rewrite only-v1beta1|spec|status: every CRD read afresh and replaced:
# served only in v1beta1 (ONLY_V1BETA1), or its saved spec, or its saved
# status.storedVersions. Retried by the callers (a conflict, say).
# shellcheck disable=SC2016 # jq programs
_rewrite() {
  local f sub=()
  case $1 in
    only-v1beta1) f=$ONLY_V1BETA1 ;;
    spec) f='.spec = $c.spec' ;;
    status) f='.status.storedVersions = $c.status.storedVersions' sub=(--subresource=status) ;;
  esac
  kubectl get crd "${CRDS[@]}" -o json |
    jq --slurpfile o "$SAVED" --arg claims "$CRD_CLAIMS" \
      ".items |= map(.metadata.name as \$n | (\$o[0].items[] | select(.metadata.name == \$n)) as \$c | $f)" |
    kubectl replace "${sub[@]}" -f - >/dev/null
}

# _none_stored_as_v1beta1: etcd holds no IPAddressClaim, IPAddress or Cluster
# in v1beta1 (what the CRDs' storedVersions may then leave out again).
_none_stored_as_v1beta1() {
  local p left=""
  for p in "/registry/$IPAM/" /registry/cluster.x-k8s.io/; do
    left+=$(etcdctl get --prefix "$p" -w json |
      jq -r '.kvs[]? | .value | @base64d | fromjson | select(.apiVersion | endswith("/v1beta1"))
        | "\(.kind) \(.metadata.namespace)/\(.metadata.name)"') || return 1
  done
  [[ -z $left ]] || { echo "stored as v1beta1: $left"; return 1; }
}

# _sweep: CAPI objects and pools a test left in its namespace (it failed
# before its teardown could delete them): deleted, finalizers dropped.
_sweep() {
  local f=$BATS_FILE_TMPDIR/namespaces left ns kind name res
  [[ -f $f ]] || return 0
  left=$(kubectl get "$CLAIMS,$ADDRS,$POOLS,$CLUSTERS" -A -o json |
    jq -r --rawfile mine "$f" '($mine | split("\n")) as $m | .items[]
      | select(.metadata.namespace as $n | $m | index($n)) | "\(.metadata.namespace) \(.kind) \(.metadata.name)"') || return 1
  [[ -n $left ]] || return 0
  echo "left behind by the tests (deleted, finalizers dropped):"
  echo "$left"
  while read -r ns kind name; do
    case $kind in
      IPAddressClaim) res=$CLAIMS ;;
      IPAddress) res=$ADDRS ;;
      IPPool) res=$POOLS ;;
      *) res=$CLUSTERS ;;
    esac
    kubectl -n "$ns" delete "$res" "$name" --wait=false >/dev/null 2>&1 || true
    kubectl -n "$ns" patch "$res" "$name" --type=merge -p '{"metadata": {"finalizers": null}}' >/dev/null 2>&1 || true
  done <<<"$left"
  return 1
}

# _crds_as_saved: spec and storedVersions of every CRD equal the saved ones.
_crds_as_saved() {
  local q='[.items[] | {name: .metadata.name, spec, storedVersions: .status.storedVersions}]' now was
  now=$(kubectl get crd "${CRDS[@]}" -o json | jq -S "$q")
  was=$(jq -S "$q" "$SAVED")
  if [[ $now != "$was" ]]; then
    echo "the CRDs are not as they were:"
    diff <(echo "$was") <(echo "$now") | head -n 40
    return 1
  fi
}

# _crds_settled only-v1beta1|restored: discovery and the endpoints say so,
# and this suite's discovery cache starts afresh.
_crds_settled() {
  rm -rf "$KUBECACHEDIR"
  pk_wait_for -t 30 "the API to serve $1" _served "$1" || return 1
  rm -rf "$KUBECACHEDIR"
}
_served() {
  local want=v1beta1 got
  [[ $1 == restored ]] && want=v1beta2
  # preferred and served versions of both groups, in one discovery read
  got=$(kubectl get --raw /apis | jq -c '[.groups[] | select(.name == "ipam.cluster.x-k8s.io" or .name == "cluster.x-k8s.io")
    | {(.name): {preferred: .preferredVersion.version, served: [.versions[].version] | sort}}] | add')
  echo "served: $got"
  if [[ $want == v1beta1 ]]; then
    jq -e 'all(.[]; .preferred == "v1beta1" and (.served | index("v1beta2") | not))' <<<"$got" >/dev/null || return 1
    # the endpoint itself, not only discovery
    ! kubectl get --raw "/apis/$IPAM/v1beta2/ipaddressclaims" >/dev/null 2>&1
  else
    jq -e 'all(.[]; .preferred == "v1beta2")' <<<"$got" >/dev/null &&
      kubectl get --raw "/apis/$IPAM/v1beta2/ipaddressclaims" >/dev/null
  fi
}

setup() {
  pk_setup
  echo "$NS" >>"$BATS_FILE_TMPDIR/namespaces"
}

# Every CAPI object of the test goes before its namespace (claims first,
# through the controller and its finalizers), so that nothing stored as
# v1beta1 is left when teardown_file restores the CRDs.
teardown() {
  kubectl -n "$NS" delete "$CLAIMS" --all --timeout=60s >/dev/null 2>&1 || true
  kubectl -n "$NS" delete "$ADDRS,$POOLS,$CLUSTERS" --all --timeout=30s >/dev/null 2>&1 || true
  pk_teardown
}

# pool <name> <spec json>: an IPPool in $NS (retried while the webhook registration settles).
pool() {
  local doc
  doc=$(jq -n --arg n "$1" --argjson s "$2" \
    '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: $n}, spec: $s}')
  pk_wait_for -t 30 "IPPool $1 to be accepted" _apply "$doc"
}
_apply() { kubectl -n "$NS" apply -f - <<<"$1"; }

# _machine: the v1beta1 Cluster "prod" and a stand-in machine (ConfigMap
# "machine") that claims belong to; sets MACHINE_UID.
_machine() {
  MACHINE_UID=$(kubectl -n "$NS" create -o json -f - <<<'{"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": {"name": "prod"}, "spec": {"paused": false}},
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "machine"}}]}' |
    jq -r 'select(.kind == "ConfigMap") | .metadata.uid')
  [[ -n $MACHINE_UID ]]
}

# _claim_doc <name> <pool> [apiVersion] [owner: yes|no]: a claim of Cluster
# prod owned by the machine ConfigMap.
_claim_doc() {
  jq -n --arg n "$1" --arg p "$2" --arg v "${3:-$IPAM/v1beta1}" --arg u "$MACHINE_UID" --arg own "${4:-yes}" '
    {apiVersion: $v, kind: "IPAddressClaim",
     metadata: ({name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"}}
       + if $own == "yes" then {ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "machine",
                                   uid: $u, controller: true, blockOwnerDeletion: true}]} else {} end),
     spec: {clusterName: "prod", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: $p}}}'
}
claim() { _claim_doc "$1" "$2" | kubectl -n "$NS" create -f -; }

# _ready <claim> <status> [reason]: the claim's Ready condition says so.
_ready() {
  local got
  got=$(kubectl -n "$NS" get "$CLAIMS" "$1" -o json | jq -r '.status.conditions[]? | select(.type=="Ready") | "\(.status) \(.reason)"')
  echo "Ready: $got"
  [[ $got == "$2"* ]] && [[ -z ${3:-} || $got == *" $3" ]]
}

# _ready_condition <claim json>: its Ready condition.
_ready_condition() { jq -c '.status.conditions[] | select(.type == "Ready")' <<<"$1"; }

# _v1beta1_shape <condition json> True|False: CAPI's v1beta1 Condition as the
# CRD the plane installed has it (CONDITION_SCHEMA): only its fields, the
# required ones set, severity Warning only when False, no observedGeneration
# (v1beta2's metav1.Condition has that, and no severity).
_v1beta1_shape() {
  local c=$1 want=$2
  echo "condition: $c"
  echo "v1beta1 Condition in the CRD: $CONDITION_SCHEMA"
  # The schema itself is CAPI's v1beta1 Condition: the comparison means something.
  jq -e '.properties == ["lastTransitionTime", "message", "reason", "severity", "status", "type"]
    and .required == ["lastTransitionTime", "status", "type"]' <<<"$CONDITION_SCHEMA" >/dev/null ||
    { echo "the CRD's v1beta1 Condition is not the one this test knows"; return 1; }
  jq -e --argjson s "$CONDITION_SCHEMA" '(keys - $s.properties) == [] and ($s.required - keys) == []' <<<"$c" >/dev/null ||
    { echo "fields outside the v1beta1 Condition, or required ones missing"; return 1; }
  jq -e --arg w "$want" '.status == $w and (.reason | length > 0) and (.message | length > 0)
    and (.lastTransitionTime | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))' <<<"$c" >/dev/null ||
    { echo "status, reason, message or lastTransitionTime wrong"; return 1; }
  if [[ $want == True ]]; then
    jq -e 'has("severity") | not' <<<"$c" >/dev/null || { echo "severity set on a True condition"; return 1; }
  else
    jq -e '.severity == "Warning"' <<<"$c" >/dev/null || { echo "severity is not Warning"; return 1; }
  fi
}

# _counts_are <pool> <total/used/free>: the pool's status counts so.
_counts_are() {
  local c
  c=$(pk_jsonpath -n "$NS" "$POOLS" "$1" '{.status.ipAddresses.total}/{.status.ipAddresses.used}/{.status.ipAddresses.free}')
  echo "pool $1 total/used/free: $c"
  [[ $c == "$2" ]]
}

# _written_in <object json> [subresource]: the apiVersion(s) of the
# controller's writes to it (managedFields record the request's).
_written_in() {
  jq -r --arg s "${2:-}" '[.metadata.managedFields[] | select(.manager == "poolkeeper-controller"
    and (.subresource // "") == $s) | .apiVersion] | unique | join(",")' <<<"$1"
}

@test "v1beta2 is not served: its endpoints answer 404, a v1beta2 claim is refused, poolkeeper uses v1beta1" {
  _machine
  run kubectl get --raw "/apis/$IPAM/v1beta2/namespaces/$NS/ipaddressclaims"
  echo "$output"
  ((status != 0))
  [[ $output == *NotFound* ]]
  kubectl get --raw "/apis/$IPAM" | jq -e '.preferredVersion.version == "v1beta1" and ([.versions[].version] | index("v1beta2") | not)'
  run kubectl -n "$NS" create -f - <<<"$(_claim_doc c2 p "$IPAM/v1beta2")"
  echo "$output"
  ((status != 0))
  [[ $output == *'no matches for kind "IPAddressClaim" in version "ipam.cluster.x-k8s.io/v1beta2"'* ]]
  # The controller read the served versions of both groups at start.
  grep -E 'msg="API versions" ipam\.cluster\.x-k8s\.io=v1beta1 cluster\.x-k8s\.io=v1beta1 ' "$PK_E2E_LOG_DIR/controller-v1beta1.log"
  # The webhook reviews v1beta1 claims: one without an owner is denied.
  run kubectl -n "$NS" create -f - <<<"$(_claim_doc c1 p "$IPAM/v1beta1" no)"
  echo "$output"
  ((status != 0))
  [[ $output == *'admission webhook "claims.validate.ipam.poolkeeper.io" denied'* ]]
  [[ $output == *"metadata.ownerReferences: required"* ]]
  [[ -z $(kubectl -n "$NS" get "$CLAIMS" -o name) ]]
}

@test "a v1beta1 claim gets a v1beta1 IPAddress from the pool with both owner references, and Ready=True in the v1beta1 shape" {
  _machine
  pool p '{"addresses": ["10.40.0.10-10.40.0.12"], "prefix": 24, "gateway": "10.40.0.1"}'
  claim c1 p
  pk_wait_for "claim c1 Ready" _ready c1 True Allocated
  local c a t0=$SECONDS puid
  c=$(kubectl -n "$NS" get "$CLAIMS" c1 -o json --show-managed-fields)
  a=$(kubectl -n "$NS" get "$ADDRS" c1 -o json --show-managed-fields)
  jq -e '.status.addressRef.name == "c1"' <<<"$c"
  jq -e '.apiVersion == "ipam.cluster.x-k8s.io/v1beta1" and .spec.address == "10.40.0.10" and .spec.prefix == 24
    and .spec.gateway == "10.40.0.1" and .spec.claimRef.name == "c1"
    and .spec.poolRef == {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "p"}
    and .metadata.labels["cluster.x-k8s.io/cluster-name"] == "prod"
    and (.metadata.finalizers | index("ipam.poolkeeper.io/protect-address"))' <<<"$a"
  # The owner reference names the claim in the version that is served.
  jq -e --arg c "$(jq -r .metadata.uid <<<"$c")" '[.metadata.ownerReferences[] | select(.kind == "IPAddressClaim")] ==
    [{apiVersion: "ipam.cluster.x-k8s.io/v1beta1", kind: "IPAddressClaim", name: "c1", uid: $c,
      controller: true, blockOwnerDeletion: true}]' <<<"$a"
  puid=$(pk_jsonpath -n "$NS" "$POOLS" p '{.metadata.uid}')
  jq -e --arg p "$puid" '[.metadata.ownerReferences[] | select(.kind == "IPPool")] ==
    [{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", name: "p", uid: $p,
      controller: false, blockOwnerDeletion: true}]' <<<"$a"
  # The controller wrote the IPAddress and the claim's status through v1beta1.
  [[ $(_written_in "$a") == "$IPAM/v1beta1" ]]
  [[ $(_written_in "$c" status) == "$IPAM/v1beta1" ]]
  # etcd holds both in v1beta1, as in a cluster of CAPI before 1.11.
  [[ $(etcdctl get "/registry/$IPAM/ipaddressclaims/$NS/c1" --print-value-only | jq -r .apiVersion) == "$IPAM/v1beta1" ]]
  [[ $(etcdctl get "/registry/$IPAM/ipaddresses/$NS/c1" --print-value-only | jq -r .apiVersion) == "$IPAM/v1beta1" ]]
  _v1beta1_shape "$(_ready_condition "$c")" True
  [[ $(_ready_condition "$c" | jq -r .message) == "address 10.40.0.10 allocated in IPAddress $NS/c1" ]]
  pk_wait_for "pool counts" _counts_are p 3/1/2
  # Settled: the condition reads back as written, so no write follows (a
  # field pruned or changed by the apiserver would make the controller
  # patch again on every watch event).
  sleep $((t0 + 2 - SECONDS > 0 ? t0 + 2 - SECONDS : 0))
  [[ $(pk_jsonpath -n "$NS" "$CLAIMS" c1 '{.metadata.resourceVersion}') == $(jq -r .metadata.resourceVersion <<<"$c") ]]
}

@test "v1beta1: Ready=False carries severity Warning; deleting a claim releases its address to the waiting claim, then to the pool" {
  _machine
  pool p '{"addresses": ["10.41.0.5"], "prefix": 24}'
  claim c1 p
  pk_wait_for "claim c1 Ready" _ready c1 True Allocated
  claim c2 p
  pk_wait_for "claim c2 exhausted" _ready c2 False PoolExhausted
  local c
  c=$(kubectl -n "$NS" get "$CLAIMS" c2 -o json)
  _v1beta1_shape "$(_ready_condition "$c")" False
  pk_wait_for "pool counts" _counts_are p 1/1/0
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  pk_wait_for -t 20 "claim c2 Ready after the release" _ready c2 True Allocated
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" c2 '{.spec.address}') == 10.41.0.5 ]]
  # The same condition, now True: severity gone.
  c=$(kubectl -n "$NS" get "$CLAIMS" c2 -o json)
  _v1beta1_shape "$(_ready_condition "$c")" True
  kubectl -n "$NS" delete "$CLAIMS" c2 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c2
  pk_wait_for "pool counts back" _counts_are p 1/0/1
}

@test "v1beta1: the webhook counts the pool's v1beta1 IPAddresses and refuses to delete it until they are gone" {
  _machine
  pool p '{"addresses": ["10.42.0.5-10.42.0.9"], "prefix": 24}'
  claim c1 p
  pk_wait_for "claim c1 Ready" _ready c1 True
  run kubectl -n "$NS" delete "$POOLS" p --wait=false
  echo "$output"
  ((status != 0))
  [[ $output == *denied* && $output == *"1 IPAddress allocated from this pool still exists"* ]]
  [[ $output == *"(first: IPAddress $NS/c1)"* ]]
  kubectl -n "$NS" delete "$CLAIMS" c1 --timeout=60s
  pk_wait_gone -n "$NS" "$ADDRS" c1
  pk_wait_for -t 20 "the pool's deletion to be admitted" kubectl -n "$NS" delete "$POOLS" p --wait=false
  pk_wait_gone -t 20 -n "$NS" "$POOLS" p
}
