#!/usr/bin/env bats
# poolkeeper's Kubernetes client (common/kube_*.c) against the real control
# plane, through the driver pk-kube-e2e (e2e/driver/): requests and
# their errors, paging over 2,000 objects, an informer that survives an
# apiserver restart, 410 Gone after compaction, authentication with a
# client certificate, a ServiceAccount token, a token file and an exec
# plugin, leader election between two processes, and Event aggregation.

load helpers

setup_file() { pk_setup_file; }
setup() {
  pk_setup
  E2E_BIN=$(pk_bin pk-kube-e2e)
}
teardown() { pk_teardown; }

# cms <prefix> <count> <label> [value]: ConfigMaps <prefix>-<i> labelled app=<label>, data.v=<value>.
cms() {
  local i
  for ((i = 0; i < $2; i++)); do
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-%03d, labels: {app: %s}}\ndata: {v: "%s"}\n' \
      "$1" "$i" "$3" "${4:-0}"
  done | kubectl -n "$NS" apply -f - >/dev/null
}

# The state kubectl sees, in the driver's dump format.
kubectl_state() {
  kubectl -n "$NS" get cm -l "app=$1" -o json |
    jq -r '.items[] | "\(.metadata.name)=\(.data.v // "")"' | sort
}

@test "create, get, list with paging over 2,000 ConfigMaps, update conflict, patches, delete preconditions, status, discovery" {
  run timeout 600 "$E2E_BIN" crud "$NS" 2000
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"ok list 2000 items in 20 pages of 100"* ]]
  [[ $output == *"a stale resourceVersion is Conflict"* ]]
  [[ $output == *"ok delete: failed preconditions are Conflict"* ]]
  [[ $output == *"ok discovery: ipam.cluster.x-k8s.io serves"*v1beta2* ]]
  [ "$(kubectl -n "$NS" get cm -l app=pk-e2e -o name | wc -l)" -eq 1999 ]
}

@test "an informer survives an apiserver restart: no missed and no duplicated final state" {
  cms w 30 pk-watch 0
  pk_start "informer-$NS" "$E2E_BIN" informer "$NS" app=pk-watch final "$PK_TMP/dump" 240
  log=$PK_E2E_LOG_DIR/informer-$NS.log
  pk_wait_for "the informer to sync" grep -q '^synced' "$log"

  # changes the informer sees live
  for i in 000 001 002 003 004; do kubectl -n "$NS" patch cm "w-$i" --type=merge -p '{"data":{"v":"1"}}' >/dev/null; done
  kubectl -n "$NS" delete cm w-005 w-006 >/dev/null

  "$CLUSTER" restart apiserver

  # changes made while its watch reconnects
  for i in 000 010 011; do kubectl -n "$NS" patch cm "w-$i" --type=merge -p '{"data":{"v":"2"}}' >/dev/null; done
  kubectl -n "$NS" delete cm w-012 w-013 w-001 >/dev/null
  cms x 5 pk-watch 3
  # the last change: the driver stops once it holds "final" in a synced store
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: final, labels: {app: pk-watch}}\ndata: {v: done}\n' |
    kubectl -n "$NS" apply -f - >/dev/null

  pk_wait_for -t 240 "the informer to finish" bash -c "! kill -0 $(pk_pid "informer-$NS") 2>/dev/null"
  pk_stop "informer-$NS" # forget its pid
  cat "$log"
  grep -q '^ok informer' "$log"
  grep -q 'duplicates=0' "$log"
  diff <(kubectl_state pk-watch) "$PK_TMP/dump"
}

