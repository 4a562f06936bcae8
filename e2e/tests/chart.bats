#!/usr/bin/env bats
# The Helm chart charts/poolkeeper on the real control plane: helm lint;
# helm template in each certificate mode, in webhook.url mode, with one
# watched namespace, with a watch filter and with ServiceMonitors, each
# applied with a server-side dry run; wrong values refused by the schema with
# a message naming them; the registrations the chart renders; the provider
# finalizer roles (rbac.providerFinalizers) rendered per entry; the
# NetworkPolicies and the webhook's client certificate settings; an install
# (hooks off: the plane runs no pods) whose objects all carry the provider
# and app.kubernetes.io labels; the RBAC proven minimal with
# `kubectl auth can-i` for the webhook, the controller, the certificate
# Job and the providers' accounts; an upgrade with changed values and an uninstall that keep every pool,
# claim and address, and the CRDs.
#
# The tests run in order and share one release: later ones use what earlier
# ones installed. No poolkeeper process runs: the objects are made by hand,
# shaped as the controller makes them.

load helpers

POOLS=ippools.ipam.poolkeeper.io
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io
STUB_LABEL=poolkeeper.io/e2e-stub-crd

setup_file() {
  pk_setup_file
  CHART=$REPO_ROOT/charts/poolkeeper
  local r
  r=$(tr -dc 'a-z0-9' </dev/urandom | head -c 6)
  # The release name contains "poolkeeper", so the chart's names are
  # <release>-webhook and so on.
  export REL=poolkeeper-chart-$r CHART_NS=pk-chart-$r WATCH_NS=pk-chart-$r-watch CHART
  export FILTER=chart-e2e-$r
  kubectl create namespace "$CHART_NS" >/dev/null
  kubectl create namespace "$WATCH_NS" >/dev/null
  # A CA for certs.provided.caBundle (nothing serves with it: no webhook runs).
  export CA_DIR=$BATS_FILE_TMPDIR/ca
  mkdir -p "$CA_DIR"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=pk-chart-e2e-ca -keyout "$CA_DIR/ca.key" -out "$CA_DIR/ca.crt" 2>/dev/null
  CA_B64=$(base64 -w0 <"$CA_DIR/ca.crt")
  export CA_B64
}

teardown_file() {
  pk_env
  helm uninstall "$REL" -n "$CHART_NS" --ignore-not-found >/dev/null 2>&1 || true
  _delete_certs_rbac
  _delete_cel_probe
  # Nothing releases the finalizers of the objects made here: remove them
  # the way docs/install.md says, then delete the objects.
  _unfinalize "$CLAIMS" ipam.poolkeeper.io/release-address "$CHART_NS"
  _unfinalize "$ADDRS" ipam.poolkeeper.io/protect-address "$CHART_NS"
  _unfinalize "$POOLS" ipam.poolkeeper.io/protect-pool "$CHART_NS"
  kubectl delete namespace "$CHART_NS" "$WATCH_NS" --ignore-not-found --wait=false >/dev/null 2>&1
  # Stub CRDs this file created (and only those).
  kubectl delete crd -l "$STUB_LABEL=$REL" --ignore-not-found >/dev/null 2>&1
  return 0
}

setup() {
  pk_env
  PK_TMP=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/pk.XXXXXX")
}

teardown() {
  if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
    pk_log_tails 20
  fi
  return 0
}

# _unfinalize <resource> <finalizer> <namespace>: removes that finalizer,
# and nothing else, from every object of the resource in the namespace (the
# JSON patch tests the entry first, so a list changed meanwhile is left alone).
_unfinalize() {
  local res=$1 fin=$2 ns=$3 name i
  kubectl -n "$ns" get "$res" -o json 2>/dev/null |
    jq -r --arg f "$fin" '.items[] | (.metadata.finalizers // [] | index($f)) as $i
      | select($i != null) | "\(.metadata.name) \($i)"' |
    while read -r name i; do
      kubectl -n "$ns" patch "$res" "$name" --type json -p \
        "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/$i\",\"value\":\"$fin\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/$i\"}]" >/dev/null
    done
}

# _template [helm flags...]: the chart rendered as release $REL in $CHART_NS.
_template() { helm template "$REL" "$CHART" -n "$CHART_NS" "$@"; }

# _dry_run [helm flags...]: the rendering applied with a server-side dry run.
_dry_run() {
  local out
  out=$(_template "$@") || { echo "$out"; return 1; }
  kubectl apply --dry-run=server -f - <<<"$out"
}

# _stub_crd <plural> <group> <Kind>: a CRD with an open schema, so that a
# server dry run accepts cert-manager's and the Prometheus operator's kinds
# on a plane without them. Made only when the CRD is missing; removed in
# teardown_file by its label.
_stub_crd() {
  local plural=$1 group=$2 kind=$3
  kubectl get crd "$plural.$group" >/dev/null 2>&1 && return 0
  pk_open_crd "$plural" "$group" "$kind" "{$STUB_LABEL: $REL}" | kubectl apply -f - >/dev/null
  kubectl wait --for condition=Established --timeout=30s "crd/$plural.$group" >/dev/null
}

# The certificate Job's ServiceAccount and RBAC are hooks, so an install
# without hooks leaves them out: they are applied from the rendering.
_certs_rbac() { _template --show-only templates/certs-rbac.yaml; }
_delete_certs_rbac() {
  _certs_rbac 2>/dev/null | kubectl delete --ignore-not-found -n "$CHART_NS" -f - >/dev/null 2>&1 || true
}

# _can <yes|no> <account> <kubectl auth can-i arguments...>: as a
# ServiceAccount of $CHART_NS.
_can() {
  local want=$1 sa=$2
  shift 2
  _can_as "$want" "system:serviceaccount:$CHART_NS:$sa" "$@"
}

# _can_as <yes|no> <user> <kubectl auth can-i arguments...>
_can_as() {
  local want=$1 user=$2 got
  shift 2
  got=$(kubectl auth can-i --as="$user" "$@" 2>/dev/null) || true
  if [[ $got != "$want" ]]; then
    echo "can-i $* as $user: $got, expected $want" >&2
    return 1
  fi
}

# _apply: kubectl apply of the document on stdin in $CHART_NS, retried for
# up to 30 s: the plane is shared, and another suite's webhook registration
# (failurePolicy Fail) may briefly have no webhook behind it.
_apply() {
  local doc
  doc=$(cat)
  pk_wait_for -t 30 "kubectl apply in $CHART_NS" _apply_once "$doc"
}
_apply_once() { kubectl -n "$CHART_NS" apply -f - <<<"$1"; }

# _objects: pool, claim and address in $CHART_NS as the controller leaves
# them: finalizers on all three, the IPAddress owned by claim and pool.
_objects() {
  kubectl -n "$CHART_NS" get configmap machine >/dev/null 2>&1 || kubectl -n "$CHART_NS" create configmap machine >/dev/null
  _apply <<EOF
apiVersion: ipam.poolkeeper.io/v1alpha1
kind: IPPool
metadata:
  name: nodes
  finalizers: [ipam.poolkeeper.io/protect-pool]
spec: {addresses: ["10.250.0.0/24"], prefix: 24, gateway: 10.250.0.1}
EOF
  local mu pu cu
  mu=$(pk_jsonpath -n "$CHART_NS" configmap machine '{.metadata.uid}')
  pu=$(pk_jsonpath -n "$CHART_NS" "$POOLS" nodes '{.metadata.uid}')
  _apply <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: m-0-eth0
  finalizers: [ipam.poolkeeper.io/release-address]
  labels: {cluster.x-k8s.io/cluster-name: prod}
  ownerReferences:
    - {apiVersion: v1, kind: ConfigMap, name: machine, uid: $mu, controller: true, blockOwnerDeletion: true}
spec:
  clusterName: prod
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: nodes}
EOF
  cu=$(pk_jsonpath -n "$CHART_NS" "$CLAIMS" m-0-eth0 '{.metadata.uid}')
  _apply <<EOF
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata:
  name: m-0-eth0
  finalizers: [ipam.poolkeeper.io/protect-address]
  labels: {cluster.x-k8s.io/cluster-name: prod}
  ownerReferences:
    - {apiVersion: ipam.cluster.x-k8s.io/v1beta2, kind: IPAddressClaim, name: m-0-eth0, uid: $cu, controller: true, blockOwnerDeletion: true}
    - {apiVersion: ipam.poolkeeper.io/v1alpha1, kind: IPPool, name: nodes, uid: $pu, controller: false, blockOwnerDeletion: true}
