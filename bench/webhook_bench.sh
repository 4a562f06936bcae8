#!/usr/bin/env bash
# The webhook benchmark: wrk posting AdmissionReviews over TLS keep-alive on
# 127.0.0.1, for a claim and for a pool, against poolkeeper-webhook (no API
# access, so only its own work is measured) and, in the same run, against
# pk_mhd_ceiling (the same libmicrohttpd/GnuTLS stack that parses the review
# and answers allowed: true). Prints requests per second, p50 and p99
# latency, peak RSS, and the ratio to the ceiling. Never fails on figures.
#
#   bench/webhook_bench.sh BUILD_DIR [SECONDS] [CONNECTIONS] [THREADS]
set -euo pipefail
build=$(cd "$1" && pwd)
secs=${2:-10}
conns=${3:-16}
threads=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The serving pair the chart's certificate Job would make, for 127.0.0.1.
"$build/bin/poolkeeper-certs" --out-dir "$tmp/certs" --ip 127.0.0.1 >"$tmp/certs.log" 2>&1 ||
  { cat "$tmp/certs.log" >&2; exit 1; }

review() { # operation, group, version, resource, object json
  jq -cn --arg op "$1" --arg g "$2" --arg v "$3" --arg r "$4" --argjson o "$5" \
    '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
      request: {uid: "bench-0001", operation: $op, resource: {group: $g, version: $v, resource: $r},
                namespace: "team-a", name: $o.metadata.name, object: $o}}'
}
review CREATE ipam.cluster.x-k8s.io v1beta2 ipaddressclaims '{
  "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
  "metadata": {"name": "md-0-7x9kq-eth0", "namespace": "team-a",
    "ownerReferences": [{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
      "kind": "VSphereMachine", "name": "md-0-7x9kq", "uid": "5b1c7c48-9a5e-4f5b-8d6f-0c2f3a1b4d5e",
      "controller": true, "blockOwnerDeletion": true}]},
  "spec": {"clusterName": "prod", "poolRef": {"apiGroup": "ipam.poolkeeper.io", "kind": "IPPool", "name": "nodes"}}}' >"$tmp/claim.json"
review CREATE ipam.poolkeeper.io v1alpha1 ippools '{
  "apiVersion": "ipam.poolkeeper.io/v1alpha1", "kind": "IPPool",
  "metadata": {"name": "nodes", "namespace": "team-a"},
  "spec": {"addresses": ["10.10.0.0/24", "10.10.1.10-10.10.1.200"], "prefix": 23,
    "gateway": "10.10.0.1", "excludedAddresses": ["10.10.0.100-10.10.0.120"]}}' >"$tmp/pool.json"

port_of() { # log file, listener
  local i
  for ((i = 0; i < 100; i++)); do
    if grep -q "listener=$2 port=" "$1" 2>/dev/null; then
      grep -o "listener=$2 port=[0-9]*" "$1" | head -n 1 | cut -d= -f3
      return
    fi
    sleep 0.1
  done
  echo "no port in $1" >&2
  cat "$1" >&2
  exit 1
}

env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST "$build/bin/poolkeeper-webhook" \
  --tls-cert-file "$tmp/certs/tls.crt" --tls-private-key-file "$tmp/certs/tls.key" \
  --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 \
  --thread-pool-size "$threads" 2>"$tmp/webhook.log" &
pids+=($!)
wpid=$!
wport=$(port_of "$tmp/webhook.log" webhook)

"$build/bench/pk_mhd_ceiling" "$tmp/certs/tls.crt" "$tmp/certs/tls.key" 0 "$threads" >"$tmp/ceiling.log" 2>&1 &
pids+=($!)
cpid=$!
for ((i = 0; i < 100; i++)); do grep -q port= "$tmp/ceiling.log" && break; sleep 0.1; done
cport=$(grep -o 'port=[0-9]*' "$tmp/ceiling.log" | cut -d= -f2)

# run <label> <port> <review file>: prints "rps p50 p99" (ms)
run() {
  PK_REVIEW=$3 PK_PATH=/validate wrk -t1 -c1 -d1s -s "$here/admission.lua" "https://127.0.0.1:$2" >/dev/null 2>&1
  PK_REVIEW=$3 PK_PATH=/validate wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$here/admission.lua" \
    "https://127.0.0.1:$2" >"$tmp/wrk.out" 2>&1
  if grep -qE 'Non-2xx|Socket errors' "$tmp/wrk.out"; then
    echo "   ($1: $(grep -E 'Non-2xx|Socket errors' "$tmp/wrk.out" | tr -s ' '))" >&2
  fi
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out")
  p50=$(awk '$1 == "50%" {print $2}' "$tmp/wrk.out")
  p99=$(awk '$1 == "99%" {print $2}' "$tmp/wrk.out")
  printf '%-34s %10s req/s   p50 %8s   p99 %8s\n' "$1" "$rps" "$p50" "$p99"
  echo "$rps" >"$tmp/last.rps"
}
hwm() { awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$1/status"; }

echo "== webhook: wrk -t1 -c$conns -d${secs}s over TLS keep-alive, $threads server threads, $(nproc) cores"
run "ceiling (parse, allowed: true)" "$cport" "$tmp/claim.json"
ceiling=$(cat "$tmp/last.rps")
run "poolkeeper-webhook, claim" "$wport" "$tmp/claim.json"
claim=$(cat "$tmp/last.rps")
run "poolkeeper-webhook, pool" "$wport" "$tmp/pool.json"
pool=$(cat "$tmp/last.rps")
echo "peak RSS: poolkeeper-webhook $(hwm "$wpid"), ceiling $(hwm "$cpid")"
awk -v c="$ceiling" -v a="$claim" -v p="$pool" \
  'BEGIN {printf "ratio to the ceiling: claim %.2f, pool %.2f\n", a / c, p / c}'
