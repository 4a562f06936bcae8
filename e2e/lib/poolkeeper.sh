# shellcheck shell=bash
# Starting poolkeeper's own binaries against the loopback plane: a serving
# certificate, poolkeeper-webhook and its registrations as the Helm chart
# makes them, poolkeeper-controller. Shared by the end-to-end suites (through
# e2e/tests/poolkeeper.bash) and by scripts/demo.
#
# Needs the helpers of e2e/tests/helpers.bash (pk_bin, pk_start, pk_wait_for,
# pk_wait_http), the plane's environment (KUBECONFIG, kubectl on PATH,
# PK_E2E_STATE, PK_E2E_LOG_DIR: `e2e/cluster env`), jq and openssl.

# pk_serving_cert <dir> [name]: a CA (ca.crt) and a serving certificate for
# 127.0.0.1 (<name>.crt, <name>.key, default "serving") signed by it. An
# existing CA in <dir> is reused, so a second call rotates the serving pair
# under the same CA (what a cert-manager renewal looks like).
pk_serving_cert() {
  local d=$1 n=${2:-serving}
  mkdir -p "$d"
  if [[ ! -f $d/ca.crt ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$d/ca.key" -out "$d/ca.crt" -subj "/CN=poolkeeper-e2e-ca" -days 2 2>/dev/null || return 1
  fi
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/$n.key.new" \
    -out "$d/$n.csr" -subj "/CN=poolkeeper-webhook-$RANDOM" 2>/dev/null || return 1
  openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
    -out "$d/$n.crt.new" -days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') 2>/dev/null || return 1
  # Replace key and certificate one after the other, as a careless operator
  # (or a non-atomic volume update) would: the webhook must not use a
  # mismatched pair in between.
  mv "$d/$n.key.new" "$d/$n.key"
  mv "$d/$n.crt.new" "$d/$n.crt"
}

# pk_log_port <log name> <listener>: the port a poolkeeper daemon reported
# in its "listening" line.
pk_log_port() {
  grep -o "listener=$2 port=[0-9]*" "$PK_E2E_LOG_DIR/$1.log" | tail -n 1 | cut -d= -f3
}

# pk_start_webhook <name> <cert dir> [flags...]: starts poolkeeper-webhook on
# free loopback ports with the pair in <cert dir>; sets WEBHOOK_PORT and
# WEBHOOK_HEALTH_PORT once it is ready.
pk_start_webhook() {
  local name=$1 dir=$2 bin
  shift 2
  bin=$(pk_bin poolkeeper-webhook) || return 1
  : >"$PK_E2E_LOG_DIR/$name.log"
  pk_start "$name" "$bin" --tls-cert-file "$dir/serving.crt" --tls-private-key-file "$dir/serving.key" \
    --bind-address 127.0.0.1 --port 0 --health-port 0 --metrics-port 0 --cert-poll-seconds 1 "$@" || return 1
  pk_wait_for -t 20 "$name to listen" _pk_has_port "$name" health || return 1
  WEBHOOK_PORT=$(pk_log_port "$name" webhook)
  WEBHOOK_HEALTH_PORT=$(pk_log_port "$name" health)
  WEBHOOK_METRICS_PORT=$(pk_log_port "$name" metrics)
  export WEBHOOK_PORT WEBHOOK_HEALTH_PORT WEBHOOK_METRICS_PORT
  pk_wait_http -t 20 "http://127.0.0.1:$WEBHOOK_HEALTH_PORT/readyz"
}
_pk_has_port() { [[ -n $(pk_log_port "$1" "$2") ]]; }

# pk_start_controller <name> [flags...]: starts poolkeeper-controller with its
# health and metrics listeners on free loopback ports; returns once it
# listens, with CONTROLLER_HEALTH_PORT and CONTROLLER_METRICS_PORT set.
# (/readyz answers 200 only after every informer has listed once.)
pk_start_controller() {
  local name=$1 bin
  shift
  bin=$(pk_bin poolkeeper-controller) || return 1
  pk_start "$name" "$bin" --bind-address 127.0.0.1 --health-port 0 --metrics-port 0 "$@" || return 1
  pk_wait_for -t 20 "$name to listen" _pk_has_port "$name" health || return 1
  CONTROLLER_HEALTH_PORT=$(pk_log_port "$name" health)
  CONTROLLER_METRICS_PORT=$(pk_log_port "$name" metrics)
  export CONTROLLER_HEALTH_PORT CONTROLLER_METRICS_PORT
}

# pk_register_poolkeeper_webhooks <cert dir> <port> [name]: poolkeeper's
# webhook registrations, as the Helm chart makes them, in the configurations
# <name>-validating and <name>-mutating (default name: poolkeeper):
#  - pools: validating (CREATE, UPDATE, DELETE) and mutating, failurePolicy Fail;
#  - claims and addresses on poolkeeper pools (selected with matchConditions):
#    failurePolicy Fail;
#  - other providers' claims: a separate entry with failurePolicy Ignore, so
#    a poolkeeper outage never blocks another provider.
pk_register_poolkeeper_webhooks() {
  local dir=$1 port=$2 name=${3:-poolkeeper} ca
  ca=$(base64 -w0 <"$dir/ca.crt")
  local ours="has(object.spec.poolRef) && has(object.spec.poolRef.apiGroup) && object.spec.poolRef.apiGroup == 'ipam.poolkeeper.io'"
  jq -n --arg ca "$ca" --arg url "https://127.0.0.1:$port" --arg ours "$ours" --arg cfg "$name" '
    def hook(name; path; rules; policy; conds):
      {name: name, clientConfig: {url: ($url + path), caBundle: $ca}, rules: rules,
       failurePolicy: policy, sideEffects: "None", matchPolicy: "Equivalent",
       admissionReviewVersions: ["v1"], timeoutSeconds: 10}
      + (if conds == null then {} else {matchConditions: conds} end);
    def pools(ops): [{apiGroups: ["ipam.poolkeeper.io"], apiVersions: ["v1alpha1"],
                      operations: ops, resources: ["ippools", "globalippools"]}];
    def capi(res): [{apiGroups: ["ipam.cluster.x-k8s.io"], apiVersions: ["*"],
                     operations: ["CREATE", "UPDATE"], resources: [res]}];
    [{apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
      metadata: {name: ($cfg + "-validating")},
      webhooks: [
        hook("pools.validate.ipam.poolkeeper.io"; "/validate"; pools(["CREATE", "UPDATE", "DELETE"]); "Fail"; null),
        hook("claims.validate.ipam.poolkeeper.io"; "/validate"; capi("ipaddressclaims"); "Fail";
             [{name: "poolkeeper-pool", expression: $ours}]),
        hook("addresses.validate.ipam.poolkeeper.io"; "/validate"; capi("ipaddresses"); "Fail";
             [{name: "poolkeeper-pool", expression: $ours}]),
        hook("foreign-claims.validate.ipam.poolkeeper.io"; "/validate"; capi("ipaddressclaims"); "Ignore";
             [{name: "other-pool", expression: ("!(" + $ours + ")")}])]},
     {apiVersion: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration",
      metadata: {name: ($cfg + "-mutating")},
      webhooks: [
        hook("pools.mutate.ipam.poolkeeper.io"; "/mutate"; pools(["CREATE", "UPDATE"]); "Fail"; null),
        hook("claims.mutate.ipam.poolkeeper.io"; "/mutate"; capi("ipaddressclaims"); "Fail";
             [{name: "poolkeeper-pool", expression: $ours}])]}] | .[]' |
    kubectl apply --server-side --force-conflicts -f - >/dev/null
}

# pk_unregister_poolkeeper_webhooks [name]: removes what
# pk_register_poolkeeper_webhooks registered under that name.
pk_unregister_poolkeeper_webhooks() {
  local name=${1:-poolkeeper}
  kubectl delete validatingwebhookconfiguration "$name-validating" --ignore-not-found >/dev/null
  kubectl delete mutatingwebhookconfiguration "$name-mutating" --ignore-not-found >/dev/null
}