spec:
  claimRef: {name: m-0-eth0}
  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, name: nodes}
  address: 10.250.0.2
  prefix: 24
  gateway: 10.250.0.1
EOF
}

# _uids: "kind/name uid" of the pool, the claim and the address, sorted.
_uids() {
  kubectl -n "$CHART_NS" get "$POOLS,$CLAIMS,$ADDRS" -o json |
    jq -r '.items[] | "\(.kind)/\(.metadata.name) \(.metadata.uid) \(.metadata.finalizers | join(","))"' | sort
}

# The common helm flags of the installed release: webhook.url mode (nothing
# listens there), a caBundle, and a watch filter that no object of the plane
# carries, so the registrations (failurePolicy Fail) intercept nothing while
# this file runs beside other suites.
_install_flags() {
  echo --set-string webhook.url=https://127.0.0.1:1 --set certs.mode=provided \
    --set-string "certs.provided.caBundle=$CA_B64" --set-string "watchFilter=$FILTER" \
    --set-string "webhook.objectSelector.matchLabels.pk-e2e-chart=$FILTER"
}

@test "helm lint --strict passes, with the defaults and in every mode" {
  run helm lint --strict "$CHART"
  echo "$output"
  [ "$status" -eq 0 ]
  run helm lint --strict "$CHART" --set certs.mode=certManager --set webhook.url=https://203.0.113.7:9443 \
    --set controller.watchNamespace=capi --set watchFilter=a --set metrics.serviceMonitor.enabled=true
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "helm template in certs mode selfSigned (the default) applies with a server dry run" {
  run _dry_run
  echo "$output"
  [ "$status" -eq 0 ]
  # The certificate hooks: ServiceAccount, Role, ClusterRole, bindings, two Jobs.
  [[ $output == *"job.batch/$REL-certs-issue created (server dry run)"* ]]
  [[ $output == *"job.batch/$REL-certs-patch created (server dry run)"* ]]
  [[ $output == *"role.rbac.authorization.k8s.io/$REL-certs created (server dry run)"* ]]
  [[ $output == *"validatingwebhookconfiguration.admissionregistration.k8s.io/$REL-validating created (server dry run)"* ]]
}

@test "the certificate Jobs call poolkeeper-certs with the release's Secret, Service and configurations" {
  run _template --show-only templates/certs-jobs.yaml --set "certs.ipAddresses[0]=192.0.2.4" \
    --set certs.selfSigned.renewBeforeDays=45
  echo "$output"
  [ "$status" -eq 0 ]
  local args
  args=$(kubectl create --dry-run=client -o json -f - <<<"$output" |
    jq -r '(.items // [.])[] | "\(.metadata.name) \(.metadata.annotations["helm.sh/hook"]) \(.spec.template.spec.containers[0].command + .spec.template.spec.containers[0].args | join(" "))"')
  echo "$args"
  local common="poolkeeper-certs --namespace=$CHART_NS --service=$REL-webhook --cluster-domain=cluster.local --secret=$REL-webhook-tls --validity-days=365 --ca-validity-days=3650 --renew-before-days=45 --ca-renew-before-days=90 --ip=192.0.2.4"
  [[ $args == *"$REL-certs-issue pre-install,pre-upgrade $common"$'\n'* ]]
  [[ $args == *"$REL-certs-patch post-install,post-upgrade $common --webhook-configuration=validating/$REL-validating --webhook-configuration=mutating/$REL-mutating" ]]
  # On an install the issue Job cannot patch (no configurations yet); on an
  # upgrade it does, so a rotated CA is in caBundle before new pods serve.
  [[ $args != *"$REL-certs-issue pre-install,pre-upgrade $common --webhook-configuration"* ]]
  run _template --is-upgrade --show-only templates/certs-jobs.yaml --set "certs.ipAddresses[0]=192.0.2.4" \
    --set certs.selfSigned.renewBeforeDays=45
  [ "$status" -eq 0 ]
  args=$(kubectl create --dry-run=client -o json -f - <<<"$output" |
    jq -r '(.items // [.])[] | "\(.metadata.name) \(.spec.template.spec.containers[0].command + .spec.template.spec.containers[0].args | join(" "))"')
  echo "$args"
  [[ $args == *"$REL-certs-issue $common --webhook-configuration=validating/$REL-validating --webhook-configuration=mutating/$REL-mutating"* ]]
}

@test "helm template in certs mode certManager (own CA chain, and a given issuer) applies with a server dry run" {
  _stub_crd issuers cert-manager.io Issuer
  _stub_crd certificates cert-manager.io Certificate
  run _dry_run --set certs.mode=certManager
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"issuer.cert-manager.io/$REL-ca created (server dry run)"* ]]
  [[ $output == *"certificate.cert-manager.io/$REL-webhook created (server dry run)"* ]]
  [[ $output != *certs-issue* ]]
  run _template --set certs.mode=certManager --show-only templates/webhook-configurations.yaml
  [[ $output == *"cert-manager.io/inject-ca-from: $CHART_NS/$REL-webhook"* ]]
  run _dry_run --set certs.mode=certManager --set certs.certManager.issuerRef.name=corp-ca \
    --set certs.certManager.issuerRef.kind=ClusterIssuer --set certs.certManager.issuerRef.group=cert-manager.io
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output != *"issuer.cert-manager.io"* ]]
}

@test "helm template in certs mode provided applies with a server dry run" {
  run _dry_run --set certs.mode=provided --set certs.provided.secretName=my-tls --set-string "certs.provided.caBundle=$CA_B64"
  echo "$output"
  [ "$status" -eq 0 ]
  run _template --set certs.mode=provided --set certs.provided.secretName=my-tls --set-string "certs.provided.caBundle=$CA_B64"
  [[ $output == *"secretName: my-tls"* ]]
  [[ $output == *"caBundle: $CA_B64"* ]]
  [[ $output != *poolkeeper-certs* ]]
}

@test "helm template in webhook.url mode, with one watched namespace, a watch filter and ServiceMonitors applies with a server dry run" {
  _stub_crd servicemonitors monitoring.coreos.com ServiceMonitor
  run _dry_run $(_install_flags)
  echo "$output"
  [ "$status" -eq 0 ]
  run _dry_run --set controller.watchNamespace="$WATCH_NS" --set controller.replicas=2
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"role.rbac.authorization.k8s.io/$REL-controller created (server dry run)"* ]]
  [[ $output != *"clusterrole.rbac.authorization.k8s.io/$REL-controller "* ]]
  run _dry_run --set metrics.serviceMonitor.enabled=true --set webhook.foreignClaims=ignore
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"servicemonitor.monitoring.coreos.com/$REL-controller created (server dry run)"* ]]
  [[ $output == *"servicemonitor.monitoring.coreos.com/$REL-webhook created (server dry run)"* ]]
}

