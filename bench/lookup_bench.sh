#!/usr/bin/env bash
# The webhook lookups benchmark, against the control plane $KUBECONFIG points
# at (the loopback plane of e2e/cluster): the latency of a GlobalIPPool UPDATE
# review with N IPAddresses present, answered from the informer caches
# (poolkeeper-webhook's lookups) and, in the same run, by live reads of the
# API server (the lookups before the caches: a LIST of every IPAddress for
# the pool's addresses), with each one's peak RSS. Two pools:
#   big    GlobalIPPool pkb-big, holding all N addresses (10.64.0.0/14);
#   small  GlobalIPPool pkb-small, holding 10 addresses, the N others present.
# Each review is a metadata-only UPDATE (a label added), as the controller's
# own finalizer patches are: the overlap and shrink checks run in full.
#   pk_lookup_bench --mode live|cached    the decision in-process, one
#                                         process per mode and pool;
#   poolkeeper-webhook                    the built binary as it runs: time
#                                         to /readyz, the review POSTed over
#                                         TLS with curl, its peak RSS.
# The N IPAddresses are created once (pk_lookup_bench --mode create, 32
# requests at a time), in namespace pkb-lookup, and left in place for the
# next run unless -d.
# Prints figures; never fails on them.
#
#   bench/lookup_bench.sh BUILD_DIR [-n ADDRESSES] [-r REPEATS] [-d]
#
#   -n   IPAddresses of pool pkb-big (default 100000)
#   -r   reviews timed per mode and pool (default 20)
#   -d   delete the namespace and pools at the end (takes minutes)
set -euo pipefail
build=$(cd "$1" && pwd)
shift
count=100000
repeats=20
delete=0
while getopts "n:r:d" opt; do
  case $opt in
    n) count=$OPTARG ;;
    r) repeats=$OPTARG ;;
    d) delete=1 ;;
    *) echo "usage: $0 BUILD_DIR [-n ADDRESSES] [-r REPEATS] [-d]" >&2; exit 2 ;;
  esac
done
: "${KUBECONFIG:?set KUBECONFIG to the plane (eval \"\$(e2e/cluster env)\")}"
bench=$build/bench/pk_lookup_bench
webhook=$build/bin/poolkeeper-webhook
for f in "$bench" "$webhook" "$build/bin/poolkeeper-certs"; do
  [[ -x $f ]] || { echo "lookup_bench: $f is not built" >&2; exit 1; }
