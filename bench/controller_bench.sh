#!/usr/bin/env bash
# The controller benchmark, against the control plane $KUBECONFIG points at
# (the loopback plane of e2e/cluster). For each claim count N, in one run:
#   baseline    with no controller running, pk_controller_bench performs for
#               each of N claims only the writes a provider cannot avoid (the
#               finalizer JSON patch, the IPAddress create, the claim status
#               merge patch) with the controller's own builders through
#               libpkkube: the apiserver's ceiling;
#   controller  N claims on a paused IPPool, poolkeeper-controller started and
#               idle (it has seen every claim), then the pool is unpaused and
#               the clock runs until every claim is Ready. Its CPU seconds in
#               that window and its peak RSS come from /proc.
# Both run with client-side rate limits that do not bind (--kube-api-qps and
# --kube-api-burst 100000; the baseline has none) and the same number of workers. Then the
# memory figure: M IPAddresses from one pool, the controller started, and its
# RSS once it has listed them, built the pool's allocator and gone idle.
# Prints figures and the ratio controller/baseline; never fails on figures.
#
#   bench/controller_bench.sh BUILD_DIR [-n "1000 10000"] [-w WORKERS] [-r REPEATS] [-o ORDER]
#                             [-a ADDRESSES] [-k] [-c CONTROLLER] [-b OTHER]
#
#   -n   claim counts (default "1000 10000")
#   -w   workers for the controller (--workers) and the baseline (default 1)
#   -r   baseline/controller pairs per count, alternating (default 1)
#   -o   the baseline's order: phase (every claim's finalizer, then every
#        IPAddress, then every status: the order of a FIFO work queue, and the
#        faster one) or claim (each claim's three writes in a row) (default phase)
#   -a   IPAddresses for the memory figure (default 100000; 0 skips it)
#   -k   leave the memory figure's namespace (pkb-mem) in place: for a plane
#        that is taken down next, since deleting 100,000 objects takes minutes
#   -c   controller binary (default BUILD_DIR/bin/poolkeeper-controller)
#   -b   another controller binary (an earlier build, say) whose memory is
#        measured on the same IPAddresses, before -c's, for a side-by-side figure
set -euo pipefail
build=$(cd "$1" && pwd)
shift
counts="1000 10000"
workers=1
repeats=1
order=phase
keep_last=0
addresses=100000
controller=$build/bin/poolkeeper-controller
other=
while getopts "n:w:a:c:b:r:o:k" opt; do
  case $opt in
    n) counts=$OPTARG ;;
    w) workers=$OPTARG ;;
    a) addresses=$OPTARG ;;
    c) controller=$OPTARG ;;
    b) other=$OPTARG ;;
    r) repeats=$OPTARG ;;
    o) order=$OPTARG ;;
    k) keep_last=1 ;;
    *) echo "usage: $0 BUILD_DIR [-n COUNTS] [-w WORKERS] [-r REPEATS] [-o ORDER] [-a ADDRESSES] [-k] [-c CONTROLLER] [-b OTHER]" >&2; exit 2 ;;
  esac