@test "the registrations are poolkeeper's six webhooks with their rules, conditions and policies" {
  local got
  got=$(_template $(_install_flags) --set webhook.timeoutSeconds=7 --show-only templates/webhook-configurations.yaml |
    kubectl apply --dry-run=server -o json -f - |
    jq -r '(.items // [.])[] | .kind as $k | .webhooks[] | [$k[0:1], .name, .clientConfig.url,
      (.rules[0] | "\(.apiGroups|join(","))/\(.apiVersions|join(","))/\(.resources|join(","))/\(.operations|join(","))"),
      .failurePolicy, .sideEffects, .matchPolicy, (.admissionReviewVersions|join(",")), .timeoutSeconds,
      ([.matchConditions[]?.name]|join(",")), (.objectSelector.matchExpressions[0].values[0] // "-"),
      (.objectSelector.matchLabels["pk-e2e-chart"] // "-"),
      (.clientConfig.caBundle | length > 0)] | @tsv')
  echo "$got"
  local u=https://127.0.0.1:1 p=ipam.poolkeeper.io/v1alpha1/ippools,globalippools c=ipam.cluster.x-k8s.io/v1beta2,v1beta1
  local want
  want=$(printf '%s\n' \
    "V	pools.validate.ipam.poolkeeper.io	$u/validate	$p/CREATE,UPDATE,DELETE	Fail	None	Equivalent	v1	7		$FILTER	$FILTER	true" \
    "V	claims.validate.ipam.poolkeeper.io	$u/validate	$c/ipaddressclaims/CREATE,UPDATE	Fail	None	Equivalent	v1	7	poolkeeper-pool	$FILTER	$FILTER	true" \
    "V	addresses.validate.ipam.poolkeeper.io	$u/validate	$c/ipaddresses/CREATE,UPDATE	Fail	None	Equivalent	v1	7	poolkeeper-pool	-	$FILTER	true" \
    "V	foreign-claims.validate.ipam.poolkeeper.io	$u/validate	$c/ipaddressclaims/CREATE,UPDATE	Ignore	None	Equivalent	v1	7	other-pool	$FILTER	$FILTER	true" \
    "M	pools.mutate.ipam.poolkeeper.io	$u/mutate	$p/CREATE,UPDATE	Fail	None	Equivalent	v1	7		$FILTER	$FILTER	true" \
    "M	claims.mutate.ipam.poolkeeper.io	$u/mutate	$c/ipaddressclaims/CREATE,UPDATE	Fail	None	Equivalent	v1	7	poolkeeper-pool	$FILTER	$FILTER	true")
  diff <(sort <<<"$want") <(sort <<<"$got")
  # (The IPAddress registration has the user's objectSelector but not the
  # watch-filter term: poolkeeper's IPAddresses do not carry that label.)
  # The conditions select claims and addresses by their pool's API group,
  # in the object or the old one (the next test evaluates them).
  run _template --show-only templates/webhook-configurations.yaml
  [[ $output == *"expression: \"$(_ours_expr)\""* ]]
  [[ $output == *"expression: \"!($(_ours_expr))\""* ]]
  # The Service otherwise; foreign claims left out when ignored.
  [[ $output == *"name: $REL-webhook"* && $output == *"path: /mutate"* && $output == *"port: 443"* ]]
  run _template --set webhook.foreignClaims=ignore --show-only templates/webhook-configurations.yaml
  [[ $output != *foreign-claims* ]]
}

# _ours_expr: the condition that a claim or an address is on a poolkeeper
# pool, in the object or, on UPDATE and DELETE, the old object (each may be
# null: object on DELETE, oldObject on CREATE).
_ours_expr() {
  local s="(%s != null && has(%s.spec.poolRef) && has(%s.spec.poolRef.apiGroup) && %s.spec.poolRef.apiGroup == 'ipam.poolkeeper.io')"
  # shellcheck disable=SC2059
  printf "$s || $s" object object object object oldObject oldObject oldObject oldObject
}

CEL_NS=
CEL_GROUP=pk-e2e-cel.poolkeeper.io
# _cel_claim NAME GROUP [API KIND]: an IPAddressClaim (or an API/KIND object)
# on pool "p" of API group GROUP.
_cel_claim() {
  printf '{"apiVersion":"%s","kind":"%s","metadata":{"name":"%s","namespace":"%s"},"spec":{"clusterName":"prod","poolRef":{"apiGroup":"%s","kind":"P","name":"p"}}}' \
    "${3:-ipam.cluster.x-k8s.io/v1beta2}" "${4:-IPAddressClaim}" "$1" "$CEL_NS" "$2"
}

# _cel_create NAME GROUP: that claim created with a server dry run.
_cel_create() { _cel_claim "$1" "$2" | kubectl create --dry-run=server -f -; }

# _cel_refused CMD...: the command fails because the probe policy matched.
_cel_refused() {
  local out
  out=$("$@" 2>&1) && { echo "allowed: $out"; return 1; }
  echo "$out"
  [[ $out == *"pk-cel-probe: matched"* ]]
}

@test "the claim and address conditions, evaluated by the apiserver, match on the object or the old object, and hold when either is null" {
  # What the registrations carry, after the apiserver compiled it.
  local got
  got=$(_template $(_install_flags) --show-only templates/webhook-configurations.yaml |
    kubectl apply --dry-run=server -o json -f - |
    jq -r '(.items // [.])[] | .webhooks[] | select(.matchConditions) | "\(.name)\t\(.matchConditions[0].expression)"')
  echo "$got"
  local ours want
  ours=$(_ours_expr)
  want=$(printf '%s\t%s\n' claims.validate.ipam.poolkeeper.io "$ours" \
    addresses.validate.ipam.poolkeeper.io "$ours" claims.mutate.ipam.poolkeeper.io "$ours" \
    foreign-claims.validate.ipam.poolkeeper.io "!($ours)")
  diff <(sort <<<"$want") <(sort <<<"$got")

  # The same condition in a ValidatingAdmissionPolicy that refuses what it
  # matches: the apiserver's own CEL evaluates it on CREATE, UPDATE and
  # DELETE, with object null on DELETE and oldObject null on CREATE. An
  # error in the condition would refuse with another message (failurePolicy
  # Fail), so "allowed" proves the null sides hold.
  #
  # The plane's immutability policy (CAPI's webhook's rule) refuses a
  # claim's spec change before this one speaks, so the updates of poolRef
  # go to a stand-in kind that carries the same spec.poolRef.
  CEL_NS=$CHART_NS-cel
  kubectl create namespace "$CEL_NS" >/dev/null
  _stub_crd celprobes "$CEL_GROUP" CelProbe
  local probe=("$CEL_GROUP/v1" CelProbe)
  _cel_claim ours ipam.poolkeeper.io | kubectl apply -f - >/dev/null
  _cel_claim theirs ipam.cluster.x-k8s.io | kubectl apply -f - >/dev/null
  _cel_claim ours ipam.poolkeeper.io "${probe[@]}" | kubectl apply -f - >/dev/null
  _cel_claim theirs ipam.cluster.x-k8s.io "${probe[@]}" | kubectl apply -f - >/dev/null
  jq -n --arg e "$ours" --arg n "$REL-cel-probe" --arg g "$CEL_GROUP" '{apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy", metadata: {name: $n},
    spec: {failurePolicy: "Fail",
      matchConstraints: {resourceRules: [{apiGroups: ["ipam.cluster.x-k8s.io"], apiVersions: ["*"],
        operations: ["CREATE", "UPDATE", "DELETE"], resources: ["ipaddressclaims"]},
        {apiGroups: [$g], apiVersions: ["*"], operations: ["CREATE", "UPDATE", "DELETE"],
        resources: ["celprobes"]}]},
      matchConditions: [{name: "poolkeeper-pool", expression: $e}],
      validations: [{expression: "false", message: "pk-cel-probe: matched"}]}}' | kubectl apply -f - >/dev/null
  jq -n --arg n "$REL-cel-probe" --arg ns "$CEL_NS" '{apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding", metadata: {name: $n},
    spec: {policyName: $n, validationActions: ["Deny"],
      matchResources: {namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": $ns}}}}}' |
    kubectl apply -f - >/dev/null
  pk_wait_for -t 30 "the probe policy to refuse a claim on a poolkeeper pool" \
    _cel_refused _cel_create new-ours ipam.poolkeeper.io
  # CREATE: the object decides (oldObject is null).
  run _cel_create new-theirs ipam.cluster.x-k8s.io
  echo "$output"
  [ "$status" -eq 0 ]
  # UPDATE off a poolkeeper pool: the old object matches.
  _cel_refused kubectl -n "$CEL_NS" patch "celprobes.$CEL_GROUP" ours --type=merge --dry-run=server \
    -p '{"spec":{"poolRef":{"apiGroup":"ipam.cluster.x-k8s.io"}}}'
  # UPDATE onto one: the object matches.
  _cel_refused kubectl -n "$CEL_NS" patch "celprobes.$CEL_GROUP" theirs --type=merge --dry-run=server \
    -p '{"spec":{"poolRef":{"apiGroup":"ipam.poolkeeper.io"}}}'
  # UPDATE of a claim's metadata: matched when it is on a poolkeeper pool only.
  _cel_refused kubectl -n "$CEL_NS" label "$CLAIMS" ours --dry-run=server pk-e2e=touched
  run kubectl -n "$CEL_NS" label "$CLAIMS" theirs --dry-run=server pk-e2e=touched
  echo "$output"
  [ "$status" -eq 0 ]
  # DELETE: object is null, the old object decides.
  _cel_refused kubectl -n "$CEL_NS" delete "$CLAIMS" ours --dry-run=server
  run kubectl -n "$CEL_NS" delete "$CLAIMS" theirs --dry-run=server
  echo "$output"
  [ "$status" -eq 0 ]
  _delete_cel_probe
}

# The probe policy, its binding and namespace (also from teardown_file).
_delete_cel_probe() {
  kubectl delete validatingadmissionpolicybinding "$REL-cel-probe" --ignore-not-found >/dev/null 2>&1
  kubectl delete validatingadmissionpolicy "$REL-cel-probe" --ignore-not-found >/dev/null 2>&1
  kubectl delete namespace "$CHART_NS-cel" --ignore-not-found --wait=false >/dev/null 2>&1
  return 0
}

@test "wrong values are refused with a message that names them" {
  run _template --set certs.mode=bogus
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/certs/mode"* ]]
  run _template --set webhook.replicas=-1
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/webhook/replicas"* ]]
  run _template --set webhook.bogusKey=1
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"bogusKey"* ]]
  run _template --set webhook.claimEnforcement=maybe
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/webhook/claimEnforcement"*"'maybe'"*"repair|deny|warn"* ]]
  # rbac.providerFinalizers: a subresource or a path in a resource name, an
  # account without a namespace, an entry without accounts.
  run _template --set 'rbac.providerFinalizers[0].group=x.io' \
    --set 'rbac.providerFinalizers[0].resources[0]=vms/status' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[0].namespace=a' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[0].name=b'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/rbac/providerFinalizers/0/resources/0"*"'vms/status'"* ]]
  run _template --set 'rbac.providerFinalizers[0].group=x.io' \
    --set 'rbac.providerFinalizers[0].resources[0]=vms' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[0].name=b'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/rbac/providerFinalizers/0/serviceAccounts/0"*"namespace"* ]]
  run _template --set 'rbac.providerFinalizers[0].group=x.io' \
    --set 'rbac.providerFinalizers[0].resources[0]=vms'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/rbac/providerFinalizers/0"*"serviceAccounts"* ]]
  run _template --set certs.mode=provided
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"caBundle"* ]]
  run _template --set controller.leaderElection.enabled=false --set controller.replicas=2
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/controller/replicas"* ]]
  run _template --set-string webhook.url=http://example.com
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/webhook/url"* ]]
  # The controller's backends: only the ones the binary has, never none.
  run _template --set 'controller.backends={kea}'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/controller/backends/0"* ]]
  run _template --set 'controller.backends=null'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"controller.backends: name at least one pool backend"* ]]
  # each named once, as --backends refuses a name given twice
  run _template --set 'controller.backends={incluster,incluster}'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/controller/backends"* ]]
  run _template
  [ "$status" -eq 0 ]
  [[ $output == *"- --backends=incluster"* ]]
  # Across values, as the binaries' own flag checks would refuse them.
  local bad want
  while IFS='|' read -r bad want; do
    run _template --set "$bad" </dev/null
    echo "$bad: $output"
    [ "$status" -ne 0 ]
    [[ $output == *"$want"* ]]
  done <<'EOF'
