#!/usr/bin/env bats
# `poolkeeper audit` and `poolkeeper usage` on the real plane, poolkeeper
# installed from the chart, its webhook and controller running as the
# chart's ServiceAccounts; the commands run with the plane's admin
# kubeconfig, limited to the test's namespace.
#   - a healthy set-up audits clean (exit 0) and usage counts it;
#   - a pool with a warning passes, and fails with --fail-on=warning, in
#     each of lint's forms (-o github, junit, sarif);
#   - broken by hand, with the controller stopped and the validating webhook
#     registration taken away (restored by the teardown): an IPAddress whose
#     claim is gone, an address held twice, an address outside its pool, a
#     claim bound to an IPAddress that no longer exists and a claim pending
#     past --pending-after are each found, and audit exits 1, with the same
#     rule ids in the CI forms;
#   - flags or values the commands do not take exit 2.

bats_require_minimum_version 1.5.0

load helpers
load poolkeeper

CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io
POOLS=ippools.ipam.poolkeeper.io
VCFG=poolkeeper-validating

setup_file() {
  pk_setup_file
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS"
  pk_start_webhook webhook "$CERTS"
  pk_start_controller controller
}

teardown_file() {
  pk_stop controller
  pk_uninstall_poolkeeper poolkeeper poolkeeper-system
  pk_stop webhook
}

setup() {
  pk_setup
  kubectl -n "$NS" apply -f - >/dev/null <<EOF2
{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "prod"}, "spec": {"paused": false}}
---
{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "staging"}, "spec": {"paused": false}}
EOF2
  kubectl -n "$NS" create configmap machine >/dev/null
}

# The registration comes back and the controller runs again, so that claims are
# released and the namespace goes.
teardown() {
  if [[ -f $BATS_FILE_TMPDIR/vcfg.json ]]; then
    kubectl apply -f "$BATS_FILE_TMPDIR/vcfg.json" >/dev/null
    rm -f "$BATS_FILE_TMPDIR/vcfg.json"
  fi
  if [[ -f $BATS_FILE_TMPDIR/controller-stopped ]]; then
    rm -f "$BATS_FILE_TMPDIR/controller-stopped"
    pk_start_controller controller
  fi
  kubectl -n "$NS" delete "$CLAIMS" --all --timeout=60s >/dev/null 2>&1 || true
  kubectl -n "$NS" delete "$ADDRS" --all --timeout=30s >/dev/null 2>&1 || true
  kubectl -n "$NS" delete "$POOLS" --all --timeout=60s >/dev/null 2>&1 || true
  pk_teardown
}

# _pool: IPPool nodes, 10.73.0.0/28 (14 usable), retried while the registration settles.
_pool() {
  pk_wait_for -t 30 "IPPool nodes to be accepted" _apply_pool
}
_apply_pool() {
  jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.73.0.0/28"], prefix: 28}}' | kubectl -n "$NS" apply -f - >/dev/null
}

# _claim <name> <cluster>: a claim on nodes, owned by the machine ConfigMap.
_claim() {
  local uid
  uid=$(kubectl -n "$NS" get configmap machine -o jsonpath='{.metadata.uid}') || return 1
  jq -n --arg n "$1" --arg c "$2" --arg u "$uid" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2",
    kind: "IPAddressClaim", metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": $c},
      ownerReferences: [{apiVersion: "v1", kind: "ConfigMap", name: "machine", uid: $u,
                         controller: true, blockOwnerDeletion: true}]},
    spec: {clusterName: $c, poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "nodes"}}}' |
    kubectl -n "$NS" apply -f - >/dev/null
}

# _spare: IPPool spare, whose excludedAddresses entry excludes nothing: a warning.
_spare() {
  pk_wait_for -t 30 "IPPool spare to be accepted" _apply_spare
}
_apply_spare() {
  jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "spare"},
    spec: {addresses: ["10.74.0.0/28"], prefix: 28, excludedAddresses: ["10.99.0.1"]}}' |
    kubectl -n "$NS" apply -f - >/dev/null 2>&1
}

_bound() { [[ -n $(kubectl -n "$NS" get "$CLAIMS" "$1" -o jsonpath='{.status.addressRef.name}') ]]; }

# _address <name> <claim> <address>: an IPAddress made by hand on nodes.
_address() {
  jq -n --arg n "$1" --arg c "$2" --arg a "$3" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2",
    kind: "IPAddress", metadata: {name: $n},
    spec: {address: $a, prefix: 28, claimRef: {name: $c},
           poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "nodes"}}}' |
    kubectl -n "$NS" create -f - >/dev/null
}

_poolkeeper() {
  local bin
  bin=$(pk_bin poolkeeper)
  run "$bin" "$@"
  echo "$output" >&3 2>/dev/null || true
}

# _has <text>: a line of the output is exactly that.
_has() { grep -qxF -- "$1" <<<"$output" || { echo "want line '$1', got:"; echo "$output"; return 1; }; }