done
bench=$build/bench/pk_controller_bench
: "${KUBECONFIG:?set KUBECONFIG to the plane (eval \"\$(e2e/cluster env)\")}"
for f in "$bench" "$controller" ${other:+"$other"}; do
  [[ -x $f ]] || { echo "controller_bench: $f is not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
cpid=
namespaces=()
cleanup() {
  if [[ -n $cpid ]]; then
    kill -TERM "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
  fi
  for n in "${namespaces[@]}"; do "$bench" cleanup --namespace "$n" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
field() { grep -o " $2=[^ ]*" <<<"$1" | cut -d= -f2; } # field <RESULT line> <key>
result() { grep '^RESULT ' "$1" | tail -n 1; }

# start_controller <log>: poolkeeper-controller on free ports, rate limits out
# of the way; sets cpid and mport.
start_controller() {
  local i
  "$controller" --kubeconfig "$KUBECONFIG" --leader-election-namespace default \
    --health-probe-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 \
    --kube-api-qps 100000 --kube-api-burst 100000 \
    --workers "$workers" 2>"$1" &
  cpid=$!
  for ((i = 0; i < 600; i++)); do
    mport=$(grep -o 'listener=metrics port=[0-9]*' "$1" | head -n 1 | cut -d= -f3) || true
    [[ -n $mport ]] && return 0
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
  done
  echo "controller_bench: the controller did not start:" >&2
  tail -n 20 "$1" >&2
  exit 1
}

stop_controller() {
  kill -TERM "$cpid" 2>/dev/null || true
  wait "$cpid" 2>/dev/null || true
  cpid=
}

metric() { awk -v m="$2" '$1 == m {print $2}' <<<"$1"; }

# wait_idle <min reconciles> <timeout s> [log line]: until the controller
# leads, its queue is empty, it has processed at least that many keys and
# the count stayed put for a second (and the log has the line, if given).
wait_idle() {
  local min=$1 limit=$2 line=${3:-} m prev=-1 rec depth leader t0=$SECONDS
  while ((SECONDS - t0 < limit)); do
    kill -0 "$cpid" 2>/dev/null || { echo "controller_bench: the controller exited" >&2; return 1; }
    if m=$(curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null); then
      rec=$(metric "$m" poolkeeper_reconciles_total)
      depth=$(metric "$m" poolkeeper_workqueue_depth)
      leader=$(metric "$m" poolkeeper_leader)
      if [[ $leader == 1 && $depth == 0 && ${rec:-0} -ge $min && $rec == "$prev" ]] &&
        { [[ -z $line ]] || grep -q "$line" "$tmp/controller.log"; }; then
        return 0
      fi
      prev=$rec
    fi
    sleep 1
  done
  echo "controller_bench: the controller was not idle within ${limit}s (reconciles ${rec:-?}, queue ${depth:-?})" >&2
  return 1
}

# ---- what the apiserver did in a window: its CPU seconds and requests by verb ----

proc_cpu() { # pid: CPU seconds so far (utime + stime)
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0
}
plane_pid() { [[ -n ${PK_E2E_STATE:-} && -f $PK_E2E_STATE/pids/$1.pid ]] && cat "$PK_E2E_STATE/pids/$1.pid"; }
apiserver=$(plane_pid kube-apiserver || true)
etcd=$(plane_pid etcd || true)
plane_cpu() { # "apiserver etcd" CPU seconds
  echo "$([[ -n $apiserver ]] && proc_cpu "$apiserver" || echo 0) $([[ -n $etcd ]] && proc_cpu "$etcd" || echo 0)"
}
# Requests of the benchmark's kinds (and Leases, Events), summed by verb and resource.
requests() {
  kubectl get --raw /metrics 2>/dev/null | awk '
    /^apiserver_request_total\{/ {
      v = $0; sub(/.*verb="/, "", v); sub(/".*/, "", v)
      r = $0; sub(/.*[{,]resource="/, "", r); sub(/".*/, "", r)
      sr = $0; sub(/.*subresource="/, "", sr); sub(/".*/, "", sr)
      if (r !~ /^(ipaddressclaims|ipaddresses|ippools|leases|events)$/) next
      if (sr != "") r = r "/" sr
      n[v " " r] += $NF
    }
    END { for (k in n) print k, n[k] }' | sort
}
# requests_delta <before> <after>: "VERB resource count" for what changed.
requests_delta() {
  awk 'NR == FNR {b[$1 " " $2] = $3; next} {d = $3 - b[$1 " " $2]; if (d > 0) printf "%s %s %d, ", $1, $2, d}' \
    "$1" "$2" | sed 's/, $//'
}

# run_baseline <n>: writes the baseline's RESULT line, with the plane's CPU, to $tmp/base.res.
run_baseline() {
  local n=$1 ns=pkb-base-$1 c0 c1
  "$bench" cleanup --namespace "$ns"
  echo "-- $n claims: baseline ($workers worker(s), order $order, no controller running), load $(load)"
  "$bench" prepare --namespace "$ns" -n "$n" >"$tmp/prep.out"
  requests >"$tmp/req0"
  c0=$(plane_cpu)
  "$bench" baseline --namespace "$ns" -n "$n" --workers "$workers" --order "$order" >"$tmp/base.out"
  c1=$(plane_cpu)
  requests >"$tmp/req1"
  grep -v '^RESULT' "$tmp/base.out"
  echo "apiserver requests: $(requests_delta "$tmp/req0" "$tmp/req1")"
  echo "$(result "$tmp/base.out") $(awk -v a="$c0" -v b="$c1" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "api_cpu_s=%.2f etcd_cpu_s=%.2f", y[1] - x[1], y[2] - x[2]}') load=$(load | tr ' ' /)" >"$tmp/base.res"
  "$bench" cleanup --namespace "$ns"
}

# run_controller <n>: writes the controller's RESULT line, with the plane's CPU, to $tmp/ctl.res.
run_controller() {
  local n=$1 ns=pkb-ctl-$1 c0 c1 t0
  "$bench" cleanup --namespace "$ns"
  echo "-- $n claims: poolkeeper-controller, load $(load)"
  "$bench" prepare --namespace "$ns" -n "$n" --paused >"$tmp/prep.out"
  t0=$SECONDS
  start_controller "$tmp/controller.log"
  wait_idle "$n" 600
  echo "controller idle with $n claims on the paused pool after $((SECONDS - t0)) s; unpausing the pool"
  requests >"$tmp/req0"
  c0=$(plane_cpu)
  "$bench" wait --namespace "$ns" -n "$n" --unpause --controller-pid "$cpid" >"$tmp/ctl.out"
  c1=$(plane_cpu)
  requests >"$tmp/req1"
  grep -v '^RESULT' "$tmp/ctl.out"
  echo "apiserver requests: $(requests_delta "$tmp/req0" "$tmp/req1")"
  echo "controller log: $(grep -c . "$tmp/controller.log") lines, $(grep -c 'write failed' "$tmp/controller.log" || true) failed writes"
  cp "$tmp/controller.log" "$tmp/controller-$n.log"
  echo "$(result "$tmp/ctl.out") $(awk -v a="$c0" -v b="$c1" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "api_cpu_s=%.2f etcd_cpu_s=%.2f", y[1] - x[1], y[2] - x[2]}') load=$(load | tr ' ' /)" >"$tmp/ctl.res"
  stop_controller
  "$bench" cleanup --namespace "$ns"
}

rows=()
echo "== controller: claims on one IPPool until Ready, next to the baseline of the unavoidable writes"
echo "   ($(nproc) cores; $controller --workers $workers --kube-api-qps 100000 --kube-api-burst 100000; $repeats run(s) of each)"
for n in $counts; do
  namespaces+=("pkb-base-$n" "pkb-ctl-$n")
  for ((r = 1; r <= repeats; r++)); do
    echo
    run_baseline "$n"
    run_controller "$n"
    base=$(cat "$tmp/base.res")
    ctl=$(cat "$tmp/ctl.res")
    bs=$(field "$base" per_s)
    cs=$(field "$ctl" per_s)
    rows+=("$(awk -v n="$n" -v b="$(field "$base" seconds)" -v bs="$bs" -v bc="$(field "$base" api_cpu_s)" \
      -v c="$(field "$ctl" seconds)" -v cs="$cs" -v cc="$(field "$ctl" api_cpu_s)" \
      -v cpu="$(field "$ctl" cpu_s)" -v hwm="$(field "$ctl" hwm_kib)" \
      -v lb="$(field "$base" load | tr / ' ')" -v lc="$(field "$ctl" load | tr / ' ')" \
      'BEGIN {printf "| %6d | %7.2f | %6.1f | %6.1f | %7.2f | %6.1f | %6.1f | %5.2f | %6.2f | %6.1f | %s; %s |", n, b, bs, bc, c, cs, cc, cs / bs, cpu, hwm / 1024, lb, lc}')")
  done
done

echo
echo "| claims | baseline s | claims/s | apiserver CPU s | controller s | claims/s | apiserver CPU s | ratio | controller CPU s | peak RSS MiB | load after (baseline; controller) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"

if ((addresses > 0)); then
  nsm=pkb-mem
  ((keep_last)) || namespaces+=("$nsm")
  "$bench" cleanup --namespace "$nsm"
  echo
  echo "== controller memory: $addresses IPAddresses from one IPPool in the cache, load $(load)"
  "$bench" addresses --namespace "$nsm" -n "$addresses" | tee "$tmp/mem.out"
  mine=$controller
  for controller in ${other:+"$other"} "$mine"; do
    echo "-- $controller"
    t0=$(date +%s.%N)
    start_controller "$tmp/controller.log"
    if wait_idle 1 3600 "pool allocator built"; then
      t1=$(date +%s.%N)
      awk -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" -v n="$addresses" \
        '/^VmHWM/ {h = $2} /^VmRSS/ {r = $2}
         END {printf "controller idle with %d IPAddresses after %.1f s: RSS %.1f MiB, peak RSS %.1f MiB\n", n, t, r / 1024, h / 1024}' \
        "/proc/$cpid/status"
      awk -v hz="$(getconf CLK_TCK)" '{printf "controller CPU seconds to get there: %.2f\n", ($14 + $15) / hz}' "/proc/$cpid/stat"
    fi
    grep -m1 'pool allocator built' "$tmp/controller.log" || true
    stop_controller
  done
  controller=$mine
  ((keep_last)) || "$bench" cleanup --namespace "$nsm"
fi