controller.leaderElection.retryPeriod=9s|renewDeadline (10s) must be longer than 1.2 times retryPeriod (9s)
controller.leaderElection.leaseDuration=11m|leaseDuration: 11m is outside 1s..10m
controller.leaderElection.renewDeadline=20s|renewDeadline (20s) must be shorter than leaseDuration (15s)
controller.leaderElection.retryPeriod=50ms|retryPeriod: 50ms is outside 100ms..1m
certs.selfSigned.caRenewBeforeDays=4000|certs.selfSigned.caRenewBeforeDays (4000) must be less than caValidityDays (3650)
webhook.podDisruptionBudget.minAvailable=2|webhook.podDisruptionBudget.minAvailable (2) must be less than webhook.replicas (2)
webhook.maxConnectionsPerSource=1001|webhook.maxConnectionsPerSource (1001) must not exceed webhook.maxConnections (1000)
networkPolicy.enabled=true|networkPolicy.enabled: set networkPolicy.webhookFrom
webhook.clientAuth.enabled=true|set exactly one of webhook.clientAuth.ca.secret.name, ca.configMap.name or ca.pem
webhook.lookupDeadlineMs=10000|webhook.lookupDeadlineMs (10000) must be less than webhook.timeoutSeconds (10 s)
EOF
  run _template --set webhook.clientAuth.enabled=true --set webhook.clientAuth.ca.secret.name=a \
    --set webhook.clientAuth.ca.configMap.name=b
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"2 are set"* ]]
  run _template --set 'networkPolicy.webhookFrom[0]=10.0.0.0/33x'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/networkPolicy/webhookFrom/0"*"10.0.0.0/33x"* ]]
  run _template --set 'webhook.clientAuth.allowedNames[0]=a\,b'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/webhook/clientAuth/allowedNames/0"* ]]
  run _template --set controller.leaderElection.leaseDuration=1m30s --set controller.leaderElection.renewDeadline=1m \
    --set controller.leaderElection.retryPeriod=500ms --set webhook.replicas=3 --set webhook.podDisruptionBudget.minAvailable=2
  [ "$status" -eq 0 ]
  # helm install checks the same schema before it touches the cluster.
  run helm install "$REL-bad" "$CHART" -n "$CHART_NS" --set logging.format=xml
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/logging/format"* ]]
}

# _json [helm flags...]: the rendering as one JSON array of objects.
_json() {
  _template "$@" | kubectl create --dry-run=client -o json -f - | jq -s '[.[] | (.items // [.])[]]'
}

