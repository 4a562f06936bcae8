#!/usr/bin/env bash
# rotation_load.sh BINARY - poolkeeper-webhook under load while its serving
# certificate is rotated: several clients post AdmissionReviews in a loop
# (new connections, and one kept-alive connection) while the pair is
# replaced four times; every request must succeed, the new certificate must
# be served, and SIGTERM must end the process with status 0. Under an
# AddressSanitizer build any sanitizer report fails the run.
set -euo pipefail
bin=$(realpath "${1:?usage: rotation_load.sh poolkeeper-webhook}")
dir=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
cd "$dir"

issue() { # issue CN: a new pair in tls.crt/tls.key, replaced by rename
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout n.key \
		-out n.csr -subj "/CN=$1" 2>/dev/null
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >n.ext
	openssl x509 -req -in n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
		-extfile n.ext -out n.crt 2>/dev/null
	mv n.crt tls.crt
	mv n.key tls.key
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
	-out ca.crt -subj /CN=rotation-ca -days 2 2>/dev/null
issue gen-0

cat >review.json <<'JSON'
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"load-1","operation":"CREATE","resource":{"group":"ipam.poolkeeper.io","version":"v1alpha1","resource":"ippools"},"namespace":"a","name":"x","object":{"apiVersion":"ipam.poolkeeper.io/v1alpha1","kind":"IPPool","metadata":{"name":"x","namespace":"a"},"spec":{"addresses":["10.0.0.10-10.0.0.20"],"prefix":24}}}}
JSON

"$bin" --tls-cert-file tls.crt --tls-private-key-file tls.key --webhook-bind-address 127.0.0.1:0 \
	--health-probe-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 --cert-poll-seconds 1 2>log &
pid=$!
for _ in $(seq 100); do grep -q 'listener=metrics' log && break; sleep 0.1; done
port=$(sed -n 's/.*listener=webhook port=\([0-9]*\).*/\1/p' log)
mport=$(sed -n 's/.*listener=metrics port=\([0-9]*\).*/\1/p' log)
[[ -n $port ]] || { cat log; echo "no listening line" >&2; exit 1; }
url=https://127.0.0.1:$port/validate

client() { # one new connection per request until stop exists; counts failures
	local n=0 bad=0
	while [[ ! -e stop ]]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.crt -H 'Content-Type: application/json' \
			--data-binary @review.json "$url" || true)
		n=$((n + 1))
		[[ $code == 200 ]] || { bad=$((bad + 1)); echo "client $1: got '$code'" >&2; }
	done
	echo "$n $bad" >"result.$1"
}
for i in 1 2 3 4; do client "$i" & done

# One kept-alive connection across every rotation: 300 requests on one handle.
args=()
for _ in $(seq 300); do args+=(--next -s -o /dev/null -w '%{http_code} %{num_connects}\n' \
	--cacert ca.crt -H 'Content-Type: application/json' --data-binary @review.json "$url"); done
(curl "${args[@]:1}" >kept.out) &
kept=$!

for gen in 1 2 3 4; do
	sleep 1.5
	issue "gen-$gen"
done
for _ in $(seq 50); do
	curl -s -v --cacert ca.crt --data-binary @review.json "$url" -o /dev/null 2>&1 |
		grep -q 'CN=gen-4' && break
	sleep 0.2
done
curl -s -v --cacert ca.crt --data-binary @review.json "$url" -o /dev/null 2>&1 | grep -q 'CN=gen-4' ||
	{ echo "the rotated certificate is not served" >&2; exit 1; }
touch stop
wait "$kept"
for i in 1 2 3 4; do while [[ ! -e result.$i ]]; do sleep 0.1; done; done

total=0 failed=0
for i in 1 2 3 4; do read -r n b <"result.$i"; total=$((total + n)); failed=$((failed + b)); done
kept_bad=$(awk '$1 != 200' kept.out | wc -l)
kept_new=$(awk '{s += $2} END {print s}' kept.out)
reloads=$(curl -s "http://127.0.0.1:$mport/metrics" | sed -n 's/^poolkeeper_webhook_certificate_reloads_total{result="success"} //p')
echo "requests=$total failed=$failed kept_requests=$(wc -l <kept.out) kept_failed=$kept_bad kept_connections=$kept_new reloads=$reloads"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' log; then cat log >&2; exit 1; fi
[[ $status -eq 0 ]] || { echo "exit status $status after SIGTERM" >&2; cat log >&2; exit 1; }
[[ $failed -eq 0 && $kept_bad -eq 0 ]] || exit 1
[[ $kept_new -le 2 ]] || { echo "the kept-alive connection was not kept ($kept_new connects)" >&2; exit 1; }
[[ ${reloads:-0} -ge 4 ]] || { echo "expected at least 4 reloads, got '$reloads'" >&2; exit 1; }
