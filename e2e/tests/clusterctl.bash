# shellcheck shell=bash
# Helpers for the suites that run the real clusterctl (clusterctl.bats,
# move.bats). Load after helpers:   load helpers; load clusterctl
#
# pk_cctl_repository <dir>: CLUSTERCTL (the binary e2e/build made from
#   sigs.k8s.io/cluster-api at CAPI_VERSION), VERSION (poolkeeper's, from
#   CMakeLists.txt) and CCTL_DIR=<dir>, with a clusterctl local repository
#   in <dir>/repository holding poolkeeper's release (scripts/release) as
#   ipam-poolkeeper/<VERSION>/, and <dir>/clusterctl.yaml naming it as IPAM
#   provider "poolkeeper". clusterctl runs with its own config folder
#   (<dir>/xdg) and without its version check (no network).
# pk_cctl_core_release: adds a minimal Cluster API release of CAPI_VERSION
#   to that repository, the core provider and kubeadm's bootstrap and
#   control-plane providers that `clusterctl init` installs first: each
#   provider's CRDs from the module and its namespace, with the module's
#   metadata.yaml. No Deployment: the plane runs no pods, and what clusterctl
#   needs of a management cluster is its inventory and its CRDs' labels.
# pk_certmanager_standins <record file>: stand-in CRDs for cert-manager's
#   Issuer and Certificate (any content accepted), where there are none, each
#   name appended to <record file> for pk_certmanager_standins_remove. With
#   them, poolkeeper's components apply, and `clusterctl init` finds its
#   cert-manager test objects accepted and takes cert-manager as installed.
# cctl ARGS...: clusterctl with that config and config folder, and no
#   POOLKEEPER_* variable from the caller's environment.

pk_cctl_repository() {
  CCTL_DIR=$1
  CLUSTERCTL=$(. "$E2E_DIR/lib/common.sh" && echo "$CLUSTERCTL_BIN/clusterctl")
  [[ -x $CLUSTERCTL ]] || {
    echo "clusterctl is not built: run e2e/build clusterctl" >&2
    return 1
  }
  VERSION=v$(sed -n 's/^project(poolkeeper VERSION \([0-9.]*\).*/\1/p' "$REPO_ROOT/CMakeLists.txt")
  REPO=$CCTL_DIR/repository
  mkdir -p "$CCTL_DIR/xdg" "$REPO"
  "$REPO_ROOT/scripts/release" "$REPO/ipam-poolkeeper/$VERSION" >&2 || return 1
  cat >"$CCTL_DIR/clusterctl.yaml" <<EOF
providers:
  - name: poolkeeper
    url: file://$REPO/ipam-poolkeeper/$VERSION/ipam-components.yaml
    type: IPAMProvider
EOF
  export CLUSTERCTL VERSION CCTL_DIR REPO
}

pk_cctl_core_release() {
  local capi mod p name folder file type ns dir f
  capi=$(. "$E2E_DIR/lib/common.sh" && echo "$CAPI_VERSION")
  mod=$(. "$E2E_DIR/lib/common.sh" && echo "$CAPI_MODULE_DIR")
  # name|folder|components file|type|namespace|CRD folder in the module
  for p in "cluster-api|cluster-api|core-components.yaml|CoreProvider|capi-system|core/config/crd/bases" \
    "kubeadm|bootstrap-kubeadm|bootstrap-components.yaml|BootstrapProvider|capi-kubeadm-bootstrap-system|bootstrap/kubeadm/config/crd/bases" \
    "kubeadm|control-plane-kubeadm|control-plane-components.yaml|ControlPlaneProvider|capi-kubeadm-control-plane-system|controlplane/kubeadm/config/crd/bases"; do
    IFS='|' read -r name folder file type ns dir <<<"$p"
    [[ -d $mod/$dir ]] || { echo "pk_cctl_core_release: no $dir in $mod" >&2; return 1; }
    mkdir -p "$REPO/$folder/$capi"
    cp "$mod/metadata.yaml" "$REPO/$folder/$capi/metadata.yaml"
    {
      printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$ns"
      for f in "$mod/$dir"/*.yaml; do
        printf -- '---\n'
        cat "$f"
      done
    } >"$REPO/$folder/$capi/$file"
    cat >>"$CCTL_DIR/clusterctl.yaml" <<EOF
  - name: $name
    url: file://$REPO/$folder/$capi/$file
    type: $type
EOF
  done
}

pk_certmanager_standins() {
  local record=$1 kind plural
  : >>"$record"
  for kind in Issuer Certificate; do
    plural=$(tr 'A-Z' 'a-z' <<<"$kind")s
    kubectl get crd "$plural.cert-manager.io" >/dev/null 2>&1 && continue
    pk_open_crd "$plural" cert-manager.io "$kind" | kubectl create -f - >/dev/null || return 1
    echo "$plural.cert-manager.io" >>"$record"
    pk_wait_for "CRD $plural.cert-manager.io established" \
      kubectl wait --for=condition=Established --timeout=5s "crd/$plural.cert-manager.io" || return 1
  done
  pk_wait_for "cert-manager.io/v1 in discovery" kubectl get issuers.cert-manager.io,certificates.cert-manager.io -A
}

# pk_certmanager_standins_remove <record file>: removes the CRDs it records.
pk_certmanager_standins_remove() {
  local crd
  [[ -f $1 ]] || return 0
  while read -r crd; do
    [[ -n $crd ]] && kubectl delete crd "$crd" --wait=false >/dev/null 2>&1
  done <"$1"
  return 0
}

cctl() {
  local unset=() v
  for v in $(compgen -e | grep '^POOLKEEPER_' || true); do unset+=(-u "$v"); done
  env "${unset[@]}" XDG_CONFIG_HOME="$CCTL_DIR/xdg" CLUSTERCTL_DISABLE_VERSIONCHECK=true \
    "$CLUSTERCTL" "$@" --config "${CCTL_CONFIG:-$CCTL_DIR/clusterctl.yaml}"
}
