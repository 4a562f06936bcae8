# shellcheck shell=bash disable=SC2120
# Helpers for poolkeeper's end-to-end bats suites. Load with:
#
#   load helpers
#   setup_file() { pk_setup_file; }
#   setup() { pk_setup; }
#   teardown() { pk_teardown; }
#
# pk_setup_file brings the loopback control plane up if it is not (fast when
# it is) and exports its environment (KUBECONFIG, PATH with kubectl and helm,
# PK_E2E_STATE, PK_E2E_LOG_DIR). pk_setup gives each test its own namespace
# in $NS; pk_teardown deletes it and, when the test failed, prints the tail
# of every log (control plane and poolkeeper processes) into the test output.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
REPO_ROOT=$(cd "$E2E_DIR/.." && pwd -P)
CLUSTER=$E2E_DIR/cluster
# Default timeout of the wait helpers, in seconds.
PK_TIMEOUT=${PK_TIMEOUT:-60}

pk_env() {
  local envs
  envs=$("$CLUSTER" env) || return 1
  eval "$envs"
}

pk_setup_file() {
  "$CLUSTER" up 3>&- || return 1
  pk_env
}

pk_setup() {
  pk_env
  NS=e2e-$(tr -dc 'a-z0-9' </dev/urandom | head -c 8)
  export NS
  kubectl create namespace "$NS" >/dev/null
  PK_TMP=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/pk.XXXXXX")
  export PK_TMP
}

pk_teardown() {
  if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
    pk_log_tails
  fi
  [[ -n ${NS:-} ]] && kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  return 0
}

