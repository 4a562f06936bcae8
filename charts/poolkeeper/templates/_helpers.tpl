{{/*
Names and labels shared by every template.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "poolkeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object name: fullnameOverride; else the release name when
it contains the chart name; else "<release>-<chart>". 44 characters at most:
the longest name built on it that must be a DNS label is the Service
<fullname>-controller-metrics (63 at most).
*/}}
{{- define "poolkeeper.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 44 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 44 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 44 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "poolkeeper.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of every object. Call with (dict "ctx" $ "component" "webhook").
*/}}
{{- define "poolkeeper.labels" -}}
{{ include "poolkeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: poolkeeper
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ include "poolkeeper.chart" .ctx }}
cluster.x-k8s.io/provider: ipam-poolkeeper
{{- end -}}

{{/* The labels a component's selectors use. Same argument as poolkeeper.labels. */}}
{{- define "poolkeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "poolkeeper.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest is given (it wins). */}}
{{- define "poolkeeper.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "poolkeeper.webhookService" -}}
{{- include "poolkeeper.fullname" . }}-webhook
{{- end -}}

{{/* The Secret the webhook serves from. */}}
{{- define "poolkeeper.tlsSecret" -}}
{{- if and (eq .Values.certs.mode "provided") .Values.certs.provided.secretName -}}
{{- .Values.certs.provided.secretName -}}
{{- else -}}
{{- include "poolkeeper.fullname" . }}-webhook-tls
{{- end -}}
{{- end -}}

{{/* The cert-manager Certificate of the serving pair (certManager mode). */}}
{{- define "poolkeeper.certificate" -}}
{{- include "poolkeeper.fullname" . }}-webhook
{{- end -}}

{{- define "poolkeeper.validatingName" -}}
{{- include "poolkeeper.fullname" . }}-validating
{{- end -}}

{{- define "poolkeeper.mutatingName" -}}
{{- include "poolkeeper.fullname" . }}-mutating
{{- end -}}

{{/*
The pod securityContext and the container securityContext of every pod of
the chart: non-root (UID 65532, the image's user), no privilege escalation, no
capabilities, read-only root filesystem, the runtime's default seccomp profile.
fsGroup 65532: the kubelet gives mounted Secret files to that group, so the
webhook (UID 65532) can read its tls.key, which is not world-readable.
*/}}
{{- define "poolkeeper.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "poolkeeper.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
Scheduling of a daemon's pods. Call with (dict "ctx" $ "c" .Values.webhook
"component" "webhook"). Without affinity and without topologySpreadConstraints,
a preferred podAntiAffinity on the node keeps replicas on different nodes
where that is possible.
*/}}
{{- define "poolkeeper.scheduling" -}}
{{- $c := .c -}}
{{- with $c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if $c.affinity }}
affinity:
  {{- toYaml $c.affinity | nindent 2 }}
{{- else if not $c.topologySpreadConstraints }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "poolkeeper.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 14 }}
{{- end }}
{{- if $c.topologySpreadConstraints }}
{{- $sel := dict "matchLabels" (include "poolkeeper.selectorLabels" (dict "ctx" .ctx "component" .component) | fromYaml) }}
{{- $all := list }}
{{- range $c.topologySpreadConstraints }}
{{- if hasKey . "labelSelector" }}
{{- $all = append $all . }}
{{- else }}
{{- $all = append $all (merge (dict "labelSelector" (deepCopy $sel)) .) }}
{{- end }}
{{- end }}
topologySpreadConstraints:
  {{- toYaml $all | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The selectors of a webhook registration: namespaceSelector and objectSelector
from the values, and with watchFilter an objectSelector term on
cluster.x-k8s.io/watch-filter. Call with (dict "ctx" $ "filter" true); the
IPAddress registration passes "filter" false: poolkeeper's IPAddresses do not
carry the label (docs/controller.md), and every address of a pool must be
checked whoever made it.
*/}}
{{- define "poolkeeper.webhookSelectors" -}}
{{- $v := .ctx.Values -}}
{{- with $v.webhook.namespaceSelector }}
namespaceSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $obj := deepCopy $v.webhook.objectSelector -}}
{{- if and .filter $v.watchFilter }}
{{- $exprs := concat (default (list) $obj.matchExpressions) (list (dict "key" "cluster.x-k8s.io/watch-filter" "operator" "In" "values" (list $v.watchFilter))) }}
{{- $_ := set $obj "matchExpressions" $exprs }}
{{- end }}
{{- with $obj }}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
clientConfig of a webhook registration. Call with (dict "ctx" $ "path"
"/validate").
*/}}
{{- define "poolkeeper.clientConfig" -}}
{{- $v := .ctx.Values -}}
clientConfig:
  {{- if $v.webhook.url }}
  url: {{ printf "%s%s" $v.webhook.url .path | quote }}
  {{- else }}
  service:
    name: {{ include "poolkeeper.webhookService" .ctx }}
    namespace: {{ .ctx.Release.Namespace }}
    path: {{ .path }}
    port: 443
  {{- end }}
  {{- if eq $v.certs.mode "provided" }}
  caBundle: {{ $v.certs.provided.caBundle }}
  {{- end }}
{{- end -}}

{{/*
The poolkeeper-certs arguments both certificate Jobs share: where the serving
pair lives and what it must name.
*/}}
{{- define "poolkeeper.certsArgs" -}}
- --namespace={{ .Release.Namespace }}
- --service={{ include "poolkeeper.webhookService" . }}
- --cluster-domain={{ .Values.certs.clusterDomain }}
- --secret={{ include "poolkeeper.tlsSecret" . }}
- --validity-days={{ .Values.certs.selfSigned.validityDays }}
- --ca-validity-days={{ .Values.certs.selfSigned.caValidityDays }}
- --renew-before-days={{ .Values.certs.selfSigned.renewBeforeDays }}
- --ca-renew-before-days={{ .Values.certs.selfSigned.caRenewBeforeDays }}
{{- range .Values.certs.dnsNames }}
- --dns={{ . }}
{{- end }}
{{- range .Values.certs.ipAddresses }}
- --ip={{ . }}
{{- end }}
{{- end -}}

{{/* Hook annotations of the certificate Jobs' ServiceAccount and RBAC. */}}
{{- define "poolkeeper.certsRBACHook" -}}
helm.sh/hook: pre-install,pre-upgrade,post-install,post-upgrade
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{/*
A Go duration ("15s", "1m30s", "500ms") in milliseconds, as a number in a
string (include returns text: pipe it to float64).
*/}}
{{- define "poolkeeper.durationMs" -}}
{{- $units := dict "ns" 0.000001 "us" 0.001 "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h)" . -1 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . | float64 -}}
{{- $unit := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" . "" -}}
{{- $total = addf $total (mulf $num (get $units $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}