# A second kube-apiserver on the plane's etcd with --watch-cache=false:
# its watches are served by etcd itself and so see compaction (the main
# apiserver's watch cache would answer a resumed watch from memory). Its
# flags follow e2e/cluster's start_apiserver. Writes $PK_TMP/nocache.kubeconfig.
nocache_port() {
  local p
  while :; do
    p=$((32100 + RANDOM % 900))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
start_nocache_apiserver() { # <port>
  local pki=$PK_E2E_STATE/pki
  . "$PK_E2E_STATE/state.env"
  pk_start "nocache-apiserver-$NS" "$(command -v kube-apiserver)" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$1" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --cert-dir="$PK_TMP/nocache-certs" --client-ca-file="$pki/ca.crt" \
    --authorization-mode=RBAC \
    --service-account-issuer="https://127.0.0.1:$APISERVER_PORT" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --watch-cache=false --profiling=false --v=1
  sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:$1#" "$KUBECONFIG" >"$PK_TMP/nocache.kubeconfig"
  pk_wait_for -t 120 "the no-cache apiserver" kubectl --kubeconfig "$PK_TMP/nocache.kubeconfig" get --raw /readyz
}

compact_etcd() {
  local rev
  rev=$(etcdctl endpoint status -w json | jq '.[0].Status.header.revision')
  etcdctl compact "$rev" >/dev/null
}

@test "after etcd compaction a resumed watch gets 410 Gone and the informer relists" {
  port=$(nocache_port)
  start_nocache_apiserver "$port"
  cms g 10 pk-gone 0
  rv=$(kubectl get --raw "/api/v1/namespaces/$NS/configmaps" | jq -r .metadata.resourceVersion)
  PK_START_AS=$PK_TMP/nocache.kubeconfig pk_start "gone-informer-$NS" "$E2E_BIN" informer "$NS" app=pk-gone final "$PK_TMP/dump" 240
  log=$PK_E2E_LOG_DIR/gone-informer-$NS.log
  pk_wait_for "the informer to sync" grep -q '^synced' "$log"

  # the informer's apiserver goes away; meanwhile objects change and etcd is compacted
  pk_stop "nocache-apiserver-$NS"
  for i in 000 001 002; do kubectl -n "$NS" patch cm "g-$i" --type=merge -p '{"data":{"v":"9"}}' >/dev/null; done
  kubectl -n "$NS" delete cm g-003 g-004 >/dev/null
  cms h 3 pk-gone 4
  compact_etcd
  start_nocache_apiserver "$port"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: final, labels: {app: pk-gone}}\ndata: {v: done}\n' |
    kubectl -n "$NS" apply -f - >/dev/null

  pk_wait_for -t 240 "the informer to finish" bash -c "! kill -0 $(pk_pid "gone-informer-$NS") 2>/dev/null"
  pk_stop "gone-informer-$NS" # forget its pid
  cat "$log"
  grep -q 'relisting' "$log"
  grep -q '^ok informer' "$log"
  grep -q 'duplicates=0' "$log"
  ! grep -q 'lists=1 ' "$log"
  diff <(kubectl_state pk-gone) "$PK_TMP/dump"

  # a plain watch from the version before the compaction is told 410 Gone
  run timeout 120 env KUBECONFIG="$PK_TMP/nocache.kubeconfig" "$E2E_BIN" watch-gone "$NS" "$rv"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"ok watch from $rv: Gone (HTTP 410"* ]]
  pk_stop "nocache-apiserver-$NS"
}

@test "authentication with the admin's client certificate" {
  run "$E2E_BIN" whoami
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = poolkeeper-e2e-admin ]
}

@test "authentication with a ServiceAccount token, a token file and an exec plugin" {
  kubectl -n "$NS" create serviceaccount reader >/dev/null
  # a Role of its own: the plane runs no clusterrole-aggregation controller, so "view" is empty
  kubectl -n "$NS" create role cm-reader --verb=get,list,watch --resource=configmaps >/dev/null
  kubectl -n "$NS" create rolebinding reader --role=cm-reader --serviceaccount="$NS:reader" >/dev/null
  cms r 3 pk-auth
  pk_sa_kubeconfig "$NS" reader "$PK_TMP/sa.kubeconfig"

  run env KUBECONFIG="$PK_TMP/sa.kubeconfig" "$E2E_BIN" whoami
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "system:serviceaccount:$NS:reader" ]
  pk_wait_for "RBAC to allow the reader" env KUBECONFIG="$PK_TMP/sa.kubeconfig" "$E2E_BIN" list "$NS"
  run env KUBECONFIG="$PK_TMP/sa.kubeconfig" "$E2E_BIN" list "$NS"
  [ "$output" = 3 ]
  # RBAC: nothing in another namespace
  run env KUBECONFIG="$PK_TMP/sa.kubeconfig" "$E2E_BIN" list kube-system
  echo "$output"
  [ "$status" -eq 2 ]
  [[ $output == Forbidden\ 403* ]]

  # the same token from a file, and from an exec credential plugin
  token=$(kubectl -n "$NS" create token reader --duration=10m)
  printf '%s\n' "$token" >"$PK_TMP/token"
  cat >"$PK_TMP/plugin.sh" <<EOF