# pk_log_tails [lines]: the tail of every log in the log folder.
pk_log_tails() {
  local n=${1:-40} f
  for f in "$PK_E2E_LOG_DIR"/*.log; do
    [[ -f $f ]] || continue
    echo "----- last $n lines of $f"
    tail -n "$n" "$f"
  done
}

# pk_open_crd <plural> <group> <Kind> [labels]: prints a namespaced CRD of
# version v1 with an open schema, a stand-in for a kind the plane does not
# serve (labels: a YAML flow map, e.g. "{a: b}").
pk_open_crd() {
  local plural=$1 group=$2 kind=$3 labels=${4:-"{}"}
  cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $plural.$group
  labels: $labels
spec:
  group: $group
  scope: Namespaced
  names: {kind: $kind, listKind: ${kind}List, plural: $plural, singular: ${plural%s}}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
}

# pk_wait_for [-t seconds] <description> <command...>: retries the command
# every 0.2 s until it succeeds; fails with the description and the
# command's last output after the timeout (default $PK_TIMEOUT).
pk_wait_for() {
  local t=$PK_TIMEOUT
  if [[ $1 == -t ]]; then t=$2; shift 2; fi
  local what=$1; shift
  local end=$((SECONDS + t)) out
  while :; do
    if out=$("$@" 2>&1); then
      return 0
    fi
    if ((SECONDS >= end)); then
      echo "timed out after ${t}s waiting for: $what" >&2
      echo "last output of '$*':" >&2
      echo "$out" >&2
      return 1
    fi
    sleep 0.2
  done
}

# pk_wait_gone [-t seconds] <kubectl get arguments...>: until the object is
# not found.
pk_wait_gone() {
  local t=()
  if [[ $1 == -t ]]; then t=(-t "$2"); shift 2; fi
  pk_wait_for "${t[@]}" "$* to be gone" _pk_gone "$@"
}
_pk_gone() {
  local out
  if out=$(kubectl get "$@" -o name 2>&1); then
    echo "still there: $out"
    return 1
  fi
  [[ $out == *NotFound* || $out == *"not found"* ]]
}

# pk_jsonpath <kubectl get arguments...> <jsonpath>: one field of an object.
pk_jsonpath() {
  local jp=${*: -1}
  kubectl get "${@:1:$#-1}" -o "jsonpath=$jp"
}

# pk_bin <name>: the path of a poolkeeper binary (poolkeeper-webhook,
# poolkeeper-controller, poolkeeper, poolkeeper-certs), from $PK_BIN_DIR
# (default: the build folder of the repository).
pk_bin() {
  local d=${PK_BIN_DIR:-$REPO_ROOT/build} f
  for f in "$d/$1" "$d/bin/$1" "$d/$1/$1"; do
    if [[ -x $f ]]; then
      echo "$f"
      return 0
    fi
  done
  echo "poolkeeper binary $1 not found under $d (set PK_BIN_DIR)" >&2
  return 1
}

# pk_start <name> <command...>: starts a process against the plane, in the
# background with no stdin, output to $PK_E2E_LOG_DIR/<name>.log, pid in the
# state folder so that pk_stop and `e2e/cluster down` stop it. Set
# PK_START_AS=<kubeconfig> to give it that kubeconfig instead of the admin's.
pk_start() {
  local name=$1; shift
  mkdir -p "$PK_E2E_STATE/pids" "$PK_E2E_LOG_DIR"
  if [[ -f $PK_E2E_STATE/pids/$name.pid ]] && kill -0 "$(cat "$PK_E2E_STATE/pids/$name.pid")" 2>/dev/null; then
    echo "pk_start: $name is already running" >&2
    return 1
  fi
  echo "=== $(date -u +%FT%TZ) start: $*" >>"$PK_E2E_LOG_DIR/$name.log"
  KUBECONFIG=${PK_START_AS:-$KUBECONFIG} setsid "$@" </dev/null >>"$PK_E2E_LOG_DIR/$name.log" 2>&1 3>&- &
  echo $! >"$PK_E2E_STATE/pids/$name.pid"
}

# pk_pid <name>: the pid of a process started with pk_start.
pk_pid() { cat "$PK_E2E_STATE/pids/$1.pid"; }

# pk_stop <name> [signal]: stops a process started with pk_start (TERM by
# default, KILL after 10 s) and waits until it is gone.
pk_stop() {
  local name=$1 sig=${2:-TERM} f p i
  f=$PK_E2E_STATE/pids/$name.pid
  [[ -f $f ]] || return 0
  p=$(cat "$f")
  kill "-$sig" "$p" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  rm -f "$f"
}

# pk_free_port: a loopback port nothing listens on, below the kernel's
# ephemeral range (so outgoing connections do not take it meanwhile).
pk_free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
}

# pk_wait_http [-t seconds] <url> [curl options...]: until the URL answers 2xx.
pk_wait_http() {
  local t=()
  if [[ $1 == -t ]]; then t=(-t "$2"); shift 2; fi
  local url=$1; shift
  pk_wait_for "${t[@]}" "$url to answer" curl -sf --max-time 2 "$@" "$url"
}

# pk_register_webhook <validating|mutating> <name> <url> <ca file> <rules json> [extra webhook json]
# Registers an admission webhook that the apiserver calls by URL (the
# webhook runs on 127.0.0.1), trusting the CA in <ca file>. <rules json> is
# the webhook's rules array, e.g.
#   '[{"apiGroups":["ipam.cluster.x-k8s.io"],"apiVersions":["*"],
#      "operations":["CREATE","UPDATE"],"resources":["ipaddressclaims"]}]'
# [extra webhook json] is merged into the webhook entry (failurePolicy,
# namespaceSelector, timeoutSeconds, ...). Failure policy defaults to Fail.
pk_register_webhook() {
  local type=$1 name=$2 url=$3 ca=$4 rules=$5 extra=${6:-'{}'} kind
  case $type in
    validating) kind=ValidatingWebhookConfiguration ;;
    mutating) kind=MutatingWebhookConfiguration ;;
    *) echo "pk_register_webhook: validating or mutating, not $type" >&2; return 1 ;;
  esac
  jq -n --arg kind "$kind" --arg name "$name" --arg url "$url" \
    --arg ca "$(base64 -w0 <"$ca")" --argjson rules "$rules" --argjson extra "$extra" '
    {apiVersion: "admissionregistration.k8s.io/v1", kind: $kind,
     metadata: {name: $name},
     webhooks: [({name: ($name + ".poolkeeper.io"),
                  clientConfig: {url: $url, caBundle: $ca},
                  rules: $rules, failurePolicy: "Fail", sideEffects: "None",
                  admissionReviewVersions: ["v1"], timeoutSeconds: 10} + $extra)]}' |
    kubectl apply --server-side --force-conflicts -f - >/dev/null
}

# pk_unregister_webhook <validating|mutating> <name>
pk_unregister_webhook() {
  kubectl delete "$1webhookconfiguration" "$2" --ignore-not-found >/dev/null
}

# pk_sa_kubeconfig <namespace> <serviceaccount> <outfile> [duration]: a
# kubeconfig that authenticates as the ServiceAccount (token from
# `kubectl create token`).
pk_sa_kubeconfig() { "$CLUSTER" sa-kubeconfig "$@"; }

# pk_wait_owner_mapping [-t seconds] <apiVersion> <kind>...: until the API
# server's own admission maps each kind in that apiVersion. Its
# OwnerReferencesPermissionEnforcement plugin resolves the owner of a
# blockOwnerDeletion reference through a discovery cache that it refreshes
# every 30 s (k8s.io/apiserver pkg/server/options/admission.go), so for up to
# 30 s after a CRD starts serving a version it refuses such references with
# "cannot find RESTMapping" for any client that cannot finalize everything.
# Probed with a dry-run ConfigMap from a user that may create ConfigMaps in
# "default" and nothing else: mapped, the plugin then refuses it for lack of
# the owner's finalizers instead. Nothing is stored.
pk_wait_owner_mapping() {
  local t=(-t 60) rc=0
  if [[ $1 == -t ]]; then t=(-t "$2"); shift 2; fi
  local gv=$1 kind
  shift
  kubectl -n default create role e2e-owner-mapping-probe --verb=create --resource=configmaps \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null || return 1
  kubectl -n default create rolebinding e2e-owner-mapping-probe --role=e2e-owner-mapping-probe \
    --user=e2e:owner-mapping-probe --dry-run=client -o yaml | kubectl apply -f - >/dev/null || return 1
  for kind in "$@"; do
    pk_wait_for "${t[@]}" "admission to map $gv $kind" _pk_owner_mapped "$gv" "$kind" || rc=1
  done
  kubectl -n default delete rolebinding,role e2e-owner-mapping-probe >/dev/null || rc=1
  return "$rc"
}
_pk_owner_mapped() {
  local doc out
  doc=$(jq -n --arg gv "$1" --arg kind "$2" '{apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: "e2e-owner-mapping-probe", ownerReferences: [{apiVersion: $gv, kind: $kind,
      name: "probe", uid: "00000000-0000-4000-8000-000000000001", blockOwnerDeletion: true}]}}')
  out=$(kubectl --as=e2e:owner-mapping-probe -n default create --dry-run=server -o name -f - <<<"$doc" 2>&1)
  echo "$out"
  [[ $out == *"refers to a resource you can't set finalizers on"* ]]
}
