#!/usr/bin/env bats
# poolkeeper as clusterctl installs it: scripts/release writes metadata.yaml
# and ipam-components.yaml into a clusterctl local repository
# (<repo>/ipam-poolkeeper/v<version>/), a clusterctl config file names it
# as IPAM provider "poolkeeper", and the real clusterctl (built by
# e2e/build from sigs.k8s.io/cluster-api at CAPI_VERSION) resolves it with
# `clusterctl generate provider --ipam poolkeeper:v<version>`; its output
# goes to the plane with `kubectl apply --dry-run=server`.
#
# The components use cert-manager (Issuer, Certificate). The plane has no
# cert-manager, so setup_file installs stand-in CRDs of its two kinds (any
# content accepted) unless they exist, and teardown_file removes the ones
# it installed. clusterctl runs with its own config folder
# (XDG_CONFIG_HOME) and without its version check (no network).

load helpers
load clusterctl

setup_file() {
  pk_setup_file
  pk_cctl_repository "$BATS_FILE_TMPDIR/clusterctl" || return 1
  pk_certmanager_standins "$BATS_FILE_TMPDIR/stand-in-crds"
}

teardown_file() {
  pk_env
  pk_certmanager_standins_remove "$BATS_FILE_TMPDIR/stand-in-crds"
}

setup() { pk_setup; }
teardown() { pk_teardown; }

# objects FILE: "Kind namespace/name" of every object, via the apiserver's
# own YAML parsing (kubectl, client side).
objects() {
  kubectl create --dry-run=client -o json -f "$1" |
    jq -r 'if .kind == "List" then .items[] else . end | "\(.kind) \(.metadata.namespace // "-")/\(.metadata.name)"'
}

# json FILE: every object of FILE as one JSON array.
json() {
  kubectl create --dry-run=client -o json -f "$1" | jq -s '[.[] | if .kind == "List" then .items[] else . end]'
}

@test "clusterctl is the pinned Cluster API release, built from its module" {
  run cctl version -o short
  echo "$output"
  [ "$status" -eq 0 ]
  capi=$(. "$E2E_DIR/lib/common.sh" && echo "$CAPI_VERSION")
  [ "$output" = "$capi" ]
}

@test "generate provider --ipam poolkeeper resolves the local repository and lists poolkeeper's variables" {
  run cctl generate provider --ipam "poolkeeper:$VERSION" --describe
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"Name:               poolkeeper"* ]]
  [[ $output == *"Type:               IPAMProvider"* ]]
  [[ $output == *"Version:            $VERSION"* ]]
  [[ $output == *"File:               ipam-components.yaml"* ]]
  vars=$(sed -n 's/^  - \(POOLKEEPER_[A-Z_]*\)$/\1/p' <<<"$output" | sort | tr '\n' ' ')
  [ "$vars" = "POOLKEEPER_CLAIM_ENFORCEMENT POOLKEEPER_FOREIGN_CLAIMS POOLKEEPER_LOG_FORMAT POOLKEEPER_LOG_VERBOSITY POOLKEEPER_NAMESPACE " ]
  [[ $output == *"Images:"*"  - ghcr.io/poolkeeper/poolkeeper:${VERSION#v}"* ]]
  # Without a version clusterctl takes the newest in the repository.
  run cctl generate provider --ipam poolkeeper --describe
  [ "$status" -eq 0 ]
  [[ $output == *"Version:            $VERSION"* ]]
}

