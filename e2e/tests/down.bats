#!/usr/bin/env bats
# `e2e/cluster up` is idempotent, and `e2e/cluster down` leaves no process
# and no listening port behind. Run last: it takes the plane down.

load helpers

setup_file() { pk_setup_file; }

@test "up on a running plane returns at once and changes nothing" {
  before=$(cat "$PK_E2E_STATE"/pids/*.pid "$PK_E2E_STATE/state.env")
  start=$SECONDS
  run "$CLUSTER" up
  [ "$status" -eq 0 ]
  [ $((SECONDS - start)) -le 5 ]
  [ "$(cat "$PK_E2E_STATE"/pids/*.pid "$PK_E2E_STATE/state.env")" = "$before" ]
}

@test "down stops every process and frees every port, and is idempotent" {
  pids=$(cat "$PK_E2E_STATE"/pids/*.pid)
  . "$PK_E2E_STATE/state.env"
  ports="$ETCD_PORT $ETCD_PEER_PORT $APISERVER_PORT $KCM_PORT"
  [ -n "$pids" ]
  for p in $ports; do
    # every recorded port was listening
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
  done

  run "$CLUSTER" down
  [ "$status" -eq 0 ]

  for p in $pids; do
    if kill -0 "$p" 2>/dev/null; then
      echo "process $p still running: $(tr '\0' ' ' </proc/$p/cmdline)"
      false
    fi
  done
  for p in $ports; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "port $p still accepts connections"
      false
    fi
    if command -v ss >/dev/null && ss -Htln "sport = :$p" | grep -q .; then
      echo "port $p still listening"; false
    fi
  done
  [ ! -e "$PK_E2E_STATE" ]

  run "$CLUSTER" down
  [ "$status" -eq 0 ]
  run "$CLUSTER" status
  [ "$status" -ne 0 ]
}
