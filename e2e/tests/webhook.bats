#!/usr/bin/env bats
# poolkeeper-webhook registered with the real kube-apiserver by URL and
# caBundle: what kubectl users see when they apply good and bad pools and
# claims, mutations, warn mode, the other-provider escape hatch, and
# certificate rotation under load; with --require-client-cert, the
# apiserver (which presents its client certificate to every webhook, see
# e2e/cluster) still admits while a direct caller gets no review.

load helpers
load poolkeeper

POOLS=ippools.ipam.poolkeeper.io
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io

setup_file() {
  pk_setup_file
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS"
  # This suite covers the rules in deny mode, as they read before repair
  # became the default; claim repair has its own suite.
  pk_start_webhook webhook "$CERTS" --claim-enforcement=deny
  # The apiserver picks up new webhook configurations within a second or so.
  pk_wait_for -t 30 "the webhook to be called" _webhook_answers default
}

teardown_file() {
  pk_uninstall_poolkeeper poolkeeper poolkeeper-system
  pk_stop webhook
}

setup() { pk_setup; }
teardown() { pk_teardown; }

# _webhook_answers <namespace>: a server-side dry run of a bad pool comes
# back with poolkeeper's denial.
_webhook_answers() {
  local out
  out=$(kubectl -n "$1" create --dry-run=server -f - 2>&1 <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: IPPool
metadata: {name: probe}
spec: {addresses: ["10.99.0.1/24"], prefix: 24}
EOF
  )
  echo "$out"
  [[ $out == *"did you mean 10.99.0.0/24?"* ]]
}

# _restart_webhook [flags...]: restarts the webhook with flags (none:
# --claim-enforcement=deny, as the suite starts it), on the port the chart's
# registration calls.
_restart_webhook() {
  pk_stop webhook
  if (($# == 0)); then
    set -- --claim-enforcement=deny
  fi
  pk_start_webhook webhook "$CERTS" "$@"
  pk_wait_for -t 30 "the restarted webhook" _webhook_answers "$NS"
}

# pool <name> <spec yaml>: applies an IPPool in $NS.
pool() {
  kubectl -n "$NS" apply -f - <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: IPPool
metadata: {name: $1}
spec: $2
EOF
}

# claim <name> <owner flags> [clusterName line] [labels line] [pool group] [pool kind]
claim() {
  kubectl -n "$NS" apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: $1
  ${4:-}
  ownerReferences:
  - {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: VSphereMachine, name: $1, uid: 5b1c7c48-9a5e-4f5b-8d6f-$(printf '%012d' $RANDOM) $2}
spec:
  ${3:-}
  poolRef: {apiGroup: ${5:-ipam.poolkeeper.io}, kind: ${6:-IPPool}, name: nodes}
EOF
}

OWNER_OK=', controller: true, blockOwnerDeletion: true'

@test "a well-formed IPPool is admitted" {
  run pool nodes '{addresses: ["10.20.0.0/24"], prefix: 24, gateway: 10.20.0.1}'
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$NS" "$POOLS" nodes '{.spec.gateway}')" = 10.20.0.1 ]
}

@test "a CIDR with host bits set is denied, naming the network it probably meant" {
  run pool bad '{addresses: ["10.20.0.7/24"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *'admission webhook "pools.validate.ipam.poolkeeper.io" denied the request'* ]]
  [[ $output == *'spec.addresses[0]: CIDR "10.20.0.7/24" has host bits set; did you mean 10.20.0.0/24?'* ]]
  run kubectl -n "$NS" get "$POOLS" bad
  [ "$status" -ne 0 ]
}

@test "a gateway outside the pool's subnet is denied, and nothing is created" {
  run pool bad '{addresses: ["10.20.0.0/24"], prefix: 24, gateway: 10.21.0.1}'
  [ "$status" -ne 0 ]
  [[ $output == *'spec.gateway: "10.21.0.1" is not inside the pool'*'10.20.0.0/24'* ]]
  run kubectl -n "$NS" get "$POOLS" bad
  [ "$status" -ne 0 ]
}

@test "mixed address families in one pool are denied" {
  run pool bad '{addresses: ["10.20.0.0/24", "2001:db8::/64"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *'spec.addresses[1]: "2001:db8::/64" is IPv6 but the pool is IPv4'* ]]
}

@test "a pool without a prefix gets it from its lone CIDR" {
  run pool lone '{addresses: ["10.30.0.0/26"]}'
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$NS" "$POOLS" lone '{.spec.prefix}')" = 26 ]
  # ... and a pool of ranges without a prefix is told to set one
  run pool ranges '{addresses: ["10.30.1.10-10.30.1.20"]}'
  [ "$status" -ne 0 ]
  [[ $output == *'spec.prefix'* ]]
}