@test "networkPolicy: none by default; enabled, the webhook port admits only webhookFrom and the probe and metrics ports their sources" {
  run _json
  [ "$status" -eq 0 ]
  [ "$(jq '[.[] | select(.kind == "NetworkPolicy")] | length' <<<"$output")" -eq 0 ]
  local doc np
  doc=$(_json --set networkPolicy.enabled=true --set 'networkPolicy.webhookFrom[0]=172.18.0.0/16' \
    --set 'networkPolicy.webhookFrom[1].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name=kube-system' \
    --set 'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring')
  # The webhook pods: three rules, on the webhook, health and metrics ports.
  np=$(jq -c --arg n "$REL-webhook" '.[] | select(.kind == "NetworkPolicy" and .metadata.name == $n)' <<<"$doc")
  echo "$np"
  [ "$(jq -r '.spec.policyTypes | join(",")' <<<"$np")" = Ingress ]
  [ "$(jq -r '.spec.podSelector.matchLabels["app.kubernetes.io/component"]' <<<"$np")" = webhook ]
  [ "$(jq -r '[.spec.ingress[].ports[].port] | join(",")' <<<"$np")" = 9443,8081,8080 ]
  [ "$(jq -c '.spec.ingress[0].from' <<<"$np")" = '[{"ipBlock":{"cidr":"172.18.0.0/16"}},{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"kube-system"}}}]' ]
  # Probes from anywhere (healthFrom empty), metrics from the monitoring namespace only.
  [ "$(jq -c '.spec.ingress[1].from' <<<"$np")" = null ]
  [ "$(jq -c '.spec.ingress[2].from' <<<"$np")" = '[{"namespaceSelector":{"matchLabels":{"name":"monitoring"}}}]' ]
  # The controller's pods: its health and metrics ports, no webhook port.
  np=$(jq -c --arg n "$REL-controller" '.[] | select(.kind == "NetworkPolicy" and .metadata.name == $n)' <<<"$doc")
  echo "$np"
  [ "$(jq -r '.spec.podSelector.matchLabels["app.kubernetes.io/component"]' <<<"$np")" = controller ]
  [ "$(jq -r '[.spec.ingress[].ports[].port] | join(",")' <<<"$np")" = 8081,8080 ]
  # Without metrics, no metrics rule; a healthFrom CIDR becomes an ipBlock.
  doc=$(_json --set networkPolicy.enabled=true --set 'networkPolicy.webhookFrom[0]=10.0.0.0/8' \
    --set metrics.enabled=false --set 'networkPolicy.healthFrom[0]=10.1.0.0/16')
  np=$(jq -c --arg n "$REL-webhook" '.[] | select(.kind == "NetworkPolicy" and .metadata.name == $n)' <<<"$doc")
  [ "$(jq -r '[.spec.ingress[].ports[].port] | join(",")' <<<"$np")" = 9443,8081 ]
  [ "$(jq -c '.spec.ingress[1].from' <<<"$np")" = '[{"ipBlock":{"cidr":"10.1.0.0/16"}}]' ]
  # The apiserver accepts both.
  run _dry_run --set networkPolicy.enabled=true --set 'networkPolicy.webhookFrom[0]=172.18.0.0/16' \
    --set 'networkPolicy.webhookFrom[1]=fd00::/64' --set 'networkPolicy.metricsFrom[0]=10.2.0.0/16'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"networkpolicy.networking.k8s.io/$REL-webhook created (server dry run)"* ]]
  [[ $output == *"networkpolicy.networking.k8s.io/$REL-controller created (server dry run)"* ]]
}

# _webhook_deployment [helm flags...]: the webhook Deployment as JSON.
_webhook_deployment() {
  _json "$@" | jq -c --arg n "$REL-webhook" '.[] | select(.kind == "Deployment" and .metadata.name == $n)'
}

@test "webhook.clientAuth: off by default; enabled, the webhook verifies and requires the apiserver's certificate against the CA from a Secret, a ConfigMap or inline" {
  local d pem
  d=$(_webhook_deployment)
  [[ $(jq -r '.spec.template.spec.containers[0].args | join(" ")' <<<"$d") != *client* ]]
  [ "$(jq '[.spec.template.spec.volumes[] | select(.name == "client-ca")] | length' <<<"$d")" -eq 0 ]
  # From a Secret, required (the default once enabled), with allowed names.
  d=$(_webhook_deployment --set webhook.clientAuth.enabled=true --set webhook.clientAuth.ca.secret.name=apiserver-client-ca \
    --set webhook.clientAuth.ca.secret.key=bundle.pem --set 'webhook.clientAuth.allowedNames={kube-apiserver,apiserver-webhook-client}')
  jq -r '.spec.template.spec.containers[0].args[]' <<<"$d" | grep -qx -- --client-ca-file=/etc/poolkeeper/client-ca/ca.crt
  jq -r '.spec.template.spec.containers[0].args[]' <<<"$d" | grep -qx -- --require-client-cert=true
  jq -r '.spec.template.spec.containers[0].args[]' <<<"$d" | grep -qx -- --client-cert-allowed-names=kube-apiserver,apiserver-webhook-client
  [ "$(jq -c '.spec.template.spec.volumes[] | select(.name == "client-ca") | .secret | {secretName, items}' <<<"$d")" = \
    '{"secretName":"apiserver-client-ca","items":[{"key":"bundle.pem","path":"ca.crt"}]}' ]
  [ "$(jq -r '.spec.template.spec.containers[0].volumeMounts[] | select(.name == "client-ca") | .mountPath' <<<"$d")" = /etc/poolkeeper/client-ca ]
  # From a ConfigMap, verified when presented but not required.
  d=$(_webhook_deployment --set webhook.clientAuth.enabled=true --set webhook.clientAuth.ca.configMap.name=kube-root-ca.crt \
    --set webhook.clientAuth.required=false)
  jq -r '.spec.template.spec.containers[0].args[]' <<<"$d" | grep -qx -- --require-client-cert=false
  [[ $(jq -r '.spec.template.spec.containers[0].args | join(" ")' <<<"$d") != *allowed-names* ]]
  [ "$(jq -c '.spec.template.spec.volumes[] | select(.name == "client-ca") | .configMap | {name, items}' <<<"$d")" = \
    '{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}' ]
  # Inline: the chart's own ConfigMap holds the bundle, and the whole rendering applies.
  pem=$(cat "$CA_DIR/ca.crt")
  run _json --set webhook.clientAuth.enabled=true --set-string "webhook.clientAuth.ca.pem=$pem"
  [ "$status" -eq 0 ]
  [ "$(jq -r --arg n "$REL-webhook-client-ca" '.[] | select(.kind == "ConfigMap" and .metadata.name == $n) | .data["ca.crt"]' <<<"$output")" = "$pem" ]
  [ "$(jq -r --arg n "$REL-webhook" '.[] | select(.kind == "Deployment" and .metadata.name == $n) | .spec.template.spec.volumes[] | select(.name == "client-ca") | .configMap.name' <<<"$output")" = "$REL-webhook-client-ca" ]
  run _dry_run --set webhook.clientAuth.enabled=true --set-string "webhook.clientAuth.ca.pem=$pem"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"configmap/$REL-webhook-client-ca created (server dry run)"* ]]
  # Not a PEM bundle: refused by the schema.
  run _template --set webhook.clientAuth.enabled=true --set-string webhook.clientAuth.ca.pem=nope
  [ "$status" -ne 0 ]
  [[ $output == *"/webhook/clientAuth/ca/pem"* ]]
}

# _finalizer_rules [helm flags...]: "role-name group resources... <- subjects..." per
# provider finalizer role the chart renders, with the binding that names it.
_finalizer_rules() {
  _template --show-only templates/rbac-provider-finalizers.yaml "$@" |
    kubectl create --dry-run=client -o json -f - |
    jq -rs '[.[] | (.items // [.])[]] as $d
      | ($d[] | select(.kind == "ClusterRole")) as $r
      | ($d[] | select(.kind == "ClusterRoleBinding" and .roleRef.name == $r.metadata.name)) as $b
      | "\($r.metadata.name) \($r.rules | length) \($r.rules[0].apiGroups | join(",")) \($r.rules[0].resources | join(",")) \($r.rules[0].verbs | join(",")) <- \([$b.subjects[] | "\(.kind):\(.namespace)/\(.name)"] | join(","))"'
}

