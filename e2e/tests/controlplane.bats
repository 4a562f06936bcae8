#!/usr/bin/env bats
# The loopback control plane behaves like a real cluster in what poolkeeper
# relies on: CAPI's IPAM CRDs with their schema, immutable claim and address
# specs, owner-reference garbage collection, ServiceAccount tokens and RBAC.

load helpers
load poolkeeper
bats_require_minimum_version 1.5.0

setup_file() { pk_setup_file; }
setup() { pk_setup; }
teardown() { pk_teardown; }

# Resources are named with their group: `kubectl get ipaddress` would mean
# networking.k8s.io's IPAddress (Service IPs), built into Kubernetes.
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRESSES=ipaddresses.ipam.cluster.x-k8s.io

# claim <name> [pool name]: a well-formed v1beta2 IPAddressClaim in $NS.
claim() {
  kubectl apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: $1
  namespace: $NS
spec:
  poolRef:
    apiGroup: ipam.poolkeeper.io
    kind: IPPool
    name: ${2:-pool-a}
EOF
}

# address <name> <claim name> [owner uid] [finalizer]: an IPAddress in $NS,
# owned by the claim (controller, blockOwnerDeletion) when a uid is given.
address() {
  local owner="" fin=""
  if [[ -n ${3:-} ]]; then
    owner="ownerReferences:
  - apiVersion: ipam.cluster.x-k8s.io/v1beta2
    kind: IPAddressClaim
    name: $2
    uid: $3
    controller: true
    blockOwnerDeletion: true"
  fi
  [[ -n ${4:-} ]] && fin="finalizers: [\"$4\"]"
  kubectl apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata:
  name: $1
  namespace: $NS
  $owner
  $fin
spec:
  address: 10.10.0.7
  prefix: 24
  gateway: 10.10.0.1
  claimRef: {name: $2}
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: pool-a}
EOF
}

@test "the plane is up and kubectl talks to kube-apiserver of the pinned version" {
  . "$E2E_DIR/versions.env"
  run kubectl get --raw /readyz
  [ "$status" -eq 0 ]
  [ "$output" = ok ]
  run kubectl version -o json
  [ "$status" -eq 0 ]
  [ "$(jq -r .serverVersion.gitVersion <<<"$output")" = "$KUBE_VERSION" ]
  [ "$(jq -r .clientVersion.gitVersion <<<"$output")" = "$KUBE_VERSION" ]
  run helm version --template '{{.Version}}'
  [ "$status" -eq 0 ]
  [ "$output" = "$HELM_VERSION" ]
  run etcd --version
  [[ $output == *"etcd Version: ${ETCD_VERSION#v}"* ]]
  for crd in $CLAIMS $ADDRESSES clusters.cluster.x-k8s.io; do
    run kubectl get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status} {.spec.conversion.strategy}'
    [ "$output" = "True None" ]
  done
}

@test "cluster env prints only export lines with absolute values" {
  run --separate-stderr "$CLUSTER" env
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  while IFS= read -r line; do
    [[ $line =~ ^export\ [A-Z_][A-Z0-9_]*=/[^\ \"\']*$ || $line =~ ^export\ [A-Z_][A-Z0-9_]*=https?://127\.0\.0\.1:[0-9]+$ ]] || {
      echo "unexpected line: $line"
      false
    }
  done <<<"$output"
  [[ $output == *"export KUBECONFIG=$PK_E2E_STATE/kubeconfig"* ]]
  [ "$(env -i bash -c "$output; command -v kubectl")" = "$(dirname "$(command -v kube-apiserver)")/kubectl" ]
  [ "$(env -i bash -c "$output; command -v helm")" = "$(dirname "$(command -v helm)")/helm" ]
}

@test "a well-formed v1beta2 IPAddressClaim is accepted" {
  run claim c1
  [ "$status" -eq 0 ]
  run pk_jsonpath -n "$NS" $CLAIMS c1 '{.apiVersion} {.spec.poolRef.apiGroup} {.spec.poolRef.kind} {.spec.poolRef.name}'
  [ "$output" = "ipam.cluster.x-k8s.io/v1beta2 ipam.poolkeeper.io IPPool pool-a" ]
}

@test "a malformed IPAddressClaim is rejected by the CRD schema" {
  # spec.poolRef.name missing
  run kubectl apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: bad1, namespace: $NS}
spec:
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool}
EOF
  [ "$status" -ne 0 ]
  [[ $output == *'The IPAddressClaim "bad1" is invalid: spec.poolRef.name: Required value'* ]]
  [[ $output == *'spec.poolRef.name: Required value'* ]]

  # spec.poolRef.name of the wrong type
  run kubectl apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: bad2, namespace: $NS}
