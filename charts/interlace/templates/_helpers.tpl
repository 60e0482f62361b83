{{/* The chart name. */}}
{{- define "interlace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name (object names). */}}
{{- define "interlace.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "interlace.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: interlace
{{- end -}}

{{/* Selector labels of the operator pods. */}}
{{- define "interlace.operatorSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Selector labels of the router pods. */}}
{{- define "interlace.routerSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: router
{{- end -}}

{{/* Selector labels of the NATS pods. */}}
{{- define "interlace.natsSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end -}}

{{- define "interlace.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "interlace.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "interlace.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The NATS URL the operator hands to engine and runner pods. */}}
{{- define "interlace.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- $scheme := ternary "tls" "nats" .Values.nats.tls.enabled -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.nats.replicas) -}}
{{- $urls = append $urls (printf "%s://%s-nats-%d.%s-nats-headless.%s.svc:4222" $scheme (include "interlace.fullname" $) $i (include "interlace.fullname" $) $.Release.Namespace) -}}
{{- end -}}
{{- join "," $urls -}}
{{- else -}}
{{- required "nats.externalUrl is required when nats.enabled is false" .Values.nats.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* The Secret with the NATS servers' certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "interlace.natsTlsSecret" -}}
{{- default (printf "%s-nats-tls" (include "interlace.fullname" .)) .Values.nats.tls.secretName -}}
{{- end }}
