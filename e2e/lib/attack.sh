# shellcheck shell=bash
# Helpers of the fault suite's attack phases (e2e/tests/fault.bats, tests
# named "attack"): while an attacker (e2e/attacker) or a hostile tenant
# runs, valid claims go through the real apiserver, and the phase measures
# what the apiserver saw of poolkeeper's admission webhooks (its own
# apiserver_admission_webhook_* metrics), the round trip of each create, and
# the peak RSS of both daemons against the chart's memory limits.
#
# Needs fault.sh, helpers.bash and poolkeeper.bash, and the plane's environment.

ATTACK_BIN=${ATTACK_BIN:-${PK_CACHE:-$HOME/.cache/poolkeeper}/attacker/bin/attacker}

# attack_limit_kib <webhook|controller>: the chart's memory limit of the
# daemon (charts/poolkeeper/values.yaml, <daemon>.resources.limits.memory), in KiB.
attack_limit_kib() {
  local v
  v=$(yq -r ".$1.resources.limits.memory" "$REPO_ROOT/charts/poolkeeper/values.yaml") || return 1
  case $v in
    *Gi) echo $((${v%Gi} * 1024 * 1024)) ;;
    *Mi) echo $((${v%Mi} * 1024)) ;;
    *Ki) echo "${v%Ki}" ;;
    *) echo "attack_limit_kib: $1's memory limit $v is not in Ki, Mi or Gi" >&2; return 1 ;;
  esac
}

# attack_rss_reset <name>...: the peak RSS (VmHWM) of each process started
# with pk_start starts again from its current RSS (proc(5), clear_refs 5).
attack_rss_reset() {
  local n
  for n in "$@"; do echo 5 >"/proc/$(pk_pid "$n")/clear_refs" || return 1; done
}

# attack_rss_peak <name>: its peak RSS since the last reset, in KiB.
attack_rss_peak() { awk '/^VmHWM:/ { print $2 }' "/proc/$(pk_pid "$1")/status"; }

# attack_metrics <file>: the apiserver's own figures of every admission
# webhook call (admin's /metrics; only the webhook families are kept).
attack_metrics() {
  kubectl get --raw /metrics | grep -E '^apiserver_admission_webhook_(admission_duration_seconds|rejection_count|request_total|fail_open_count)' >"$1"
}

# attack_apiserver_figures <before> <after>: what the apiserver saw of the
# webhooks that serve poolkeeper's pools, claims and addresses (every
# registration with failurePolicy Fail: names ending in ipam.poolkeeper.io,
# the foreign-claims one aside) between two attack_metrics. Prints
# "calls errors le1 p99": the calls, those that failed (rejection_count with
# an error_type other than no_error: the call failed or timed out), the calls
# answered within 1 s, and the p99's bucket bound in seconds (the
# histogram's buckets: 0.005 0.025 0.1 0.5 1 2.5 10 25).
attack_apiserver_figures() {
  awk '
    function key(line,   k) { k = line; sub(/ [^ ]*$/, "", k); return k }
    function ours(line) { return line ~ /name="[^"]*ipam\.poolkeeper\.io"/ && line !~ /name="foreign-claims\./ }
    FNR == NR { if (ours($0)) before[key($0)] = $NF; next }
    !ours($0) { next }
    { d = $NF - before[key($0)] }
    /^apiserver_admission_webhook_admission_duration_seconds_bucket/ {
      match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
      bucket[le] += d; les[le] = 1
    }
    /^apiserver_admission_webhook_admission_duration_seconds_count/ { calls += d }
    /^apiserver_admission_webhook_rejection_count/ && !/error_type="no_error"/ { errors += d }
    END {
      n = 0; for (le in les) if (le != "+Inf") bounds[++n] = le + 0
      # ascending bounds (few: insertion sort)
      for (i = 2; i <= n; i++) { v = bounds[i]; for (j = i - 1; j >= 1 && bounds[j] > v; j--) bounds[j + 1] = bounds[j]; bounds[j + 1] = v }
      p99 = "+Inf"
      for (i = 1; i <= n; i++) {
        c = 0; for (le in les) if (le != "+Inf" && le + 0 == bounds[i]) c = bucket[le]
        if (bounds[i] == 1) le1 = c
        if (p99 == "+Inf" && calls > 0 && c >= 0.99 * calls) p99 = bounds[i]
      }
      if (calls == 0) p99 = "-"
      printf "%d %d %d %s\n", calls, errors, le1, p99
    }' "$1" "$2"
}