spec:
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: 42}
EOF
  [ "$status" -ne 0 ]
  [[ $output == *'spec.poolRef.name: Invalid value: "integer": spec.poolRef.name in body must be of type string'* ]]

  # a pool name that is not a DNS subdomain
  run kubectl apply -f - <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: bad3, namespace: $NS}
spec:
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: Not_A_Name}
EOF
  [ "$status" -ne 0 ]
  [[ $output == *'spec.poolRef.name: Invalid value: "Not_A_Name"'* ]]

  run kubectl get $CLAIMS -n "$NS" -o name
  [ "$output" = "" ]
}

@test "IPAddressClaim and IPAddress specs are immutable, metadata is not" {
  claim c1
  run kubectl -n "$NS" patch $CLAIMS c1 --type=merge -p '{"spec":{"poolRef":{"name":"pool-b"}}}'
  [ "$status" -ne 0 ]
  [[ $output == *'denied request: IPAddressClaim spec is immutable'* ]]
  run kubectl -n "$NS" label $CLAIMS c1 e2e=yes
  [ "$status" -eq 0 ]

  address a1 c1
  run kubectl -n "$NS" patch $ADDRESSES a1 --type=merge -p '{"spec":{"address":"10.10.0.8"}}'
  [ "$status" -ne 0 ]
  [[ $output == *'denied request: IPAddress spec is immutable'* ]]
  run kubectl -n "$NS" annotate $ADDRESSES a1 e2e=yes
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.spec.poolRef.name}')" = pool-a ]
  [ "$(pk_jsonpath -n "$NS" $ADDRESSES a1 '{.spec.address}')" = 10.10.0.7 ]
}

@test "garbage collection: background deletion of an owner deletes its dependents" {
  claim c1
  uid=$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.metadata.uid}')
  address a1 c1 "$uid"
  kubectl -n "$NS" delete $CLAIMS c1 --wait=false
  pk_wait_gone -n "$NS" $ADDRESSES a1
  pk_wait_gone -n "$NS" $CLAIMS c1
}

@test "garbage collection: foreground deletion deletes dependents, blockOwnerDeletion holds the owner" {
  claim c1
  uid=$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.metadata.uid}')
  # The dependent carries a finalizer, so it outlives its deletion request.
  address a1 c1 "$uid" e2e.poolkeeper.io/hold
  kubectl -n "$NS" delete $CLAIMS c1 --cascade=foreground --wait=false

  # The owner waits in deletion with the foregroundDeletion finalizer ...
  pk_wait_for "owner in foreground deletion" \
    bash -c "kubectl -n $NS get $CLAIMS c1 -o jsonpath='{.metadata.finalizers}' | grep -q foregroundDeletion"
  [ -n "$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.metadata.deletionTimestamp}')" ]
  # ... the garbage collector deletes the dependent ...
  pk_wait_for "dependent deleted by the garbage collector" \
    bash -c "[ -n \"\$(kubectl -n $NS get $ADDRESSES a1 -o jsonpath='{.metadata.deletionTimestamp}')\" ]"
  # ... and the owner stays while the dependent exists.
  sleep 3
  run kubectl -n "$NS" get $CLAIMS c1 -o name
  [ "$status" -eq 0 ]

  kubectl -n "$NS" patch $ADDRESSES a1 --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
  pk_wait_gone -n "$NS" $ADDRESSES a1
  pk_wait_gone -n "$NS" $CLAIMS c1
}

@test "a ServiceAccount token kubeconfig authenticates and RBAC denies what it was not granted" {
  kubectl -n "$NS" create serviceaccount reader
  kubectl -n "$NS" create role claim-reader --verb=get,list,watch --resource=$CLAIMS
  kubectl -n "$NS" create rolebinding reader --role=claim-reader --serviceaccount="$NS:reader"
  claim c1
  pk_sa_kubeconfig "$NS" reader "$PK_TMP/reader.kubeconfig"

  run kubectl --kubeconfig "$PK_TMP/reader.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}'
  [ "$status" -eq 0 ]
  [ "$output" = "system:serviceaccount:$NS:reader" ]
  run kubectl --kubeconfig "$PK_TMP/reader.kubeconfig" get $CLAIMS -o name
  [ "$status" -eq 0 ]
  [ "$output" = ipaddressclaim.ipam.cluster.x-k8s.io/c1 ]
  run kubectl --kubeconfig "$PK_TMP/reader.kubeconfig" delete $CLAIMS c1
  [ "$status" -ne 0 ]
  [[ $output == *'User "system:serviceaccount:'"$NS"':reader" cannot delete resource "ipaddressclaims"'* ]]
  run kubectl --kubeconfig "$PK_TMP/reader.kubeconfig" get secrets
  [ "$status" -ne 0 ]
  [[ $output == *'cannot list resource "secrets"'* ]]
  run kubectl --kubeconfig "$PK_TMP/reader.kubeconfig" get $CLAIMS -n default
  [ "$status" -ne 0 ]
  [[ $output == *Forbidden* ]]
}