@test "a claim without spec.clusterName is denied" {
  run claim c1 "$OWNER_OK"
  [ "$status" -ne 0 ]
  [[ $output == *'admission webhook "claims.validate.ipam.poolkeeper.io" denied the request'* ]]
  [[ $output == *'spec.clusterName'* ]]
}

@test "in deny mode a claim with only the deprecated cluster-name label is admitted with a warning and spec.clusterName filled in" {
  run claim c2 "$OWNER_OK" "" "labels: {cluster.x-k8s.io/cluster-name: prod}"
  [ "$status" -eq 0 ]
  [[ $output == *'Warning:'*'deprecated'* ]]
  [ "$(pk_jsonpath -n "$NS" "$CLAIMS" c2 '{.spec.clusterName}')" = prod ]
}

@test "in deny mode a claim whose controller owner reference lacks blockOwnerDeletion is denied, naming the mode" {
  run claim c3 ', controller: true' "clusterName: prod"
  [ "$status" -ne 0 ]
  [[ $output == *'blockOwnerDeletion'* ]]
  [[ $output == *'claim enforcement mode "deny"; change it with --claim-enforcement, chart value webhook.claimEnforcement'* ]]
  run claim c3 ', blockOwnerDeletion: true' "clusterName: prod"
  [ "$status" -ne 0 ]
  [[ $output == *'controller'* ]]
  run claim c3 "$OWNER_OK" "clusterName: prod"
  [ "$status" -eq 0 ]
}

@test "a claim's metadata may always change, its spec never" {
  claim c4 "$OWNER_OK" "clusterName: prod"
  run kubectl -n "$NS" patch "$CLAIMS" c4 --type=merge \
    -p '{"metadata":{"finalizers":["e2e.poolkeeper.io/hold"],"annotations":{"clusterctl.cluster.x-k8s.io/delete-for-move":""}}}'
  [ "$status" -eq 0 ]
  run kubectl -n "$NS" patch "$CLAIMS" c4 --type=json -p '[{"op":"remove","path":"/metadata/ownerReferences"}]'
  [ "$status" -eq 0 ]
  run kubectl -n "$NS" patch "$CLAIMS" c4 --type=merge -p '{"spec":{"poolRef":{"name":"other"}}}'
  [ "$status" -ne 0 ]
  [[ $output == *immutable* ]]
  kubectl -n "$NS" patch "$CLAIMS" c4 --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
}

@test "another provider's claim breaking the contract is admitted with a warning" {
  run claim foreign ', controller: true' "" "" ipam.cluster.x-k8s.io InClusterIPPool
  [ "$status" -eq 0 ]
  [[ $output == *'Warning:'*'would be denied'* ]]
}

