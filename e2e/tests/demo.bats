#!/usr/bin/env bats
# `make demo` (scripts/demo) against the plane this run brought up: with
# PK_DEMO_HOLD=0 it applies examples/demo/, checks what it shows and cleans
# up; held, it waits until TERM (Ctrl-C) and then cleans up. Either way the
# plane stays up (the demo did not start it) and nothing of the demo's is
# left running or registered. Each run has its own namespace; the demo's
# webhook and controller listen on free ports, the chart's release is
# poolkeeper-demo in the demo's namespace (webhook configurations
# poolkeeper-demo-*), their Lease lives there too. The demo takes the binaries the other suites test
# (PK_BIN_DIR, default build/) instead of building them itself.

load helpers

setup_file() { pk_setup_file; }

setup() {
  pk_env
  export PK_BIN_DIR=${PK_BIN_DIR:-$REPO_ROOT/build}
  DEMO_NS=e2e-demo-$(tr -dc 'a-z0-9' </dev/urandom | head -c 8)
  export DEMO_NS
  PLANE_PIDS=$(cat "$PK_E2E_STATE"/pids/{etcd,kube-apiserver,kube-controller-manager}.pid)
}

# Whatever the demo should have removed, in case a test failed half-way.
teardown() {
  [[ -n ${BATS_TEST_COMPLETED:-} ]] || pk_log_tails
  if [[ -n ${DEMO_PID:-} ]] && kill -0 "$DEMO_PID" 2>/dev/null; then
    kill -TERM "$DEMO_PID"
    pk_wait_for -t 90 "the demo to exit" bash -c "! kill -0 $DEMO_PID 2>/dev/null" || kill -KILL "$DEMO_PID"
  fi
  pk_stop demo-controller
  pk_stop demo-webhook
  helm uninstall poolkeeper-demo -n "$DEMO_NS" --ignore-not-found >/dev/null 2>&1
  local r o
  for r in ipaddressclaims.ipam.cluster.x-k8s.io ipaddresses.ipam.cluster.x-k8s.io ippools.ipam.poolkeeper.io; do
    for o in $(kubectl -n "$DEMO_NS" get "$r" -o name 2>/dev/null); do
      kubectl -n "$DEMO_NS" patch "$o" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
  done
  kubectl delete namespace "$DEMO_NS" --ignore-not-found --wait=false >/dev/null 2>&1
  return 0
}

# _pid_in <output> <process>: the pid the demo printed for poolkeeper-<process>.
_pid_in() { grep -o "poolkeeper-$2 (pid [0-9]*)" <<<"$1" | grep -o '[0-9]*'; }

# _left_nothing <output>: the plane is up with the same processes; the
# demo's webhook and controller are gone, with the chart's release (its
# registrations and RBAC), pid files and namespace.
_left_nothing() {
  "$CLUSTER" status
  [ "$(cat "$PK_E2E_STATE"/pids/{etcd,kube-apiserver,kube-controller-manager}.pid)" = "$PLANE_PIDS" ]
  local p
  for p in webhook controller; do
    pid=$(_pid_in "$1" "$p")
    [ -n "$pid" ]
    if kill -0 "$pid" 2>/dev/null; then
      echo "poolkeeper-$p (pid $pid) still runs"
      return 1
    fi
    [ ! -e "$PK_E2E_STATE/pids/demo-$p.pid" ]
  done
  run kubectl get validatingwebhookconfiguration poolkeeper-demo-validating
  [[ $output == *NotFound* ]]
  run kubectl get mutatingwebhookconfiguration poolkeeper-demo-mutating
  [[ $output == *NotFound* ]]
  run helm status poolkeeper-demo -n "$DEMO_NS"
  [[ $output == *"not found"* ]]
  run kubectl get clusterrole poolkeeper-demo-controller
  [[ $output == *NotFound* ]]
  run kubectl get namespace "$DEMO_NS"
  [[ $output == *NotFound* ]]
  [ ! -e "$PK_E2E_STATE/demo" ]
}

