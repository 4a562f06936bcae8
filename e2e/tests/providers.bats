#!/usr/bin/env bats
# Claims shaped field for field as four infrastructure providers build them
# (CAPV, CAPM3, CAPO, Proxmox), created on the real plane by ServiceAccounts
# that hold exactly the rules each provider ships for its own kind and for
# ipaddressclaims: read at run time from config/rbac/role.yaml in the
# provider's module (e2e/build providers fetches them), CAPM3's from
# fixtures/providers/capm3-rbac.yaml. The owners are stand-in CRDs with the
# providers' names, group, scope and versions and an open schema. poolkeeper
# is installed from the chart and runs in its default claim enforcement,
# repair, unless a test says otherwise. docs/compatibility.md is the table
# these tests back.
#
# The apiserver runs OwnerReferencesPermissionEnforcement: a claim whose
# owner reference says blockOwnerDeletion: true is accepted only when the
# requesting ServiceAccount may update its owner kind's finalizers. Proxmox
# ships that rule; CAPV, CAPO and CAPM3 do not, and get it from the chart
# value rbac.providerFinalizers. Whether the chart's default list names the
# account each provider's manager really runs as is read, not assumed: the
# namespace and ServiceAccount of the manager Deployment in the provider's
# own config/default as `kubectl kustomize` renders it (what providers
# release as infrastructure-components.yaml), for CAPV v1.14.0 and the
# later CAPV_LATER_VERSION, CAPO and Proxmox from their modules, CAPM3 from
# fixtures/providers/capm3-manager.yaml. Those accounts are created in
# their own namespaces and bound to their release's shipped rules.

bats_require_minimum_version 1.5.0

load helpers
load poolkeeper
# shellcheck source=../lib/common.sh
. "$E2E_DIR/lib/common.sh"

POOLS=ippools.ipam.poolkeeper.io
CLAIMS=ipaddressclaims.ipam.cluster.x-k8s.io
ADDRS=ipaddresses.ipam.cluster.x-k8s.io
INFRA=infrastructure.cluster.x-k8s.io
# The providers' ServiceAccounts live here; each test's objects in its own $NS.
SA_NS=pk-e2e-providers
FIXTURES=$E2E_DIR/tests/fixtures/providers
SUITE_LABEL=e2e.poolkeeper.io/suite=providers
PROVIDERS=(capv capm3 capo capmox)

CAPV_DIR=$(pk_module_dir "sigs.k8s.io/cluster-api-provider-vsphere@$CAPV_VERSION")
CAPV_LATER_DIR=$(pk_module_dir "sigs.k8s.io/cluster-api-provider-vsphere@$CAPV_LATER_VERSION")
CAPO_DIR=$(pk_module_dir "sigs.k8s.io/cluster-api-provider-openstack@$CAPO_VERSION")
CAPMOX_DIR=$(pk_module_dir "github.com/ionos-cloud/cluster-api-provider-proxmox@$CAPMOX_VERSION")

# Per provider: the owner's kind, resource and API version, the IPAM API
# version its claims are sent in, the finalizer it puts on its claims, its
# shipped ClusterRole and the CRD of its kind.
declare -gA KIND=([capv]=VSphereVM [capm3]=Metal3Data [capo]=OpenStackServer [capmox]=ProxmoxMachine)
declare -gA PLURAL=([capv]=vspherevms [capm3]=metal3datas [capo]=openstackservers [capmox]=proxmoxmachines)
declare -gA VERSION=([capv]=v1beta1 [capm3]=v1beta1 [capo]=v1alpha1 [capmox]=v1alpha1)
declare -gA IPAM=([capv]=v1beta1 [capm3]=v1alpha1 [capo]=v1beta2 [capmox]=v1beta1)
declare -gA FINALIZER=(
  [capv]=vspherevm.infrastructure.cluster.x-k8s.io/ip-claim-protection
  [capm3]=metal3data.infrastructure.cluster.x-k8s.io
  [capo]=openstackmachine.infrastructure.cluster.x-k8s.io/ip-claim
  [capmox]=""
)
declare -gA ROLE=(
  [capv]=$CAPV_DIR/config/rbac/role.yaml
  [capm3]=$FIXTURES/capm3-rbac.yaml
  [capo]=$CAPO_DIR/config/rbac/role.yaml
  [capmox]=$CAPMOX_DIR/config/rbac/role.yaml
)
declare -gA CRD=(
  [capv]=$CAPV_DIR/config/default/crd/bases/infrastructure.cluster.x-k8s.io_vspherevms.yaml
  [capm3]=$FIXTURES/metal3data-crd.yaml
  [capo]=$CAPO_DIR/config/crd/bases/infrastructure.cluster.x-k8s.io_openstackservers.yaml
  [capmox]=$CAPMOX_DIR/config/crd/bases/infrastructure.cluster.x-k8s.io_proxmoxmachines.yaml
)

# The provider releases whose manager account the chart's default grant
# must reach (<provider>@<version>), each with its config/default (a
# kustomization; CAPM3's rendering is a fixture, as CAPM3 is not on the Go
# module proxy) and its shipped ClusterRole. CAPV_LATER_VERSION builds its
# claims as CAPV_VERSION does (controllers/vspherevm_ipaddress_reconciler.go
# is unchanged between them), so it shares CAPV's claim shape and CRD.
RELEASES=("capv@$CAPV_VERSION" "capv@$CAPV_LATER_VERSION" capm3 "capo@$CAPO_VERSION" "capmox@$CAPMOX_VERSION")
declare -gA MANIFEST=(
  ["capv@$CAPV_VERSION"]=$CAPV_DIR/config/default
  ["capv@$CAPV_LATER_VERSION"]=$CAPV_LATER_DIR/config/default
  [capm3]=$FIXTURES/capm3-manager.yaml
  ["capo@$CAPO_VERSION"]=$CAPO_DIR/config/default
  ["capmox@$CAPMOX_VERSION"]=$CAPMOX_DIR/config/default
)
declare -gA RELEASE_ROLE=(
  ["capv@$CAPV_VERSION"]=${ROLE[capv]}
  ["capv@$CAPV_LATER_VERSION"]=$CAPV_LATER_DIR/config/rbac/role.yaml
  [capm3]=${ROLE[capm3]}
  ["capo@$CAPO_VERSION"]=${ROLE[capo]}
  ["capmox@$CAPMOX_VERSION"]=${ROLE[capmox]}
)
# _as <provider> runs as SA_NS/<provider> unless a test sets AS[<provider>]
# to the kubeconfig name of a release's manager (_release_kc).
declare -gA AS=()

