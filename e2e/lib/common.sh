# shellcheck shell=bash disable=SC2034
# Shared settings of poolkeeper's loopback control plane, sourced by
# e2e/build, e2e/cluster and e2e/run (and, through them, by the tests).
#
# Everything built or downloaded lives outside the checkout, under
# ${PK_CACHE:-$HOME/.cache/poolkeeper}: one folder per component and version
# (kubernetes-vX/bin, etcd-vX/bin, helm-vX/bin, clusterctl-vX/bin) plus the Go caches in go/.
# The checkout only holds versions.env, the wrapper modules and scripts, so a
# fresh clone on the same machine reuses every cached binary.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
REPO_ROOT=$(cd "$E2E_DIR/.." && pwd -P)

# shellcheck source=../versions.env
. "$E2E_DIR/versions.env"

PK_CACHE=${PK_CACHE:-$HOME/.cache/poolkeeper}
case $PK_CACHE in /*) ;; *) PK_CACHE=$(pwd -P)/$PK_CACHE ;; esac

# The state of a running plane (pids, ports, certificates, data, logs).
# Git-ignored; removed by `e2e/cluster down`.
PK_E2E_STATE=${PK_E2E_STATE:-$E2E_DIR/.state}
case $PK_E2E_STATE in /*) ;; *) PK_E2E_STATE=$(pwd -P)/$PK_E2E_STATE ;; esac
PK_E2E_LOG_DIR=$PK_E2E_STATE/logs

KUBE_HOME=$PK_CACHE/kubernetes-$KUBE_VERSION
ETCD_HOME=$PK_CACHE/etcd-$ETCD_VERSION
HELM_HOME=$PK_CACHE/helm-$HELM_VERSION
CLUSTERCTL_HOME=$PK_CACHE/clusterctl-$CAPI_VERSION
KUBE_BIN=$KUBE_HOME/bin
ETCD_BIN=$ETCD_HOME/bin
HELM_BIN=$HELM_HOME/bin
CLUSTERCTL_BIN=$CLUSTERCTL_HOME/bin
# The fault suite's attacker (e2e/attacker, stdlib only): rebuilt when its
# source changes (the stamp), so it has no version of its own.
ATTACKER_HOME=$PK_CACHE/attacker
ATTACKER_BIN=$ATTACKER_HOME/bin

# Go: the toolchain installed on the machine, caches under PK_CACHE, modules
# resolved from the committed go.mod/go.sum (never upgraded).
pk_go_env() {
  if ! command -v go >/dev/null 2>&1; then
    PATH=/usr/local/go/bin:$PATH
  fi
  export PATH
  export GOMODCACHE=$PK_CACHE/go/mod
  export GOCACHE=$PK_CACHE/go/build
  export GOPATH=$PK_CACHE/go/path
  export GOTOOLCHAIN=local
  export GOFLAGS=-mod=mod
  export CGO_ENABLED=0
  export GOWORK=off
}

# Where the CAPI CRDs are read from: the sigs.k8s.io/cluster-api module in
# the Go module cache (downloaded by e2e/build).
CAPI_MODULE_DIR=$PK_CACHE/go/mod/sigs.k8s.io/cluster-api@$CAPI_VERSION

pk_capi_crd_dir() {
  local d
  for d in "$CAPI_MODULE_DIR/core/config/crd/bases" "$CAPI_MODULE_DIR/config/crd/bases"; do
    if [[ -f $d/ipam.cluster.x-k8s.io_ipaddressclaims.yaml ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

# The infrastructure providers' modules providers.bats reads (their
# config/rbac/role.yaml, CRDs and config/default kustomization), fetched into the Go module cache by
# e2e/build. PK_PROVIDER_NOSUMDB: those whose go.mod the checksum database
# does not know, so `go mod download` must not ask it (GONOSUMDB).
PK_PROVIDER_MODULES=(
  "sigs.k8s.io/cluster-api-provider-vsphere@$CAPV_VERSION"
  "sigs.k8s.io/cluster-api-provider-vsphere@$CAPV_LATER_VERSION"
  "sigs.k8s.io/cluster-api-provider-openstack@$CAPO_VERSION"
  "github.com/ionos-cloud/cluster-api-provider-proxmox@$CAPMOX_VERSION"
)
PK_PROVIDER_NOSUMDB=sigs.k8s.io/cluster-api-provider-openstack,github.com/ionos-cloud/cluster-api-provider-proxmox

# pk_module_dir <path@version>: where the module cache holds it (none of the
# providers' paths has upper-case letters, which the cache would escape).
pk_module_dir() { echo "$PK_CACHE/go/mod/$1"; }

pk_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
pk_die() { pk_log "error: $*"; exit 1; }