@test "variables left unset take their defaults: the chart's own, in namespace poolkeeper-system" {
  cctl generate provider --ipam "poolkeeper:$VERSION" --write-to "$PK_TMP/out.yaml"
  json "$PK_TMP/out.yaml" >"$PK_TMP/out.json"
  # One Namespace, and every namespaced object in it.
  [ "$(jq -r '[.[] | select(.kind == "Namespace") | .metadata.name] | join(",")' "$PK_TMP/out.json")" = poolkeeper-system ]
  [ "$(jq -r '[.[] | .metadata.namespace // empty] | unique | join(",")' "$PK_TMP/out.json")" = poolkeeper-system ]
  # clusterctl's labels on every object.
  [ "$(jq '[.[] | select(.metadata.labels["cluster.x-k8s.io/provider"] != "ipam-poolkeeper" or (.metadata.labels | has("clusterctl.cluster.x-k8s.io") | not))] | length' "$PK_TMP/out.json")" -eq 0 ]
  # The Deployments equal those of the chart's own defaults (certManager),
  # but for the managed-by label. The components leave out
  # rbac.providerFinalizers (clusterctl would move its bindings' subjects
  # into poolkeeper's namespace: scripts/release).
  helm template poolkeeper "$REPO_ROOT/charts/poolkeeper" -n poolkeeper-system --include-crds --set certs.mode=certManager \
    --set-json 'rbac.providerFinalizers=[]' >"$PK_TMP/chart.yaml"
  json "$PK_TMP/chart.yaml" >"$PK_TMP/chart.json"
  for d in poolkeeper-webhook poolkeeper-controller; do
    # (clusterctl's round trip through the typed Deployment adds an empty
    # strategy where the chart has none.)
    spec='.[] | select(.kind == "Deployment" and .metadata.name == $d) | .spec
      | del(.template.metadata.labels["app.kubernetes.io/managed-by"]) | if .strategy == {} then del(.strategy) else . end'
    diff <(jq --arg d "$d" "$spec" "$PK_TMP/chart.json") <(jq --arg d "$d" "$spec" "$PK_TMP/out.json")
  done
  [ "$(jq -r '.[] | select(.metadata.name == "poolkeeper-webhook" and .kind == "Deployment") | "\(.spec.replicas) \(.spec.template.spec.containers[0].image)"' "$PK_TMP/out.json")" = "2 ghcr.io/poolkeeper/poolkeeper:${VERSION#v}" ]
  # Every object of the chart's render is there, and only the Namespace more.
  diff <(objects "$PK_TMP/chart.yaml" | sort) <(objects "$PK_TMP/out.yaml" | grep -v '^Namespace ' | sort)
}

@test "its output applies to the plane with kubectl apply --dry-run=server" {
  # The target namespace must exist for a server dry run of the objects in
  # it (a dry run creates nothing): the test's namespace.
  POOLKEEPER_NAMESPACE=$NS
  export POOLKEEPER_NAMESPACE
  env XDG_CONFIG_HOME="$CCTL_DIR/xdg" CLUSTERCTL_DISABLE_VERSIONCHECK=true \
    "$CLUSTERCTL" generate provider --ipam "poolkeeper:$VERSION" --config "$CCTL_DIR/clusterctl.yaml" >"$PK_TMP/out.yaml"
  unset POOLKEEPER_NAMESPACE
  n=$(grep -c '^kind: ' "$PK_TMP/out.yaml")
  run kubectl apply --dry-run=server -f "$PK_TMP/out.yaml"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep -c '(server dry run)$' <<<"$output")" -eq "$n" ]
  [[ $output == *"deployment.apps/poolkeeper-webhook "*"(server dry run)"* ]]
  [[ $output == *"certificate.cert-manager.io/poolkeeper-webhook "*"(server dry run)"* ]]
  [[ $output == *"validatingwebhookconfiguration.admissionregistration.k8s.io/poolkeeper-validating "*"(server dry run)"* ]]
  # Nothing was created.
  run kubectl -n "$NS" get deployments,services -o name
  [ -z "$output" ]
}