setup_file() {
  pk_setup_file
  local p r
  for p in "${PROVIDERS[@]}"; do
    [[ -f ${ROLE[$p]} && -f ${CRD[$p]} ]] ||
      { echo "${ROLE[$p]} or ${CRD[$p]} is missing: run e2e/build providers" >&2; return 1; }
  done
  for r in "${RELEASES[@]}"; do
    [[ -f ${RELEASE_ROLE[$r]} && (-f ${MANIFEST[$r]}/kustomization.yaml || -f ${MANIFEST[$r]}) ]] ||
      { echo "${RELEASE_ROLE[$r]} or ${MANIFEST[$r]} is missing: run e2e/build providers" >&2; return 1; }
  done
  export CERTS=$BATS_FILE_TMPDIR/certs
  pk_certs "$CERTS"
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS"
  pk_start_webhook webhook "$CERTS"
  pk_start_controller controller
  for p in "${PROVIDERS[@]}"; do
    _stand_in_crd "${CRD[$p]}" | kubectl apply -f - >/dev/null || return 1
  done
  for p in "${PROVIDERS[@]}"; do
    kubectl wait --for=condition=Established --timeout=60s "crd/${PLURAL[$p]}.$INFRA" >/dev/null || return 1
  done
  kubectl create namespace "$SA_NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  for p in "${PROVIDERS[@]}"; do _provider_account "$p" || return 1; done
  for r in "${RELEASES[@]}"; do _manager_account "$r" || return 1; done
  _mapping_probe_account
  pk_wait_for -t 30 "the webhook to be called" _webhook_answers
  pk_wait_for -t 60 "OwnerReferencesPermissionEnforcement to map the stand-in kinds" _kinds_mapped
}

teardown_file() {
  pk_stop controller
  pk_uninstall_poolkeeper poolkeeper poolkeeper-system
  pk_stop webhook
  kubectl delete clusterrolebinding,clusterrole -l "$SUITE_LABEL" --ignore-not-found >/dev/null 2>&1
  kubectl delete namespace "$SA_NS" --ignore-not-found --wait=false >/dev/null 2>&1
  local p ns
  if [[ -f $BATS_FILE_TMPDIR/created-namespaces ]]; then
    while read -r ns; do
      kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    done <"$BATS_FILE_TMPDIR/created-namespaces"
  fi
  for p in "${PROVIDERS[@]}"; do
    kubectl delete crd "${PLURAL[$p]}.$INFRA" --ignore-not-found --wait=false >/dev/null 2>&1
  done
}

setup() {
  pk_setup
  _cluster_and_pool
}

# Whatever a test changed of the suite's poolkeeper is put back (webhook
# flags, chart values), and its claims are let go: the providers'
# finalizers are removed (no provider runs to do it) so that claims, pools
# and the namespace can go.
teardown() {
  if [[ -s $BATS_FILE_TMPDIR/webhook-flags ]]; then _restart_webhook; fi
  if [[ -f $BATS_FILE_TMPDIR/reinstalled ]]; then _reinstall; fi
  local c keep
  for c in $(kubectl -n "$NS" get "$CLAIMS" -o name 2>/dev/null); do
    keep=$(kubectl -n "$NS" get "$c" -o json | jq -c '[.metadata.finalizers // [] | .[] | select(startswith("ipam.poolkeeper.io/"))]')
    kubectl -n "$NS" patch "$c" --type=merge -p "{\"metadata\":{\"finalizers\":$keep}}" >/dev/null 2>&1 || true
  done
  kubectl -n "$NS" delete "$CLAIMS" --all --timeout=60s >/dev/null 2>&1 || true
  kubectl -n "$NS" delete "$POOLS" --all --timeout=60s >/dev/null 2>&1 || true
  pk_teardown
}

