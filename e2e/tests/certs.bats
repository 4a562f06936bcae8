#!/usr/bin/env bats
# poolkeeper-certs against the real kube-apiserver, run as the chart's
# certificate Job runs it: as a ServiceAccount whose Role and ClusterRole
# allow only what it needs (Secrets get/create/update in its namespace;
# get/patch on two named webhook configurations). Each test has its own
# namespace, ServiceAccounts and configurations. Then the --out-dir mode
# the e2e harness uses for the loopback webhook.

load helpers

setup_file() {
  pk_setup_file
  CERTS_BIN=$(pk_bin poolkeeper-certs)
  export CERTS_BIN
}

setup() {
  pk_setup
  VCFG=pk-certs-$NS-validating
  MCFG=pk-certs-$NS-mutating
  export VCFG MCFG
  # Two configurations of two webhooks each that are never called:
  # failurePolicy Ignore, and a namespace selector no namespace matches.
  local kind name hooks="" i
  for i in 1 2; do
    hooks+="
- name: hook$i.certs.e2e.poolkeeper.io
  clientConfig: {url: 'https://127.0.0.1:1/never'}
  rules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {poolkeeper-certs-e2e: never}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]"
  done
  for kind in Validating Mutating; do
    name=$VCFG
    [[ $kind == Mutating ]] && name=$MCFG
    kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}WebhookConfiguration
metadata: {name: $name}
webhooks:$hooks
EOF
  done
  # "certs" has what the chart's certificate Job has; "nobody" has nothing;
  # "secrets-only" may write Secrets but not touch the configurations.
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: certs, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: nobody, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: secrets-only, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: certs, namespace: $NS}
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: certs, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: certs}
subjects:
- {kind: ServiceAccount, name: certs, namespace: $NS}
- {kind: ServiceAccount, name: secrets-only, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pk-certs-$NS}
rules:
- apiGroups: [admissionregistration.k8s.io]
  resources: [validatingwebhookconfigurations]
  resourceNames: [$VCFG]
  verbs: [get, patch]
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations]
  resourceNames: [$MCFG]
  verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pk-certs-$NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pk-certs-$NS}
subjects:
- {kind: ServiceAccount, name: certs, namespace: $NS}
EOF
  SA_KC=$PK_TMP/certs.kubeconfig
  pk_sa_kubeconfig "$NS" certs "$SA_KC"
  export SA_KC
}

teardown() {
  kubectl delete validatingwebhookconfiguration "$VCFG" --ignore-not-found >/dev/null 2>&1
  kubectl delete mutatingwebhookconfiguration "$MCFG" --ignore-not-found >/dev/null 2>&1
  kubectl delete clusterrolebinding "pk-certs-$NS" --ignore-not-found >/dev/null 2>&1
  kubectl delete clusterrole "pk-certs-$NS" --ignore-not-found >/dev/null 2>&1
  pk_teardown
}

# certs [flags...]: poolkeeper-certs as the Job runs it, as ServiceAccount
# "certs" (or the kubeconfig in $KC), with Secret webhook-tls and both
# configurations; bats' $status and $output, and the output echoed for a
# failing test's log.
certs() {
  run timeout 120 "$CERTS_BIN" --kubeconfig "${KC:-$SA_KC}" --namespace "$NS" --service pk-webhook \
    --secret webhook-tls --webhook-configuration "validating/$VCFG" \
    --webhook-configuration "mutating/$MCFG" "$@"
  echo "$output"
}

# secret_file <secret> <key> <file>: a data key of a Secret, decoded, into file.
secret_file() {
  kubectl -n "$NS" get secret "$1" -o "jsonpath={.data.${2//./\\.}}" | base64 -d >"$3"
}

# rvs: the resourceVersions of both Secrets and both configurations.
rvs() {
  echo "$(kubectl -n "$NS" get secret webhook-tls webhook-tls-ca -o 'jsonpath={.items[*].metadata.resourceVersion}')" \
    "$(pk_jsonpath validatingwebhookconfiguration "$VCFG" '{.metadata.resourceVersion}')" \
    "$(pk_jsonpath mutatingwebhookconfiguration "$MCFG" '{.metadata.resourceVersion}')"
}

# bundles_are <base64>: each of the four webhooks holds it as caBundle.
bundles_are() {
  local b n=0
  for b in $(pk_jsonpath validatingwebhookconfiguration "$VCFG" '{.webhooks[*].clientConfig.caBundle}') \
    $(pk_jsonpath mutatingwebhookconfiguration "$MCFG" '{.webhooks[*].clientConfig.caBundle}'); do
    [[ $b == "$1" ]] || { echo "a caBundle differs"; return 1; }
    n=$((n + 1))
  done
  [[ $n -eq 4 ]] || { echo "$n caBundles, want 4"; return 1; }
}

# one_error <text>: the output has exactly one error line, and it contains text.
one_error() {
  [[ $(grep -c 'level=error' <<<"$output") -eq 1 ]] || { echo "not one error line"; return 1; }
  grep 'level=error' <<<"$output" | grep -qF -- "$1" || { echo "the error line lacks: $1"; return 1; }
}

