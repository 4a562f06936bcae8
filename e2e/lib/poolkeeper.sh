# shellcheck shell=bash
# Installing and starting poolkeeper against the loopback plane the way a
# cluster runs it: the serving certificate from poolkeeper-certs, the Helm
# chart (ServiceAccounts, RBAC, webhook registrations), and
# poolkeeper-webhook and poolkeeper-controller running as the chart's
# ServiceAccounts, never as the plane's admin. Shared by the end-to-end suites
# (through e2e/tests/poolkeeper.bash) and by scripts/demo.
#
# Needs the helpers of e2e/tests/helpers.bash (pk_bin, pk_start, pk_wait_for,
# pk_wait_http, pk_free_port), the plane's environment (KUBECONFIG, kubectl
# and helm on PATH, PK_E2E_STATE, PK_E2E_LOG_DIR: `e2e/cluster env`).

# pk_certs <dir> [poolkeeper-certs flags...]: a CA and a serving certificate
# for 127.0.0.1 in <dir> (ca.crt, tls.crt, tls.key), made by poolkeeper-certs
# as the chart's certificate Job makes them. A second call keeps a pair that
# is still valid; with --renew it issues a new serving pair under the same CA
# (what a renewal looks like to the webhook, which watches the files).
pk_certs() {
  local d=$1 bin
  shift
  bin=$(pk_bin poolkeeper-certs) || return 1
  mkdir -p "$PK_E2E_LOG_DIR"
  "$bin" --out-dir "$d" --ip 127.0.0.1 --dns localhost "$@" >>"$PK_E2E_LOG_DIR/certs.log" 2>&1 ||
    { tail -n 5 "$PK_E2E_LOG_DIR/certs.log" >&2; return 1; }
}

# pk_log_port <log name> <listener>: the port a poolkeeper daemon reported
# in its "listening" line since its last start (pk_start appends a
# "=== ... start:" line to the log, which may hold an earlier run's ports:
# those never count, or a caller would wait on a port nobody listens on).
pk_log_port() {
  awk -v want="listener=$2" '
    /^=== .* start: / { port = "" }
    index($0, want " port=") { s = substr($0, index($0, want " port=") + length(want) + 6); sub(/[^0-9].*/, "", s); port = s }
    END { if (port != "") print port }' "$PK_E2E_LOG_DIR/$1.log" 2>/dev/null
}

# pk_start_webhook <name> <cert dir> [flags...]: starts poolkeeper-webhook as
# the chart's ServiceAccount ($WEBHOOK_KUBECONFIG, from pk_install_poolkeeper)
# on 127.0.0.1:$WEBHOOK_PORT, the address the chart registered, with the pair
# in <cert dir>, and its health and metrics listeners on free ports; sets
# WEBHOOK_HEALTH_PORT and WEBHOOK_METRICS_PORT once it is ready.
pk_start_webhook() {
  local name=$1 dir=$2 bin
  shift 2
  if [[ -z ${WEBHOOK_KUBECONFIG:-} || -z ${WEBHOOK_PORT:-} ]]; then
    echo "pk_start_webhook: install the chart first (pk_install_poolkeeper)" >&2
    return 1
  fi
  bin=$(pk_bin poolkeeper-webhook) || return 1
  : >"$PK_E2E_LOG_DIR/$name.log"
  PK_START_AS=$WEBHOOK_KUBECONFIG pk_start "$name" "$bin" \
    --tls-cert-file "$dir/tls.crt" --tls-private-key-file "$dir/tls.key" \
    --webhook-bind-address "127.0.0.1:$WEBHOOK_PORT" --health-probe-bind-address 127.0.0.1:0 \
    --metrics-bind-address 127.0.0.1:0 --cert-poll-seconds 1 "$@" || return 1
  pk_wait_for -t 20 "$name to listen" _pk_has_port "$name" health || return 1
  WEBHOOK_HEALTH_PORT=$(pk_log_port "$name" health)
  WEBHOOK_METRICS_PORT=$(pk_log_port "$name" metrics)
  export WEBHOOK_HEALTH_PORT WEBHOOK_METRICS_PORT
  pk_wait_http -t 20 "http://127.0.0.1:$WEBHOOK_HEALTH_PORT/readyz"
}
_pk_has_port() { [[ -n $(pk_log_port "$1" "$2") ]]; }