@test "a pool overlapping a GlobalIPPool is denied without naming it; pools of other namespaces are not compared" {
  kubectl apply -f - <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: GlobalIPPool
metadata: {name: e2e-shared-$NS}
spec: {addresses: ["10.60.0.0/24"], prefix: 24}
EOF
  run pool inner '{addresses: ["10.60.0.128/25"], prefix: 24}'
  kubectl delete globalippool "e2e-shared-$NS" --wait=false
  [ "$status" -ne 0 ]
  # a tenant may not be allowed to read cluster-scoped pools: described, not named
  [[ $output == *"overlaps with a GlobalIPPool: both could hand out"* ]]
  [[ $output != *"e2e-shared-$NS"* ]]
  # IPPools are per namespace: the same range in two namespaces is fine
  kubectl create namespace "$NS-b"
  run kubectl -n "$NS-b" apply -f - <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: IPPool
metadata: {name: nodes}
spec: {addresses: ["10.61.0.0/24"], prefix: 24}
EOF
  local rc=$status
  kubectl delete namespace "$NS-b" --wait=false
  [ "$rc" -eq 0 ]
  run pool nodes '{addresses: ["10.61.0.0/24"], prefix: 24}'
  [ "$status" -eq 0 ]
  # ... but within one namespace they may not overlap
  run pool nodes-2 '{addresses: ["10.61.0.0/25"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *"overlaps with IPPool $NS/nodes"* ]]
}

# address <name> <address> <claim name> [<annotations>]: an IPAddress from
# pool "nodes", owned by its claim and the pool, as poolkeeper-controller
# makes them.
address() {
  local cuid puid
  cuid=$(pk_jsonpath -n "$NS" "$CLAIMS" "$3" '{.metadata.uid}')
  puid=$(pk_jsonpath -n "$NS" "$POOLS" nodes '{.metadata.uid}')
  kubectl -n "$NS" apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata:
  name: $1
  annotations: {${4:-}}
  ownerReferences:
  - {apiVersion: ipam.cluster.x-k8s.io/v1beta2, kind: IPAddressClaim, name: $3, uid: $cuid, controller: true, blockOwnerDeletion: true}
  - {apiVersion: ipam.poolkeeper.io/v1alpha1, kind: IPPool, name: nodes, uid: $puid, controller: false, blockOwnerDeletion: true}
spec:
  address: $2
  prefix: 24
  claimRef: {name: $3}
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: nodes}
EOF
}

@test "an IPAddress must be a usable address of its pool" {
  pool nodes '{addresses: ["10.70.0.0/24"], prefix: 24, gateway: 10.70.0.1}'
  claim m-1 "$OWNER_OK" "clusterName: prod"
  run address m-1 10.70.0.1 m-1
  [ "$status" -ne 0 ]
  [[ $output == *'"10.70.0.1" is not a usable address of IPPool'* ]]
  run address m-1 10.71.0.5 m-1
  [ "$status" -ne 0 ]
  run address m-1 10.70.0.10 m-1
  [ "$status" -eq 0 ]
}

@test "an IPAddress's external-id annotation is kept as created: no update adds, changes or removes it" {
  local key=ipam.poolkeeper.io/external-id
  pool nodes '{addresses: ["10.72.0.0/24"], prefix: 24}'
  claim m-1 "$OWNER_OK" "clusterName: prod"
  claim m-2 "$OWNER_OK" "clusterName: prod"
  address m-1 10.72.0.10 m-1 "$key: rec-1"
  address m-2 10.72.0.11 m-2
  run kubectl -n "$NS" annotate ipaddresses.ipam.cluster.x-k8s.io m-1 --overwrite "$key=rec-2"
  [ "$status" -ne 0 ]
  [[ $output == *"metadata.annotations[\"$key\"]: is set by poolkeeper when it creates the IPAddress and may not change: was \"rec-1\", now \"rec-2\""* ]]
  run kubectl -n "$NS" annotate ipaddresses.ipam.cluster.x-k8s.io m-1 "$key-"
  [ "$status" -ne 0 ]
  [[ $output == *'now not set'* ]]
  run kubectl -n "$NS" annotate ipaddresses.ipam.cluster.x-k8s.io m-2 "$key=rec-1"
  [ "$status" -ne 0 ]
  [[ $output == *'was not set, now "rec-1"'* ]]
  # other annotations stay free, and the ID is still there
  kubectl -n "$NS" annotate ipaddresses.ipam.cluster.x-k8s.io m-1 example.org/note=x
  [ "$(pk_jsonpath -n "$NS" ipaddresses.ipam.cluster.x-k8s.io m-1 '{.metadata.annotations.ipam\.poolkeeper\.io/external-id}')" = rec-1 ]
}