@test "creates the serving Secret with a chain openssl verifies, and patches caBundle in both configurations" {
  certs
  [ "$status" -eq 0 ]
  [[ $output == *'msg="new CA"'* && $output == *"msg=\"Secret created\" secret=$NS/webhook-tls"* ]]
  [ "$(pk_jsonpath -n "$NS" secret webhook-tls '{.type}')" = kubernetes.io/tls ]
  [ "$(pk_jsonpath -n "$NS" secret webhook-tls-ca '{.type}')" = kubernetes.io/tls ]
  # The serving Secret holds the pair and the bundle, never the CA's key.
  [ "$(kubectl -n "$NS" get secret webhook-tls -o json | jq -r '.data | keys | join(",")')" = ca.crt,tls.crt,tls.key ]
  secret_file webhook-tls tls.crt "$PK_TMP/tls.crt"
  secret_file webhook-tls tls.key "$PK_TMP/tls.key"
  secret_file webhook-tls ca.crt "$PK_TMP/ca.crt"
  secret_file webhook-tls-ca tls.key "$PK_TMP/ca.key"
  run cmp -s "$PK_TMP/tls.key" "$PK_TMP/ca.key"
  [ "$status" -ne 0 ]
  run openssl verify -CAfile "$PK_TMP/ca.crt" -purpose sslserver "$PK_TMP/tls.crt"
  [ "$status" -eq 0 ]
  run openssl x509 -in "$PK_TMP/tls.crt" -noout -ext subjectAltName,extendedKeyUsage,basicConstraints
  [[ $output == *"DNS:pk-webhook, DNS:pk-webhook.$NS, DNS:pk-webhook.$NS.svc, DNS:pk-webhook.$NS.svc.cluster.local"* ]]
  [[ $output == *"TLS Web Server Authentication"* && $output == *"CA:FALSE"* ]]
  # The key is the certificate's.
  [ "$(openssl pkey -in "$PK_TMP/tls.key" -pubout)" = "$(openssl x509 -in "$PK_TMP/tls.crt" -noout -pubkey)" ]
  bundles_are "$(pk_jsonpath -n "$NS" secret webhook-tls '{.data.ca\.crt}')"
}

@test "a second run changes nothing: every resourceVersion stays" {
  certs
  [ "$status" -eq 0 ]
  local before
  before=$(rvs)
  certs
  [ "$status" -eq 0 ]
  [[ $output == *'msg="up to date: nothing written"'* ]]
  [ "$(rvs)" = "$before" ]
}

@test "a near-expiry run re-issues the serving pair under the same CA, and the bundle stays" {
  certs
  [ "$status" -eq 0 ]
  secret_file webhook-tls tls.crt "$PK_TMP/tls.1"
  secret_file webhook-tls ca.crt "$PK_TMP/ca.1"
  local vrv
  vrv=$(pk_jsonpath validatingwebhookconfiguration "$VCFG" '{.metadata.resourceVersion}')
  # A window longer than the lifetime: the certificate is always near expiry.
  certs --renew-before-days 400
  [ "$status" -eq 0 ]
  [[ $output == *'msg="serving certificate issued" reason="it expires at '*'within 400 days"'* ]]
  [[ $output == *'msg="CA kept"'* ]]
  secret_file webhook-tls tls.crt "$PK_TMP/tls.2"
  secret_file webhook-tls ca.crt "$PK_TMP/ca.2"
  run cmp -s "$PK_TMP/tls.1" "$PK_TMP/tls.2"
  [ "$status" -ne 0 ]
  cmp "$PK_TMP/ca.1" "$PK_TMP/ca.2"
  run openssl verify -CAfile "$PK_TMP/ca.1" -purpose sslserver "$PK_TMP/tls.2"
  [ "$status" -eq 0 ]
  # The configurations already trust that CA: they are not written again.
  [ "$(pk_jsonpath validatingwebhookconfiguration "$VCFG" '{.metadata.resourceVersion}')" = "$vrv" ]
}

@test "a new CA puts old and new in the bundle, and caBundle follows" {
  certs
  [ "$status" -eq 0 ]
  secret_file webhook-tls tls.crt "$PK_TMP/tls.old"
  certs --renew-ca
  [ "$status" -eq 0 ]
  secret_file webhook-tls ca.crt "$PK_TMP/bundle"
  secret_file webhook-tls tls.crt "$PK_TMP/tls.new"
  [ "$(grep -c 'BEGIN CERTIFICATE' "$PK_TMP/bundle")" -eq 2 ]
  # A replica still serving the old certificate and one serving the new are both trusted.
  run openssl verify -CAfile "$PK_TMP/bundle" -purpose sslserver "$PK_TMP/tls.old"
  [ "$status" -eq 0 ]
  run openssl verify -CAfile "$PK_TMP/bundle" -purpose sslserver "$PK_TMP/tls.new"
  [ "$status" -eq 0 ]
  bundles_are "$(base64 -w0 <"$PK_TMP/bundle")"
}