# attack_feed <dir> <ns> <pool> <prefix> <seconds> <pause>: valid claims on
# the IPPool, one `kubectl create` each, one after another with <pause>
# seconds between them, for <seconds> or until <dir>/stop exists; each
# create's round trip (ms, the kubectl process included) in <dir>/rtt. <dir>/created, deleted and failed
# as fault_feed writes them (and so fault_check and fault_failed read them).
attack_feed() {
  local dir=$1 ns=$2 pool=$3 prefix=$4 secs=$5 pause=$6 i=0 t0 t1
  mkdir -p "$dir"
  : >"$dir/created"
  : >"$dir/deleted"
  : >"$dir/failed"
  : >"$dir/rtt"
  touch "$dir/../created" "$dir/../deleted"
  rm -f "$dir/done" "$dir/stop"
  local end=$((SECONDS + secs))
  while ((SECONDS < end)) && [[ ! -f $dir/stop ]]; do
    t0=$(date +%s%N)
    _fault_create "$dir" "$ns" IPPool "$pool" "$prefix" "$prefix-$i" || return 1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >>"$dir/rtt"
    i=$((i + 1))
    sleep "$pause"
  done
  touch "$dir/done"
}

# attack_rtt <dir>: "p50 p99 max" of the creates' round trips, in ms.
attack_rtt() {
  sort -n "$1/rtt" | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "- - -"; exit }
    printf "%d %d %d\n", v[int(0.5 * (NR - 1)) + 1], v[int(0.99 * (NR - 1)) + 1], v[NR] }'
}

# ---------------------------------------------------------------- the tenant's long finalizer lists

# attack_tenant <ns> <sa> <kubeconfig>: a ServiceAccount that may only
# create claims in its namespace (and get and list them: kubectl create
# reads nothing else), with a kubeconfig of its own.
attack_tenant() {
  local ns=$1 sa=$2 kc=$3
  kubectl -n "$ns" create serviceaccount "$sa" >/dev/null
  kubectl -n "$ns" create role "$sa" --verb=create,get,list --resource=ipaddressclaims.ipam.cluster.x-k8s.io >/dev/null
  kubectl -n "$ns" create rolebinding "$sa" --role="$sa" --serviceaccount="$ns:$sa" >/dev/null
  "$CLUSTER" sa-kubeconfig "$ns" "$sa" "$kc" 1h
}

# The finalizers of one long claim: 4,300 qualified names of 274 bytes
# (a 253-byte prefix, the most a DNS subdomain takes), 1.19 MB in all.
ATTACK_FINALIZERS=4300

# attack_long_claims <kubeconfig> <ns> <first> <count>: claims long-<i> on
# another provider's pool (FAULT_FOREIGN_POOL), each with ATTACK_FINALIZERS
# finalizers, created as the tenant, ten to a `kubectl create`.
attack_long_claims() {
  local kc=$1 ns=$2 first=$3 count=$4 i n
  for ((i = first; i < first + count; i += 10)); do
    n=$((first + count - i < 10 ? first + count - i : 10))
    jq -n --argjson pool "$FAULT_FOREIGN_POOL" --argjson first "$i" --argjson count "$n" \
      --argjson fins "$ATTACK_FINALIZERS" '
      ("a" * 63) as $l | "\($l).\($l).\($l).\("b" * 61)" as $prefix
      | [range($fins) | "\($prefix)/tenant-final-\(. + 1000000)"] as $f
      | range($first; $first + $count)
      | {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
         metadata: {name: "long-\(.)", labels: {"poolkeeper.io/attack": "long-finalizers"}, finalizers: $f},
         spec: {poolRef: $pool}}' |
      KUBECONFIG=$kc kubectl -n "$ns" create -f - -o name >/dev/null || return 1
  done
}

# attack_long_claims_gone <ns>: the long claims' finalizers dropped (as the
# admin: no one else ever would), then the claims deleted.
attack_long_claims_gone() {
  local ns=$1 names
  mapfile -t names < <(kubectl -n "$ns" get "$FAULT_CLAIMS" -l poolkeeper.io/attack=long-finalizers -o name)
  ((${#names[@]})) || return 0
  kubectl -n "$ns" delete "${names[@]}" --wait=false >/dev/null
  kubectl -n "$ns" patch "${names[@]}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
}