# _stand_in_crd <CRD file>: the CRD with its names, group, scope, versions
# (served, storage, subresources) as the file has them, every schema open
# and no conversion webhook.
_stand_in_crd() {
  kubectl create --dry-run=client --validate=false -o json -f "$1" | jq -c --arg l "${SUITE_LABEL%%=*}" '
    {apiVersion, kind, metadata: {name: .metadata.name, labels: {($l): "providers"}},
     spec: (.spec | del(.conversion) | .versions |= map({name, served, storage,
       subresources: (.subresources // {}),
       schema: {openAPIV3Schema: {type: "object", "x-kubernetes-preserve-unknown-fields": true}}}))}'
}

# _shipped_rules <provider> [role file]: the rules of the provider's
# ClusterRole (default ROLE[provider]) that concern its own kind (any
# subresource) in infrastructure.cluster.x-k8s.io and ipaddressclaims (any
# subresource) in ipam.cluster.x-k8s.io, verbs and resourceNames as
# shipped; one rule per API group.
_shipped_rules() {
  kubectl create --dry-run=client --validate=false -o json -f "${2:-${ROLE[$1]}}" |
    jq -c --arg infra "$INFRA" --arg p "${PLURAL[$1]}" '
    [.rules[] as $r | ($r.apiGroups // [])[] as $g
     | (if $g == $infra then $p elif $g == "ipam.cluster.x-k8s.io" then "ipaddressclaims" else empty end) as $want
     | {apiGroups: [$g], resources: [($r.resources // [])[] | select(. == $want or startswith($want + "/"))],
        verbs: $r.verbs} + (if $r.resourceNames then {resourceNames: $r.resourceNames} else {} end)
     | select(.resources | length > 0)]'
}

# _provider_account <provider>: ServiceAccount <provider> in $SA_NS bound to
# exactly its shipped rules (_shipped_rules), and a kubeconfig for it (_kc).
_provider_account() {
  _bound_account "$1" "${ROLE[$1]}" "$SA_NS" "$1" "pk-e2e-$1" "$1"
}

# _bound_account <provider> <role file> <namespace> <name> <role name>
# <kubeconfig name>: the ServiceAccount, bound by a ClusterRole of that name
# to exactly the provider's rules in the role file, and a kubeconfig for it.
_bound_account() {
  local p=$1 role=$2 ns=$3 sa=$4 rn=$5 kc=$6 rules
  rules=$(_shipped_rules "$p" "$role") || return 1
  [[ $(jq length <<<"$rules") -gt 0 ]] || { echo "no rules for ${PLURAL[$p]} in $role" >&2; return 1; }
  pk_wait_for -t 30 "ServiceAccount $ns/$sa" _apply_serviceaccount "$ns" "$sa" >/dev/null || return 1
  jq -n --arg n "$rn" --argjson r "$rules" --arg l "${SUITE_LABEL%%=*}" \
    '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole",
      metadata: {name: $n, labels: {($l): "providers"}}, rules: $r}' | kubectl apply -f - >/dev/null
  kubectl create clusterrolebinding "$rn" --clusterrole="$rn" --serviceaccount="$ns:$sa" \
    --dry-run=client -o json | jq --arg l "${SUITE_LABEL%%=*}" '.metadata.labels = {($l): "providers"}' |
    kubectl apply -f - >/dev/null
  "$E2E_DIR/cluster" sa-kubeconfig "$ns" "$sa" "$(_kc "$kc")" 2h
}

# A "default" ServiceAccount may appear between apply's get and create (the
# controller manager makes one in each new namespace): retried.
_apply_serviceaccount() {
  kubectl -n "$1" create serviceaccount "$2" --dry-run=client -o yaml | kubectl apply -f -
}

# _rendered <release>: the objects of the release's config/default as one
# JSON array, kustomize's YAML turned into JSON by a --local label (no
# server, and no mapping needed for kinds the plane does not serve, such as
# cert-manager's).
_rendered() {
  local src=${MANIFEST[$1]} yaml
  if [[ -d $src ]]; then
    # kustomize's deprecation notes (bases, vars, patchesStrategicMerge) go
    # to stderr; a failure still fails here.
    yaml=$(kubectl kustomize "$src" 2>"$BATS_FILE_TMPDIR/kustomize.err") ||
      { cat "$BATS_FILE_TMPDIR/kustomize.err" >&2; echo "kubectl kustomize $src failed" >&2; return 1; }
  else
    yaml=$(cat "$src") || return 1
  fi
  kubectl label --local --dry-run=client -f - -o json e2e.poolkeeper.io/rendered=1 <<<"$yaml" |
    jq -cs '[.[] | (.items // [.])[]]'
}

# _manager_of <release>: "<namespace> <name>" of the ServiceAccount the
# release's manager runs as: its one Deployment's namespace and
# serviceAccountName ("default" when none is set). Refused unless a
# ClusterRoleBinding of the same rendering binds that account, so that a
# reading that misses the account fails rather than passes.
_manager_of() {
  local objs
  objs=$(_rendered "$1") || return 1
  jq -r --arg src "${MANIFEST[$1]}" '
    [.[] | select(.kind == "Deployment")] as $dep
    | if ($dep | length) != 1 then error("\($src): \($dep | length) Deployments, want 1") else . end
    | ($dep[0] | {ns: .metadata.namespace,
        sa: (.spec.template.spec.serviceAccountName // .spec.template.spec.serviceAccount // "default")}) as $a
    | if ($a.ns // "") == "" then error("\($src): the Deployment has no namespace")
      elif any(.[] | select(.kind == "ClusterRoleBinding") | .subjects[]?;
               .kind == "ServiceAccount" and .namespace == $a.ns and .name == $a.sa)
      then "\($a.ns) \($a.sa)"
      else error("\($src): no ClusterRoleBinding binds \($a.ns)/\($a.sa)") end' <<<"$objs"
}

# _release_kc <release>: the kubeconfig name of the release's manager.
_release_kc() { local r=${1//@/-}; echo "manager-${r//./-}"; }

# _manager_account <release>: the release's manager account (_manager_of),
# in its own namespace (created if absent, deleted by teardown_file),
# bound to the release's shipped rules; "<namespace> <name>" is kept in
# $BATS_FILE_TMPDIR/<kubeconfig name>.account.
_manager_account() {
  local r=$1 p=${1%%@*} ns sa kc
  read -r ns sa < <(_manager_of "$r") || return 1
  [[ -n $ns && -n $sa ]] || { echo "no manager account read for $r" >&2; return 1; }
  kc=$(_release_kc "$r")
  if ! kubectl get namespace "$ns" >/dev/null 2>&1; then
    kubectl create namespace "$ns" >/dev/null || return 1
    echo "$ns" >>"$BATS_FILE_TMPDIR/created-namespaces"
  fi
  _bound_account "$p" "${RELEASE_ROLE[$r]}" "$ns" "$sa" "pk-e2e-$kc" "$kc" || return 1
  echo "$ns $sa" >"$BATS_FILE_TMPDIR/$kc.account"
}

_kc() { echo "$BATS_FILE_TMPDIR/$1.kubeconfig"; }

# _as <provider> <kubectl args...>: kubectl as the provider's ServiceAccount
# (AS[provider] when a test set it), in $NS.
_as() {
  local p=$1
  shift
  kubectl --kubeconfig "$(_kc "${AS[$p]:-$p}")" -n "$NS" "$@"
}

# A ServiceAccount that may update the finalizers of the four stand-in
# kinds, only to learn when the apiserver's admission maps them (the
# plane's admin skips that mapping altogether).
_mapping_probe_account() {
  local p res=()
  for p in "${PROVIDERS[@]}"; do res+=("--resource=${PLURAL[$p]}.$INFRA/finalizers"); done
  kubectl -n "$SA_NS" create serviceaccount probe --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create clusterrole pk-e2e-probe --verb=update "${res[@]}" --dry-run=client -o json |
    jq --arg l "${SUITE_LABEL%%=*}" '.metadata.labels = {($l): "providers"}' | kubectl apply -f - >/dev/null
  kubectl -n "$SA_NS" create role probe --verb=create --resource=configmaps --dry-run=client -o yaml |
    kubectl apply -f - >/dev/null
  kubectl -n "$SA_NS" create rolebinding probe --role=probe --serviceaccount="$SA_NS:probe" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create clusterrolebinding pk-e2e-probe --clusterrole=pk-e2e-probe --serviceaccount="$SA_NS:probe" \
    --dry-run=client -o json | jq --arg l "${SUITE_LABEL%%=*}" '.metadata.labels = {($l): "providers"}' |
    kubectl apply -f - >/dev/null
  "$E2E_DIR/cluster" sa-kubeconfig "$SA_NS" probe "$(_kc probe)" 2h
}

_kinds_mapped() {
  local p
  for p in "${PROVIDERS[@]}"; do
    jq -n --arg v "$INFRA/${VERSION[$p]}" --arg k "${KIND[$p]}" '
      {apiVersion: "v1", kind: "ConfigMap", metadata: {generateName: "probe-", ownerReferences: [
        {apiVersion: $v, kind: $k, name: "probe", uid: "00000000-0000-4000-8000-000000000001",
         blockOwnerDeletion: true}]}}' |
      kubectl --kubeconfig "$(_kc probe)" -n "$SA_NS" create --dry-run=server -o name -f - || return 1
  done
}

# _webhook_answers: a server-side dry run of a bad pool comes back with
# poolkeeper's denial.
_webhook_answers() {
  local out
  out=$(jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "probe"},
    spec: {addresses: ["10.99.0.1/24"], prefix: 24}}' | kubectl -n default create --dry-run=server -f - 2>&1)
  echo "$out"
  [[ $out == *"did you mean 10.99.0.0/24?"* ]]
}

# _restart_webhook [flags...]: restarts the webhook with flags (none: the
# defaults), on the port the chart's registration calls.
_restart_webhook() {
  pk_stop webhook
  pk_start_webhook webhook "$CERTS" "$@" || return 1
  echo "$*" >"$BATS_FILE_TMPDIR/webhook-flags"
  pk_wait_for -t 30 "the restarted webhook" _webhook_answers
}

# _reinstall [helm flags...]: the suite's poolkeeper release installed again
# with these values; with none, as setup_file installed it (the chart's
# defaults), which teardown puts back.
_reinstall() {
  pk_install_poolkeeper poolkeeper poolkeeper-system "$CERTS" "$@" || return 1
  if (($# == 0)); then rm -f "$BATS_FILE_TMPDIR/reinstalled"; else touch "$BATS_FILE_TMPDIR/reinstalled"; fi
}

# _may_finalize <provider> [namespace name]: whether the ServiceAccount
# (default: the provider's in $SA_NS) may update the provider's kind's
# finalizers (what blockOwnerDeletion needs).
_may_finalize() {
  kubectl auth can-i update "${PLURAL[$1]}.$INFRA" --subresource=finalizers -n "$NS" \
    --as="system:serviceaccount:${2:-$SA_NS}:${3:-$1}" >/dev/null 2>&1
}
_may_not_finalize() { ! _may_finalize "$@"; }

# The Cluster the claims belong to and the pool they claim from, in $NS.
_cluster_and_pool() {
  jq -n '{apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", metadata: {name: "prod"}, spec: {paused: false}}' |
    kubectl -n "$NS" apply -f - >/dev/null
  local doc
  doc=$(jq -n '{apiVersion: "ipam.poolkeeper.io/v1alpha1", kind: "IPPool", metadata: {name: "nodes"},
    spec: {addresses: ["10.90.0.0/24"], prefix: 24, gateway: "10.90.0.1"}}')
  pk_wait_for -t 30 "IPPool nodes to be accepted" _apply_doc "$doc"
}
_apply_doc() { kubectl -n "$NS" apply -f - <<<"$1"; }

# _owner <provider> <name>: the provider's machine object, created in $NS
# by the provider's ServiceAccount with the cluster-name label its
# controllers copy onto claims; prints its uid.
_owner() {
  jq -n --arg v "$INFRA/${VERSION[$1]}" --arg k "${KIND[$1]}" --arg n "$2" \
    '{apiVersion: $v, kind: $k, metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"}}, spec: {}}' |
    _as "$1" create -f - -o 'jsonpath={.metadata.uid}'
}

# _claim_name <provider> <owner name>: the name the provider gives the claim.
_claim_name() {
  case $1 in
    capv) echo "$2-0-0" ;;                 # util.IPAddressClaimName(vm, device 0, pool 0)
    capm3) echo "$2-nodes" ;;              # Metal3Data name + "-" + pool name
    capo) echo "$2-floating-ip-address" ;; # names.GetFloatingAddressClaimName
    capmox) echo "$2-net0-inet" ;;         # owner name, device net0, suffix inet
  esac
}

# _claim_doc <provider> <owner name> <owner uid> [pool kind] [pool group]:
# the claim as the provider builds it, on pool "nodes" of $NS (default:
# poolkeeper's IPPool).
_claim_doc() {
  local p=$1 owner=$2 uid=$3 kind=${4:-IPPool} group=${5:-ipam.poolkeeper.io} name
  name=$(_claim_name "$p" "$owner")
  case $p in
    capv)
      # sigs.k8s.io/cluster-api-provider-vsphere v1.14.0,
      # controllers/vspherevm_ipaddress_reconciler.go:178-220
      # (createOrPatchIPAddressClaim): ipam v1beta1; EnsureOwnerRef with
      # apiVersion, kind, name, uid only; its finalizer; the VSphereVM's
      # cluster-name label; poolRef copied. No spec.clusterName.
      jq -n --arg n "$name" --arg o "$owner" --arg u "$uid" --arg f "${FINALIZER[$p]}" --arg k "$kind" --arg g "$group" '
        {apiVersion: "ipam.cluster.x-k8s.io/v1beta1", kind: "IPAddressClaim",
         metadata: {name: $n, finalizers: [$f], labels: {"cluster.x-k8s.io/cluster-name": "prod"},
           ownerReferences: [{apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "VSphereVM",
                              name: $o, uid: $u}]},
         spec: {poolRef: {apiGroup: $g, kind: $k, name: "nodes"}}}'
      ;;
    capm3)
      # github.com/metal3-io/cluster-api-provider-metal3 at
      # 005f85a6ff6d9ca675f57cc0902d79a8c3ce42df, baremetal/metal3data_manager.go
      # (ensureIPClaim): ipam v1alpha1 (sigs.k8s.io/cluster-api/exp/ipam/api/v1alpha1,
      # which has no spec.clusterName); owner Metal3Data with controller: true
      # only; the Metal3Data's labels; finalizer infrav1.DataFinalizer.
      jq -n --arg n "$name" --arg o "$owner" --arg u "$uid" --arg f "${FINALIZER[$p]}" --arg k "$kind" --arg g "$group" '
        {apiVersion: "ipam.cluster.x-k8s.io/v1alpha1", kind: "IPAddressClaim",
         metadata: {name: $n, finalizers: [$f], labels: {"cluster.x-k8s.io/cluster-name": "prod"},
           ownerReferences: [{apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3Data",
                              name: $o, uid: $u, controller: true}]},
         spec: {poolRef: {apiGroup: $g, kind: $k, name: "nodes"}}}'
      ;;
    capo)
      # sigs.k8s.io/cluster-api-provider-openstack v0.13.0,
      # controllers/openstackserver_controller.go:603-633
      # (getOrCreateIPAddressClaimForFloatingAddress): ipam v1beta2; owner
      # OpenStackServer (v1alpha1) with neither flag; finalizer
      # infrav1.IPClaimMachineFinalizer; the server's cluster-name label.
      jq -n --arg n "$name" --arg o "$owner" --arg u "$uid" --arg f "${FINALIZER[$p]}" --arg k "$kind" --arg g "$group" '
        {apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
         metadata: {name: $n, finalizers: [$f], labels: {"cluster.x-k8s.io/cluster-name": "prod"},
           ownerReferences: [{apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "OpenStackServer",
                              name: $o, uid: $u}]},
         spec: {poolRef: {apiGroup: $g, kind: $k, name: "nodes"}}}'
      ;;
    capmox)
      # github.com/ionos-cloud/cluster-api-provider-proxmox v0.7.0,
      # pkg/kubernetes/ipam/ipam.go:274-291 (CreateIPAddressClaim): ipam
      # v1beta1 (exp/ipam/api/v1beta1); cluster-name label;
      # SetControllerReference (controller and blockOwnerDeletion); no
      # finalizer. (v0.7.0 itself accepts only InClusterIPPool and
      # GlobalInClusterIPPool pool kinds, ipam.go:233-265; the shape is what
      # it sends.)
      jq -n --arg n "$name" --arg o "$owner" --arg u "$uid" --arg k "$kind" --arg g "$group" '
        {apiVersion: "ipam.cluster.x-k8s.io/v1beta1", kind: "IPAddressClaim",
         metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"},
           ownerReferences: [{apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "ProxmoxMachine",
                              name: $o, uid: $u, controller: true, blockOwnerDeletion: true}]},
         spec: {poolRef: {apiGroup: $g, kind: $k, name: "nodes"}}}'
      ;;
  esac
}

# _claim <provider> <owner name> <owner uid> [pool kind] [pool group]: creates the claim
# as the provider's ServiceAccount (kubectl's output and warnings on stdout).
_claim() { _claim_doc "$@" | _as "$1" create -f - 2>&1; }

# _ready <claim>: the claim's Ready condition is True.
_ready() {
  local got
  got=$(kubectl -n "$NS" get "$CLAIMS" "$1" -o json | jq -r '.status.conditions[]? | select(.type=="Ready") | "\(.status) \(.reason)"')
  echo "Ready: $got"
  [[ $got == True* ]]
}

# _check_served <provider> <claim> <owner uid> <blockOwnerDeletion: true|false>:
# the claim got an address (Ready, an IPAddress of pool nodes), belongs to
# Cluster prod, and its one owner reference is the controller reference to
# the owner, with blockOwnerDeletion as expected.
_check_served() {
  local p=$1 c=$2 uid=$3 block=$4 obj addr
  pk_wait_for "claim $c Ready" _ready "$c"
  obj=$(kubectl -n "$NS" get "$CLAIMS" "$c" -o json)
  addr=$(jq -r '.status.addressRef.name' <<<"$obj")
  [[ -n $addr && $addr != null ]]
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" "$addr" '{.spec.address}') == 10.90.0.* ]]
  [[ $(pk_jsonpath -n "$NS" "$ADDRS" "$addr" '{.metadata.labels.cluster\.x-k8s\.io/cluster-name}') == prod ]]
  if [[ ${IPAM[$p]} == v1alpha1 ]]; then
    # v1alpha1 has no spec.clusterName: whatever the webhook adds is pruned
    # by the apiserver, and CAPI's conversion does not fill it. The label
    # is what names the cluster.
    [[ $(jq -r '.metadata.labels["cluster.x-k8s.io/cluster-name"]' <<<"$obj") == prod ]]
  else
    [[ $(jq -r '.spec.clusterName' <<<"$obj") == prod ]]
  fi
  echo "ownerReferences: $(jq -c .metadata.ownerReferences <<<"$obj")"
  jq -e --arg u "$uid" --arg k "${KIND[$p]}" --argjson b "$block" '
    .metadata.ownerReferences | length == 1 and .[0].uid == $u and .[0].kind == $k
    and .[0].controller == true and ((.[0].blockOwnerDeletion // false) == $b)' <<<"$obj"
}

# _drop_finalizer <provider> <claim>: what the provider does once its
# machine object is deleting: removes its own finalizer from the claim, as
# its ServiceAccount.
_drop_finalizer() {
  local p=$1 c=$2 f=${FINALIZER[$1]} i
  [[ -n $f ]] || return 0
  i=$(_as "$p" get "$CLAIMS" "$c" -o json | jq --arg f "$f" '.metadata.finalizers // [] | index($f)') || return 1
  [[ $i != null ]] || return 0
  _as "$p" patch "$CLAIMS" "$c" --type=json -p "$(jq -nc --arg f "$f" --argjson i "$i" \
    '[{op: "test", path: "/metadata/finalizers/\($i)", value: $f}, {op: "remove", path: "/metadata/finalizers/\($i)"}]')"
}

# _poolkeeper_warnings <kubectl output>: its Warning lines but the
# apiserver's own deprecation notice of ipam v1beta1.
_poolkeeper_warnings() {
  grep '^Warning:' <<<"$1" | grep -v 'is deprecated; use ipam.cluster.x-k8s.io/v1beta2' || true
}

_deleting() { [[ -n $(pk_jsonpath -n "$NS" "$CLAIMS" "$1" '{.metadata.deletionTimestamp}') ]]; }
_exists() { kubectl -n "$NS" get "$@" -o name >/dev/null 2>&1; }

# _delete_owner <provider> <owner> <claim> <blockOwnerDeletion: true|false>:
# the owner is deleted in the foreground (as CAPI deletes machines); the
# garbage collector deletes the claim, which the provider's finalizer holds.
# With blockOwnerDeletion the owner waits for the claim; without, it goes
# first. Then the provider drops its finalizer and the garbage collector
# removes claim and IPAddress.
_delete_owner() {
  local p=$1 owner=$2 c=$3 block=$4 addr
  addr=$(pk_jsonpath -n "$NS" "$CLAIMS" "$c" '{.status.addressRef.name}')
  kubectl -n "$NS" delete "${PLURAL[$p]}.$INFRA" "$owner" --cascade=foreground --wait=false
  if [[ -n ${FINALIZER[$p]} ]]; then
    pk_wait_for -t 120 "the garbage collector to delete claim $c" _deleting "$c"
    if [[ $block == true ]]; then
      sleep 3
      # foreground deletion waits for the claim its finalizer holds
      _exists "${PLURAL[$p]}.$INFRA" "$owner"
      _exists "$CLAIMS" "$c"
    else
      # nothing blocks: the owner goes while its claim is still held
      pk_wait_gone -t 60 -n "$NS" "${PLURAL[$p]}.$INFRA" "$owner"
      _exists "$CLAIMS" "$c"
    fi
    pk_wait_for -t 30 "the provider to drop its finalizer from $c" _drop_finalizer "$p" "$c"
  fi
  pk_wait_gone -t 120 -n "$NS" "$CLAIMS" "$c"
  pk_wait_gone -t 60 -n "$NS" "$ADDRS" "$addr"
  pk_wait_gone -t 60 -n "$NS" "${PLURAL[$p]}.$INFRA" "$owner"
}

# _served_and_released <provider> <blockOwnerDeletion: true|false> [owner]:
# a claim as the provider sends it is served (_check_served) and released
# when its owner (default m1) is deleted in the foreground (_delete_owner);
# prints kubectl's output of the create (warnings included) to
# $PK_TMP/<provider>.out.
_served_and_released() {
  local p=$1 block=$2 o=${3:-m1} uid c
  uid=$(_owner "$p" "$o")
  c=$(_claim_name "$p" "$o")
  _claim "$p" "$o" "$uid" | tee "$PK_TMP/$p.out"
  [[ ${PIPESTATUS[0]} -eq 0 ]]
  _check_served "$p" "$c" "$uid" "$block"
  _delete_owner "$p" "$o" "$c" "$block"
}

@test "the providers' shipped rules: Proxmox may update proxmoxmachines/finalizers; CAPV, CAPM3 and CAPO may not update their kinds' finalizers" {
  _may_finalize capmox
  run ! _may_finalize capv
  run ! _may_finalize capm3
  run ! _may_finalize capo
  # ... and each may create its kind and claims, nothing more of claims' owners
  local p
  for p in "${PROVIDERS[@]}"; do
    kubectl auth can-i create "${PLURAL[$p]}.$INFRA" -n "$NS" --as="system:serviceaccount:$SA_NS:$p"
    kubectl auth can-i create "$CLAIMS" -n "$NS" --as="system:serviceaccount:$SA_NS:$p"
    run ! kubectl auth can-i update "configmaps" -n "$NS" --as="system:serviceaccount:$SA_NS:$p"
  done
}

@test "CAPV's claim (VSphereVM reference with neither flag, label only) gets an address, spec.clusterName and a controller reference; without the finalizers grant no blockOwnerDeletion, and the warning names the missing rule" {
  _served_and_released capv false
  run cat "$PK_TMP/capv.out"
  [[ $output == *'Warning:'*'VSphereVM'* ]]
  [[ $output == *'vspherevms/finalizers'*'blockOwnerDeletion'* ]]
  [[ $output == *"system:serviceaccount:$SA_NS:capv"* ]]
}

@test "CAPV's next reconcile patches the claim with its owner reference as it builds it (no flags): the patch is admitted and the repair stays" {
  local uid c obj
  uid=$(_owner capv m1)
  c=$(_claim_name capv m1)
  run _claim capv m1 "$uid"
  [ "$status" -eq 0 ]
  _check_served capv "$c" "$uid" false
  # createOrPatchIPAddressClaim runs on every reconcile of the VSphereVM:
  # EnsureOwnerRef replaces the reference to the same VSphereVM with one
  # without flags, and CreateOrPatch sends the difference as a JSON merge
  # patch, which replaces the whole list. CAPV may not delete claims, which
  # OwnerReferencesPermissionEnforcement asks of an update that changes
  # owner references.
  run _as capv patch "$CLAIMS" "$c" --type=merge -p "$(jq -nc --arg u "$uid" \
    '{metadata: {ownerReferences: [{apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "VSphereVM", name: "m1", uid: $u}]}}')"
  echo "$output"
  [ "$status" -eq 0 ]
  obj=$(kubectl -n "$NS" get "$CLAIMS" "$c" -o json)
  jq -e --arg u "$uid" '.metadata.ownerReferences | length == 1 and .[0].uid == $u and .[0].controller == true' <<<"$obj"
}

@test "CAPO's claim (OpenStackServer reference with neither flag) gets an address, spec.clusterName and a controller reference; without the grant no blockOwnerDeletion, and the warning names the missing rule" {
  _served_and_released capo false
  run cat "$PK_TMP/capo.out"
  [[ $output == *'Warning:'*'OpenStackServer'* ]]
  [[ $output == *'openstackservers/finalizers'*'blockOwnerDeletion'* ]]
}

@test "CAPM3's v1alpha1 claim (Metal3Data controller reference without blockOwnerDeletion) gets an address and keeps its controller reference; without the grant the warning names the missing rule" {
  _served_and_released capm3 false
  run cat "$PK_TMP/capm3.out"
  [[ $output == *'Warning:'*'metal3datas/finalizers'*'blockOwnerDeletion'* ]]
}

@test "CAPM3's v1alpha1 claim on another provider's pool (InClusterIPPool) is admitted and left alone" {
  local uid c
  uid=$(_owner capm3 m1)
  c=$(_claim_name capm3 m1)
  run _claim capm3 m1 "$uid" InClusterIPPool ipam.cluster.x-k8s.io
  echo "$output"
  [ "$status" -eq 0 ]
  _exists "$CLAIMS" "$c"
  sleep 2
  # poolkeeper does not fill another provider's claim
  [[ -z $(pk_jsonpath -n "$NS" "$CLAIMS" "$c" '{.status.addressRef.name}') ]]
}

@test "Proxmox's claim (both flags, label only) gets an address and spec.clusterName with no warning; foreground deletion of the ProxmoxMachine waits for claim and IPAddress" {
  _served_and_released capmox true
  [[ -z $(_poolkeeper_warnings "$(cat "$PK_TMP/capmox.out")") ]]
}

@test "the chart's default rbac.providerFinalizers grants the manager account each release's config/default runs as (CAPV's earlier and later release, CAPM3, CAPO, Proxmox): its claims get blockOwnerDeletion and foreground deletion of the owner waits for claim and IPAddress" {
  local r p kc ns sa i=0
  for r in "${RELEASES[@]}"; do
    p=${r%%@*}
    kc=$(_release_kc "$r")
    read -r ns sa <"$BATS_FILE_TMPDIR/$kc.account"
    echo "$r: the manager runs as $ns/$sa"
    pk_wait_for -t 30 "the chart's grant to reach $ns/$sa" _may_finalize "$p" "$ns" "$sa"
    AS[$p]=$kc
    i=$((i + 1))
    _served_and_released "$p" true "m$i"
    run cat "$PK_TMP/$p.out"
    # no rule is missing; a repair, when the provider needs one, names the kind
    [[ $output != *"${PLURAL[$p]}/finalizers"* ]]
    if [[ $p == capmox ]]; then
      [[ -z $(_poolkeeper_warnings "$output") ]]
    else
      [[ $output == *'Warning:'*"${KIND[$p]}"* ]]
    fi
  done
  # By name, not by namespace: another account in CAPV's namespace gets nothing.
  read -r ns sa <"$BATS_FILE_TMPDIR/$(_release_kc "capv@$CAPV_LATER_VERSION").account"
  run ! _may_finalize capv "$ns" pk-e2e-squatter
}

@test "rbac.providerFinalizersEnabled=false: no manager account may update its kind's finalizers any more, and CAPV's claim gets controller: true only, with the warning naming the rule" {
  _reinstall --set rbac.providerFinalizersEnabled=false
  local r p ns sa
  for r in "${RELEASES[@]}"; do
    p=${r%%@*}
    read -r ns sa <"$BATS_FILE_TMPDIR/$(_release_kc "$r").account"
    [[ $p == capmox ]] && continue # its own role has the rule
    pk_wait_for -t 30 "the grant to $ns/$sa to be gone" _may_not_finalize "$p" "$ns" "$sa"
  done
  AS[capv]=$(_release_kc "capv@$CAPV_LATER_VERSION")
  _served_and_released capv false
  run cat "$PK_TMP/capv.out"
  [[ $output == *'vspherevms/finalizers'*'blockOwnerDeletion'* ]]
}

@test "in deny mode CAPV's, CAPM3's and CAPO's claims are refused with a message naming the mode; Proxmox's is admitted" {
  _restart_webhook --claim-enforcement=deny
  local p uid
  for p in capv capm3 capo; do
    uid=$(_owner "$p" m1)
    run _claim "$p" m1 "$uid"
    echo "$p: $output"
    [ "$status" -ne 0 ]
    [[ $output == *'admission webhook "claims.validate.ipam.poolkeeper.io" denied the request'* ||
      $output == *'admission webhook "claims.mutate.ipam.poolkeeper.io" denied the request'* ]]
    [[ $output == *'--claim-enforcement'* ]]
    [[ $output == *'deny'* ]]
    run ! _exists "$CLAIMS" "$(_claim_name "$p" m1)"
  done
  uid=$(_owner capmox m1)
  run _claim capmox m1 "$uid"
  [ "$status" -eq 0 ]
  pk_wait_for "Proxmox's claim Ready" _ready "$(_claim_name capmox m1)"
}

# _orphan_claim <name>: a claim with no owner reference, created by the admin.
_orphan_claim() {
  jq -n --arg n "$1" '{apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim",
    metadata: {name: $n, labels: {"cluster.x-k8s.io/cluster-name": "prod"}},
    spec: {clusterName: "prod", poolRef: {apiGroup: "ipam.poolkeeper.io", kind: "IPPool", name: "nodes"}}}' |
    kubectl -n "$NS" create -f - 2>&1
}

@test "a claim with no owner is refused in repair and deny mode, admitted with a warning in warn mode" {
  run _orphan_claim o-repair
  echo "repair: $output"
  [ "$status" -ne 0 ]
  [[ $output == *'denied the request'*'owner'* ]]
  [[ $output == *'--claim-enforcement'* ]]
  run ! _exists "$CLAIMS" o-repair
  _restart_webhook --claim-enforcement=deny
  run _orphan_claim o-deny
  echo "deny: $output"
  [ "$status" -ne 0 ]
  [[ $output == *'denied the request'*'owner'* ]]
  run ! _exists "$CLAIMS" o-deny
  _restart_webhook --claim-enforcement=warn
  run _orphan_claim o-warn
  echo "warn: $output"
  [ "$status" -eq 0 ]
  [[ $output == *'Warning:'*'owner'* ]]
  _exists "$CLAIMS" o-warn
}

@test "in warn mode CAPV's claim is admitted as sent, with a warning: nothing is repaired" {
  _restart_webhook --claim-enforcement=warn
  local uid obj
  uid=$(_owner capv m1)
  run _claim capv m1 "$uid"
  [ "$status" -eq 0 ]
  [[ $output == *'Warning:'* ]]
  obj=$(kubectl -n "$NS" get "$CLAIMS" "$(_claim_name capv m1)" -o json)
  jq -e '.metadata.ownerReferences | length == 1 and .[0].controller == null and .[0].blockOwnerDeletion == null' <<<"$obj"
}

@test "a claim on pool kind IPpool of ipam.poolkeeper.io is refused with did you mean IPPool?" {
  local uid
  uid=$(_owner capv m1)
  run _claim capv m1 "$uid" IPpool
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *'spec.poolRef.kind'*'"IPpool"'*'did you mean IPPool?'* ]]
  run ! _exists "$CLAIMS" "$(_claim_name capv m1)"
}