@test "rbac.providerFinalizers: one role per entry, update on its own kinds' finalizers only, bound to its own accounts" {
  # The defaults: CAPV (v1.14.0 runs as default, v1.15 and later as
  # capv-manager), CAPM3, CAPO and Proxmox as their kustomize configs install
  # them; providers.bats checks these names against the providers' modules.
  run _finalizer_rules
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$REL-provider-finalizers-0 1 infrastructure.cluster.x-k8s.io vspherevms/finalizers update <- ServiceAccount:capv-system/default,ServiceAccount:capv-system/capv-manager
$REL-provider-finalizers-1 1 infrastructure.cluster.x-k8s.io metal3datas/finalizers update <- ServiceAccount:capm3-system/capm3-manager
$REL-provider-finalizers-2 1 infrastructure.cluster.x-k8s.io openstackservers/finalizers update <- ServiceAccount:capo-system/capo-manager
$REL-provider-finalizers-3 1 infrastructure.cluster.x-k8s.io proxmoxmachines/finalizers update <- ServiceAccount:capmox-system/capmox-controller-manager" ]
  # A value of one's own: two kinds, two accounts.
  run _finalizer_rules --set 'rbac.providerFinalizers[0].group=infra.example.com' \
    --set 'rbac.providerFinalizers[0].resources={vms,disks}' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[0].namespace=infra' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[0].name=manager' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[1].namespace=infra2' \
    --set 'rbac.providerFinalizers[0].serviceAccounts[1].name=manager'
  echo "$output"
  [ "$output" = "$REL-provider-finalizers-0 1 infra.example.com vms/finalizers,disks/finalizers update <- ServiceAccount:infra/manager,ServiceAccount:infra2/manager" ]
  # None: nothing rendered.
  run _template --show-only templates/rbac-provider-finalizers.yaml --set-json 'rbac.providerFinalizers=[]'
  [ "$status" -ne 0 ]
  [[ $output == *"could not find template"* ]]
  # Switched off: nothing rendered, whatever the list holds; the switch is a boolean.
  run _template --show-only templates/rbac-provider-finalizers.yaml --set rbac.providerFinalizersEnabled=false
  [ "$status" -ne 0 ]
  [[ $output == *"could not find template"* ]]
  run _template --set-string rbac.providerFinalizersEnabled=no
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"/rbac/providerFinalizersEnabled"* ]]
  # The webhook's own role gains create on SubjectAccessReviews and nothing else new.
  run _template --show-only templates/rbac-webhook.yaml
  [[ $output == *'apiGroups: ["authorization.k8s.io"]'*'resources: ["subjectaccessreviews"]'*'verbs: ["create"]'* ]]
}

@test "helm install --no-hooks in webhook.url mode creates the release's objects, each labelled" {
  run helm install "$REL" "$CHART" -n "$CHART_NS" --no-hooks $(_install_flags)
  echo "$output"
  [ "$status" -eq 0 ]
  local labels
  labels=$(helm get manifest "$REL" -n "$CHART_NS" | kubectl get -n "$CHART_NS" -f - -o json |
    jq -r '.items[] | "\(.kind)/\(.metadata.name) \(.metadata.labels["cluster.x-k8s.io/provider"]) \(.metadata.labels["app.kubernetes.io/name"]) \(.metadata.labels["app.kubernetes.io/instance"]) \(.metadata.labels["app.kubernetes.io/version"]) \(.metadata.labels["app.kubernetes.io/component"] != null) \(.metadata.labels["app.kubernetes.io/part-of"]) \(.metadata.labels["app.kubernetes.io/managed-by"]) \(.metadata.labels["helm.sh/chart"])"')
  echo "$labels"
  [ "$(wc -l <<<"$labels")" -ge 15 ]
  run grep -v " ipam-poolkeeper poolkeeper $REL 0.1.0 true poolkeeper Helm poolkeeper-0.1.0\$" <<<"$labels"
  [ "$status" -ne 0 ] # every object has every label
  kubectl -n "$CHART_NS" get serviceaccount "$REL-webhook" "$REL-controller" >/dev/null
  kubectl -n "$CHART_NS" get deployment "$REL-webhook" "$REL-controller" >/dev/null
  kubectl -n "$CHART_NS" get service "$REL-webhook" "$REL-webhook-metrics" "$REL-controller-metrics" >/dev/null
  kubectl -n "$CHART_NS" get poddisruptionbudget "$REL-webhook" >/dev/null
  [ "$(pk_jsonpath validatingwebhookconfiguration "$REL-validating" '{.webhooks[0].clientConfig.url}')" = https://127.0.0.1:1/validate ]
  [ "$(pk_jsonpath mutatingwebhookconfiguration "$REL-mutating" '{.webhooks[0].clientConfig.caBundle}')" = "$CA_B64" ]
  # The Deployments as a cluster would run them.
  local dep
  dep=$(kubectl -n "$CHART_NS" get deployment "$REL-controller" -o json)
  # Leader election on; the Lease's namespace is the pod's own (where the
  # chart's Role is), so no --leader-election-namespace that clusterctl's
  # --target-namespace could not move.
  jq -e '.spec.template.spec.containers[0].args | (index("--leader-elect") != null) and all(startswith("--leader-election-namespace") | not)' <<<"$dep"
  dep=$(kubectl -n "$CHART_NS" get deployment "$REL-webhook" -o json)
  jq -e '.spec.replicas == 2 and (.spec.template.spec.containers[0] | .securityContext.readOnlyRootFilesystem
    and .securityContext.runAsNonRoot and .securityContext.runAsUser == 65532
    and .securityContext.allowPrivilegeEscalation == false and .securityContext.capabilities.drop == ["ALL"]
    and .securityContext.seccompProfile.type == "RuntimeDefault"
    and .livenessProbe.httpGet.path == "/healthz" and .readinessProbe.httpGet.path == "/readyz"
    and (.args | index("--claim-enforcement=repair") and index("--foreign-claims=warn")))' <<<"$dep"
  # The serving key in the mounted Secret is not world-readable: the pod's
  # fsGroup is the webhook's group, so UID 65532 can read it.
  jq -e '.spec.template.spec.securityContext.fsGroup == 65532
    and (.spec.template.spec.volumes[] | select(.secret != null) | .secret.defaultMode) == 288' <<<"$dep"
  # The pool, claim and address the next tests keep an eye on.
  _objects
  _uids >"$BATS_FILE_TMPDIR/uids"
  cat "$BATS_FILE_TMPDIR/uids"
  [ "$(wc -l <"$BATS_FILE_TMPDIR/uids")" -eq 3 ]
}

@test "RBAC: the webhook's account reads and watches pools, addresses and claims, asks SubjectAccessReviews, and can write nothing" {
  local w=$REL-webhook v r
  for r in "$POOLS" globalippools.ipam.poolkeeper.io "$CLAIMS"; do
    _can yes "$w" get "$r" -n "$CHART_NS"
    _can yes "$w" list "$r" -A
    _can yes "$w" watch "$r" -A
    for v in create update patch delete deletecollection; do _can no "$w" "$v" "$r" -A; done
    _can no "$w" patch "$r" --subresource=status -A
  done
  _can yes "$w" list "$ADDRS" -A
  _can yes "$w" watch "$ADDRS" -A
  _can no "$w" get "$ADDRS" -A
  for v in create update patch delete deletecollection; do _can no "$w" "$v" "$ADDRS" -A; done
  _can no "$w" update "$CLAIMS" --subresource=finalizers -A
  for r in secrets configmaps events events.events.k8s.io leases.coordination.k8s.io; do
    _can no "$w" create "$r" -n "$CHART_NS"
  done
  _can no "$w" get secrets -n "$CHART_NS"
  _can no "$w" list secrets -A
  _can no "$w" delete clusters.cluster.x-k8s.io -A
  _can no "$w" patch "validatingwebhookconfigurations/$REL-validating"
  # Whether a claim's requester may set blockOwnerDeletion: a review, which changes nothing.
  _can yes "$w" create subjectaccessreviews.authorization.k8s.io
  _can no "$w" create localsubjectaccessreviews.authorization.k8s.io -n "$CHART_NS"
  _can no "$w" create tokenreviews.authentication.k8s.io
}