@test "a healthy set-up audits clean and usage counts its addresses" {
  _pool
  _claim a prod
  _claim b prod
  _claim c staging
  for c in a b c; do pk_wait_for -t 30 "claim $c to be bound" _bound "$c"; done

  _poolkeeper audit --namespace "$NS"
  [ "$status" -eq 0 ]
  [[ $output == *"audit: 0 findings on the live cluster"* ]]
  _poolkeeper audit --namespace "$NS" -o json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.exitCode' <<<"$output")" = 0 ]
  [ "$(jq -r '.findings | length' <<<"$output")" = 0 ]
  [ "$(jq -r '.totals.denied' <<<"$output")" = 0 ]

  _poolkeeper usage --namespace "$NS" -o json
  [ "$status" -eq 0 ]
  local p
  p=$(jq -c --arg ns "$NS" '.pools[] | select(.kind == "IPPool" and .namespace == $ns and .name == "nodes")' <<<"$output")
  [ "$(jq -r '[.total, .used, .free] | join(" ")' <<<"$p")" = "14 3 11" ]
  [ "$(jq -r '.consumers | map("\(.cluster)=\(.addresses)") | join(",")' <<<"$p")" = "prod=2,staging=1" ]
  _poolkeeper usage --namespace "$NS" --top 1
  [ "$status" -eq 0 ]
  [[ $output == *"IPPool/$NS/nodes"*" prod (2)"* ]]
  [[ $output != *"staging"* ]]
}

@test "audit: a warning passes, and fails with --fail-on=warning, in each of lint's forms" {
  _pool
  _spare
  _claim a prod
  pk_wait_for -t 30 "claim a to be bound" _bound a

  _poolkeeper audit --namespace "$NS"
  [ "$status" -eq 0 ]
  grep -Eq "^cluster:IPPool/$NS/spare:1:[0-9]+: warning: IPPool $NS/spare: spec.excludedAddresses\[0\]: .* \[pool/spec.excludedAddresses\]$" <<<"$output"
  _poolkeeper audit --namespace "$NS" --fail-on warning
  [ "$status" -eq 1 ]
  [[ $output == *"--fail-on=warning: warnings fail"* ]]

  _poolkeeper audit --namespace "$NS" -o github
  [ "$status" -eq 0 ]
  grep -Eq "^::warning file=cluster%3AIPPool/$NS/spare,line=1,col=[0-9]+,title=pool/spec.excludedAddresses::IPPool $NS/spare: " <<<"$output"
  # GlobalIPPools are listed whatever the namespace: the objects are counted, not named
  grep -Eqx "poolkeeper audit: [0-9]+ objects, 0 denied, 1 with warnings, 0 skipped; 0 live findings" <<<"$output"
  _poolkeeper audit --namespace "$NS" -o github --fail-on warning
  [ "$status" -eq 1 ]
  grep -Eqx "poolkeeper audit: [0-9]+ objects, 0 denied, 1 with warnings, 0 skipped; 0 live findings \(warnings fail\)" <<<"$output"

  _poolkeeper audit --namespace "$NS" -o junit
  [ "$status" -eq 0 ]
  grep -Eq '^<testsuites name="poolkeeper audit" tests="[0-9]+" failures="0" errors="0">$' <<<"$output"
  [[ $output == *"<testcase classname=\"cluster:IPPool/$NS/spare\" name=\"IPPool $NS/spare\">"*"<system-out>cluster:IPPool/$NS/spare:1:"* ]]
  _poolkeeper audit --namespace "$NS" -o junit --fail-on warning
  [ "$status" -eq 1 ]
  grep -Eq '^<testsuites name="poolkeeper audit" tests="[0-9]+" failures="1" errors="0">$' <<<"$output"
  [[ $output == *"<testcase classname=\"cluster:IPPool/$NS/spare\" name=\"IPPool $NS/spare\">"$'\n''      <failure type="pool/spec.excludedAddresses"'* ]]

  _poolkeeper audit --namespace "$NS" -o sarif --fail-on=warning
  [ "$status" -eq 1 ]
  [ "$(jq -r --arg u "cluster%3AIPPool/$NS/spare" '[.runs[0].results[] |
      select(.locations[0].physicalLocation.artifactLocation.uri == $u) |
      "\(.ruleId) \(.level) \(.locations[0].physicalLocation.region.startLine)"] | join(",")' <<<"$output")" = \
    "pool/spec.excludedAddresses warning 1" ]
}