# tenant_kubeconfig <GlobalIPPool>: a ServiceAccount "tenant" of $NS that may
# create IPAddresses in $NS, with what OwnerReferencesPermissionEnforcement
# asks of owner references that block deletion (update on the finalizers of
# claims in $NS and of the GlobalIPPool), nothing else; writes a kubeconfig
# that authenticates as it to $PK_TMP/tenant.kubeconfig.
tenant_kubeconfig() {
  kubectl -n "$NS" create serviceaccount tenant >/dev/null
  kubectl -n "$NS" create role ipam-tenant --verb=create,get --resource=ipaddresses.ipam.cluster.x-k8s.io >/dev/null
  kubectl -n "$NS" create role ipam-tenant-owners --verb=update \
    --resource=ipaddressclaims.ipam.cluster.x-k8s.io/finalizers >/dev/null
  kubectl create clusterrole "ipam-tenant-$NS" --verb=update \
    --resource=globalippools.ipam.poolkeeper.io/finalizers --resource-name="$1" >/dev/null
  kubectl -n "$NS" create rolebinding ipam-tenant --role=ipam-tenant --serviceaccount="$NS:tenant" >/dev/null
  kubectl -n "$NS" create rolebinding ipam-tenant-owners --role=ipam-tenant-owners \
    --serviceaccount="$NS:tenant" >/dev/null
  kubectl create clusterrolebinding "ipam-tenant-$NS" --clusterrole="ipam-tenant-$NS" \
    --serviceaccount="$NS:tenant" >/dev/null
  "$E2E_DIR/cluster" sa-kubeconfig "$NS" tenant "$PK_TMP/tenant.kubeconfig" 1h
}

# global_claim <namespace> <name> <pool> [kubeconfig]: a claim on GlobalIPPool <pool>.
global_claim() {
  kubectl ${4:+--kubeconfig="$4"} -n "$1" create -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: $2
  ownerReferences:
  - {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: VSphereMachine, name: $2, uid: 5b1c7c48-9a5e-4f5b-8d6f-$(printf '%012d' $RANDOM)$OWNER_OK}
spec:
  clusterName: prod
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: GlobalIPPool, name: $3}
EOF
}

# global_address <namespace> <name> <address> <claim name> <pool> [kubeconfig]: an
# IPAddress of GlobalIPPool <pool>, shaped as poolkeeper-controller makes them
# (a made-up claim uid when the claim does not exist), created with kubeconfig.
global_address() {
  local cuid puid
  cuid=$(pk_jsonpath -n "$1" "$CLAIMS" "$4" '{.metadata.uid}' 2>/dev/null) || true
  puid=$(pk_jsonpath globalippools.ipam.poolkeeper.io "$5" '{.metadata.uid}')
  kubectl ${6:+--kubeconfig="$6"} -n "$1" create -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata:
  name: $2
  ownerReferences:
  - {apiVersion: ipam.cluster.x-k8s.io/v1beta2, kind: IPAddressClaim, name: $4, uid: ${cuid:-0e9f2a1c-7d3b-4c5e-8f60-123456789abc}, controller: true, blockOwnerDeletion: true}
  - {apiVersion: ipam.poolkeeper.io/v1alpha1, kind: GlobalIPPool, name: $5, uid: $puid, controller: false, blockOwnerDeletion: true}
spec:
  address: $3
  prefix: 24
  claimRef: {name: $4}
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: GlobalIPPool, name: $5}
EOF
}

