# shellcheck shell=bash
# Processes of the loopback test systems (the control plane, Kea), sourced by
# e2e/cluster and e2e/kea after lib/common.sh: each runs detached with its
# pid in $S/pids/<name>.pid and its output in $PK_E2E_LOG_DIR/<name>.log.
# The caller sets S (its state folder).

pid_of() { [[ -f $S/pids/$1.pid ]] && cat "$S/pids/$1.pid"; }
alive() { local p; p=$(pid_of "$1") && [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }

# start <name> <cmd...>: runs cmd detached (own session, no stdin, output to
# logs/<name>.log, no inherited descriptors such as bats' fd 3), records pid.
start() {
  local name=$1; shift
  mkdir -p "$S/pids" "$PK_E2E_LOG_DIR"
  echo "=== $(date -u +%FT%TZ) start: $*" >>"$PK_E2E_LOG_DIR/$name.log"
  setsid "$@" </dev/null >>"$PK_E2E_LOG_DIR/$name.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$S/pids/$name.pid"
}

# stop <name>: TERM, then KILL after 10 s; waits until the process is gone.
stop() {
  local name=$1 p i
  p=$(pid_of "$name") || return 0
  if [[ -n $p ]] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$p" 2>/dev/null; then
      pk_log "$name (pid $p) ignored TERM; killing"
      kill -KILL "$p" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  rm -f "$S/pids/$name.pid"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A free loopback port below the kernel's ephemeral range, so that outgoing
# connections do not take it between now and the bind.
free_port() {
  local p taken
  while :; do
    p=$((20000 + RANDOM % 12000))
    taken=0
    for q in "${PORTS_TAKEN[@]:-}"; do [[ $q == "$p" ]] && taken=1; done
    ((taken)) && continue
    port_busy "$p" && continue
    PORTS_TAKEN+=("$p")
    echo "$p"
    return 0
  done
}

wait_for() { # wait_for <seconds> <what> <cmd...>
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= end)); then
      pk_log "timed out after ${t}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# wait_ready <process> <seconds> <what> <cmd...>: wait_for that gives up at
# once if the process has exited.
wait_ready() {
  local proc=$1 t=$2 what=$3; shift 3
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$proc"; then
      pk_log "$proc exited while waiting for $what (see $PK_E2E_LOG_DIR/$proc.log)"
      return 1
    fi
    if ((SECONDS >= end)); then
      pk_log "timed out after ${t}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