@test "audit finds what was broken by hand and exits 1" {
  _pool
  _claim a prod
  _claim b prod
  for c in a b; do pk_wait_for -t 30 "claim $c to be bound" _bound "$c"; done
  local held
  held=$(kubectl -n "$NS" get "$ADDRS" a -o jsonpath='{.spec.address}')

  pk_stop controller
  touch "$BATS_FILE_TMPDIR/controller-stopped"
  kubectl get validatingwebhookconfiguration "$VCFG" -o json |
    jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp,
            .metadata.generation, .metadata.managedFields)' >"$BATS_FILE_TMPDIR/vcfg.json"
  pk_unregister_webhook validating "$VCFG"

  # a claim bound to an IPAddress that no longer exists
  kubectl -n "$NS" patch "$ADDRS" b --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  kubectl -n "$NS" delete "$ADDRS" b --wait=true >/dev/null
  # an IPAddress whose claim is gone, holding an address already held
  _address twice gone "$held"
  # an address outside its pool
  _address outside a 10.99.0.1
  # a claim pending (nothing allocates while the controller is stopped)
  _claim late prod
  sleep 2

  _poolkeeper audit --namespace "$NS" --pending-after 1s
  [ "$status" -eq 1 ]
  _has "cluster:IPAddressClaim/$NS/b: error: IPAddressClaim $NS/b: status.addressRef.name: the claim is bound to IPAddress $NS/b, which does not exist [claim-address-missing]"
  _has "cluster:IPAddress/$NS/twice: error: IPAddress $NS/twice: spec.claimRef.name: IPAddressClaim $NS/gone does not exist: the address is held for nobody [address-claim-missing]"
  _has "cluster:IPAddress/$NS/twice: error: IPAddress $NS/twice: spec.address: $held is also held by IPAddress/$NS/a of the same pool [address-held-twice]"
  grep -q "^cluster:IPAddressClaim/$NS/late: error: IPAddressClaim $NS/late: status.addressRef: no address after [0-9]*s: no Ready condition \[claim-pending\]$" <<<"$output"
  grep -q "^cluster:IPAddress/$NS/outside: error: IPAddress $NS/outside: spec.address: .*10.99.0.1.* \[address-outside-pool\]$" <<<"$output"
  # lint's own checks ran too: owner references are missing on what was made by hand
  grep -Eq "^cluster:IPAddress/$NS/outside:1:[0-9]+: error: IPAddress $NS/outside: metadata.ownerReferences: required: " <<<"$output"

  _poolkeeper audit --namespace "$NS" --pending-after 1s -o json
  [ "$status" -eq 1 ]
  [ "$(jq -r '.exitCode' <<<"$output")" = 1 ]
  [ "$(jq -r '[.findings[].rule] | sort | join(",")' <<<"$output")" = \
    "address-claim-missing,address-held-twice,address-outside-pool,claim-address-missing,claim-pending" ]

  # lint's CI forms carry the live findings, with the same rule ids, at their objects
  local live="address-claim-missing,address-held-twice,address-outside-pool,claim-address-missing,claim-pending"
  _poolkeeper audit --namespace "$NS" --pending-after 1s -o sarif
  [ "$status" -eq 1 ]
  [ "$(jq -r '[.runs[0].results[] | select(.locations[0].physicalLocation.region == {startLine: 1}) | .ruleId] | sort | join(",")' <<<"$output")" = "$live" ]
  [ "$(jq -r '.runs[0].results[] | select(.ruleId == "claim-pending") | .locations[0].physicalLocation.artifactLocation.uri' <<<"$output")" = \
    "cluster%3AIPAddressClaim/$NS/late" ]
  _poolkeeper audit --namespace "$NS" --pending-after 1s -o github
  [ "$status" -eq 1 ]
  _has "::error file=cluster%3AIPAddressClaim/$NS/b,title=claim-address-missing::IPAddressClaim $NS/b: status.addressRef.name: the claim is bound to IPAddress $NS/b, which does not exist"
  [ "$(grep -c '^::error file=cluster%3A[^,]*,title=[a-z-]*::' <<<"$output")" -eq 5 ]
  _poolkeeper audit --namespace "$NS" --pending-after 1s -o junit
  [ "$status" -eq 1 ]
  for r in ${live//,/ }; do
    [[ $output == *"<failure type=\"$r\""* ]]
  done
  [[ $output == *"<testcase classname=\"cluster:IPAddressClaim/$NS/late\" name=\"IPAddressClaim $NS/late\">"*"<failure type=\"claim-pending\""* ]]

  # the default threshold (5m) is not reached yet: no pending finding
  _poolkeeper audit --namespace "$NS"
  [ "$status" -eq 1 ]
  [[ $output != *"[claim-pending]"* ]]
}

@test "audit and usage: usage errors and an unreadable kubeconfig exit 2" {
  _poolkeeper audit --pending-after soon
  [ "$status" -eq 2 ]
  _poolkeeper audit --namespace "$NS" -o yaml
  [ "$status" -eq 2 ]
  [[ $output == *'--output must be one of text|json|github|junit|sarif, got "yaml"'* ]]
  _poolkeeper audit --namespace "$NS" --fail-on never
  [ "$status" -eq 2 ]
  _poolkeeper audit --namespace "$NS" --format json
  [ "$status" -eq 2 ]
  _poolkeeper usage --namespace "$NS" -o sarif
  [ "$status" -eq 2 ]
  _poolkeeper usage --namespace "$NS" --format json
  [ "$status" -eq 2 ]
  _poolkeeper audit extra
  [ "$status" -eq 2 ]
  _poolkeeper usage --kubeconfig "$BATS_TEST_TMPDIR/none"
  [ "$status" -eq 2 ]
  [[ $output == *"kubeconfig"* ]]
}