@test "a tenant allowed to create IPAddresses can neither duplicate another namespace's address on a GlobalIPPool nor name a missing claim" {
  local g=e2e-tenant-$NS other=$NS-other kcfg=$PK_TMP/tenant.kubeconfig
  kubectl apply -f - <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: GlobalIPPool
metadata: {name: $g}
spec: {addresses: ["10.80.0.0/24"], prefix: 24}
EOF
  kubectl create namespace "$other"
  # another namespace holds 10.80.0.10 from the GlobalIPPool
  global_claim "$other" secret-claim "$g"
  global_address "$other" secret-claim 10.80.0.10 secret-claim "$g"
  tenant_kubeconfig "$g"
  # the tenant's own claim on the same pool
  global_claim "$NS" t-1 "$g"
  # (a) the address is taken
  run global_address "$NS" t-1 10.80.0.10 t-1 "$g" "$kcfg"
  local out_a=$output rc_a=$status
  # (b) the claim it names does not exist
  run global_address "$NS" ghost 10.80.0.11 ghost "$g" "$kcfg"
  local out_b=$output rc_b=$status
  # a free address for its own claim is admitted: the tenant may create IPAddresses
  run global_address "$NS" t-1 10.80.0.12 t-1 "$g" "$kcfg"
  local out_ok=$output rc_ok=$status
  local left
  left=$(kubectl -n "$NS" get ipaddresses.ipam.cluster.x-k8s.io -o name)
  kubectl delete namespace "$other" --wait=false
  kubectl -n "$NS" delete ipaddresses.ipam.cluster.x-k8s.io --all --wait=false
  kubectl annotate globalippool "$g" ipam.poolkeeper.io/skip-delete-protection=
  kubectl delete globalippool "$g" --wait=false
  kubectl delete clusterrolebinding,clusterrole "ipam-tenant-$NS"
  echo "a: $rc_a $out_a"
  [ "$rc_a" -ne 0 ]
  [[ $out_a == *'denied the request'* ]]
  [[ $out_a == *'spec.address: "10.80.0.10" is already held by another IPAddress of the pool'* ]]
  # ... saying nothing of where or by whom
  [[ $out_a != *"$other"* && $out_a != *secret-claim* ]]
  echo "b: $rc_b $out_b"
  [ "$rc_b" -ne 0 ]
  [[ $out_b == *"spec.claimRef.name: \"ghost\" must name an IPAddressClaim of the IPAddress's namespace whose spec.poolRef is the IPAddress's pool (GlobalIPPool \"$g\"); there is no such claim"* ]]
  echo "ok: $rc_ok $out_ok"
  [ "$rc_ok" -eq 0 ]
  # the denied ones changed nothing
  [[ $left == "ipaddress.ipam.cluster.x-k8s.io/t-1" ]]
}

@test "a pool cannot shrink past an address in use, nor be deleted while addresses exist, except by clusterctl move" {
  pool nodes '{addresses: ["10.70.0.0/24"], prefix: 24}'
  claim m-1 "$OWNER_OK" "clusterName: prod"
  address m-1 10.70.0.10 m-1
  run pool nodes '{addresses: ["10.70.0.100-10.70.0.200"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *'10.70.0.10'* ]]
  # growing is fine
  run pool nodes '{addresses: ["10.70.0.0/23"], prefix: 23}'
  [ "$status" -eq 0 ]
  run kubectl -n "$NS" delete "$POOLS" nodes --wait=false
  [ "$status" -ne 0 ]
  [[ $output == *'1 IPAddress allocated from this pool still exists'* ]]
  [[ $output == *'ipam.poolkeeper.io/skip-delete-protection'* ]]
  # clusterctl move annotates what it deletes: never refused
  kubectl -n "$NS" annotate "$POOLS" nodes clusterctl.cluster.x-k8s.io/delete-for-move=
  run kubectl -n "$NS" delete "$POOLS" nodes --wait=false
  [ "$status" -eq 0 ]
}

@test "the explicit annotation lets a pool with addresses be deleted" {
  pool nodes '{addresses: ["10.70.0.0/24"], prefix: 24}'
  claim m-2 "$OWNER_OK" "clusterName: prod"
  address m-2 10.70.0.11 m-2
  kubectl -n "$NS" annotate "$POOLS" nodes ipam.poolkeeper.io/skip-delete-protection=
  run kubectl -n "$NS" delete "$POOLS" nodes --wait=false
  [ "$status" -eq 0 ]
}