@test "make demo, non-interactively: three claims get addresses (the CAPV-shaped one completed on admission), the bad claim is refused, all cleaned up, the plane stays up" {
  run env PK_DEMO_HOLD=0 PK_DEMO_NAMESPACE="$DEMO_NS" "$REPO_ROOT/scripts/demo" 3>&-
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"using the control plane that is already up"* ]]
  # The three claims, Ready, each with its IPAddress: an address of the pool,
  # prefix and gateway.
  local i addrs=()
  for i in 0 1 2; do
    grep -Eq "^demo-md-0-7x9kq-eth$i +True +Allocated +demo-md-0-7x9kq-eth$i\$" <<<"$output"
    grep -Eq "^demo-md-0-7x9kq-eth$i +192\.0\.2\.[0-9]+ +24 +192\.0\.2\.1 +demo-md-0-7x9kq-eth$i +demo-nodes\$" <<<"$output"
    addrs+=("$(grep -E "^demo-md-0-7x9kq-eth$i +192\." <<<"$output" | awk '{print $2}')")
  done
  echo "addresses: ${addrs[*]}"
  [ "$(printf '%s\n' "${addrs[@]}" | sort -u | wc -l)" -eq 3 ]
  # 192.0.2.11 is excluded from the pool
  [[ " ${addrs[*]} " != *" 192.0.2.11 "* ]]
  # The pool's counts: 19 usable, 3 used, 16 free, Ready.
  grep -Eq '^demo-nodes +19 +3 +16 +True ' <<<"$output"
  # eth2, shaped as CAPV creates claims, completed on admission: kubectl
  # printed the webhook's warning naming the owner's kind, and the stored
  # claim has spec.clusterName and both flags.
  grep -Eq "^Warning: IPAddressClaim $DEMO_NS/demo-md-0-7x9kq-eth2: .*ConfigMap" <<<"$output"
  grep -Fq "eth2 as stored: spec.clusterName, and its owner reference's controller and blockOwnerDeletion: demo true true" <<<"$output"
  # The refused claim (no owner at all), as kubectl prints the denial, naming the field.
  grep -Eq "^Error from server \(Forbidden\): .*admission webhook \"claims\.validate\.ipam\.poolkeeper\.io\" denied the request: IPAddressClaim $DEMO_NS/demo-md-0-7x9kq-eth3: metadata\.ownerReferences: " <<<"$output"
  [[ $output == *"-> refused, as expected"* ]]
  [[ $output == *"demo: ok"* ]]
  _left_nothing "$output"
}

@test "make demo, held: prints how to point kubectl at the plane, runs until TERM, then cleans up and exits 0" {
  local log=$BATS_TEST_TMPDIR/demo.out
  PK_DEMO_NAMESPACE="$DEMO_NS" "$REPO_ROOT/scripts/demo" </dev/null >"$log" 2>&1 3>&- &
  DEMO_PID=$!
  local end=$((SECONDS + 300))
  until grep -q 'Ctrl-C stops it' "$log"; do
    if ! kill -0 "$DEMO_PID" 2>/dev/null || ((SECONDS >= end)); then
      echo "the demo exited or did not hold within 300s; its output:"
      cat "$log"
      return 1
    fi
    sleep 0.5
  done
  grep -Fqx "  export KUBECONFIG=$KUBECONFIG" "$log"
  grep -Fqx "  export PATH=$(dirname "$(command -v kubectl)"):\$PATH" "$log"
  # While it holds, the claims are there for kubectl.
  [ "$(kubectl -n "$DEMO_NS" get ipaddressclaims.ipam.cluster.x-k8s.io -o name | wc -l)" -eq 3 ]
  kill -TERM "$DEMO_PID"
  local rc=0
  wait "$DEMO_PID" || rc=$?
  DEMO_PID=
  cat "$log"
  [ "$rc" -eq 0 ]
  grep -q 'demo: ok' "$log"
  _left_nothing "$(cat "$log")"
}