@test "variables set in the environment or in clusterctl's config, and its image override, reach the objects" {
  cat "$CCTL_DIR/clusterctl.yaml" - >"$PK_TMP/clusterctl.yaml" <<'EOF'
POOLKEEPER_LOG_VERBOSITY: "3"
POOLKEEPER_FOREIGN_CLAIMS: deny
images:
  ipam-poolkeeper:
    repository: registry.example:5000/team
    tag: 0.1.0-rc.1
EOF
  POOLKEEPER_NAMESPACE=$NS POOLKEEPER_CLAIM_ENFORCEMENT=warn POOLKEEPER_LOG_FORMAT=json \
    XDG_CONFIG_HOME="$CCTL_DIR/xdg" CLUSTERCTL_DISABLE_VERSIONCHECK=true \
    "$CLUSTERCTL" generate provider --ipam "poolkeeper:$VERSION" --config "$PK_TMP/clusterctl.yaml" >"$PK_TMP/out.yaml"
  json "$PK_TMP/out.yaml" >"$PK_TMP/out.json"
  [ "$(jq -r '[.[] | .metadata.namespace // empty] | unique | join(",")' "$PK_TMP/out.json")" = "$NS" ]
  [ "$(jq -r '.[] | select(.kind == "Namespace") | .metadata.name' "$PK_TMP/out.json")" = "$NS" ]
  webhook=$(jq -c '.[] | select(.kind == "Deployment" and .metadata.name == "poolkeeper-webhook") | .spec' "$PK_TMP/out.json")
  controller=$(jq -c '.[] | select(.kind == "Deployment" and .metadata.name == "poolkeeper-controller") | .spec' "$PK_TMP/out.json")
  [ "$(jq -r '.template.spec.containers[0].image' <<<"$webhook")" = registry.example:5000/team/poolkeeper:0.1.0-rc.1 ]
  [ "$(jq -r '.template.spec.containers[0].image' <<<"$controller")" = registry.example:5000/team/poolkeeper:0.1.0-rc.1 ]
  jq -e '.template.spec.containers[0].args | index("--claim-enforcement=warn") and index("--foreign-claims=deny") and index("--v=3") and index("--log-format=json")' <<<"$webhook"
  jq -e '.template.spec.containers[0].args | index("--v=3") and index("--log-format=json")' <<<"$controller"
  # cert-manager's names follow the namespace too.
  jq -e --arg ns "$NS" '.[] | select(.kind == "Certificate" and .metadata.name == "poolkeeper-webhook") | .spec.dnsNames | index("poolkeeper-webhook." + $ns + ".svc")' "$PK_TMP/out.json"
  jq -e --arg ns "$NS" '[.[] | select(.kind | test("WebhookConfiguration$")) | .metadata.annotations["cert-manager.io/inject-ca-from"] == $ns + "/poolkeeper-webhook"] | length == 2 and all' "$PK_TMP/out.json"
  run kubectl apply --dry-run=server -f "$PK_TMP/out.yaml"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "a release declaring a contract clusterctl does not speak is refused" {
  cp -r "$REPO" "$PK_TMP/repo"
  sed -i 's/contract: v1beta2/contract: v1alpha4/' "$PK_TMP/repo/ipam-poolkeeper/$VERSION/metadata.yaml"
  sed "s#$REPO#$PK_TMP/repo#" "$CCTL_DIR/clusterctl.yaml" >"$PK_TMP/clusterctl.yaml"
  CCTL_CONFIG=$PK_TMP/clusterctl.yaml run cctl generate provider --ipam "poolkeeper:$VERSION"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"detected v1alpha4 for provider poolkeeper"* ]]
}

@test "--target-namespace moves every namespaced object and every reference to the namespace clusterctl knows" {
  cctl generate provider --ipam "poolkeeper:$VERSION" --target-namespace "$NS" --write-to "$PK_TMP/out.yaml"
  json "$PK_TMP/out.yaml" >"$PK_TMP/out.json"
  [ "$(jq -r '[.[] | select(.kind == "Namespace") | .metadata.name] | join(",")' "$PK_TMP/out.json")" = "$NS" ]
  [ "$(jq -r '[.[] | .metadata.namespace // empty] | unique | join(",")' "$PK_TMP/out.json")" = "$NS" ]
  # ServiceAccount subjects of every binding, the webhook Service of every
  # registration, cainjector's source, the Service names in the Certificate.
  [ "$(jq -r '[.[] | .subjects[]?.namespace] | unique | join(",")' "$PK_TMP/out.json")" = "$NS" ]
  [ "$(jq -r '[.[] | .webhooks[]?.clientConfig.service.namespace] | unique | join(",")' "$PK_TMP/out.json")" = "$NS" ]
  [ "$(jq -r '[.[] | .metadata.annotations["cert-manager.io/inject-ca-from"] // empty] | unique | join(",")' "$PK_TMP/out.json")" = "$NS/poolkeeper-webhook" ]
  jq -e --arg ns "$NS" '.[] | select(.kind == "Certificate" and .metadata.name == "poolkeeper-webhook") | .spec.dnsNames
    | index("poolkeeper-webhook." + $ns + ".svc") and index("poolkeeper-webhook." + $ns + ".svc.cluster.local")' "$PK_TMP/out.json"
  # The controller's Lease: in its own namespace, no flag naming another.
  jq -e '.[] | select(.kind == "Deployment" and .metadata.name == "poolkeeper-controller")
    | .spec.template.spec.containers[0].args | (index("--leader-elect") != null) and all(startswith("--leader-election-namespace") | not)' "$PK_TMP/out.json"
  run kubectl apply --dry-run=server -f "$PK_TMP/out.yaml"
  echo "$output"
  [ "$status" -eq 0 ]
}
