# shellcheck shell=bash
# Helpers of the fault suite (e2e/tests/fault.bats): a claim feeder that
# creates and deletes claims at a pace while a fault is injected, a
# supervisor that restarts exited controllers as kubelet would, and the
# checks that hold after every fault (every claim Ready, no address held
# twice, none leaked, exact pool counts).
#
# Needs helpers.bash and poolkeeper.bash (pk_start_controller, pk_pid,
# pk_stop, pk_jsonpath) and the plane's environment.

FAULT_CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
FAULT_ADDRS=ipaddresses.ipam.cluster.x-k8s.io

# ---------------------------------------------------------------- claims

# The claim a CAPI infrastructure provider creates for a machine's device
# (CAPV's createOrPatchIPAddressClaim in pkg/services/govmomi/ipam/status.go:
# named after the machine, in its namespace, owned by it, labelled with the
# Cluster's name, poolRef to the pool). The stand-in machine is the
# ConfigMap "machine" (fault_machine), so that the owner reference resolves
# for the garbage collector; the owner carries controller and
# blockOwnerDeletion as the contract asks, and spec.clusterName is set.
# shellcheck disable=SC2016 # a jq program
FAULT_CLAIM_JQ='{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
  metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod", "poolkeeper.io/fault": $tag},
             ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "machine", uid: $u,
                                controller: true, blockOwnerDeletion: true}]},
  spec: {clusterName: "prod", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: $k, name: $p}}}'

# fault_machine <ns>: the Cluster "prod" and the stand-in machine (ConfigMap
# "machine") that the claims of <ns> belong to.
fault_machine() {
  kubectl -n "$1" apply -f - >/dev/null <<'EOF'
{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "prod"}, "spec": {"paused": false}}
EOF
  kubectl -n "$1" get configmap machine >/dev/null 2>&1 || kubectl -n "$1" create configmap machine >/dev/null
}

# _fault_claim_docs <ns> <pool kind> <pool name> <tag> <name>...: the claims,
# one stream of documents from one jq.
_fault_claim_docs() {
  local ns=$1 kind=$2 pool=$3 tag=$4 uid
  shift 4
  uid=$(kubectl -n "$ns" get configmap machine -o jsonpath='{.metadata.uid}') || return 1
  printf '%s\n' "$@" | jq -R --arg k "$kind" --arg p "$pool" --arg u "$uid" --arg tag "$tag" \
    ". as \$n | $FAULT_CLAIM_JQ"
}

# _fault_create <dir> <ns> <pool kind> <pool name> <tag> <name>...: creates
# the claims with one `kubectl create` of a multi-document stream, again
# until every one exists. Each refused object is one line in <dir>/failed:
# "admission <message>" when an admission webhook refused or could not be
# called, "request <message>" for anything else (the apiserver down, etcd
# unavailable). An object that already exists was created by an earlier try.
_fault_create() {
  local dir=$1 ns=$2 kind=$3 pool=$4 tag=$5 docs err line tries=0 ok
  shift 5
  docs=$(_fault_claim_docs "$ns" "$kind" "$pool" "$tag" "$@") || docs=
  while :; do
    ok=1
    if [[ -z $docs ]]; then
      echo "request cannot read the machine's uid in $ns" >>"$dir/failed"
      ok=0
      sleep 1
      docs=$(_fault_claim_docs "$ns" "$kind" "$pool" "$tag" "$@") || docs=
    elif ! err=$(kubectl -n "$ns" create --request-timeout=30s -f - -o name <<<"$docs" 2>&1 >/dev/null); then
      while IFS= read -r line; do
        [[ -n $line ]] || continue
        case $line in
          *AlreadyExists* | *"already exists"*) ;;
          *"admission webhook"* | *"failed calling webhook"*) echo "admission $line" >>"$dir/failed"; ok=0 ;;
          *) echo "request $line" >>"$dir/failed"; ok=0 ;;
        esac
      done <<<"$err"
    fi
    ((ok)) && break
    ((++tries < 120)) || { echo "request gave up after $tries tries" >>"$dir/failed"; return 1; }
    sleep 1
  done
  printf '%s\n' "${@/#/$ns/}" | tee -a "$dir/../created" >>"$dir/created"
}