#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "\$(cat '$PK_TMP/token')"
EOF
  chmod +x "$PK_TMP/plugin.sh"
  ca=$(grep certificate-authority-data "$PK_TMP/sa.kubeconfig" | awk '{print $2}')
  for kind in tokenFile exec; do
    if [[ $kind == tokenFile ]]; then
      user="    tokenFile: $PK_TMP/token"
    else
      user="    exec: {apiVersion: client.authentication.k8s.io/v1, command: $PK_TMP/plugin.sh, interactiveMode: Never}"
    fi
    cat >"$PK_TMP/$kind.kubeconfig" <<EOF
clusters:
- name: e2e
  cluster: {server: "$PK_E2E_APISERVER", certificate-authority-data: $ca}
users:
- name: reader-$kind
  user:
$user
contexts:
- name: e2e
  context: {cluster: e2e, user: reader-$kind}
current-context: e2e
EOF
    run env KUBECONFIG="$PK_TMP/$kind.kubeconfig" "$E2E_BIN" whoami
    echo "$kind: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "system:serviceaccount:$NS:reader" ]
  done

  # a bad token is Unauthorized, reported with the server's words
  printf 'not-a-token\n' >"$PK_TMP/token"
  run env KUBECONFIG="$PK_TMP/tokenFile.kubeconfig" "$E2E_BIN" whoami
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"got Unauthorized (HTTP 401"* ]]
}

@test "a Lease is held by one of two processes and taken over when the holder stops" {
  pk_start "lease-a-$NS" "$E2E_BIN" lease "$NS" pk-e2e-lease a 120
  pk_wait_for "a to lead" grep -q '^leading' "$PK_E2E_LOG_DIR/lease-a-$NS.log"
  pk_start "lease-b-$NS" "$E2E_BIN" lease "$NS" pk-e2e-lease b 120
  sleep 5
  # b waits while a renews
  ! grep -q '^leading' "$PK_E2E_LOG_DIR/lease-b-$NS.log"
  [ "$(kubectl -n "$NS" get lease pk-e2e-lease -o jsonpath='{.spec.holderIdentity}')" = a ]
  # a stops cleanly: it gives the lease up and b takes over at once
  pk_stop "lease-a-$NS"
  grep -q '^stopped' "$PK_E2E_LOG_DIR/lease-a-$NS.log"
  pk_wait_for -t 20 "b to lead" grep -q '^leading' "$PK_E2E_LOG_DIR/lease-b-$NS.log"
  [ "$(kubectl -n "$NS" get lease pk-e2e-lease -o jsonpath='{.spec.holderIdentity}')" = b ]
  # b is killed: nobody releases; a new process takes over after the lease expires
  pk_stop "lease-b-$NS" KILL
  t0=$SECONDS
  pk_start "lease-c-$NS" "$E2E_BIN" lease "$NS" pk-e2e-lease c 120
  pk_wait_for -t 40 "c to lead" grep -q '^leading' "$PK_E2E_LOG_DIR/lease-c-$NS.log"
  [ $((SECONDS - t0)) -ge 10 ]
  pk_stop "lease-c-$NS"
}

@test "repeated Events for the same object and reason become one Event with a series count" {
  kubectl -n "$NS" create configmap target >/dev/null
  run timeout 60 "$E2E_BIN" event "$NS" ConfigMap target Flapping "pool is flapping" 25
  echo "$output"
  [ "$status" -eq 0 ]
  n=$(kubectl -n "$NS" get events.v1.events.k8s.io -o json | jq '[.items[] | select(.reason=="Flapping")] | length')
  [ "$n" -eq 1 ]
  count=$(kubectl -n "$NS" get events.v1.events.k8s.io -o json | jq '[.items[] | select(.reason=="Flapping")][0].series.count')
  [ "$count" -eq 25 ]
}