# _metric <name> <label matchers...>: the value of the one series of <name>
# on the webhook's /metrics whose labels include every matcher (0 if none).
_metric() {
  local name=$1 port
  shift
  port=$(pk_log_port webhook metrics)
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v n="$name" -v want="$*" '
    BEGIN { k = split(want, m, " ") }
    index($0, n "{") == 1 { ok = 1; for (i = 1; i <= k; i++) if (index($0, m[i]) == 0) ok = 0; if (ok) v = $NF }
    END { print (v == "" ? 0 : v) }'
}

@test "the webhook's /metrics counts each repair by owner kind: CAPV's claim adds one controller repair for VSphereVM" {
  local before after skipped_before skipped_after uid
  before=$(_metric poolkeeper_webhook_claim_repairs_total 'owner_kind="VSphereVM"' 'repair="controller"')
  skipped_before=$(_metric poolkeeper_webhook_claim_repairs_skipped_total 'owner_kind="VSphereVM"' 'reason="permission"')
  uid=$(_owner capv m1)
  run _claim capv m1 "$uid"
  [ "$status" -eq 0 ]
  after=$(_metric poolkeeper_webhook_claim_repairs_total 'owner_kind="VSphereVM"' 'repair="controller"')
  skipped_after=$(_metric poolkeeper_webhook_claim_repairs_skipped_total 'owner_kind="VSphereVM"' 'reason="permission"')
  echo "controller repairs: $before -> $after; skipped for permission: $skipped_before -> $skipped_after"
  [ "$after" -eq $((before + 1)) ]
  [ "$skipped_after" -eq $((skipped_before + 1)) ]
  # a claim that needed no owner repair is not counted as one
  before=$(_metric poolkeeper_webhook_claim_repairs_total 'owner_kind="ProxmoxMachine"' 'repair="controller"')
  uid=$(_owner capmox m1)
  run _claim capmox m1 "$uid"
  [ "$status" -eq 0 ]
  [ "$(_metric poolkeeper_webhook_claim_repairs_total 'owner_kind="ProxmoxMachine"' 'repair="controller"')" -eq "$before" ]
}
