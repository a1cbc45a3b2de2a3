{{/*
gitpeer.labels: what every object carries. The first three are
manifests/deploy's own (its labels: and each object's); the rest are Helm's.
*/}}
{{- define "gitpeer.labels" -}}
app.kubernetes.io/name: gitpeer
app.kubernetes.io/part-of: gitpeer
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "gitpeer.rbacLabels" -}}
{{ include "gitpeer.labels" . }}
app.kubernetes.io/component: rbac
{{- end -}}

{{/* gitpeer.selector: the Deployment's selector and its Pods' labels. */}}
{{- define "gitpeer.selector" -}}
app.kubernetes.io/name: gitpeer
app.kubernetes.io/component: reconciler
{{- end -}}

{{/* gitpeer.clusterID: the required cluster ID, checked as gitpeer checks it. */}}
{{- define "gitpeer.clusterID" -}}
{{- $id := required "clusterID is required: this cluster's ID, as in clusters/<id>/ of the peering repo" .Values.clusterID -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $id) -}}
{{- fail (printf "clusterID %q: not a DNS-1123 label (lower case letters, digits and '-')" $id) -}}
{{- end -}}
{{- if gt (len $id) 63 -}}
{{- fail (printf "clusterID %q: longer than 63 characters" $id) -}}
{{- end -}}
{{- $id -}}
{{- end -}}

{{- define "gitpeer.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* gitpeer.subject: the ServiceAccount every binding names. */}}
{{- define "gitpeer.subject" -}}
- kind: ServiceAccount
  name: gitpeer
  namespace: {{ .Release.Namespace }}
{{- end -}}