@test "RBAC: each provider's account may update its own kinds' finalizers, nothing else" {
  local g=infrastructure.cluster.x-k8s.io capv=system:serviceaccount:capv-system:default
  local capm3=system:serviceaccount:capm3-system:capm3-manager capo=system:serviceaccount:capo-system:capo-manager
  local capmox=system:serviceaccount:capmox-system:capmox-controller-manager
  # kubectl auth can-i names a resource by its group only when the plane serves it.
  _stub_crd vspherevms "$g" VSphereVM
  _stub_crd metal3datas "$g" Metal3Data
  _stub_crd openstackservers "$g" OpenStackServer
  _stub_crd proxmoxmachines "$g" ProxmoxMachine
  _can_as yes "$capv" update "vspherevms.$g" --subresource=finalizers -n capv-system
  _can_as yes "$capv" update "vspherevms.$g" --subresource=finalizers -n tenant-a
  _can_as yes system:serviceaccount:capv-system:capv-manager update "vspherevms.$g" --subresource=finalizers -n tenant-a
  _can_as yes "$capm3" update "metal3datas.$g" --subresource=finalizers -n tenant-a
  _can_as yes "$capo" update "openstackservers.$g" --subresource=finalizers -n tenant-a
  _can_as yes "$capmox" update "proxmoxmachines.$g" --subresource=finalizers -n tenant-a
  # Only the finalizers, only with update, only its own kinds, only in that group.
  _can_as no "$capv" update "vspherevms.$g" -n tenant-a
  _can_as no "$capv" patch "vspherevms.$g" --subresource=finalizers -n tenant-a
  _can_as no "$capv" update "vspherevms.$g" --subresource=status -n tenant-a
  _can_as no "$capv" update "openstackservers.$g" --subresource=finalizers -n tenant-a
  _can_as no "$capo" update "metal3datas.$g" --subresource=finalizers -n tenant-a
  # Another account of the same namespace gets nothing.
  _can_as no system:serviceaccount:capo-system:default update "openstackservers.$g" --subresource=finalizers -n tenant-a
}

# _patch_pool_as <account> <merge patch>: PATCHes pool "nodes" of $CHART_NS
# as the account, straight to the API (kubectl patch reads the object first,
# which the controller's account may not); prints the API's answer and
# fails unless it is 2xx.
_patch_pool_as() {
  local kc=$PK_TMP/$1.kubeconfig server token
  [[ -f $kc ]] || "$CLUSTER" sa-kubeconfig "$CHART_NS" "$1" "$kc" 10m
  server=$(kubectl --kubeconfig "$kc" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  token=$(kubectl --kubeconfig "$kc" config view --raw -o jsonpath='{.users[0].user.token}')
  kubectl --kubeconfig "$kc" config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$PK_TMP/plane-ca.crt"
  curl -sS --fail-with-body --cacert "$PK_TMP/plane-ca.crt" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/merge-patch+json' -X PATCH --data "$2" \
    "$server/apis/ipam.poolkeeper.io/v1alpha1/namespaces/$CHART_NS/ippools/nodes"
}

# _spec_patch_refused <account>: a spec patch of pool "nodes" as the account is
# denied by the chart's ValidatingAdmissionPolicy, naming the rule.
_spec_patch_refused() {
  local out
  out=$(_patch_pool_as "$1" '{"spec":{"gateway":"10.250.0.254"}}' 2>&1) && return 1
  echo "$out"
  [[ $out == *"may change a pool's metadata and status, never its spec"* ]]
}

@test "RBAC: the controller's account can do what it needs and no more" {
  local c=$REL-controller v
  # Claims: informer, finalizer patch, status, the owner-reference finalizers check.
  for v in list watch patch; do _can yes "$c" "$v" "$CLAIMS" -A; done
  _can yes "$c" patch "$CLAIMS" --subresource=status -n "$CHART_NS"
  _can yes "$c" update "$CLAIMS" --subresource=finalizers -n "$CHART_NS"
  for v in get create update delete; do _can no "$c" "$v" "$CLAIMS" -A; done
  _can no "$c" update "$CLAIMS" --subresource=status -A
  # Addresses: everything the claim steps do.
  for v in get list watch create patch delete; do _can yes "$c" "$v" "$ADDRS" -n "$CHART_NS"; done
  _can no "$c" update "$ADDRS" -A
  _can no "$c" deletecollection "$ADDRS" -A
  # Pools: watched, the protect-pool finalizer patched on the pool, status.
  # Never created, deleted, read one by one or replaced with an update.
  local r
  for r in "$POOLS" globalippools.ipam.poolkeeper.io; do
    for v in list watch patch; do _can yes "$c" "$v" "$r" -A; done
    _can yes "$c" patch "$r" --subresource=status -A
    _can yes "$c" update "$r" --subresource=finalizers -A
    for v in get create update delete deletecollection; do _can no "$c" "$v" "$r" -A; done
    _can no "$c" update "$r" --subresource=status -A
  done
  # RBAC cannot limit that patch to metadata: the chart's
  # ValidatingAdmissionPolicy refuses the controller's account any change of
  # a pool's spec, and lets its metadata patches through.
  pk_wait_for -t 30 "the policy to refuse the controller's spec patch" _spec_patch_refused "$c"
  run _patch_pool_as "$c" '{"metadata":{"labels":{"pk-e2e-touched":"yes"}}}'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$CHART_NS" "$POOLS" nodes '{.metadata.labels.pk-e2e-touched}')" = yes ]
  [ "$(pk_jsonpath -n "$CHART_NS" "$POOLS" nodes '{.spec.gateway}')" = 10.250.0.1 ]
  # The admin's own spec changes are not the policy's business.
  run kubectl -n "$CHART_NS" patch "$POOLS" nodes --type=merge --dry-run=server -p '{"spec":{"gateway":"10.250.0.254"}}'
  echo "$output"
  [ "$status" -eq 0 ]
  # Clusters: read only.
  _can yes "$c" list clusters.cluster.x-k8s.io -A
  _can yes "$c" watch clusters.cluster.x-k8s.io -A
  for v in get create update patch delete; do _can no "$c" "$v" clusters.cluster.x-k8s.io -A; done
  # Events of events.k8s.io only.
  _can yes "$c" create events.events.k8s.io -n "$CHART_NS"
  _can yes "$c" patch events.events.k8s.io -n "$CHART_NS"
  _can no "$c" create events -n "$CHART_NS"
  _can no "$c" delete events.events.k8s.io -n "$CHART_NS"
  # The one Lease, in the release namespace.
  _can yes "$c" get leases.coordination.k8s.io/poolkeeper-controller -n "$CHART_NS"
  _can yes "$c" update leases.coordination.k8s.io/poolkeeper-controller -n "$CHART_NS"
  _can yes "$c" create leases.coordination.k8s.io -n "$CHART_NS"
  _can no "$c" get leases.coordination.k8s.io/kube-controller-manager -n kube-system
  _can no "$c" update leases.coordination.k8s.io/other -n "$CHART_NS"
  _can no "$c" update leases.coordination.k8s.io/poolkeeper-controller -n default
  _can no "$c" delete leases.coordination.k8s.io/poolkeeper-controller -n "$CHART_NS"
  # No Secrets, nothing else.
  for v in get list watch; do _can no "$c" "$v" secrets -n "$CHART_NS"; done
  _can no "$c" list secrets -A
  _can no "$c" get configmaps -n "$CHART_NS"
}