# _fault_delete <dir> <ns> <name>...: deletes the claims (without waiting for
# their release), again until the apiserver accepts; records them.
_fault_delete() {
  local dir=$1 ns=$2 tries=0
  shift 2
  ((${#@})) || return 0
  until kubectl -n "$ns" delete "$FAULT_CLAIMS" --ignore-not-found --wait=false --request-timeout=30s "$@" >/dev/null 2>&1; do
    ((++tries < 120)) || { echo "request delete gave up after $tries tries" >>"$dir/failed"; return 1; }
    sleep 1
  done
  printf '%s\n' "${@/#/$ns/}" | tee -a "$dir/../deleted" >>"$dir/deleted"
}

# fault_feed <dir> <pool kind> <pool name> <prefix> <count> <chunk> <pause s> <ns>...
# Creates <count> claims named <prefix>-<i> in chunks of <chunk>, one chunk
# every <pause> seconds, the chunks taking the namespaces in turn. After each
# chunk it deletes the claims of the chunk before the previous one whose
# number is a multiple of 5, so that releases run during the fault too.
# <dir> is <burst>/<phase>: the claims created and deleted are appended
# ("ns/name" lines) to <dir>/created and <dir>/deleted and to the same files
# of the burst, which fault_check reads. Writes <dir>/failed (see
# _fault_create) and <dir>/done when it has finished.
fault_feed() {
  local dir=$1 kind=$2 pool=$3 prefix=$4 count=$5 chunk=$6 pause=$7
  shift 7
  local nss=("$@") c=0 i j names dels ns
  mkdir -p "$dir"
  : >"$dir/created"
  : >"$dir/deleted"
  : >"$dir/failed"
  touch "$dir/../created" "$dir/../deleted"
  rm -f "$dir/done"
  for ((i = 0; i < count; i += chunk, c++)); do
    ns=${nss[c % ${#nss[@]}]}
    names=()
    for ((j = i; j < i + chunk && j < count; j++)); do names+=("$prefix-$j"); done
    _fault_create "$dir" "$ns" "$kind" "$pool" "$prefix" "${names[@]}"
    if ((c >= 2)); then
      ns=${nss[(c - 2) % ${#nss[@]}]}
      dels=()
      for ((j = (c - 2) * chunk; j < (c - 1) * chunk; j++)); do ((j % 5)) || dels+=("$prefix-$j"); done
      _fault_delete "$dir" "$ns" "${dels[@]}"
    fi
    sleep "$pause"
  done
  touch "$dir/done"
}

# fault_failed <dir> <admission|request>: how many objects were refused so.
fault_failed() { grep -c "^$2 " "$1/failed" || true; }

# ---------------------------------------------------------------- controllers

# The controllers the supervisor keeps running are named in
# $FAULT_STATE/controllers (bats runs each test in a subshell: state that
# outlives a test is kept in files), the restarts counted in
# $FAULT_STATE/restarts.
# Short Lease timings, so that a killed leader is replaced within seconds.
FAULT_LEASE=(--leader-elect-lease-duration 8s --leader-elect-renew-deadline 5s --leader-elect-retry-period 1s)

fault_controllers() { cat "$FAULT_STATE/controllers" 2>/dev/null; }

# _fault_start <name>: pk_start_controller in a subshell, so that the
# process is not a job of the test's shell (which would report "Killed"
# into the TAP output when the suite kills it).
_fault_start() { (pk_start_controller "$1" "${FAULT_LEASE[@]}"); }

# fault_start_controller <name>: starts it (as the chart's ServiceAccount)
# and puts it under the supervisor.
fault_start_controller() {
  _fault_start "$1" || return 1
  grep -qx "$1" "$FAULT_STATE/controllers" 2>/dev/null || echo "$1" >>"$FAULT_STATE/controllers"
}

# fault_unsupervise <name>: stops it and takes it from the supervisor.
fault_unsupervise() {
  grep -vx "$1" "$FAULT_STATE/controllers" >"$FAULT_STATE/controllers.new" || true
  mv "$FAULT_STATE/controllers.new" "$FAULT_STATE/controllers"
  pk_stop "$1"
}

# fault_restarts: the number of controller starts after the first of each,
# whether the suite killed the process or it exited by itself (leadership
# lost while the apiserver was down).
fault_restarts() { cat "$FAULT_STATE/restarts" 2>/dev/null || echo 0; }
_fault_count_restart() { echo $(($(fault_restarts) + 1)) >"$FAULT_STATE/restarts"; }

# fault_supervise: starts again every supervised controller that is not
# running, as kubelet restarts a container that exited; logs the exit.
fault_supervise() {
  local n f p
  for n in $(fault_controllers); do
    f=$PK_E2E_STATE/pids/$n.pid
    if [[ -f $f ]] && p=$(cat "$f") && kill -0 "$p" 2>/dev/null; then continue; fi
    rm -f "$f"
    echo "=== $(date -u +%FT%TZ) supervisor: $n was not running; starting it again" >>"$PK_E2E_LOG_DIR/$n.log"
    _fault_start "$n" >/dev/null 2>&1 || continue
    _fault_count_restart
  done
}

# fault_sleep <seconds>: waits, restarting exited controllers meanwhile.
fault_sleep() {
  local end=$((SECONDS + $1))
  while ((SECONDS < end)); do
    fault_supervise
    sleep 0.5
  done
}

# fault_kill9 <name>: SIGKILL, then started again at once (counted).
fault_kill9() {
  pk_stop "$1" KILL
  _fault_start "$1" || return 1
  _fault_count_restart
}

# fault_identity <name>: the Lease identity of the controller's latest start
# (empty until that process has listed and campaigns).
fault_identity() {
  awk '/^=== / { id = "" }
       /msg="leader election"/ { for (i = 1; i <= NF; i++) if ($i ~ /^identity=/) id = substr($i, 10) }
       END { print id }' "$PK_E2E_LOG_DIR/$1.log"
}

# fault_holder: the Lease's holder.
fault_holder() { pk_jsonpath -n "$PK_RELEASE_NS" lease poolkeeper-controller '{.spec.holderIdentity}' 2>/dev/null; }

# fault_leader: the name of the supervised controller that holds the Lease.
fault_leader() {
  local h n
  h=$(fault_holder) || return 1
  for n in $(fault_controllers); do
    [[ -n $h && $(fault_identity "$n") == "$h" ]] && { echo "$n"; return 0; }
  done
  echo "the Lease holder ${h:-(none)} is none of" $(fault_controllers) >&2
  return 1
}

# fault_wait_leader [seconds]: until one of the supervised controllers leads
# (restarting exited ones meanwhile); prints its name.
fault_wait_leader() {
  local end=$((SECONDS + ${1:-90})) l
  while ((SECONDS < end)); do
    fault_supervise
    l=$(fault_leader 2>/dev/null) && { echo "$l"; return 0; }
    sleep 0.5
  done
  echo "no controller took the Lease in ${1:-90}s (holder: $(fault_holder))" >&2
  return 1
}

# ---------------------------------------------------------------- checks

# fault_check <dir> <pool kind> <pool name> <pool ns|""> <ns>...: one look at
# every claim of the pool (in the namespaces), its IPAddresses and the pool's
# status, against every claim of the burst (<dir>/../created, ../deleted). Writes <dir>/check (what is wrong, one line each; empty when all
# holds) and <dir>/figures ("claims duplicates leaks"), and raises
# <dir>/max-duplicates to the worst seen. Succeeds when:
# - the claims are exactly those created and not deleted, each Ready=True
#   (reason Allocated) with status.addressRef naming the IPAddress of its name;
# - no address is held by two IPAddresses of the pool;
# - every IPAddress of the pool belongs to a live claim (no leak), one per claim;
# - the pool's status counts used = the IPAddresses, free = total - used.
fault_check() {
  local dir=$1 kind=$2 pool=$3 pns=$4 ns
  shift 4
  # Through files: 500 claims are more than an argument list takes.
  : >"$dir/claims.json"
  : >"$dir/addrs.json"
  for ns in "$@"; do
    kubectl -n "$ns" get "$FAULT_CLAIMS" -o json >>"$dir/claims.json" || return 1
    kubectl -n "$ns" get "$FAULT_ADDRS" -o json >>"$dir/addrs.json" || return 1
  done
  if [[ -n $pns ]]; then
    kubectl -n "$pns" get "ippools.ipam.poolkeeper.io" "$pool" -o json >"$dir/pool.json" || return 1
  else
    kubectl get "globalippools.ipam.poolkeeper.io" "$pool" -o json >"$dir/pool.json" || return 1
  fi
  jq -n -r --slurpfile lists "$dir/claims.json" --slurpfile alists "$dir/addrs.json" \
    --slurpfile pools "$dir/pool.json" --arg kind "$kind" --arg name "$pool" \
    --rawfile created "$dir/../created" --rawfile deleted "$dir/../deleted" '
    def key: "\(.metadata.namespace)/\(.metadata.name)";
    def lines(s): s | split("\n") | map(select(length > 0));
    def set: map({key: ., value: true}) | from_entries;
    [$lists[].items[]] as $claims | [$alists[].items[]] as $addrs | $pools[0] as $pool
    | (lines($deleted) | set) as $del
    | (lines($created) | map(select($del[.] | not))) as $want
    | ($want | set) as $wantset
    | [$claims[] | select(.spec.poolRef.kind == $kind and .spec.poolRef.name == $name)] as $cl
    | [$addrs[] | select(.spec.poolRef.kind == $kind and .spec.poolRef.name == $name)] as $ad
    | ($cl | map({key: key, value: .}) | from_entries) as $byname
    | ($ad | map(.spec.address) | group_by(.) | map(select(length > 1) | .[0])) as $dups
    | [$ad[] | select(($byname[key] // null) == null or ($byname[key].metadata.deletionTimestamp != null))] as $leaks
    | [ ($want[] | select($byname[.] == null) | "claim \(.) is missing"),
        ($cl[] | select(key as $k | $del[$k]) | "claim \(key) was deleted but is still there"),
        ($cl[] | select(key as $k | ($wantset[$k] | not) and ($del[$k] | not)) | "claim \(key) was never created by the suite"),
        ($cl[] | select(.metadata.deletionTimestamp == null)
               | select(([.status.conditions[]? | select(.type == "Ready" and .status == "True" and .reason == "Allocated")] | length) == 0
                        or .status.addressRef.name != .metadata.name)
               | "claim \(key) not Ready: \([.status.conditions[]? | select(.type == "Ready") | "\(.status) \(.reason) \(.message)"] | join(";"))"),
        ($dups[] | "address \(.) is held by more than one IPAddress"),
        ($leaks[] | "IPAddress \(key) (\(.spec.address)) has no live claim"),
        (if ($ad | length) != ($want | length) then "\($ad | length) IPAddresses for \($want | length) claims" else empty end),
        # the counts are strings: an IPv6 pool counts past 2^53
        (($pool.status.ipAddresses // {} | {total: (.total // "-1" | tonumber), used: (.used // "-1" | tonumber),
                                            free: (.free // "-1" | tonumber)}) as $c
         | if $c.used != ($ad | length) or $c.free != ($c.total - ($ad | length))
           then "pool counts total/used/free \($c.total)/\($c.used)/\($c.free), expected used \($ad | length)" else empty end)
      ] as $bad
    | ($bad | .[]), "FIGURES \($want | length) \($dups | length) \($leaks | length)"
  ' >"$dir/check.new" || return 1
  grep '^FIGURES ' "$dir/check.new" | cut -d' ' -f2- >"$dir/figures"
  grep -v '^FIGURES ' "$dir/check.new" >"$dir/check" || true
  rm -f "$dir/check.new"
  local dups max
  read -r _ dups _ <"$dir/figures"
  max=$(cat "$dir/max-duplicates" 2>/dev/null || echo 0)
  ((dups > max)) && echo "$dups" >"$dir/max-duplicates"
  [[ ! -s $dir/check ]]
}

# fault_converge <seconds> <dir> <check args...>: fault_check every 2 s,
# with the supervisor running, until it holds; prints how long it took.
# On timeout, prints what was still wrong (at most 20 lines) and fails.
fault_converge() {
  local t=$1 dir=$2 t0=$SECONDS
  shift 2
  while :; do
    fault_supervise
    if fault_check "$dir" "$@"; then
      echo $((SECONDS - t0)) >"$dir/seconds"
      return 0
    fi
    if ((SECONDS - t0 >= t)); then
      echo "not converged after ${t}s; still wrong ($(wc -l <"$dir/check") lines):" >&2
      head -n 20 "$dir/check" >&2
      echo "timeout" >"$dir/seconds"
      return 1
    fi
    sleep 2
  done
}

# ---------------------------------------------------------------- figures

# fault_row <dir> <fault>: one line of the figures table for the phase in
# <dir>: fault | claims created | deleted | s to all Ready | restarts | failed
# admissions | failed requests | duplicates | leaks.
fault_row() {
  local dir=$1 what=$2 dups leaks
  read -r _ _ leaks <"$dir/figures" 2>/dev/null || leaks=?
  dups=$(cat "$dir/max-duplicates" 2>/dev/null || echo 0)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$what" \
    "$(wc -l <"$dir/created")" "$(wc -l <"$dir/deleted")" "$(cat "$dir/seconds" 2>/dev/null || echo -)" \
    "$(($(fault_restarts) - $(cat "$dir/restarts0" 2>/dev/null || echo 0)))" \
    "$(fault_failed "$dir" admission)" "$(fault_failed "$dir" request)" "$dups" "$leaks"
}

# ---------------------------------------------------------------- hostile objects

# What a tenant of a shared management cluster can put in front of
# poolkeeper without any right on its pools: strings with NUL, and objects
# as large as the apiserver takes, of the kinds poolkeeper lists.
FAULT_FOREIGN_POOL='{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "tenant-pool"}'
# The apiserver's limit on all annotations of one object together (keys and
# values): 256 KiB (TotalAnnotationSizeLimitB in apimachinery's validation).
FAULT_ANNOTATIONS_MAX=262144
FAULT_BLOB_KEY=tenant.example.com/blob

# fault_hostile_nul <ns>: a Cluster, a claim of another provider's pool and
# an IPAddress of that pool, each with the annotation value "a\u0000b".
fault_hostile_nul() {
  jq -n --argjson pool "$FAULT_FOREIGN_POOL" '
    {apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster",
     metadata: {name: "nul", annotations: {"tenant.example.com/note": "a\u0000b"}}, spec: {paused: false}},
    {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
     metadata: {name: "nul", annotations: {"tenant.example.com/note": "a\u0000b"}},
     spec: {poolRef: $pool}},
    {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddress",
     metadata: {name: "nul", annotations: {"tenant.example.com/note": "a\u0000b"}},
     spec: {address: "10.250.0.1", prefix: 24, claimRef: {name: "nul"}, poolRef: $pool}}' |
    kubectl -n "$1" create -f - -o name
}

# fault_hostile_big <ns> <kind: claim|cluster> <first> <count>: objects named
# big-<i> whose one annotation fills the 256 KiB the apiserver allows.
fault_hostile_big() {
  jq -n --argjson pool "$FAULT_FOREIGN_POOL" --arg key "$FAULT_BLOB_KEY" --arg kind "$2" \
    --argjson first "$3" --argjson count "$4" --argjson max "$FAULT_ANNOTATIONS_MAX" '
    ("x" * ($max - ($key | length))) as $blob
    | range($first; $first + $count)
    | {metadata: {name: "big-\(.)", annotations: {($key): $blob}}}
    | if $kind == "claim"
      then . + {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim", spec: {poolRef: $pool}}
      else . + {apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", spec: {paused: false}} end' |
    kubectl -n "$1" create -f - -o name >/dev/null
}