@test "certificate rotation while kubectl creates in a loop: no request fails" {
  local before after i failures=0
  before=$(openssl s_client -connect "127.0.0.1:$WEBHOOK_PORT" </dev/null 2>/dev/null | openssl x509 -noout -serial)
  (
    for i in 1 2 3; do
      sleep 2
      pk_certs "$CERTS" --renew
    done
  ) &
  local rotator=$!
  for ((i = 0; i < 60; i++)); do
    if ! kubectl -n "$NS" create --dry-run=server -o name -f - >/dev/null 2>"$PK_TMP/err" <<EOF; then
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: IPPool
metadata: {name: loop-$i}
spec: {addresses: ["10.40.$i.0/24"], prefix: 24}
EOF
      failures=$((failures + 1))
      cat "$PK_TMP/err"
    fi
    sleep 0.1
  done
  wait "$rotator"
  [ "$failures" -eq 0 ]
  # new handshakes see the last certificate written
  pk_wait_for -t 10 "the webhook to serve the rotated certificate" _serves_file_cert
  after=$(openssl s_client -connect "127.0.0.1:$WEBHOOK_PORT" </dev/null 2>/dev/null | openssl x509 -noout -serial)
  [ "$before" != "$after" ]
  run curl -sf "http://127.0.0.1:$WEBHOOK_METRICS_PORT/metrics"
  [[ $output == *'poolkeeper_webhook_certificate_reloads_total{result="success"}'* ]]
}

_serves_file_cert() {
  local served want
  served=$(openssl s_client -connect "127.0.0.1:$WEBHOOK_PORT" </dev/null 2>/dev/null | openssl x509 -noout -serial)
  want=$(openssl x509 -noout -serial -in "$CERTS/tls.crt")
  [[ -n $served && $served == "$want" ]]
}

@test "--claim-enforcement=warn admits a broken claim with Warning lines" {
  _restart_webhook --claim-enforcement=warn
  run claim warned ', controller: true'
  [ "$status" -eq 0 ]
  [[ $output == *'Warning:'*'spec.clusterName: would be denied: required'* ]]
  [[ $output == *'Warning:'*'blockOwnerDeletion'* ]]
  _restart_webhook
}

@test "while poolkeeper-webhook is down, other providers' claims are still admitted and poolkeeper's objects are not" {
  pk_stop webhook
  run claim foreign-2 "$OWNER_OK" "clusterName: prod" "" ipam.cluster.x-k8s.io InClusterIPPool
  [ "$status" -eq 0 ]
  run pool during-outage '{addresses: ["10.50.0.0/24"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *'failed calling webhook'* ]]
  run claim ours-during-outage "$OWNER_OK" "clusterName: prod"
  [ "$status" -ne 0 ]
  _restart_webhook
}

# _forged_review <namespace> <cidr>: an AdmissionReview of an IPPool CREATE,
# as any client of the webhook's port could send it.
_forged_review() {
  cat <<EOF
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged-1",
 "operation":"CREATE","resource":{"group":"ipam.poolkeeper.io","version":"v1alpha1","resource":"ippools"},
 "namespace":"$1","name":"probe","userInfo":{"username":"system:admin","groups":["system:masters"]},
 "object":{"apiVersion":"ipam.poolkeeper.io/v1alpha1","kind":"IPPool","metadata":{"name":"probe","namespace":"$1"},
 "spec":{"addresses":["$2"],"prefix":24}}}}
EOF
}

# _direct <output file> [curl flags...]: POSTs a forged review of an overlapping
# pool straight to the webhook's port; prints the HTTP status.
_direct() {
  local out=$1
  shift
  _forged_review "$NS" 10.80.0.0/24 >"$PK_TMP/review.json"
  curl -sk --max-time 10 -o "$out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary @"$PK_TMP/review.json" "$@" "https://127.0.0.1:$WEBHOOK_PORT/validate"
}