done
NS=pkb-lookup
tmp=$(mktemp -d)
wpid=
cleanup() {
  if [[ -n $wpid ]]; then
    kill -TERM "$wpid" 2>/dev/null || true
    wait "$wpid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

pool() { # name cidr
  kubectl apply -f - >/dev/null <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: GlobalIPPool
metadata: {name: $1}
spec: {addresses: ["$2"], prefix: ${2#*/}}
EOF
}

# present [namespace]: how many IPAddresses there are (one page of one item: the
# apiserver counts the rest).
present() {
  kubectl get --raw "/apis/ipam.cluster.x-k8s.io/v1beta2${1:+/namespaces/$1}/ipaddresses?limit=1" |
    jq '(.metadata.remainingItemCount // 0) + (.items | length)'
}

kubectl get namespace "$NS" >/dev/null 2>&1 || kubectl create namespace "$NS" >/dev/null
pool pkb-big 10.64.0.0/14
pool pkb-small 10.96.0.0/16
t0=$SECONDS
if (($(present "$NS") < count + 10)); then
  echo "creating $count IPAddresses of GlobalIPPool pkb-big and 10 of pkb-small ..."
  "$bench" --mode create --namespace "$NS" --pool pkb-big --first 10.64.0.1 -n "$count"
  "$bench" --mode create --namespace "$NS" --pool pkb-small --first 10.96.0.1 -n 10
  echo "  $(present "$NS") present after $((SECONDS - t0)) s"
fi
total=$(present)
echo "IPAddresses in the cluster: $total (namespace $NS: $(present "$NS"))"

# review <pool>: a metadata-only UPDATE of the pool as it is now.
review() {
  kubectl get globalippool "$1" -o json >"$tmp/$1.old.json"
  jq -c --slurpfile old "$tmp/$1.old.json" '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
    request: {uid: "bench-0001", operation: "UPDATE", name: .metadata.name,
      resource: {group: "ipam.poolkeeper.io", version: "v1alpha1", resource: "globalippools"},
      object: (.metadata.labels = {"bench": "1"}), oldObject: $old[0]}}' \
    "$tmp/$1.old.json" >"$tmp/$1.review.json"
}
review pkb-big
review pkb-small

field() { grep -o " $2=[^ ]*" <<<"$1" | cut -d= -f2; } # field <RESULT line> <key>
declare -A res
for p in pkb-big pkb-small; do
  for m in live cached; do
    line=$("$bench" --mode "$m" --review "$tmp/$p.review.json" -r "$repeats" 2>"$tmp/$m.err" | grep '^RESULT ') ||
      { cat "$tmp/$m.err" >&2; exit 1; }
    res[$p.$m]=$line
    echo "$p $line"
  done
done

# The built binary: its caches, its readiness, the review over TLS.
"$build/bin/poolkeeper-certs" --out-dir "$tmp/certs" --ip 127.0.0.1 >"$tmp/certs.log" 2>&1 ||
  { cat "$tmp/certs.log" >&2; exit 1; }
t1=$(date +%s.%N)
"$webhook" --tls-cert-file "$tmp/certs/tls.crt" --tls-private-key-file "$tmp/certs/tls.key" \
  --webhook-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
  --metrics-bind-address 0 --kubeconfig "$KUBECONFIG" 2>"$tmp/webhook.log" &
wpid=$!
port_of() { grep -o "listener=$1 port=[0-9]*" "$tmp/webhook.log" | head -n 1 | cut -d= -f3; }
for ((i = 0; i < 600; i++)); do
  [[ -n $(port_of health) ]] && break
  sleep 0.1
done
hport=$(port_of health)
wport=$(port_of webhook)
[[ -n $hport && -n $wport ]] || { cat "$tmp/webhook.log" >&2; exit 1; }
for ((i = 0; i < 6000; i++)); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/readyz") == 200 ]] && break
  sleep 0.1
done
ready_s=$(echo "$(date +%s.%N) - $t1" | bc)
rss_ready=$(awk '/^VmRSS:/ {print $2}' "/proc/$wpid/status")
for p in pkb-big pkb-small; do
  # one curl, one kept-alive TLS connection: each time is the request's own
  curl -s --cacert "$tmp/certs/ca.crt" -H 'Content-Type: application/json' \
    --data-binary "@$tmp/$p.review.json" -o "$tmp/answer-#1.json" -w '%{time_total} %{time_pretransfer}\n' \
    "https://127.0.0.1:$wport/validate?i=[1-$repeats]" | awk '{printf "%.6f\n", $1 - $2}' >"$tmp/$p.times"
  jq -e '.response.allowed' "$tmp/answer-1.json" >/dev/null ||
    echo "warning: $p review not allowed: $(cat "$tmp/answer-1.json")" >&2
  p50=$(sort -n "$tmp/$p.times" | awk -v n="$repeats" 'NR == int(n / 2) + 1 {printf "%.2f", $1 * 1000}')
  max=$(sort -n "$tmp/$p.times" | tail -n 1 | awk '{printf "%.2f", $1 * 1000}')
  res[$p.binary]="p50_ms=$p50 max_ms=$max"
done
peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$wpid/status")
rss_after=$(awk '/^VmRSS:/ {print $2}' "/proc/$wpid/status")

echo
echo "GlobalIPPool UPDATE review, $total IPAddresses in the cluster, $repeats reviews each (ms; RSS MiB)"
printf '%-34s %10s %10s %10s %12s\n' "" "p50" "max" "load s" "peak RSS"
for p in pkb-big pkb-small; do
  for m in live cached; do
    l=${res[$p.$m]}
    printf '%-34s %10s %10s %10s %12.1f\n' "$p in-process, $m" "$(field "$l" p50_ms)" "$(field "$l" max_ms)" \
      "$(field "$l" load_s)" "$(echo "$(field "$l" peak_rss_kb) / 1024" | bc -l)"
  done
done
for p in pkb-big pkb-small; do
  printf '%-34s %10s %10s\n' "$p poolkeeper-webhook, over TLS" "$(field " ${res[$p.binary]}" p50_ms)" \
    "$(field " ${res[$p.binary]}" max_ms)"
done
printf 'poolkeeper-webhook: ready (every cache listed) after %.1f s; RSS %.1f MiB once ready, %.1f MiB after the reviews; peak %.1f MiB\n' \
  "$ready_s" "$(echo "$rss_ready / 1024" | bc -l)" "$(echo "$rss_after / 1024" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
grep -o 'msg="admission lookups answer from the caches".*' "$tmp/webhook.log" || true

if ((delete)); then
  kubectl delete namespace "$NS" --wait=true >/dev/null
  kubectl delete globalippool pkb-big pkb-small >/dev/null
fi