@test "RBAC: the certificate Job's account touches only its two Secrets and the release's two configurations" {
  run _certs_rbac
  [ "$status" -eq 0 ]
  kubectl apply -n "$CHART_NS" -f - <<<"$output" >/dev/null
  local j=$REL-certs s v
  for s in "$REL-webhook-tls" "$REL-webhook-tls-ca"; do
    for v in get update; do _can yes "$j" "$v" "secrets/$s" -n "$CHART_NS"; done
    _can no "$j" patch "secrets/$s" -n "$CHART_NS"
    _can no "$j" delete "secrets/$s" -n "$CHART_NS"
    _can no "$j" get "secrets/$s" -n kube-system
  done
  # create cannot be limited by name: any Secret of the release namespace.
  _can yes "$j" create secrets -n "$CHART_NS"
  _can no "$j" create secrets -n kube-system
  for v in get update patch delete; do _can no "$j" "$v" secrets/other -n "$CHART_NS"; done
  _can no "$j" list secrets -n "$CHART_NS"
  _can no "$j" watch secrets -n "$CHART_NS"
  _can yes "$j" get "validatingwebhookconfigurations/$REL-validating"
  _can yes "$j" patch "validatingwebhookconfigurations/$REL-validating"
  _can yes "$j" get "mutatingwebhookconfigurations/$REL-mutating"
  _can yes "$j" patch "mutatingwebhookconfigurations/$REL-mutating"
  _can no "$j" patch validatingwebhookconfigurations/other
  _can no "$j" patch "mutatingwebhookconfigurations/$REL-validating"
  _can no "$j" update "validatingwebhookconfigurations/$REL-validating"
  _can no "$j" delete "validatingwebhookconfigurations/$REL-validating"
  _can no "$j" list validatingwebhookconfigurations
  _can no "$j" create validatingwebhookconfigurations
  _can no "$j" list "$POOLS" -A
  _can no "$j" delete clusters.cluster.x-k8s.io -A
  _delete_certs_rbac
}

@test "the certificate Jobs' commands, run as the Jobs' ServiceAccount, write the Secrets, patch caBundle, keep a valid pair and re-issue near expiry" {
  local bin kc step ca rv
  bin=$(pk_bin poolkeeper-certs) || skip "poolkeeper-certs is not built"
  _certs_rbac | kubectl apply -n "$CHART_NS" -f - >/dev/null
  kc=$PK_TMP/certs.kubeconfig
  "$CLUSTER" sa-kubeconfig "$CHART_NS" "$REL-certs" "$kc" 10m
  # Each Job's arguments as the chart renders them; in a pod the
  # ServiceAccount's token stands in for --kubeconfig.
  for step in issue patch; do
    mapfile -t args < <(_template --show-only templates/certs-jobs.yaml |
      kubectl create --dry-run=client -o json -f - |
      jq -r --arg n "$REL-certs-$step" '(.items // [.])[] | select(.metadata.name == $n) | .spec.template.spec.containers[0].args[]')
    [ "${#args[@]}" -ge 7 ]
    run "$bin" --kubeconfig "$kc" "${args[@]}"
    echo "$output"
    [ "$status" -eq 0 ]
  done
  [ "$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.type}')" = kubernetes.io/tls ]
  kubectl -n "$CHART_NS" get secret "$REL-webhook-tls-ca" >/dev/null
  ca=$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.data.ca\.crt}')
  [ -n "$ca" ]
  run kubectl get "validatingwebhookconfiguration/$REL-validating" "mutatingwebhookconfiguration/$REL-mutating" \
    -o jsonpath='{range .items[*].webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}'
  echo "$output"
  [ "$(sort -u <<<"$output")" = "$ca" ]
  [ "$(wc -l <<<"$output")" -eq 6 ]
  # Again: a valid pair is kept, nothing is written.
  rv=$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.metadata.resourceVersion}')
  run "$bin" --kubeconfig "$kc" "${args[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.metadata.resourceVersion}')" = "$rv" ]
  # Near expiry (a renewal window longer than the certificate's life): the
  # same Job re-issues the serving pair under the same CA; the bundle stays.
  local crt
  crt=$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.data.tls\.crt}')
  run "$bin" --kubeconfig "$kc" "${args[@]/#--renew-before-days=*/--renew-before-days=400}"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.data.tls\.crt}')" != "$crt" ]
  [ "$(pk_jsonpath -n "$CHART_NS" secret "$REL-webhook-tls" '{.data.ca\.crt}')" = "$ca" ]
  run kubectl get "validatingwebhookconfiguration/$REL-validating" "mutatingwebhookconfiguration/$REL-mutating" \
    -o jsonpath='{range .items[*].webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}'
  [ "$(sort -u <<<"$output")" = "$ca" ]
  _delete_certs_rbac
}

@test "helm upgrade with changed values keeps every pool, claim and address; one watched namespace turns the controller's rules into Roles" {
  [ -s "$BATS_FILE_TMPDIR/uids" ]
  run helm upgrade "$REL" "$CHART" -n "$CHART_NS" --no-hooks $(_install_flags) \
    --set webhook.claimEnforcement=warn --set webhook.replicas=3 --set logging.format=json \
    --set controller.watchNamespace="$WATCH_NS" --set controller.replicas=2
  echo "$output"
  [ "$status" -eq 0 ]
  diff "$BATS_FILE_TMPDIR/uids" <(_uids)
  [ "$(pk_jsonpath -n "$CHART_NS" deployment "$REL-webhook" '{.spec.replicas}')" = 3 ]
  kubectl -n "$CHART_NS" get deployment "$REL-webhook" -o json |
    jq -e '.spec.template.spec.containers[0].args | index("--claim-enforcement=warn") and index("--log-format=json")'
  kubectl -n "$CHART_NS" get deployment "$REL-controller" -o json |
    jq -e --arg w "$WATCH_NS" '.spec.template.spec.containers[0].args | index("--namespace=\($w)")'
  run kubectl get clusterrole "$REL-controller"
  [ "$status" -ne 0 ]
  local c=$REL-controller
  _can yes "$c" list "$CLAIMS" -n "$WATCH_NS"
  _can yes "$c" update "$POOLS" --subresource=finalizers -n "$WATCH_NS"
  _can no "$c" list "$CLAIMS" -n "$CHART_NS"
  _can no "$c" list "$CLAIMS" -A
  _can no "$c" list globalippools.ipam.poolkeeper.io
  _can yes "$c" update leases.coordination.k8s.io/poolkeeper-controller -n "$CHART_NS"
  # Back to every namespace: the objects are still there.
  run helm upgrade "$REL" "$CHART" -n "$CHART_NS" --no-hooks $(_install_flags)
  [ "$status" -eq 0 ]
  diff "$BATS_FILE_TMPDIR/uids" <(_uids)
  _can yes "$c" list "$CLAIMS" -A
}

@test "helm uninstall removes the release's objects and leaves the CRDs, pools, claims and addresses" {
  [ -s "$BATS_FILE_TMPDIR/uids" ]
  run helm uninstall "$REL" -n "$CHART_NS" --wait
  echo "$output"
  [ "$status" -eq 0 ]
  kubectl get crd ippools.ipam.poolkeeper.io globalippools.ipam.poolkeeper.io >/dev/null
  diff "$BATS_FILE_TMPDIR/uids" <(_uids)
  run kubectl get validatingwebhookconfiguration "$REL-validating"
  [ "$status" -ne 0 ]
  run kubectl get clusterrole "$REL-webhook"
  [ "$status" -ne 0 ]
  run kubectl -n "$CHART_NS" get serviceaccount "$REL-controller"
  [ "$status" -ne 0 ]
  # With no controller left, the finalizers come off by hand (docs/install.md).
  _unfinalize "$CLAIMS" ipam.poolkeeper.io/release-address "$CHART_NS"
  _unfinalize "$ADDRS" ipam.poolkeeper.io/protect-address "$CHART_NS"
  _unfinalize "$POOLS" ipam.poolkeeper.io/protect-pool "$CHART_NS"
  kubectl -n "$CHART_NS" delete "$CLAIMS,$ADDRS,$POOLS" --all --timeout=30s >/dev/null
  run kubectl -n "$CHART_NS" get "$CLAIMS,$ADDRS,$POOLS" -o name
  [ -z "$output" ]
}