# pk_start_controller <name> [flags...]: starts poolkeeper-controller as the
# chart's ServiceAccount ($CONTROLLER_KUBECONFIG, from pk_install_poolkeeper),
# leading on its Lease in the release namespace, with its health and metrics
# listeners on free loopback ports; returns once it listens, with
# CONTROLLER_HEALTH_PORT and CONTROLLER_METRICS_PORT set. (/readyz answers
# 200 only after every informer has listed once.)
pk_start_controller() {
  local name=$1 bin
  shift
  if [[ -z ${CONTROLLER_KUBECONFIG:-} || -z ${PK_RELEASE_NS:-} ]]; then
    echo "pk_start_controller: install the chart first (pk_install_poolkeeper)" >&2
    return 1
  fi
  bin=$(pk_bin poolkeeper-controller) || return 1
  PK_START_AS=$CONTROLLER_KUBECONFIG pk_start "$name" "$bin" --leader-election-namespace "$PK_RELEASE_NS" \
    --health-probe-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 "$@" || return 1
  pk_wait_for -t 20 "$name to listen" _pk_has_port "$name" health || return 1
  CONTROLLER_HEALTH_PORT=$(pk_log_port "$name" health)
  CONTROLLER_METRICS_PORT=$(pk_log_port "$name" metrics)
  export CONTROLLER_HEALTH_PORT CONTROLLER_METRICS_PORT
}

# pk_install_poolkeeper <release> <namespace> <cert dir> [helm flags...]:
# installs the chart (charts/poolkeeper), the one source of poolkeeper's
# ServiceAccounts, RBAC and webhook registrations, in webhook.url mode: the
# configurations call https://127.0.0.1:$WEBHOOK_PORT (a free port is picked
# when WEBHOOK_PORT is unset) and trust <cert dir>/ca.crt. Hooks are off: the
# plane runs no pods, so the certificate Job would never run (install.bats
# runs poolkeeper-certs the way that Job does). <release> must contain
# "poolkeeper", so that the chart's names are <release>-webhook and so on.
# Then writes the kubeconfigs the daemons run with, as the chart's
# ServiceAccounts: $WEBHOOK_KUBECONFIG and $CONTROLLER_KUBECONFIG. Sets
# PK_RELEASE and PK_RELEASE_NS (pk_start_controller's Lease namespace).
pk_install_poolkeeper() {
  local rel=$1 ns=$2 dir=$3 helm_bin
  shift 3
  [[ $rel == *poolkeeper* ]] || { echo "pk_install_poolkeeper: release $rel must contain poolkeeper" >&2; return 1; }
  helm_bin=$(command -v helm) || { echo "pk_install_poolkeeper: helm is not on PATH (e2e/cluster env)" >&2; return 1; }
  [[ -n ${WEBHOOK_PORT:-} ]] || WEBHOOK_PORT=$(pk_free_port)
  PK_RELEASE=$rel
  PK_RELEASE_NS=$ns
  export WEBHOOK_PORT PK_RELEASE PK_RELEASE_NS
  mkdir -p "$PK_E2E_LOG_DIR" "$PK_E2E_STATE/kubeconfigs"
  echo "=== $(date -u +%FT%TZ) helm upgrade --install $rel -n $ns $*" >>"$PK_E2E_LOG_DIR/helm.log"
  "$helm_bin" upgrade --install "$rel" "$REPO_ROOT/charts/poolkeeper" -n "$ns" --create-namespace \
    --no-hooks --set-string "webhook.url=https://127.0.0.1:$WEBHOOK_PORT" --set certs.mode=provided \
    --set-string "certs.provided.caBundle=$(base64 -w0 <"$dir/ca.crt")" "$@" >>"$PK_E2E_LOG_DIR/helm.log" 2>&1 ||
    { tail -n 20 "$PK_E2E_LOG_DIR/helm.log" >&2; return 1; }
  WEBHOOK_KUBECONFIG=$PK_E2E_STATE/kubeconfigs/$ns-$rel-webhook
  CONTROLLER_KUBECONFIG=$PK_E2E_STATE/kubeconfigs/$ns-$rel-controller
  export WEBHOOK_KUBECONFIG CONTROLLER_KUBECONFIG
  "$E2E_DIR/cluster" sa-kubeconfig "$ns" "$rel-webhook" "$WEBHOOK_KUBECONFIG" 4h &&
    "$E2E_DIR/cluster" sa-kubeconfig "$ns" "$rel-controller" "$CONTROLLER_KUBECONFIG" 4h
}

# pk_uninstall_poolkeeper <release> <namespace>: `helm uninstall`, which takes
# the webhook registrations, RBAC and ServiceAccounts with it (the CRDs and
# every pool, claim and address stay).
pk_uninstall_poolkeeper() {
  local rel=$1 ns=$2
  echo "=== $(date -u +%FT%TZ) helm uninstall $rel -n $ns" >>"$PK_E2E_LOG_DIR/helm.log"
  helm uninstall "$rel" -n "$ns" --ignore-not-found >>"$PK_E2E_LOG_DIR/helm.log" 2>&1 ||
    { tail -n 20 "$PK_E2E_LOG_DIR/helm.log" >&2; return 1; }
  rm -f "$PK_E2E_STATE/kubeconfigs/$ns-$rel-webhook" "$PK_E2E_STATE/kubeconfigs/$ns-$rel-controller"
}
