#!/usr/bin/env bash
# poolkeeper-webhook under the four attacks of unauthenticated clients, next
# to a no-attack baseline (bench/webhook_attack.c prints the table).
#
#   bench/webhook_attack.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "$1" && pwd)
secs=${2:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bin/poolkeeper-certs" --out-dir "$tmp/certs" --ip 127.0.0.1 >"$tmp/certs.log" 2>&1 ||
  { cat "$tmp/certs.log" >&2; exit 1; }
"$build/bench/pk_webhook_attack" "$build/bin/poolkeeper-webhook" "$tmp/certs/tls.crt" \
  "$tmp/certs/tls.key" "$tmp/certs/ca.crt" "$secs"