_direct_names() { # _direct_names <text>: the direct answer is 200 and says it
  [[ $(_direct "$PK_TMP/open.json") == 200 ]] && grep -q "$1" "$PK_TMP/open.json"
}

_unauthenticated() { # _unauthenticated <reason>: the webhook's counter of refused callers
  curl -sf "http://127.0.0.1:$WEBHOOK_METRICS_PORT/metrics" |
    awk -v k="poolkeeper_webhook_unauthenticated_requests_total{reason=\"$1\"}" '$1 == k { print $2 }'
}

@test "--require-client-cert: the apiserver's admissions, with its client certificate, still work" {
  [[ -f ${PK_E2E_WEBHOOK_CLIENT_CA:-} ]]
  _restart_webhook --claim-enforcement=deny --client-ca-file "$PK_E2E_WEBHOOK_CLIENT_CA" \
    --require-client-cert --client-cert-allowed-names poolkeeper-e2e-apiserver
  grep -q 'client CA bundle loaded' "$PK_E2E_LOG_DIR/webhook.log"
  # /validate, allowed and denied; /mutate and /validate for a claim.
  run pool nodes '{addresses: ["10.80.0.0/24"], prefix: 24, gateway: 10.80.0.1}'
  echo "$output"
  [ "$status" -eq 0 ]
  run pool bad '{addresses: ["10.80.1.7/24"], prefix: 24}'
  [ "$status" -ne 0 ]
  [[ $output == *'did you mean 10.80.1.0/24?'* ]]
  run claim m-auth "$OWNER_OK" "clusterName: prod"
  echo "$output"
  [ "$status" -eq 0 ]
  run claim m-auth-bad ', controller: true'
  [ "$status" -ne 0 ]
  [[ $output == *'denied the request'* ]]
  # Not one of the apiserver's calls was refused.
  [ "$(_unauthenticated no_certificate)" = 0 ]
  [ "$(_unauthenticated invalid_certificate)" = 0 ]
  [ "$(_unauthenticated name_not_allowed)" = 0 ]
  _restart_webhook
}

@test "--require-client-cert: a direct caller without the apiserver's certificate gets no review, and is logged and counted" {
  [[ -f ${PK_E2E_WEBHOOK_CLIENT_CA:-} ]]
  pool secret-pool '{addresses: ["10.80.0.0/24"], prefix: 24}'
  # Without client authentication, a forged review names the other pool
  # (once the webhook's cache has it).
  pk_wait_for -t 20 "a forged review to name secret-pool" _direct_names secret-pool
  _restart_webhook --claim-enforcement=deny --client-ca-file "$PK_E2E_WEBHOOK_CLIENT_CA" \
    --require-client-cert --client-cert-allowed-names poolkeeper-e2e-apiserver
  # No certificate: 401, no review, no pool named.
  run _direct "$PK_TMP/none.json"
  [ "$output" = 401 ]
  cat "$PK_TMP/none.json"
  ! grep -q 'secret-pool\|10.80.0\|forged-1\|response' "$PK_TMP/none.json"
  # A certificate from another CA (the plane's admin, which the apiserver itself trusts): 401.
  run _direct "$PK_TMP/admin.json" --cert "$PK_E2E_STATE/pki/admin.crt" --key "$PK_E2E_STATE/pki/admin.key"
  [ "$output" = 401 ]
  ! grep -q 'secret-pool\|forged-1' "$PK_TMP/admin.json"
  [ "$(_unauthenticated no_certificate)" = 1 ]
  [ "$(_unauthenticated invalid_certificate)" = 1 ]
  grep -q 'request refused: the client is not authenticated' "$PK_E2E_LOG_DIR/webhook.log"
  # The apiserver's own certificate is the one that gets an answer.
  run _direct "$PK_TMP/apiserver.json" --cert "$PK_E2E_STATE/pki/apiserver-webhook-client.crt" \
    --key "$PK_E2E_STATE/pki/apiserver-webhook-client.key"
  [ "$output" = 200 ]
  grep -q 'forged-1' "$PK_TMP/apiserver.json"
  _restart_webhook
}