@test "OwnerReferencesPermissionEnforcement: blockOwnerDeletion needs update on the owner's finalizers" {
  kubectl -n "$NS" create serviceaccount allocator
  kubectl -n "$NS" create role allocator --verb=get,list,create,delete \
    --resource=$ADDRESSES,$CLAIMS
  kubectl -n "$NS" create rolebinding allocator --role=allocator --serviceaccount="$NS:allocator"
  claim c1
  uid=$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.metadata.uid}')
  pk_sa_kubeconfig "$NS" allocator "$PK_TMP/allocator.kubeconfig"

  KUBECONFIG=$PK_TMP/allocator.kubeconfig run address a1 c1 "$uid"
  [ "$status" -ne 0 ]
  [[ $output == *"cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"* ]]

  kubectl -n "$NS" create role claim-finalizers --verb=update --resource=$CLAIMS/finalizers
  kubectl -n "$NS" create rolebinding claim-finalizers --role=claim-finalizers --serviceaccount="$NS:allocator"
  pk_wait_for "the finalizers grant to be effective" \
    env KUBECONFIG="$PK_TMP/allocator.kubeconfig" kubectl auth can-i update $CLAIMS --subresource=finalizers
  KUBECONFIG=$PK_TMP/allocator.kubeconfig run address a1 c1 "$uid"
  [ "$status" -eq 0 ]
}

@test "namespace deletion removes the namespace's claims and addresses" {
  kubectl create namespace "$NS-gone"
  NS=$NS-gone claim c1
  NS=$NS-gone address a1 c1
  kubectl delete namespace "$NS-gone" --wait=false
  pk_wait_gone namespace "$NS-gone"
}

@test "restart of etcd, apiserver and controller manager keeps ports and data" {
  claim c1
  port=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  for c in etcd apiserver kcm; do
    run "$CLUSTER" restart "$c"
    [ "$status" -eq 0 ]
    [ "$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')" = "$port" ]
    pk_wait_for "claim readable after restart of $c" kubectl -n "$NS" get $CLAIMS c1
  done
  run "$CLUSTER" status
  [ "$status" -eq 0 ]
  # The garbage collector works again after its restart.
  uid=$(pk_jsonpath -n "$NS" $CLAIMS c1 '{.metadata.uid}')
  address a1 c1 "$uid"
  kubectl -n "$NS" delete $CLAIMS c1 --cascade=foreground --wait=false
  pk_wait_gone -n "$NS" $ADDRESSES a1
  pk_wait_gone -n "$NS" $CLAIMS c1
}

@test "an admission webhook registered by URL with a caBundle is called over TLS" {
  command -v python3 >/dev/null || skip "python3 (the stand-in webhook server) is not installed"
  pk_certs "$PK_TMP/tls"
  port=$(pk_free_port)
  pk_start "webhook-$NS" python3 "$BATS_TEST_DIRNAME/fixtures/deny-pool-webhook.py" \
    "$port" "$PK_TMP/tls/tls.crt" "$PK_TMP/tls/tls.key"
  pk_wait_http -t 20 "https://127.0.0.1:$port/healthz" --cacert "$PK_TMP/tls/ca.crt"
  # Only for this test's namespace: the configuration is cluster-wide.
  pk_register_webhook validating "pk-e2e-$NS" "https://127.0.0.1:$port/validate" "$PK_TMP/tls/ca.crt" \
    '[{"apiGroups":["ipam.cluster.x-k8s.io"],"apiVersions":["v1beta2"],"operations":["CREATE"],"resources":["ipaddressclaims"]}]' \
    "{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"$NS\"}}}"

  # A registration takes effect within a moment.
  pk_wait_for "the webhook to deny" bash -c "! kubectl -n $NS create --dry-run=server -f - <<<'{
    \"apiVersion\": \"ipam.cluster.x-k8s.io/v1beta2\", \"kind\": \"IPAddressClaim\",
    \"metadata\": {\"name\": \"probe\"},
    \"spec\": {\"poolRef\": {\"apiGroup\": \"ipam.poolkeeper.io\", \"kind\": \"IPPool\", \"name\": \"forbidden\"}}}'"
  run claim c1 forbidden
  [ "$status" -ne 0 ]
  [[ $output == *'admission webhook "pk-e2e-'"$NS"'.poolkeeper.io" denied the request: pool forbidden is closed'* ]]
  run claim c2 pool-a
  [ "$status" -eq 0 ]

  pk_unregister_webhook validating "pk-e2e-$NS"
  pk_stop "webhook-$NS"
  [ ! -f "$PK_E2E_STATE/pids/webhook-$NS.pid" ]
}