@test "a Secret of the wrong type is refused with exit 1 and left unchanged" {
  kubectl -n "$NS" create secret generic webhook-tls --from-literal=password=hunter2 >/dev/null
  local rv
  rv=$(pk_jsonpath -n "$NS" secret webhook-tls '{.metadata.resourceVersion}')
  certs
  [ "$status" -eq 1 ]
  one_error "Secret $NS/webhook-tls: has type \\\"Opaque\\\", not kubernetes.io/tls"
  [ "$(pk_jsonpath -n "$NS" secret webhook-tls '{.metadata.resourceVersion}')" = "$rv" ]
  [ "$(pk_jsonpath -n "$NS" secret webhook-tls '{.data.password}' | base64 -d)" = hunter2 ]
  # Nothing else was made either.
  run kubectl -n "$NS" get secret webhook-tls-ca
  [ "$status" -ne 0 ]
  [ -z "$(pk_jsonpath validatingwebhookconfiguration "$VCFG" '{.webhooks[*].clientConfig.caBundle}')" ]
}

@test "without RBAC it exits 1 naming the permission, and writes nothing" {
  KC=$PK_TMP/nobody.kubeconfig
  pk_sa_kubeconfig "$NS" nobody "$KC"
  certs
  [ "$status" -eq 1 ]
  one_error "Secret $NS/webhook-tls-ca: get: forbidden: the identity needs \\\"get\\\" on secrets in namespace $NS"
  [[ $output == *"system:serviceaccount:$NS:nobody"* ]]
  # Secrets allowed but not the configurations: refused before any Secret is written.
  KC=$PK_TMP/secrets-only.kubeconfig
  pk_sa_kubeconfig "$NS" secrets-only "$KC"
  certs
  [ "$status" -eq 1 ]
  one_error "ValidatingWebhookConfiguration $VCFG: get: forbidden: the identity needs \\\"get\\\" on validatingwebhookconfigurations"
  run kubectl -n "$NS" get secret webhook-tls
  [ "$status" -ne 0 ]
}

@test "an unreachable API exits 1 with one error line" {
  local port
  port=$(pk_free_port)
  sed -E "s#server: https://127.0.0.1:[0-9]+#server: https://127.0.0.1:$port#" "$SA_KC" >"$PK_TMP/down.kubeconfig"
  KC=$PK_TMP/down.kubeconfig
  certs
  [ "$status" -eq 1 ]
  one_error "Secret $NS/webhook-tls-ca: get: API server unreachable"
}

@test "--out-dir --ip 127.0.0.1: files with key modes 0600 and a verifying chain; --renew keeps ca.crt and changes tls.crt" {
  local d=$PK_TMP/out sums
  run "$CERTS_BIN" --out-dir "$d" --ip 127.0.0.1 --dns localhost
  [ "$status" -eq 0 ]
  [ "$(stat -c %a "$d/tls.key")" = 600 ]
  [ "$(stat -c %a "$d/ca.key")" = 600 ]
  [ "$(stat -c %a "$d/tls.crt")" = 644 ]
  [ "$(stat -c %a "$d/ca.crt")" = 644 ]
  run openssl verify -CAfile "$d/ca.crt" -purpose sslserver "$d/tls.crt"
  [ "$status" -eq 0 ]
  run openssl x509 -in "$d/tls.crt" -noout -ext subjectAltName
  [[ $output == *"DNS:localhost, IP Address:127.0.0.1"* ]]
  [ "$(openssl pkey -in "$d/tls.key" -pubout)" = "$(openssl x509 -in "$d/tls.crt" -noout -pubkey)" ]
  # Again: the files stay as they are.
  sums=$(sha256sum "$d"/*)
  run "$CERTS_BIN" --out-dir "$d" --ip 127.0.0.1 --dns localhost
  [ "$status" -eq 0 ]
  [ "$(sha256sum "$d"/*)" = "$sums" ]
  # --renew: a new pair under the same CA.
  cp "$d/tls.crt" "$PK_TMP/tls.before"
  cp "$d/ca.crt" "$PK_TMP/ca.before"
  run "$CERTS_BIN" --out-dir "$d" --ip 127.0.0.1 --dns localhost --renew
  [ "$status" -eq 0 ]
  cmp "$d/ca.crt" "$PK_TMP/ca.before"
  run cmp -s "$d/tls.crt" "$PK_TMP/tls.before"
  [ "$status" -ne 0 ]
  run openssl verify -CAfile "$d/ca.crt" -purpose sslserver "$d/tls.crt"
  [ "$status" -eq 0 ]
  [ "$(stat -c %a "$d/tls.key")" = 600 ]
  # No temporary file is left behind.
  [ "$(ls -A "$d" | tr '\n' ' ')" = "ca.crt ca.key tls.crt tls.key " ]
}
